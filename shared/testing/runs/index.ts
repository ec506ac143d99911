/**
 * Batch tests and test runs: routes.ts (served by the agents function), schemas.ts, the API
 * operations in batches.ts, the background runs in runner.ts (on the call-steps queue), the
 * simulated conversation in simulate.ts and its judging in judge.ts, the items in store.ts.
 */
export { createBatchTest, getBatchTestView, getTestRunView, listBatchTests, listTestRuns } from './batches.ts';
export { assertPublishable, getTestingSettings, updateTestingSettings } from './gate.ts';
