/**
 * What other domains may use of billing: the spend check before a spending action, the
 * charge of an ended call, chat, SMS, scored QA result or paid assistant credits, the assistant's spend settings, billing's clock (its month), and the price table calls price themselves from.
 * Keep it small: calls, chats and batches bundle everything it reaches. It goes through the
 * parts' indexes, none of which reaches the `stripe` package (payments/index.ts).
 */
export { assertCanSpend, checkSpend, conductorSpendSettings } from './spend/index.ts';
export { recordCallCharge, recordChatCharge, recordConductorCharge, recordQaCharge, recordSimulationCharge, recordSmsCharge } from './charges/index.ts';
export { BATCH_DIAL_USD, CHAT_MESSAGE_USD, CONDUCTOR_CREDIT_USD, PER_MINUTE_USD, QA_MINUTE_USD, SMS_USD } from './prices.ts';
// QA counts its minutes by billing's month (a test moves billing's clock across a month's end).
// The assistant's credits count by billing's day and month too.
export { billingNow, dayOf, monthOf } from './clock.ts';
