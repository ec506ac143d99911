import type { TranscriptEvent } from '../conversation/index.ts';
import type { ChatMessage, ChatView } from './schemas.ts';
import type { ChatItem, MessageItem } from './store.ts';

/** A stored message as the API answers it (the keys and counter left out). */
export function toMessage(item: MessageItem): ChatMessage {
  const { pk: _pk, sk: _sk, seq: _seq, sms_status_rank: _rank, ...message } = item;
  return message as ChatMessage;
}

/** The chat's `transcript`: its utterances as `Agent: …` / `User: …` lines. */
export function transcriptText(messages: readonly (ChatMessage | TranscriptEvent)[]): string {
  return messages
    .flatMap((m) => (m.role === 'agent' || m.role === 'user' ? [`${m.role === 'agent' ? 'Agent' : 'User'}: ${(m as { content: string }).content}`] : []))
    .map((line) => `${line}\n`)
    .join('');
}

/**
 * The chat object (retell-sdk ChatResponse). With `messages` it carries the transcript
 * fields (get-chat, events); without, it is a list item, which leaves them out as the
 * client's v3 list does. A chat that keeps basic attributes only has none to carry.
 */
export function toChatView(chat: ChatItem, messages?: readonly MessageItem[]): ChatView {
  const collected = (chat.conversation.collected_dynamic_variables as Record<string, string> | undefined) ?? {};
  return {
    chat_id: chat.chat_id,
    agent_id: chat.agent_id,
    version: chat.agent_version,
    agent_version: chat.agent_version,
    chat_status: chat.chat_status,
    chat_type: chat.chat_type,
    ...(chat.metadata !== undefined ? { metadata: chat.metadata } : {}),
    retell_llm_dynamic_variables: chat.retell_llm_dynamic_variables,
    ...(chat.override_dynamic_variables ? { override_dynamic_variables: chat.override_dynamic_variables } : {}),
    collected_dynamic_variables: collected,
    ...(chat.custom_attributes ? { custom_attributes: chat.custom_attributes } : {}),
    ...(chat.data_storage_setting ? { data_storage_setting: chat.data_storage_setting } : {}),
    ...(chat.from_number ? { from_number: chat.from_number } : {}),
    ...(chat.to_number ? { to_number: chat.to_number } : {}),
    ...(chat.direction ? { direction: chat.direction } : {}),
    start_timestamp: chat.start_timestamp,
    end_timestamp: chat.end_timestamp ?? null,
    ...(chat.duration_ms !== undefined ? { duration_ms: chat.duration_ms } : {}),
    message_count: chat.message_count,
    ...(messages && chat.data_storage_applied !== 'basic_attributes_only' ? { transcript: transcriptText(messages), message_with_tool_calls: messages.map(toMessage) } : {}),
    ...(chat.chat_analysis ? { chat_analysis: chat.chat_analysis } : {}),
    ...(chat.chat_cost ? { chat_cost: chat.chat_cost } : {}),
    // The workspace's fallback model answered some of the agent's turns (reliability settings).
    ...(chat.conversation.llm_fallback ? { llm_fallback: chat.conversation.llm_fallback as ChatView['llm_fallback'] } : {}),
  };
}
