import { getChatAgent } from '../agents/lookups/index.ts';
import { analyzeConversation, type TranscriptObject } from '../conversation/index.ts';
import { NotFound } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { countMetric } from '../platform/observability/metrics.ts';
import { sendAgentEvent } from '../webhooks/index.ts';
import type { ChatAnalysis } from './schemas.ts';
import { recordChatRollup } from './rollups.ts';
import { chatMessages, storeAnalysis, type ChatItem, type MessageItem } from './store.ts';
import { toChatView } from './view.ts';

/*
 * Chat events and post-chat analysis (spec: Outgoing webhooks).
 * `chat_started`, `chat_ended` and `chat_analyzed` go to the chat agent version's
 * webhook_url (placeholders filled from the chat's variables, chat_id and agent_id), else
 * the workspace's URL, filtered by the agent's webhook_events (default: all three), with
 * the workspace timeout (chat agents have none), through the one signed, retried and
 * logged delivery path (shared/webhooks). The body is `{event, chat: <chat object>}`.
 */

export type ChatEvent = 'chat_started' | 'chat_ended' | 'chat_analyzed';
const DEFAULT_EVENTS: readonly ChatEvent[] = ['chat_started', 'chat_ended', 'chat_analyzed'];

export async function sendChatEvent(chat: ChatItem, event: ChatEvent, messages?: readonly MessageItem[]): Promise<boolean> {
  if (event === 'chat_started') countMetric('ChatStarted', { chat_type: chat.chat_type });
  if (event === 'chat_ended') countMetric('ChatEnded', { chat_type: chat.chat_type });
  // Sent once per end and per stored analysis: the rollups count each phase once anyway.
  if (event === 'chat_ended') await recordChatRollup(chat, 'ended');
  if (event === 'chat_analyzed') await recordChatRollup(chat, 'analyzed');
  let agent: Awaited<ReturnType<typeof getChatAgent>> | undefined;
  try {
    agent = await getChatAgent(chat.workspace_id, chat.agent_id, chat.agent_version);
  } catch (error) {
    // The agent (or that version) was deleted during the chat: the workspace URL still hears of it.
    if (!(error instanceof NotFound)) throw error;
  }
  const queued = await sendAgentEvent({
    workspaceId: chat.workspace_id,
    event,
    payload: { chat: toChatView(chat, messages ?? (await chatMessages(chat.chat_id))) },
    agent: agent ? { webhook_url: agent.webhook_url, webhook_events: agent.webhook_events } : undefined,
    defaultEvents: DEFAULT_EVENTS,
    placeholders: {
      ...chat.retell_llm_dynamic_variables,
      ...((chat.conversation.collected_dynamic_variables as Record<string, string> | undefined) ?? {}),
      chat_id: chat.chat_id,
      agent_id: chat.agent_id,
    },
  });
  logger.debug('chat event', { chat_id: chat.chat_id, event, queued });
  return queued;
}

/** The utterances of a chat, as analysis reads them. */
function transcriptOf(messages: readonly MessageItem[]): TranscriptObject[] {
  return messages.flatMap((m) => (m.role === 'agent' || m.role === 'user' ? [{ role: m.role, content: m.content }] : []));
}

/**
 * Runs the post-chat analysis of an ended chat (the chat agent version's
 * post_chat_analysis_model and _data) and stores it, then sends `chat_analyzed`. Answers
 * the chat as stored, or undefined when a concurrent analysis wrote first (its own event
 * goes out).
 */
export async function analyzeChat(chat: ChatItem): Promise<ChatItem | undefined> {
  const messages = await chatMessages(chat.chat_id);
  const result = await analyzeConversation({
    workspaceId: chat.workspace_id,
    agentId: chat.agent_id,
    agentVersion: chat.agent_version,
    transcript: transcriptOf(messages),
    channel: 'chat',
  });
  const analysis: ChatAnalysis = {
    chat_summary: result.call_summary,
    user_sentiment: result.user_sentiment,
    chat_successful: result.call_successful,
    custom_analysis_data: result.custom_analysis_data,
  };
  const stored = await storeAnalysis(chat, analysis);
  if (stored) await sendChatEvent(stored, 'chat_analyzed', messages);
  return stored;
}
