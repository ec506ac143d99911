import { randomBytes } from 'node:crypto';
import { workspaceReliability } from '../account/index.ts';
import { assertRunnable } from '../agents/lookups/index.ts';
import { assertCanSpend, recordChatCharge } from '../billing/index.ts';
import {
  agentTurn,
  closeConversation,
  openConversation,
  type ConversationState,
  type TranscriptEvent,
  type TurnResult,
} from '../conversation/index.ts';
import { badRequest } from '../platform/errors.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { chatCost } from './cost.ts';
import { applyChatDataStorage, chatStorageSettings } from './data-storage.ts';
import { analyzeChat, sendChatEvent } from './events.ts';
import { DATA_STORAGE_SETTINGS, type ChatMessage, type ChatType, type ChatView, type CreateChatInput, type UpdateChatInput } from './schemas.ts';
import {
  chatMessages,
  claimTurn,
  commitTurn,
  getChatItem,
  markEnded,
  newChatItem,
  putNewChat,
  releaseTurn,
  storeChatCost,
  updateChatFields,
  type ChatItem,
  type MessageItem,
} from './store.ts';
import { getChat, onOngoingChatDeleted } from './stored-chats.ts';
import { toChatView, toMessage } from './view.ts';

/*
 * Chats (spec: Chats and SMS; docs/chats.md). A chat drives the conversation runtime
 * (shared/conversation) with its chat agent's version, exactly as calls do: the agent's
 * response engine through the LLM adapter, its tools, flows and custom LLMs, the
 * workspace LLM token limit and its trimming. What is transport-specific stays out of
 * here: `startChat`, `completeChat` and `endChat` answer the agent's new messages, and an
 * SMS chat (a later part) sends them through its messaging adapter.
 */

export interface StartChatOptions {
  chatType?: ChatType;
  /** SMS chats: the workspace number and the other party. */
  fromNumber?: string;
  toNumber?: string;
  /** SMS chats: who started it, and the other party's number (the contact's timeline files the chat under it). */
  direction?: 'inbound' | 'outbound';
  party?: string;
  /** The chat's ID when the caller chose it first (an SMS thread points at the chat before it exists). */
  chatId?: string;
  /** The user spoke first (an inbound SMS): the first turn is the agent's reply to this, not its opening. */
  firstUserMessage?: string;
}

/** The state a turn runs on: the stored state, its history from the messages, and the chat's variable overrides. */
function stateOf(chat: ChatItem, messages: readonly MessageItem[]): ConversationState {
  const stored = chat.conversation as unknown as Omit<ConversationState, 'history'>;
  return {
    ...stored,
    dynamic_variables: { ...stored.dynamic_variables, ...(chat.override_dynamic_variables ?? {}) },
    ...(chat.metadata !== undefined ? { metadata: chat.metadata } : {}),
    // update-chat's setting governs what this turn records (its knowledge-base retrieval).
    ...(chat.data_storage_setting ? { data_storage_setting: chat.data_storage_setting } : {}),
    history: messages.flatMap((m): TranscriptEvent[] => {
      if (m.role === 'agent' || m.role === 'user') return [{ role: m.role, content: m.content }];
      if (m.role === 'tool_call_invocation') return [{ role: m.role, tool_call_id: m.tool_call_id, name: m.name, arguments: m.arguments }];
      if (m.role === 'tool_call_result') {
        return [{ role: m.role, tool_call_id: m.tool_call_id, content: m.content, ...(m.successful !== undefined ? { successful: m.successful } : {}) }];
      }
      return [];
    }),
  };
}

/** The state to store: without its history (the messages are the history), with the chat's own variables (overrides stay apart). */
function storedState(state: ConversationState, base: Record<string, string>): Record<string, unknown> {
  const { history: _history, metadata: _metadata, ...rest } = state;
  return { ...rest, dynamic_variables: base };
}

/** A turn's events as stored messages, numbered from `after + 1`. */
function messagesOf(events: readonly TranscriptEvent[], after: number, nowMs: number): MessageItem[] {
  return events.map((event, i) => {
    const { words: _words, ...fields } = event as TranscriptEvent & { words?: unknown };
    return {
      ...(fields as ChatMessage),
      message_id: newTimeOrderedId('chatMessage', nowMs),
      created_timestamp: nowMs,
      seq: after + i + 1,
    } as MessageItem;
  });
}

// An ongoing chat deleted (its own route, a privacy erase, retention) lets its runtime go in this process.
onOngoingChatDeleted((chatId) => closeConversation({ call_id: chatId }));

const endFields = (nowMs: number, startMs: number) => ({ chat_status: 'ended' as const, end_timestamp: nowMs, duration_ms: nowMs - startMs });

/**
 * Starts a chat with a chat agent: the version a reference names (absent: latest) must run,
 * the workspace must be able to spend, then the agent's opening turn (its begin message, or
 * the model's opening unless the user speaks first) is stored with the chat, all or nothing,
 * and `chat_started` is sent. Answers the chat and the agent's opening messages.
 */
export async function startChat(
  workspaceId: string,
  input: CreateChatInput,
  options: StartChatOptions = {},
): Promise<{ chat: ChatView; agentMessages: ChatMessage[]; agentItems: MessageItem[] }> {
  if (!input.agent_id.startsWith('chat_agent_')) {
    throw badRequest(`agent_id: ${input.agent_id} is not a chat agent (chats run chat agents, chat_agent_…)`);
  }
  const { version } = await assertRunnable(workspaceId, input.agent_id, input.agent_version ?? 'latest');
  await assertCanSpend(workspaceId, options.chatType === 'sms_chat' ? 'sms' : 'chat');
  const nowMs = Date.now();
  const chatId = options.chatId ?? newTimeOrderedId('chat', nowMs);
  const variables = input.retell_llm_dynamic_variables ?? {};
  const reliability = await workspaceReliability(workspaceId);
  const state = await openConversation({
    workspaceId,
    agentId: input.agent_id,
    agentVersion: version,
    callId: chatId,
    channel: 'chat',
    dynamicVariables: variables,
    ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
    ...(options.fromNumber ? { fromNumber: options.fromNumber } : {}),
    ...(options.toNumber ? { toNumber: options.toNumber } : {}),
    ...(reliability.llmTokenLimit !== undefined ? { llmTokenLimit: reliability.llmTokenLimit } : {}),
    ...(reliability.fallbackLlmModel ? { fallbackLlmModel: reliability.fallbackLlmModel } : {}),
    canTransfer: false,
  });
  const opening = await agentTurn(
    state,
    options.firstUserMessage !== undefined ? { type: 'user_said', text: options.firstUserMessage } : { type: 'call_started' },
  );
  const messages = messagesOf(opening.events, 0, nowMs);
  const chat = newChatItem({
    workspace_id: workspaceId,
    chat_id: chatId,
    chat_type: options.chatType ?? 'api_chat',
    chat_status: 'ongoing',
    agent_id: input.agent_id,
    agent_version: version,
    ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
    retell_llm_dynamic_variables: variables,
    created_timestamp: nowMs,
    start_timestamp: nowMs,
    message_count: messages.length,
    conversation: storedState(opening.state, state.dynamic_variables),
    ...(options.fromNumber ? { from_number: options.fromNumber } : {}),
    ...(options.toNumber ? { to_number: options.toNumber } : {}),
    ...(options.direction ? { direction: options.direction } : {}),
    ...(opening.end ? endFields(nowMs, nowMs) : {}),
  }, options.party);
  await putNewChat(chat, messages);
  await sendChatEvent(chat, 'chat_started', messages);
  if (opening.end) await afterEnd(chat, opening.state, { storage: !smsRepliesFollow(chat) });
  const agentItems = messages.filter((m) => m.role !== 'user');
  return { chat: toChatView(chat, messages), agentMessages: agentItems.map(toMessage), agentItems };
}

/**
 * One completion: the user's message and the agent's reply messages (tool calls and their
 * results, node transitions), serialised with every other completion of the chat (store.ts:
 * the turn lease and the message counter). A completion on an ended chat is 400; nothing is
 * written when the turn fails. Answers the agent's new messages (the user's left out, as
 * retell-sdk's createChatCompletion reads them) and the chat as written.
 */
export async function completeChat(
  workspaceId: string,
  chatId: string,
  userText: string,
): Promise<{ messages: ChatMessage[]; agentItems: MessageItem[]; chat: ChatView; ended: boolean }> {
  const token = randomBytes(12).toString('hex');
  const chat = await claimTurn(workspaceId, chatId, token);
  let result: TurnResult;
  let messages: MessageItem[];
  let written: ChatItem;
  try {
    await assertCanSpend(workspaceId, chat.chat_type === 'sms_chat' ? 'sms' : 'chat');
    const state = stateOf(chat, await chatMessages(chatId));
    result = await agentTurn(state, { type: 'user_said', text: userText });
    const nowMs = Date.now();
    messages = messagesOf(result.events, chat.message_count, nowMs);
    written = await commitTurn(chat, token, messages, {
      conversation: storedState(result.state, (chat.conversation as { dynamic_variables: Record<string, string> }).dynamic_variables),
      ...(result.end ? endFields(nowMs, chat.start_timestamp) : {}),
    });
  } catch (error) {
    await releaseTurn(chatId, token);
    throw error;
  }
  if (result.end) await afterEnd(written, result.state, { storage: !smsRepliesFollow(written) });
  const agentItems = messages.filter((m, i) => !(i === 0 && m.role === 'user'));
  return { messages: agentItems.map(toMessage), agentItems, chat: toChatView(written), ended: written.chat_status === 'ended' };
}

/** The messages a chat is charged for: the user's and the agent's (billing's `chat` line). */
const chargedMessages = (messages: readonly MessageItem[]) => messages.filter((m) => m.role === 'user' || m.role === 'agent').length;

/**
 * Stores an ended chat's `chat_cost` from its messages as they are now (cost.ts): the chat
 * line by its user and agent messages, and for an SMS chat the SMS sent (agent messages the
 * carrier took). Only grows, so calling it again after later SMS is safe. Answers the chat
 * with its cost.
 */
export async function settleChatCost(chat: ChatItem, messages?: readonly MessageItem[]): Promise<ChatItem> {
  const all = messages ?? (await chatMessages(chat.chat_id));
  const cost = chatCost({
    messages: chargedMessages(all),
    ...(chat.chat_type === 'sms_chat' ? { sms: all.filter((m) => m.role === 'agent' && m.provider_message_id).length } : {}),
  });
  if (await storeChatCost(chat.chat_id, cost)) return { ...chat, chat_cost: cost, combined_cost: cost.combined_cost };
  return chat;
}

/**
 * An SMS chat that ends on the agent's turn still has that turn's replies to send (sms.ts):
 * its data storage setting is applied after them (`applyChatStorage`), not at the end.
 */
const smsRepliesFollow = (chat: ChatItem) => chat.chat_type === 'sms_chat';

/**
 * What follows the end, whatever ended the chat: the runtime lets go, its cost and charge,
 * `chat_ended`, then the analysis and `chat_analyzed`, then (unless `storage` is false: the
 * caller applies it) the chat's data storage setting.
 */
async function afterEnd(ended: ChatItem, state: Pick<ConversationState, 'call_id'> | undefined, options: { storage: boolean }): Promise<void> {
  closeConversation(state ?? { call_id: ended.chat_id });
  const messages = await chatMessages(ended.chat_id);
  const chat = await settleChatCost(ended, messages);
  // The chat's charge: once per chat (billing's source key), by its user and agent messages.
  await recordChatCharge({
    workspaceId: chat.workspace_id,
    chatId: chat.chat_id,
    messageCount: chargedMessages(messages),
  }).catch((error: unknown) => logger.error('chat charge failed', { chat_id: chat.chat_id, error }));
  await sendChatEvent(chat, 'chat_ended', messages);
  let analysed: ChatItem | undefined;
  try {
    analysed = await analyzeChat(chat);
  } catch (error) {
    // The chat stays ended without analysis; rerun-chat-analysis can run it again.
    logger.warn('chat analysis failed', { chat_id: chat.chat_id, error: error instanceof Error ? error.message : String(error) });
  }
  // (An analysis that lost a race to another is read again by the write's condition.)
  if (options.storage) await applyChatStorage(analysed ?? chat);
}

/**
 * Applies an ended (or failed) chat's data storage setting to what it stores
 * (data-storage.ts). A failure is logged, as an analysis' is: the chat has ended either way,
 * and update-chat setting the setting again applies it.
 */
export async function applyChatStorage(chat: ChatItem): Promise<ChatItem> {
  try {
    return await applyChatDataStorage(chat);
  } catch (error) {
    logger.error('applying the chat\'s data storage setting failed', { chat_id: chat.chat_id, error: error instanceof Error ? error.message : String(error) });
    return chat;
  }
}

/** Ends an ongoing chat (end-chat): 400 when it is not ongoing. */
export async function endChat(workspaceId: string, chatId: string): Promise<ChatView> {
  const ended = await markEnded(workspaceId, chatId, Date.now());
  if (!ended) throw badRequest(`Chat ${chatId} is not ongoing: only an ongoing chat can be ended`);
  await afterEnd(ended, undefined, { storage: true });
  return toChatView(await getChatItem(workspaceId, chatId));
}

/**
 * update-chat: metadata, custom attributes (merged), the data storage setting (never to a
 * less restrictive one than the chat's own, else its agent version's: what a stricter one
 * removed cannot come back; applied at once to a chat that is over) and
 * `override_dynamic_variables` (merged over the chat's variables from the next completion
 * on; null removes them).
 */
export async function updateChat(workspaceId: string, chatId: string, input: UpdateChatInput): Promise<ChatView> {
  const current = await getChatItem(workspaceId, chatId);
  if (input.data_storage_setting) {
    const { dataStorage } = await chatStorageSettings(current);
    if (DATA_STORAGE_SETTINGS.indexOf(input.data_storage_setting) < DATA_STORAGE_SETTINGS.indexOf(dataStorage)) {
      throw badRequest(`data_storage_setting: Cannot change from ${dataStorage} to the less restrictive ${input.data_storage_setting}`);
    }
  }
  const fields: Record<string, unknown> = {
    metadata: input.metadata,
    data_storage_setting: input.data_storage_setting,
    ...(input.custom_attributes ? { custom_attributes: { ...(current.custom_attributes ?? {}), ...input.custom_attributes } } : {}),
    // null removes them (updateChatFields removes null fields).
    ...(input.override_dynamic_variables !== undefined
      ? { override_dynamic_variables: input.override_dynamic_variables && { ...(current.override_dynamic_variables ?? {}), ...input.override_dynamic_variables } }
      : {}),
  };
  const updated = await updateChatFields(workspaceId, chatId, fields);
  const stored = input.data_storage_setting && updated.chat_status !== 'ongoing' ? await applyChatDataStorage(updated) : updated;
  return toChatView(stored, await chatMessages(chatId));
}

/** Runs the post-chat analysis again (ended chats only) and answers the chat with it. */
export async function rerunChatAnalysis(workspaceId: string, chatId: string): Promise<ChatView> {
  const chat = await getChatItem(workspaceId, chatId);
  if (chat.chat_status !== 'ended') throw badRequest('Chat analysis can only be rerun on ended chats');
  if (chat.data_storage_applied === 'basic_attributes_only') {
    throw badRequest(`Chat ${chatId} keeps no messages to analyse again: its data storage setting is basic_attributes_only`);
  }
  const analysed = await analyzeChat(chat);
  // The new analysis is stored as said: the setting applies to it as to the first.
  if (analysed) await applyChatDataStorage(analysed);
  return getChat(workspaceId, chatId);
}
