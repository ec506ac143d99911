/**
 * Charges (docs/billing.md, The ledger): the ledger write with its effects (ledger.ts: an entry
 * once per source key, then budget events and auto-recharge after a charge, settled invoices
 * after a credit) and the charges of ended calls, chats and SMS; the budget events
 * (budget.ts); purchased concurrency slots, charged monthly (concurrency-billing.ts); and the
 * usage reports read from the day items each charge adds to (usage.ts). The raw ledger write
 * without effects is ../entries.ts. Routes: routes.ts (usage, concurrency billing); schemas:
 * schemas.ts; the route table and the billing function take the routes from there.
 */
export { appendEntry, recordCallCharge, recordChatCharge, recordConductorCharge, recordQaCharge, recordSimulationCharge, recordSmsCharge } from './ledger.ts';
export { chargePurchasedConcurrency, concurrencyBilling } from './concurrency-billing.ts';
export { platformUsage, workspaceUsage } from './usage.ts';
