/**
 * Voice agents: their versions, tags and the list that holds voice and chat agents together
 * (served by the agents function with the Retell LLMs). Routes: agent-routes.ts; schemas:
 * agent-schemas.ts; logic: agents.ts; items: ../store.ts (tags) and the version store.
 * The route table and the function take the routes from agent-routes.ts itself, so code
 * that only reads agents never carries route definitions.
 */
export { Agent, CreateAgentBody, LANGUAGES, RETELL_LLM_ENGINE, UpdateAgentBody,  } from './agent-schemas.ts';
export type { UpdateAgentInput } from './agent-schemas.ts';
export {
  agentsUsingEngine,
  agentVersionsPage,
  allAgentVersions,
  compareAgentVersions,
  createAgent,
  createAgentTag,
  createAgentVersion,
  deleteAgent,
  deleteAgentTag,
  deleteAgentVersion,
  describeAgentVersion,
  getAgent,
  listAgents,
  listAgentsPage,
  listAgentTags,
  publishAgentVersion,
  resolveAgentVersion,
  
  updateAgent,
  updateAgentTag,
} from './agents.ts';
