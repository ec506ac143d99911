/**
 * The conversation runtime proper: the response engines (Retell LLM, flows, custom LLM),
 * the LLM vendors, tool execution (custom functions, app tools through integrations),
 * knowledge retrieval and analysis. Other domains never import it: index.ts loads it with
 * `import()` on the first turn, retrieval or analysis, so a function whose request does
 * not converse (a call's read, list or delete; an SMS webhook) does not load it at its cold
 * start (docs/performance.md, "Sizes: cold and lazy"). Tests may import it directly.
 */
export { agentTurn, closeConversation, composeMessage, openConversation, streamAgentTurn } from './conversation.ts';
export { analyzeConversation } from './analysis.ts';
export { completeWithFallback } from './fallback.ts';
export { retrieveForAgent } from './knowledge.ts';
export { openTransferAgent, transferAgentTurn } from './transfer-agent.ts';
export { CustomLlmFailed } from './custom-llm.ts';
