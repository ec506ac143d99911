/**
 * The conversation runtime proper: the conversation's turns (conversation.ts), the response
 * engines with the LLM vendors and knowledge retrieval (engines/), tool execution (custom
 * functions in tools/, app tools through integrations), a transfer agent's consultation
 * (transfers/transfer-agent.ts) and analysis (analysis/). Other domains never import it: index.ts loads it with
 * `import()` on the first turn, retrieval or analysis, so a function whose request does
 * not converse (a call's read, list or delete; an SMS webhook) does not load it at its cold
 * start (docs/performance.md, "Sizes: cold and lazy"). Tests may import it directly.
 */
export { agentTurn, closeConversation, composeMessage, openConversation, streamAgentTurn } from './conversation.ts';
export { analyzeConversation } from './analysis/index.ts';
export { completeWithFallback, CustomLlmFailed, retrieveForAgent } from './engines/index.ts';
// Not through transfers/index.ts, which names only what needs no runtime (and its engines).
export { openTransferAgent, transferAgentTurn } from './transfers/transfer-agent.ts';
