/** What other domains may use of billing: the spend check before a spending action. */
export { assertCanSpend, type SpendAction } from './spend.ts';
