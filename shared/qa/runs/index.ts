/**
 * QA runs: routes.ts (served by the qa function), starting one in runs.ts, the background
 * steps in runner.ts (on the call-steps queue; functions/call-steps.ts loads it itself, so
 * the qa function never bundles the scorer), auto-scoring in auto-score.ts.
 */
export { startRun } from './runs.ts';
