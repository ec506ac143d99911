import { getAgent, getChatAgent, getFlow, getLlm, type ResponseEngine } from '../../agents/index.ts';
import { knowledgeSection, retrieveAndRecord, retrieveForConversation, type RetrievalStorage, type RetrievedChunk } from '../../knowledge-bases/index.ts';
import { logger } from '../../platform/logger.ts';
import type { ConfigOverrides, ConversationState, DataStorageSetting } from '../types.ts';

/*
 * Retrieval before answering: an LLM's or flow's `knowledge_base_ids` make each user turn
 * retrieve the top chunks for the user's words (kb_config `top_k`, default 3, and
 * `filter_score`, none by default), recorded per call or chat by the knowledge-bases domain
 * as the conversation's data storage setting allows (the call's or chat's own, else its
 * agent version's); the chunks join the system prompt as a "Knowledge base" section for
 * this turn only.
 */

type AgentStorageFields = { data_storage_setting?: DataStorageSetting | null; pii_config?: { categories?: unknown } | null };

function storageOf(own: DataStorageSetting | undefined, agent: AgentStorageFields | undefined): RetrievalStorage {
  const categories = agent?.pii_config?.categories;
  return {
    setting: own ?? agent?.data_storage_setting ?? 'everything',
    ...(Array.isArray(categories) ? { piiCategories: categories.filter((c): c is string => typeof c === 'string') } : {}),
  };
}

const loadAgent = (workspaceId: string, agentId: string, agentVersion: number) =>
  agentId.startsWith('chat_agent_') ? getChatAgent(workspaceId, agentId, agentVersion) : getAgent(workspaceId, agentId, agentVersion);

/**
 * How this conversation's retrievals are kept. The agent version is read only when the
 * conversation's own setting leaves something to it; when it cannot be read, nothing of the
 * user's words is kept (the strictest setting), rather than guessing they may be.
 */
async function conversationStorage(state: ConversationState): Promise<RetrievalStorage> {
  if (state.records_under === null) return { record: false };
  const own = state.data_storage_setting;
  if (own === 'everything' || own === 'basic_attributes_only') return { setting: own };
  try {
    return storageOf(own, (await loadAgent(state.workspace_id, state.agent_id, state.agent_version)) as AgentStorageFields);
  } catch (error) {
    logger.warn('The agent version could not be read; its retrieval is recorded with basic attributes only', {
      call_id: state.call_id,
      error: error instanceof Error ? error.message : String(error),
    });
    return { setting: 'basic_attributes_only' };
  }
}

interface KnowledgeConfig {
  knowledge_base_ids?: readonly string[] | null;
  kb_config?: Record<string, unknown> | null;
}

/**
 * This turn's knowledge-base section ('' when the engine has no knowledge bases). `retrieve`,
 * when given, does the retrieval instead (the agent worker asks Parley's kb-retrieve route,
 * which reads the same configuration and records the retrieval the same way); it is asked
 * only when the engine has knowledge bases, so a turn without them waits on nothing.
 */
export async function knowledgeFor(
  state: ConversationState,
  config: KnowledgeConfig,
  query: string,
  retrieve?: (query: string) => Promise<{ prompt: string }>,
): Promise<string> {
  const ids = config.knowledge_base_ids ?? [];
  if (ids.length === 0) return '';
  if (retrieve) return (await retrieve(query)).prompt;
  const topK = config.kb_config?.top_k;
  const filterScore = config.kb_config?.filter_score;
  return retrieveForConversation({
    workspaceId: state.workspace_id,
    callId: state.records_under ?? state.call_id,
    storage: await conversationStorage(state),
    knowledgeBaseIds: ids,
    query,
    ...(typeof topK === 'number' ? { topK } : {}),
    ...(typeof filterScore === 'number' ? { filterScore } : {}),
  });
}

export const withKnowledge = (system: string, knowledge: string) => (knowledge ? (system ? `${system}\n\n${knowledge}` : knowledge) : system);

/** What one retrieval for an agent answered: the chunks recorded for kb-retrievals and the prompt section built from them. */
export interface AgentRetrieval {
  retrieval_id: string | null;
  knowledge_base_ids: string[];
  chunks: RetrievedChunk[];
  /** The "## Knowledge base" section the sandbox adds to the system prompt for this turn ('' for no chunks). */
  prompt: string;
}

/**
 * Retrieval for a turn someone else drives (the LiveKit agent worker): the knowledge bases
 * and kb_config of the agent version's response engine (its Retell LLM or conversation flow
 * version, with the call's agent_override laid over it, as the sandbox's turns read them),
 * recorded under the call's ID like the sandbox's, as the call's data storage setting (else
 * the agent version's) allows. A custom LLM has no knowledge bases: no chunks, nothing
 * recorded. Throws when the store or the embedder fails.
 */
export async function retrieveForAgent(input: {
  workspaceId: string;
  agentId: string;
  agentVersion: number;
  callId: string;
  query: string;
  overrides?: ConfigOverrides;
  /** The call's own data storage setting (update-call, update-live-call); absent: the agent version's. */
  dataStorageSetting?: DataStorageSetting;
}): Promise<AgentRetrieval> {
  const agent = await loadAgent(input.workspaceId, input.agentId, input.agentVersion);
  const engine = agent.response_engine as ResponseEngine;
  let config: KnowledgeConfig = {};
  if (engine.type === 'retell-llm' && typeof engine.version === 'number') {
    config = { ...(await getLlm(input.workspaceId, engine.llm_id, engine.version)), ...(input.overrides?.llm ?? {}) } as KnowledgeConfig;
  } else if (engine.type === 'conversation-flow' && typeof engine.version === 'number') {
    config = { ...(await getFlow(input.workspaceId, engine.conversation_flow_id, engine.version)), ...(input.overrides?.flow ?? {}) } as KnowledgeConfig;
  }
  const ids = [...(config.knowledge_base_ids ?? [])];
  const topK = config.kb_config?.top_k;
  const filterScore = config.kb_config?.filter_score;
  const recorded = await retrieveAndRecord({
    workspaceId: input.workspaceId,
    callId: input.callId,
    storage: storageOf(input.dataStorageSetting, agent as AgentStorageFields),
    knowledgeBaseIds: ids,
    query: input.query,
    ...(typeof topK === 'number' ? { topK } : {}),
    ...(typeof filterScore === 'number' ? { filterScore } : {}),
  });
  return {
    retrieval_id: recorded?.retrieval_id ?? null,
    knowledge_base_ids: ids,
    chunks: recorded?.chunks ?? [],
    prompt: recorded ? knowledgeSection(recorded.chunks) : '',
  };
}
