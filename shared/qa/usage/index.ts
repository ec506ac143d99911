/**
 * QA usage and billing: routes.ts (served by the qa function), schemas.ts, the month's
 * minutes and each result's place in them (store.ts), counting, charging and the spend
 * check (usage.ts, which the scorer on the call-steps queue calls).
 */
export { qaUsage } from './usage.ts';
