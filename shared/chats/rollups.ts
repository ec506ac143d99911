import type { AnalysisFacts, ConversationFacts, RollupPhase } from '../analytics/rollups/index.ts';
import { logger } from '../platform/logger.ts';
import type { ChatItem } from './store.ts';

/*
 * A chat's figures in the analytics rollups (docs/analytics.md, "Recording"): added when
 * the chat ends (`chat_ended`) and when its analysis is stored (`chat_analyzed`), each once
 * (the rollups' fact items), and by the backfill for chats it finds not counted. Chats reach
 * the rollups' narrow entry directly: it reaches only the table and the sketch library, and
 * nothing in analytics' rollups imports chats back.
 */

/** What the rollups take from a chat: its dimensions, its duration and cost (cents); chats have no latency. */
export function chatFacts(chat: ChatItem): ConversationFacts {
  return {
    table: 'chats',
    workspace_id: chat.workspace_id,
    id: chat.chat_id,
    start_timestamp: chat.start_timestamp ?? chat.created_timestamp,
    dimensions: { agent_id: chat.agent_id, agent_version: chat.agent_version, chat_type: chat.chat_type, chat_status: chat.chat_status },
    figures: {
      duration_ms: chat.end_timestamp !== undefined ? chat.end_timestamp - chat.start_timestamp : chat.duration_ms,
      cost: chat.chat_cost?.combined_cost ?? chat.combined_cost,
    },
  };
}

/** The stored analysis' verdicts, or undefined when the chat has none. */
export function chatAnalysisFacts(chat: ChatItem): AnalysisFacts | undefined {
  const analysis = chat.chat_analysis;
  if (!analysis) return undefined;
  return { successful: analysis.chat_successful ?? null, sentiment: analysis.user_sentiment ?? null };
}

/**
 * Adds the chat's phase to the rollups. A failure is logged and never fails the chat's end
 * or analysis: the phase stays uncounted until the backfill finds it (docs/analytics.md).
 */
export async function recordChatRollup(chat: ChatItem, phase: RollupPhase): Promise<void> {
  const analysis = phase === 'analyzed' ? chatAnalysisFacts(chat) : undefined;
  if (phase === 'analyzed' && !analysis) return;
  try {
    // Loaded on the first end or analysis: the writer and its sketch library stay out of the
    // chat functions' cold start (docs/performance.md, "Sizes: cold and lazy").
    const { recordConversation } = await import('../analytics/rollups/index.ts');
    await recordConversation(chatFacts(chat), phase, analysis);
  } catch (error) {
    logger.error('recording a chat in the rollups failed', { chat_id: chat.chat_id, phase, error: error instanceof Error ? error.message : String(error) });
  }
}
