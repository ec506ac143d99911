/**
 * Post-call (and post-chat) analysis (docs/conversation.md): one JSON-mode request to the
 * agent version's analysis model, its answer checked field by field, and the offline
 * model's shape for it (analysis.ts). Part of the runtime: ../runtime.ts exports it, and
 * ../index.ts loads it with the rest on first use.
 */
export { analyzeConversation } from './analysis.ts';
