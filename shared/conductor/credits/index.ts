/**
 * The assistant's credits (docs/assistant.md, "Credits"): what the assistant's messages ask
 * before the model runs (`assertAssistantCanSpend`) and count after it answered
 * (`chargeAssistantMessage`). The routes (routes.ts, schemas.ts; api.ts answers them) are
 * served by the conductor function; the counters and the ledger are store.ts.
 */
export { assertAssistantCanSpend, chargeAssistantMessage } from './credits.ts';
