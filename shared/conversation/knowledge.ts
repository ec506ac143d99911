import { retrieveForConversation } from '../knowledge-bases/index.ts';
import type { ConversationState } from './types.ts';

/*
 * Retrieval before answering: an LLM's or flow's `knowledge_base_ids` make each user turn
 * retrieve the top chunks for the user's words (kb_config `top_k`, default 3, and
 * `filter_score`, none by default), recorded per call or chat by the knowledge-bases domain;
 * the chunks join the system prompt as a "Knowledge base" section for this turn only.
 */

interface KnowledgeConfig {
  knowledge_base_ids?: readonly string[] | null;
  kb_config?: Record<string, unknown> | null;
}

export async function knowledgeFor(state: ConversationState, config: KnowledgeConfig, query: string): Promise<string> {
  const ids = config.knowledge_base_ids ?? [];
  if (ids.length === 0) return '';
  const topK = config.kb_config?.top_k;
  const filterScore = config.kb_config?.filter_score;
  return retrieveForConversation({
    workspaceId: state.workspace_id,
    callId: state.call_id,
    knowledgeBaseIds: ids,
    query,
    ...(typeof topK === 'number' ? { topK } : {}),
    ...(typeof filterScore === 'number' ? { filterScore } : {}),
  });
}

export const withKnowledge = (system: string, knowledge: string) => (knowledge ? (system ? `${system}\n\n${knowledge}` : knowledge) : system);
