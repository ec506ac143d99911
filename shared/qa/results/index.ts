/** QA results: routes.ts (served by the qa function), schemas.ts, reading in results.ts, the items and claims in store.ts. */
export { getResult, listResults } from './results.ts';
