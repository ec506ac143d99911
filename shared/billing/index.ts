/**
 * What other domains may use of billing: the spend check before a spending action, the
 * charge of an ended call, and the price table calls price themselves from. Keep it small:
 * calls, chats and batches bundle everything it reaches.
 */
export { assertCanSpend, checkSpend, type SpendAction, type SpendDecision, type SpendOptions } from './spend.ts';
export { recordCallCharge, type CallChargeInput } from './ledger.ts';
export { BATCH_DIAL_USD, PER_MINUTE_USD } from './prices.ts';
