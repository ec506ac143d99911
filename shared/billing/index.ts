/**
 * What other domains may use of billing: the spend check before a spending action, the
 * charge of an ended call, chat, SMS or scored QA result, billing's clock (its month), and the price table calls price themselves from.
 * Keep it small: calls, chats and batches bundle everything it reaches. It goes through the
 * parts' indexes, none of which reaches the `stripe` package (payments/index.ts).
 */
export { assertCanSpend, checkSpend } from './spend/index.ts';
export { recordCallCharge, recordChatCharge, recordQaCharge, recordSimulationCharge, recordSmsCharge } from './charges/index.ts';
export { BATCH_DIAL_USD, CHAT_MESSAGE_USD, PER_MINUTE_USD, QA_MINUTE_USD, SMS_USD } from './prices.ts';
// QA counts its minutes by billing's month (a test moves billing's clock across a month's end).
export { billingNow, monthOf } from './clock.ts';
