import { deleteRetrievals } from '../knowledge-bases/records/index.ts';
import { listChatItems, type SmsNumbers } from './listing.ts';
import type { ChatView, ListChatsInput } from './schemas.ts';
import { chatMessages, deleteChatItems, getChatItem } from './store.ts';
import { toChatView } from './view.ts';

/*
 * A chat as stored: read, listed, deleted, without the conversation runtime (chats.ts), so
 * that what only reads or erases chats (account-data's exports, privacy erases and
 * retention, through records.ts) never bundles the runtime's custom-LLM client (`ws`), the
 * LLM vendors, billing or the agents domain (docs/performance.md, "Narrow entries").
 */

type OngoingChatDeleted = (chatId: string) => void;
const ongoingDeletedListeners: OngoingChatDeleted[] = [];

/**
 * Called when an ongoing chat is deleted: chats.ts lets the conversation runtime go (its
 * custom-LLM socket, held in the process that runs the chat). Registered by the module that
 * holds the runtime, so a process without it (an export job) has nothing to let go.
 */
export function onOngoingChatDeleted(listener: OngoingChatDeleted): void {
  ongoingDeletedListeners.push(listener);
}

export async function getChat(workspaceId: string, chatId: string): Promise<ChatView> {
  const chat = await getChatItem(workspaceId, chatId);
  return toChatView(chat, await chatMessages(chatId));
}

/** retell-sdk's `chat.list` (POST /v3/list-chats) reads a page; GET /list-chats answers the array. */
export async function listChats(workspaceId: string, input: ListChatsInput, options: { page: boolean; smsOnly?: boolean; numbers?: SmsNumbers }) {
  const { items, hasMore, total } = await listChatItems(workspaceId, input, { smsOnly: options.smsOnly, numbers: options.numbers });
  const views = items.map((item) => toChatView(item));
  if (!options.page) return views;
  return {
    items: views,
    has_more: hasMore,
    ...(hasMore && views.length ? { pagination_key: views.at(-1)!.chat_id } : {}),
    ...(total !== undefined ? { total } : {}),
  };
}

/**
 * Deletes a chat (delete-chat, a privacy erase of an SMS chat's number, retention): its
 * knowledge-base retrievals (the user's words) first, so a failure leaves the chat to retry
 * with, then the item and its messages.
 */
export async function deleteChat(workspaceId: string, chatId: string): Promise<void> {
  await deleteRetrievals(workspaceId, chatId);
  const old = await deleteChatItems(workspaceId, chatId);
  if (old.chat_status === 'ongoing') {
    // A completion running when the chat was deleted may have recorded one since.
    await deleteRetrievals(workspaceId, chatId);
    for (const listener of ongoingDeletedListeners) listener(chatId);
  }
}
