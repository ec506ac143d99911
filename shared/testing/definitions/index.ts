/**
 * Test case definitions: routes.ts (served by the agents function), schemas.ts, the logic in
 * definitions.ts, the items in store.ts, the response engine check in engine.ts.
 */
export { createTestCaseDefinition, deleteTestCaseDefinition, getTestCaseDefinition, listTestCaseDefinitions, toDefinition, updateTestCaseDefinition } from './definitions.ts';
export { assertWorkspaceEngine } from './engine.ts';
export { engineListQuery, engineNamed, TestCaseDefinition, testResponseEngine } from './schemas.ts';
export { getTestCases, pageByEngine, type EngineQuery } from './store.ts';
