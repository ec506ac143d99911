/**
 * What an engine's tools and settings point at outside agents, checked when an LLM, flow or
 * component is saved: app tools (app-tools.ts, app-usages.ts, which also answers what uses
 * an app), custom tools (custom-tool.ts), transfers (transfer-destination.ts for the shape,
 * transfer-checks.ts for the agents and hold music they name); and which engines use a
 * knowledge base (knowledge-base-users.ts). The integrations function takes `appUsages` from
 * app-usages.ts itself: this index also reaches the transfer checks and account data's assets.
 */
export { knowledgeBaseUsers } from './knowledge-base-users.ts';
export { assertTransferRefs, flowTransferRefs, llmTransferRefs } from './transfer-checks.ts';
export type { TransferRef } from './transfer-checks.ts';
