import { defineRoutes } from '../../platform/http/route.ts';
import { CreateTestCaseBody, TestCaseDefinition, testCaseIdParams, TestCaseListQuery, TestCasePage, UpdateTestCaseBody } from './schemas.ts';

/**
 * Test case definitions (scope `agents`: they test an agent's engine), served by the agents
 * function. The spec's spellings and retell-sdk's (`/v2/list-…`, PUT for the update) alike.
 */
export const testCaseRoutes = defineRoutes({ domain: 'agents', access: 'agents' }, {
  createTestCaseDefinition: {
    method: 'POST', path: '/create-test-case-definition', status: 201,
    summary: 'Create a test case definition: a simulated caller, success criteria and tool mocks for one response engine',
    body: CreateTestCaseBody, response: TestCaseDefinition,
  },
  listTestCaseDefinitions: {
    method: 'GET', path: '/list-test-case-definitions', aliases: [{ method: 'GET', path: '/v2/list-test-case-definitions' }], status: 200,
    summary: 'List the test case definitions of one response engine, newest first, a page at a time',
    query: TestCaseListQuery, response: TestCasePage,
  },
  getTestCaseDefinition: {
    method: 'GET', path: '/get-test-case-definition/{test_case_definition_id}', status: 200,
    summary: 'Get a test case definition',
    params: testCaseIdParams, response: TestCaseDefinition,
  },
  updateTestCaseDefinition: {
    method: 'PATCH', path: '/update-test-case-definition/{test_case_definition_id}',
    aliases: [{ method: 'PUT', path: '/update-test-case-definition/{test_case_definition_id}' }], status: 200,
    summary: 'Update a test case definition (the fields given); runs already made keep the definition as it was',
    params: testCaseIdParams, body: UpdateTestCaseBody, response: TestCaseDefinition,
  },
  deleteTestCaseDefinition: {
    method: 'DELETE', path: '/delete-test-case-definition/{test_case_definition_id}', status: 204,
    summary: 'Delete a test case definition; runs already made stay readable with their snapshot',
    params: testCaseIdParams,
  },
});
