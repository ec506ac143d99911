import * as agents from '../shared/agents/voice-agents/index.ts';
import { domainHandler } from '../shared/platform/http/handler.ts';
import * as llms from '../shared/agents/llms/index.ts';
import { agentRoutes } from '../shared/agents/voice-agents/agent-routes.ts';
import { llmRoutes } from '../shared/agents/llms/llm-routes.ts';
import * as testing from '../shared/testing/index.ts';
import { testCaseRoutes } from '../shared/testing/definitions/routes.ts';
import { batchTestRoutes } from '../shared/testing/runs/routes.ts';

export const handler = domainHandler({ ...agentRoutes, ...llmRoutes, ...testCaseRoutes, ...batchTestRoutes }, {
  createAgent: ({ principal, body }) => agents.createAgent(principal.workspaceId, body),
  getAgent: ({ principal, params, query }) => agents.getAgent(principal.workspaceId, params.agent_id, query.version),
  listAgents: ({ principal, query }) => agents.listAgents(principal.workspaceId, query),
  listAgentsPaged: ({ principal, query, body }) => agents.listAgentsPage(principal.workspaceId, query, body.filter_criteria),
  updateAgent: ({ principal, params, query, body }) =>
    agents.updateAgent(principal.workspaceId, params.agent_id, query.version, body),
  deleteAgent: ({ principal, params }) => agents.deleteAgent(principal.workspaceId, params.agent_id),
  // The workspace's publish gate (shared/testing) asks first: the agents domain knows nothing of tests.
  publishAgentVersion: async ({ principal, params, body }) => {
    await testing.assertPublishable(principal.workspaceId, params.agent_id, body.version);
    return agents.publishAgentVersion(principal.workspaceId, params.agent_id, body);
  },
  createAgentVersion: ({ principal, params, body }) =>
    agents.createAgentVersion(principal.workspaceId, params.agent_id, body.base_version),
  listAgentVersions: ({ principal, params, query }) =>
    agents.agentVersionsPage(principal.workspaceId, params.agent_id, query),
  getAgentVersions: ({ principal, params }) => agents.allAgentVersions(principal.workspaceId, params.agent_id),
  describeAgentVersion: ({ principal, params, body }) =>
    agents.describeAgentVersion(principal.workspaceId, params.agent_id, params.version, body),
  deleteAgentVersion: ({ principal, params }) =>
    agents.deleteAgentVersion(principal.workspaceId, params.agent_id, params.version),
  deleteAgentVersionByQuery: ({ principal, params, query }) =>
    agents.deleteAgentVersion(principal.workspaceId, params.agent_id, query.version),
  compareAgentVersions: ({ principal, params, query }) =>
    agents.compareAgentVersions(principal.workspaceId, params.agent_id, query.version_a, query.version_b),
  resolveAgentVersion: ({ principal, params, query }) =>
    agents.resolveAgentVersion(principal.workspaceId, params.agent_id, query.version),
  listAgentTags: ({ principal, params }) => agents.listAgentTags(principal.workspaceId, params.agent_id),
  createAgentTag: ({ principal, params, body }) => agents.createAgentTag(principal.workspaceId, params.agent_id, body),
  updateAgentTag: ({ principal, params, body }) =>
    agents.updateAgentTag(principal.workspaceId, params.agent_id, params.name, body),
  deleteAgentTag: ({ principal, params }) => agents.deleteAgentTag(principal.workspaceId, params.agent_id, params.name),

  createRetellLlm: ({ principal, body }) => llms.createLlm(principal.workspaceId, body),
  getRetellLlm: ({ principal, params, query }) => llms.getLlm(principal.workspaceId, params.llm_id, query.version),
  listRetellLlms: ({ principal, query }) => llms.listLlms(principal.workspaceId, query),
  listRetellLlmsArray: async ({ principal, query }) => (await llms.listLlms(principal.workspaceId, query)).items,
  updateRetellLlm: ({ principal, params, query, body }) =>
    llms.updateLlm(principal.workspaceId, params.llm_id, query.version, body),
  deleteRetellLlm: ({ principal, params, query }) =>
    llms.deleteLlm(principal.workspaceId, params.llm_id, {
      force: query.force_delete === 'true',
      usedBy: (llmId) => agents.agentsUsingEngine(principal.workspaceId, llmId),
    }),

  createTestCaseDefinition: ({ principal, body }) => testing.createTestCaseDefinition(principal.workspaceId, body),
  listTestCaseDefinitions: ({ principal, query }) => testing.listTestCaseDefinitions(principal.workspaceId, query),
  getTestCaseDefinition: ({ principal, params }) => testing.getTestCaseDefinition(principal.workspaceId, params.test_case_definition_id),
  updateTestCaseDefinition: ({ principal, params, body }) =>
    testing.updateTestCaseDefinition(principal.workspaceId, params.test_case_definition_id, body),
  deleteTestCaseDefinition: ({ principal, params }) => testing.deleteTestCaseDefinition(principal.workspaceId, params.test_case_definition_id),
  createBatchTest: ({ principal, body }) => testing.createBatchTest(principal.workspaceId, body),
  listBatchTests: ({ principal, query }) => testing.listBatchTests(principal.workspaceId, query),
  getBatchTest: ({ principal, params }) => testing.getBatchTestView(principal.workspaceId, params.test_case_batch_job_id),
  listTestRuns: ({ principal, params, query }) => testing.listTestRuns(principal.workspaceId, params.test_case_batch_job_id, query),
  listTestRunsByQuery: ({ principal, query }) => testing.listTestRuns(principal.workspaceId, query.test_case_batch_job_id, query),
  getTestRun: ({ principal, params }) => testing.getTestRunView(principal.workspaceId, params.test_case_job_id),
  getTestingSettings: ({ principal }) => testing.getTestingSettings(principal.workspaceId),
  updateTestingSettings: ({ principal, body }) => testing.updateTestingSettings(principal.workspaceId, body),
});
