/**
 * The QA domain (docs/qa.md): cohorts of real calls (cohorts/), scored against a rubric
 * (scoring/: the judging model, and the offline model's rules) by runs and auto-scoring
 * (runs/), into results (results/), reviewed and calibrated by people (review/). The API operations come from here; the background
 * steps (runs/runner.ts) and the auto-scoring listener (runs/auto-score.ts) are imported
 * by functions/call-steps.ts itself, so the qa function bundles neither the scorer nor
 * the language-model adapter.
 */
export { createCohort, deleteCohort, getCohort, listCohorts, updateCohort } from './cohorts/index.ts';
export { getResult, listResults } from './results/index.ts';
export { startRun } from './runs/index.ts';
export { calibrateCohort, correctTranscript, reviewResult } from './review/index.ts';
export { cohortOverview, topQuestions, workspaceMetrics } from './insights/index.ts';
export { qaUsage } from './usage/index.ts';
