/**
 * What other domains may use of billing: the spend check before a spending action, the
 * charge of an ended call, and the price table calls price themselves from. Keep it small:
 * calls, chats and batches bundle everything it reaches.
 */
export { assertCanSpend, checkSpend,    } from './spend.ts';
export { recordCallCharge, recordChatCharge, recordSmsCharge,    } from './ledger.ts';
export { BATCH_DIAL_USD, CHAT_MESSAGE_USD, PER_MINUTE_USD, SMS_USD } from './prices.ts';
