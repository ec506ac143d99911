import { getAgent, updateAgent } from '../agents/index.ts';
import { NotFound } from '../platform/errors.ts';
import { getLlm, updateLlm } from '../agents/index.ts';
import { RETELL_LLM_ENGINE, type Agent, type UpdateAgentInput, type VersionReference } from '../agents/index.ts';
import type { Llm, LlmInput } from '../agents/index.ts';
import type { ItemKey } from '../platform/store/keys.ts';
import { table } from '../platform/store/table.ts';
import { publishedVersion } from '../platform/store/versions.ts';
import { existingAppIds } from '../integrations/app-refs/index.ts';
import { catalogueVoice, DEFAULT_VOICE_ID, DEFAULT_VOICE_MODEL } from '../voices/index.ts';
import { agentHeadKey, knowledgeBaseKey, workspaceVoiceKey } from './store.ts';

/*
 * `POST /repair-agent/{agent_id}` (retell-sdk `agent.repair`): removes references to
 * things that no longer exist in the workspace and remaps voices the workspace can no
 * longer use, in a draft:
 *
 * - agent: `voice_id` not usable → DEFAULT_VOICE_ID (and a set `voice_model` → that
 *   voice's premium model); unusable `fallback_voice_ids` are dropped;
 * - Retell LLM engine: `knowledge_base_ids` of missing knowledge bases are dropped; tools
 *   (general and per state) are dropped when they name an MCP server the LLM no longer
 *   has (`mcp_id`), an agent that no longer exists (`agent_swap`) or an integration app
 *   that no longer exists (`app`: "tools whose app connection has been deleted").
 *
 * `?version=` (a version reference) names the draft to repair; a published version cannot be repaired (400).
 * Without it the latest version is repaired: if it is published, a new draft is branched
 * from it (with a new engine draft, as any edit does). An engine version that is already
 * published is left untouched (only agent-level references are repaired, as the
 * compatible API does). Nothing to fix is a no-op: no write, no new version.
 * Conversation flows and custom LLMs have no engine-level repairs yet.
 */

const keyText = (key: ItemKey) => `${key.pk}|${key.sk}`;

/** Which of the keys exist (strongly consistent batch reads). */
async function existing(itemKeys: ItemKey[]): Promise<Set<string>> {
  return new Set((await table.batchGet<ItemKey>(itemKeys)).map(keyText));
}

async function usableVoices(workspaceId: string, voiceIds: string[]): Promise<Set<string>> {
  const custom = [...new Set(voiceIds.filter((id) => !catalogueVoice(id) && id.length <= 200))];
  const found = await existing(custom.map((id) => workspaceVoiceKey(workspaceId, id)));
  return new Set([
    ...voiceIds.filter((id) => catalogueVoice(id)),
    ...custom.filter((id) => found.has(keyText(workspaceVoiceKey(workspaceId, id)))),
  ]);
}

/** The agent-level changes a version needs (empty when none). */
async function agentRepairs(workspaceId: string, agent: Agent): Promise<UpdateAgentInput> {
  const voiceId = agent.voice_id ?? DEFAULT_VOICE_ID;
  const fallbacks = agent.fallback_voice_ids ?? [];
  const usable = await usableVoices(workspaceId, [voiceId, ...fallbacks]);
  const changes: UpdateAgentInput = {};
  if (!usable.has(voiceId)) {
    changes.voice_id = DEFAULT_VOICE_ID;
    if (agent.voice_model) changes.voice_model = DEFAULT_VOICE_MODEL;
  }
  const keptFallbacks = fallbacks.filter((id) => usable.has(id));
  if (keptFallbacks.length !== fallbacks.length) changes.fallback_voice_ids = keptFallbacks;
  return changes;
}

type Tool = { type: string; mcp_id?: string; agent_id?: string; app_id?: string } & Record<string, unknown>;
type State = { name: string; tools?: Tool[] } & Record<string, unknown>;

/** The engine-level changes a Retell LLM version needs (empty when none). */
async function llmRepairs(workspaceId: string, llm: Llm): Promise<LlmInput> {
  const knowledgeBases = llm.knowledge_base_ids ?? [];
  const generalTools = (llm.general_tools ?? []) as Tool[];
  const states = (llm.states ?? []) as State[];
  const allTools = [...generalTools, ...states.flatMap((state) => state.tools ?? [])];
  const swapAgents = [...new Set(allTools.filter((tool) => tool.type === 'agent_swap' && typeof tool.agent_id === 'string').map((tool) => tool.agent_id!))];

  const appIds = [...new Set(allTools.filter((tool) => tool.type === 'app' && typeof tool.app_id === 'string').map((tool) => tool.app_id!))];
  const apps = await existingAppIds(workspaceId, appIds);
  const found = await existing([
    ...knowledgeBases.map((id) => knowledgeBaseKey(workspaceId, id)),
    ...swapAgents.map((id) => agentHeadKey(workspaceId, id)),
  ]);
  const mcpIds = new Set(
    ((llm.mcps ?? []) as { id?: unknown; name?: unknown }[]).flatMap((mcp) =>
      [mcp.id, mcp.name].filter((value): value is string => typeof value === 'string'),
    ),
  );
  const keepTool = (tool: Tool) => {
    if (typeof tool.mcp_id === 'string' && !mcpIds.has(tool.mcp_id)) return false;
    if (tool.type === 'app' && typeof tool.app_id === 'string') return apps.has(tool.app_id);
    if (tool.type === 'agent_swap' && typeof tool.agent_id === 'string') {
      return found.has(keyText(agentHeadKey(workspaceId, tool.agent_id)));
    }
    return true;
  };

  const changes: LlmInput = {};
  const keptKnowledgeBases = knowledgeBases.filter((id) => found.has(keyText(knowledgeBaseKey(workspaceId, id))));
  if (keptKnowledgeBases.length !== knowledgeBases.length) changes.knowledge_base_ids = keptKnowledgeBases;
  const keptGeneral = generalTools.filter(keepTool);
  if (keptGeneral.length !== generalTools.length) changes.general_tools = keptGeneral as LlmInput['general_tools'];
  let statesChanged = false;
  const keptStates = states.map((state) => {
    if (!state.tools) return state;
    const tools = state.tools.filter(keepTool);
    if (tools.length === state.tools.length) return state;
    statesChanged = true;
    return { ...state, tools };
  });
  if (statesChanged) changes.states = keptStates as LlmInput['states'];
  return changes;
}

const isEmpty = (changes: object) => Object.keys(changes).length === 0;

export async function repairAgent(workspaceId: string, agentId: string, version?: VersionReference): Promise<Agent> {
  const target = await getAgent(workspaceId, agentId, version);
  if (version !== undefined && target.is_published) throw publishedVersion('agent', agentId, target.version);

  const agentChanges = await agentRepairs(workspaceId, target);
  const engine = target.response_engine;
  let engineNeedsRepair = false;
  if (engine?.type === RETELL_LLM_ENGINE) {
    const llm = await getLlm(workspaceId, engine.llm_id, engine.version ?? undefined).catch((error: unknown) => {
      if (error instanceof NotFound) return undefined;
      throw error;
    });
    // A published engine version is never changed; when the agent version is published,
    // its branch gets a new engine draft, which is what gets repaired.
    engineNeedsRepair = !!llm && (!llm.is_published || target.is_published) && !isEmpty(await llmRepairs(workspaceId, llm));
  }
  if (isEmpty(agentChanges) && !engineNeedsRepair) return target;

  // The draft: this one, or a new one branched from the published latest version.
  const draft =
    isEmpty(agentChanges) && !target.is_published
      ? target
      : await updateAgent(workspaceId, agentId, target.is_published ? undefined : target.version, agentChanges);
  const draftEngine = draft.response_engine;
  if (engineNeedsRepair && draftEngine?.type === RETELL_LLM_ENGINE && typeof draftEngine.version === 'number') {
    const llm = await getLlm(workspaceId, draftEngine.llm_id, draftEngine.version);
    const changes = llm.is_published ? {} : await llmRepairs(workspaceId, llm);
    if (!isEmpty(changes)) await updateLlm(workspaceId, draftEngine.llm_id, draftEngine.version, changes);
  }
  return draft;
}
