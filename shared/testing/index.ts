/**
 * The testing domain (agent CI): test case definitions (definitions/), each a simulated
 * caller with success criteria and tool mocks for one response engine, and batch tests
 * with their runs (runs/). The API operations come from here. The background runner is not
 * exported here: functions/call-steps.ts imports runs/runner.ts itself, so that the agents
 * function, which serves the routes, never bundles the conversation runtime.
 */
export { createTestCaseDefinition, deleteTestCaseDefinition, getTestCaseDefinition, listTestCaseDefinitions, updateTestCaseDefinition } from './definitions/index.ts';
export { assertPublishable, createBatchTest, getBatchTestView, getTestRunView, getTestingSettings, listBatchTests, listTestRuns, updateTestingSettings } from './runs/index.ts';
