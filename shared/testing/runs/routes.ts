import { defineRoutes } from '../../platform/http/route.ts';
import {
  BatchTest,
  BatchTestListQuery,
  BatchTestPage,
  batchTestIdParams,
  CreateBatchTestBody,
  TestRun,
  testRunIdParams,
  TestRunListByQuery,
  TestRunListQuery,
  TestRunPage,
  TestingSettings,
  UpdateTestingSettingsBody,
} from './schemas.ts';

/**
 * Batch tests and their runs (scope `agents`), served by the agents function; the runs
 * themselves run on the call-steps queue. The spec's spellings and retell-sdk's alike.
 */
export const batchTestRoutes = defineRoutes({ domain: 'agents', access: 'agents' }, {
  createBatchTest: {
    method: 'POST', path: '/create-batch-test', status: 201,
    summary: 'Create a batch test: every test case run against one response engine version as a simulated conversation, in the background',
    spendChecked: true,
    body: CreateBatchTestBody, response: BatchTest,
  },
  listBatchTests: {
    method: 'GET', path: '/list-batch-tests', aliases: [{ method: 'GET', path: '/v2/list-batch-tests' }], status: 200,
    summary: 'List the batch tests of one response engine (and version), newest first, a page at a time',
    query: BatchTestListQuery, response: BatchTestPage,
  },
  getBatchTest: {
    method: 'GET', path: '/get-batch-test/{test_case_batch_job_id}', status: 200,
    summary: 'Get a batch test with its counts and status',
    params: batchTestIdParams, response: BatchTest,
  },
  listTestRuns: {
    method: 'GET', path: '/v2/list-test-runs/{test_case_batch_job_id}', status: 200,
    summary: 'List a batch test\'s runs in the batch\'s order, a page at a time',
    params: batchTestIdParams, query: TestRunListQuery, response: TestRunPage,
  },
  listTestRunsByQuery: {
    method: 'GET', path: '/list-test-runs', status: 200,
    summary: 'List a batch test\'s runs (the batch in ?test_case_batch_job_id=), a page at a time',
    query: TestRunListByQuery, response: TestRunPage,
  },
  getTestRun: {
    method: 'GET', path: '/get-test-run/{test_case_job_id}', status: 200,
    summary: 'Get a test run: its status, the explanation of its verdict, its transcript and the definition as run',
    params: testRunIdParams, response: TestRun,
  },
  getTestingSettings: {
    method: 'GET', path: '/testing/settings', status: 200,
    summary: 'Whether publishing an agent version needs a passing batch test on its engine version',
    response: TestingSettings,
  },
  updateTestingSettings: {
    method: 'PATCH', path: '/testing/settings', status: 200, role: 'admin',
    summary: 'Turn the publish gate on or off: publishing then needs the newest complete batch test on the engine version to have passed (409 otherwise)',
    body: UpdateTestingSettingsBody, response: TestingSettings,
  },
});
