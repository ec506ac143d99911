/**
 * QA cohorts: routes.ts (served by the qa function), schemas.ts, the logic in cohorts.ts,
 * the default rubric in rubric.ts, which calls belong in selection.ts, the items in store.ts.
 */
export { createCohort, deleteCohort, getCohort, listCohorts, updateCohort } from './cohorts.ts';
