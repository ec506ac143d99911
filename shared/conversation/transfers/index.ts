/**
 * Transfers as the conversation sees them (docs/conversation.md, Transfers; docs/calls.md,
 * Agentic warm transfer): a transfer option's fields as the call engine acts on them
 * (transfer-options.ts), Parley's built-in mediator of an agentic warm transfer
 * (transfer-mediator.ts), and a transfer agent's consultation (transfer-agent.ts). This
 * index names the two light modules, which the engines' transfer_call and ../index.ts use
 * without loading the runtime. transfer-agent.ts opens a conversation (../conversation.ts,
 * and with it every engine), so ../runtime.ts imports it directly and ../index.ts only its
 * types: through here it would pull the runtime into every cold start that reads a
 * transfer option, and tie the engines to it in a cycle.
 */
export { transferOptions } from './transfer-options.ts';
export { mediatorDecision, mediatorGreeting } from './transfer-mediator.ts';
