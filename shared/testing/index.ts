/**
 * The testing domain (agent CI): test case definitions (definitions/), each a simulated
 * caller with success criteria and tool mocks for one response engine. Other domains and
 * the functions use it through this entry.
 */
export { createTestCaseDefinition, deleteTestCaseDefinition, getTestCaseDefinition, listTestCaseDefinitions, updateTestCaseDefinition } from './definitions/index.ts';
