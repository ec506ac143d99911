import { createHash } from 'node:crypto';
import { badRequest, conflict, notFound, TooManyRequests, unavailable } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { completeCountedTotal, countChange, COUNTED, countedTotal, transactCounted, uncount, type CountedListing } from '../platform/store/listing-count.ts';
import { queryAll } from '../platform/store/query.ts';
import { fieldChanges } from '../platform/store/update-expression.ts';
import { defineEntity, table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import type { ChatCost } from './cost.ts';
import type { ChatAnalysis, ChatMessage, ChatStatus, ChatType } from './schemas.ts';

/*
 * The chats domain's items (docs/chats.md, docs/data-model.md). A chat is one partition,
 * `CHAT#<id>`: the chat item (`sk=CHAT`, the wire fields at the top level so gsi1 projects
 * what lists filter on, the conversation state beside them) and one item per message
 * (`sk=MSG#<9-digit seq>`), so reading a chat with its messages is one query, and an SMS
 * chat's messages page newest first with no other index.
 *
 * Completions are serialised per chat by a turn lease and a message counter: a completion
 * first takes the lease (a conditional write: no other holder, or the holder's lease ran
 * out), runs the agent's turn, then commits the messages and the new state in one
 * transaction conditional on still holding the lease and on `message_count` being what it
 * read. A concurrent completion waits for the lease instead of running the model on a stale
 * conversation, so no message is lost and a custom function never runs for a turn that is
 * then thrown away.
 */

const CHAT_LISTING_SHARDS = 4;
const shardOf = (chatId: string): number => createHash('sha256').update(chatId).digest()[0]! % CHAT_LISTING_SHARDS;

/** How long a completion may hold a chat: longer than the function's 30 s timeout, so a live holder never loses it. */
const TURN_LEASE_MS = 35_000;
/** How long a completion waits for another to finish before 429 (inside API Gateway's 30 s). */
const TURN_WAIT_MS = 20_000;

export interface ChatItem {
  pk: string;
  sk: string;
  gsi1pk: string;
  gsi1sk: string;
  type: 'chat';
  workspace_id: string;
  chat_id: string;
  chat_type: ChatType;
  chat_status: ChatStatus;
  agent_id: string;
  agent_version: number;
  metadata?: unknown;
  retell_llm_dynamic_variables: Record<string, string>;
  override_dynamic_variables?: Record<string, string>;
  custom_attributes?: Record<string, string | number | boolean>;
  data_storage_setting?: 'everything' | 'everything_except_pii' | 'basic_attributes_only';
  /** The data storage setting last applied to what the chat stores once it was over (data-storage.ts); removed by a new analysis. Never answered. */
  data_storage_applied?: 'everything_except_pii' | 'basic_attributes_only';
  created_timestamp: number;
  start_timestamp: number;
  end_timestamp?: number;
  duration_ms?: number;
  /** How many messages the chat has: message i (1-based) is `keys.chatMessage(chat_id, i)`. */
  message_count: number;
  /** The conversation runtime's state without its history (rebuilt from the messages each turn). */
  conversation: Record<string, unknown>;
  chat_analysis?: ChatAnalysis;
  /** Set when the chat ends (cost.ts); `combined_cost` beside it for the listing index's filter. */
  chat_cost?: ChatCost;
  combined_cost?: number;
  /** Flattened for the listing index. */
  user_sentiment?: string;
  chat_successful?: boolean;
  /** Counts analyses: each write of one is conditional on the count it read. */
  analysis_seq?: number;
  /** The completion holding the chat, and until when. */
  turn_token?: string;
  turn_until?: number;
  /** SMS chats: the two numbers (outbound: from the workspace number; inbound: to it) and who started it. */
  from_number?: string;
  to_number?: string;
  direction?: 'inbound' | 'outbound';
  /** SMS chats: the conversations-by-party entry (the other party's number), so a contact's timeline shows them. */
  gsi2pk?: string;
  gsi2sk?: string;
}

export type MessageItem = ChatMessage & {
  pk: string;
  sk: string;
  seq: number;
  message_id: string;
  created_timestamp: number;
  /** SMS chats: the rank of `sms_status` (delivery reports only move it forward). */
  sms_status_rank?: number;
};

export const chatNotFound = () => notFound('Chat not found');

/** The chat item: keyed by its ID alone (webhooks and SMS reports find it without a workspace). */
const chats = defineEntity<ChatItem, [chatId: string]>({ key: keys.chat, notFound: chatNotFound });
/** A chat message, by chat ID and its 1-based number. */
const messages = defineEntity<MessageItem, [chatId: string, seq: number]>({ key: keys.chatMessage, notFound: () => notFound('Message not found') });
const chatEnded = (chatId: string) => badRequest(`Chat ${chatId} has ended: no more completions`);

/** A new chat item with its keys; `party` (an SMS chat's other number) files it in the conversations-by-party index. */
export function newChatItem(fields: Omit<ChatItem, 'pk' | 'sk' | 'gsi1pk' | 'gsi1sk' | 'type'>, party?: string): ChatItem {
  return {
    ...keys.chat(fields.chat_id),
    ...keys.chatListing(fields.workspace_id, shardOf(fields.chat_id)),
    gsi1sk: fields.chat_id,
    ...(party ? keys.partyConversation(fields.workspace_id, party, fields.created_timestamp, fields.chat_id) : {}),
    type: 'chat',
    ...fields,
  };
}

const messagePut = (chatId: string, message: MessageItem | (ChatMessage & { seq: number })): TransactOp => ({
  Put: { Item: { ...message, ...keys.chatMessage(chatId, message.seq) }, ConditionExpression: 'attribute_not_exists(pk)' },
});

/** The counter of the listing shard a chat is in (platform/store/listing-count.ts). */
const chatCounter = (workspaceId: string, chatId: string) => keys.listingCount(workspaceId, 'CHAT', shardOf(chatId));

/** A new chat with its first messages, counted in its workspace's total, all or nothing. */
export async function putNewChat(chat: ChatItem, messages: readonly MessageItem[]): Promise<void> {
  await transactCounted([
    { Put: { Item: { ...chat, [COUNTED]: true }, ConditionExpression: 'attribute_not_exists(pk)' } },
    ...messages.map((message) => messagePut(chat.chat_id, message)),
    countChange(chatCounter(chat.workspace_id, chat.chat_id), 1),
  ]);
}

/** How many chats the workspace has (its listing counters: one Query, whatever the history's size). */
export function countChats(workspaceId: string): Promise<number> {
  return countedTotal(keys.listingCounts(workspaceId, 'CHAT'));
}

/** countChats once the counters hold every chat of the workspace; undefined before its backfill. */
export function countChatsIfComplete(workspaceId: string): Promise<number | undefined> {
  return completeCountedTotal(keys.listingCounts(workspaceId, 'CHAT'), keys.listingCountsComplete(workspaceId));
}

/** A chat of this workspace, or 404 (another workspace's chat is as absent as an unknown one). */
export async function getChatItem(workspaceId: string, chatId: string): Promise<ChatItem> {
  const item = await chats.get(chatId);
  if (!item || item.workspace_id !== workspaceId) throw chatNotFound();
  return item;
}

/** A chat's messages in order. */
export async function chatMessages(chatId: string): Promise<MessageItem[]> {
  return queryAll<MessageItem>(keys.chatMessages(chatId));
}

/** A page of a chat's messages, newest first (SMS message lists): before `beforeSeq` when given. */
export async function newestMessages(chatId: string, limit: number, beforeSeq?: number): Promise<{ items: MessageItem[]; more: boolean }> {
  const partition = keys.chatMessages(chatId);
  const page = await table.queryPage<MessageItem>({
    KeyConditionExpression:
      beforeSeq === undefined ? 'pk = :pk AND begins_with(sk, :prefix)' : 'pk = :pk AND sk BETWEEN :prefix AND :before',
    ExpressionAttributeValues: {
      ':pk': partition.pk,
      ':prefix': partition.skPrefix,
      ...(beforeSeq === undefined ? {} : { ':before': keys.chatMessage(chatId, Math.max(0, beforeSeq - 1)).sk }),
    },
    ScanIndexForward: false,
    Limit: limit,
  });
  return { items: page.items, more: page.lastKey !== undefined };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Takes the chat's turn lease for one completion. Waits (jittered polling) while another
 * completion holds it, up to TURN_WAIT_MS, then 429. An unknown chat is 404, an ended one 400.
 */
export async function claimTurn(workspaceId: string, chatId: string, token: string): Promise<ChatItem> {
  const deadline = Date.now() + TURN_WAIT_MS;
  for (let attempt = 0; ; attempt++) {
    const now = Date.now();
    const claimed = await chats.update(
      [chatId],
      {
        UpdateExpression: 'SET turn_token = :token, turn_until = :until',
        ConditionExpression:
          'attribute_exists(pk) AND workspace_id = :ws AND chat_status = :ongoing AND (attribute_not_exists(turn_token) OR turn_until < :now)',
        ExpressionAttributeValues: { ':token': token, ':until': now + TURN_LEASE_MS, ':ws': workspaceId, ':ongoing': 'ongoing', ':now': now },
      },
      (old) => {
        if (!old || old.workspace_id !== workspaceId) throw chatNotFound();
        if (old.chat_status !== 'ongoing') throw chatEnded(chatId);
        // Another completion holds the lease.
        return undefined;
      },
    );
    if (claimed) return claimed;
    if (Date.now() > deadline) {
      throw new TooManyRequests(`Chat ${chatId} is busy with another completion; retry shortly`, 1, 'chat_busy');
    }
    await sleep(Math.min(200, 20 + attempt * 10) * (0.5 + Math.random()));
  }
}

/** Gives the lease back without writing anything else (the turn failed). */
export async function releaseTurn(chatId: string, token: string): Promise<void> {
  // Not the holder any more (its lease ran out and another took it): nothing to give back.
  await chats.update([chatId], {
    UpdateExpression: 'REMOVE turn_token, turn_until',
    ConditionExpression: 'turn_token = :token',
    ExpressionAttributeValues: { ':token': token },
  });
}

/**
 * Commits one completion: the new messages (numbered after `chat.message_count`), the new
 * state and any other fields, and the lease's release, in one transaction conditional on
 * the lease, the counter and the chat still being ongoing. Answers the chat as written.
 */
export async function commitTurn(
  chat: ChatItem,
  token: string,
  messages: readonly MessageItem[],
  fields: Partial<ChatItem>,
): Promise<ChatItem> {
  const count = chat.message_count + messages.length;
  const set: Record<string, unknown> = { ...fields, message_count: count };
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':token': token, ':count': chat.message_count, ':ongoing': 'ongoing' };
  const sets = Object.entries(set)
    .filter(([, value]) => value !== undefined)
    .map(([field, value], i) => {
      names[`#f${i}`] = field;
      values[`:f${i}`] = value;
      return `#f${i} = :f${i}`;
    });
  names['#status'] = 'chat_status';
  if (messages.length + 1 > 100) throw badRequest('The agent produced more messages in one turn than a chat can store at once (99)');
  try {
    await table.transact([
      {
        Update: {
          Key: keys.chat(chat.chat_id),
          UpdateExpression: `SET ${sets.join(', ')} REMOVE turn_token, turn_until`,
          ConditionExpression: 'turn_token = :token AND message_count = :count AND #status = :ongoing',
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      },
      ...messages.map((message) => messagePut(chat.chat_id, message)),
    ]);
  } catch (error) {
    if (!(error instanceof TransactionCancelled)) throw error;
    const now = await chats.get(chat.chat_id);
    if (!now) throw chatNotFound();
    if (now.chat_status !== 'ongoing') throw chatEnded(chat.chat_id);
    throw conflict(`Chat ${chat.chat_id} changed during the completion (its turn lease ran out); retry`);
  }
  const written = { ...chat, ...set } as ChatItem;
  delete written.turn_token;
  delete written.turn_until;
  return written;
}

/** Ends an ongoing chat (stamping the end); answers the chat as written, or undefined when it was not ongoing. */
export async function markEnded(workspaceId: string, chatId: string, nowMs: number): Promise<ChatItem | undefined> {
  return chats.update(
    [chatId],
    {
      UpdateExpression: 'SET chat_status = :ended, end_timestamp = :now, duration_ms = :now - start_timestamp',
      ConditionExpression: 'attribute_exists(pk) AND workspace_id = :ws AND chat_status = :ongoing',
      ExpressionAttributeValues: { ':ended': 'ended', ':ongoing': 'ongoing', ':now': nowMs, ':ws': workspaceId },
    },
    (old) => {
      if (!old || old.workspace_id !== workspaceId) throw chatNotFound();
      return undefined;
    },
  );
}

/**
 * Marks an ongoing chat `error` (an SMS chat whose opening message the carrier would not
 * take): ended, no more completions. Answers whether it was ongoing.
 */
export async function markChatError(chatId: string, nowMs = Date.now()): Promise<boolean> {
  const marked = await chats.update([chatId], {
    UpdateExpression: 'SET chat_status = :error, end_timestamp = :now, duration_ms = :now - start_timestamp',
    ConditionExpression: 'attribute_exists(pk) AND chat_status = :ongoing',
    ExpressionAttributeValues: { ':error': 'error', ':ongoing': 'ongoing', ':now': nowMs },
  });
  return marked !== undefined;
}

/** Stores an analysis, conditional on the analysis count read (a concurrent rerun's write is not overwritten by an older one). */
export async function storeAnalysis(chat: ChatItem, analysis: ChatAnalysis): Promise<ChatItem | undefined> {
  const seq = chat.analysis_seq ?? 0;
  return chats.update([chat.chat_id], {
    // A new analysis is stored as said: the data storage setting is applied to it again (chats.ts).
    UpdateExpression: 'SET chat_analysis = :analysis, user_sentiment = :sentiment, chat_successful = :successful, analysis_seq = :next REMOVE data_storage_applied',
    ConditionExpression: `attribute_exists(pk) AND ${seq === 0 ? '(attribute_not_exists(analysis_seq) OR analysis_seq = :seq)' : 'analysis_seq = :seq'}`,
    ExpressionAttributeValues: {
      ':analysis': analysis,
      ':sentiment': analysis.user_sentiment ?? 'Unknown',
      ':successful': analysis.chat_successful ?? false,
      ':seq': seq,
      ':next': seq + 1,
    },
  });
}

/**
 * Stores the chat's cost, unless a larger one is stored already: a cost only grows (an SMS
 * chat's last replies are sent after its end), so a writer that read less never overwrites
 * one that read more.
 */
export async function storeChatCost(chatId: string, cost: ChatCost): Promise<boolean> {
  const stored = await chats.update([chatId], {
    UpdateExpression: 'SET chat_cost = :cost, combined_cost = :combined',
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(combined_cost) OR combined_cost < :combined)',
    ExpressionAttributeValues: { ':cost': cost, ':combined': cost.combined_cost },
  });
  return stored !== undefined;
}

/**
 * Sets an SMS chat message's carrier fields and delivery status, only forward: conditional
 * on the stored rank being lower (or absent), so a late or repeated report never moves a
 * `delivered` message back to `sent`. Answers whether it was written.
 */
export async function setMessageSmsStatus(
  chatId: string,
  seq: number,
  fields: { provider: string; provider_message_id: string; sms_status: string; rank: number; sms_error_code?: string },
): Promise<boolean> {
  const written = await messages.update([chatId, seq], {
    UpdateExpression: `SET provider = :provider, provider_message_id = :sid, sms_status = :status, sms_status_rank = :rank${
      fields.sms_error_code ? ', sms_error_code = :code' : ''
    }`,
    ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(sms_status_rank) OR sms_status_rank < :rank)',
    ExpressionAttributeValues: {
      ':provider': fields.provider,
      ':sid': fields.provider_message_id,
      ':status': fields.sms_status,
      ':rank': fields.rank,
      ...(fields.sms_error_code ? { ':code': fields.sms_error_code } : {}),
    },
  });
  return written !== undefined;
}

/** Sets fields on a chat of this workspace (update-chat): values are set, nulls removed, undefined left alone. */
export async function updateChatFields(workspaceId: string, chatId: string, fields: Record<string, unknown>): Promise<ChatItem> {
  const { set, remove } = fieldChanges(fields);
  if (Object.keys(set).length === 0 && remove.length === 0) return getChatItem(workspaceId, chatId);
  const updated = await chats.setFields(
    [chatId],
    {
      set,
      remove,
      condition: 'attribute_exists(pk) AND #ws = :ws',
      names: { '#ws': 'workspace_id' },
      values: { ':ws': workspaceId },
    },
    () => {
      throw chatNotFound();
    },
  );
  return updated!;
}

/**
 * Sets (and removes) fields of a chat that is over, conditional on its status and analysis
 * count as read (data-storage.ts: an analysis written in between is not overwritten).
 * Answers the chat as written, or undefined when it changed under the write.
 */
export async function writeEndedChat(chat: ChatItem, set: Record<string, unknown>, remove: readonly string[]): Promise<ChatItem | undefined> {
  return chats.setFields([chat.chat_id], {
    set,
    remove,
    condition: `attribute_exists(pk) AND #status = :status AND ${chat.analysis_seq ? '#aseq = :aseq' : '(attribute_not_exists(#aseq) OR #aseq = :aseq)'}`,
    names: { '#status': 'chat_status', '#aseq': 'analysis_seq' },
    values: { ':status': chat.chat_status, ':aseq': chat.analysis_seq ?? 0 },
  });
}

/** Sets fields of stored messages (scrubbing), each only while the message exists (one deleted meanwhile stays deleted). */
export async function rewriteMessages(chatId: string, rewrites: readonly { seq: number; fields: Record<string, unknown> }[]): Promise<void> {
  for (const { seq, fields } of rewrites) {
    if (Object.keys(fields).length === 0) continue;
    await messages.setFields([chatId, seq], { set: fields });
  }
}

/** Deletes a chat's messages (the chat's own item stays): deleteChatItems, and basic_attributes_only once the chat is over. */
export async function deleteChatMessages(chatId: string): Promise<void> {
  const messages = await queryAll<{ pk: string; sk: string }>(keys.chatMessages(chatId), 'pk, sk');
  await table.batchDelete(messages.map(({ pk, sk }) => ({ pk, sk })));
}

/** Deletes a chat of this workspace, then its messages (the chat disappears for every reader with its item). */
export async function deleteChatItems(workspaceId: string, chatId: string): Promise<ChatItem> {
  const owner = { expression: 'workspace_id = :ws', values: { ':ws': workspaceId } };
  for (let attempt = 0; attempt < 5; attempt++) {
    // Out of the workspace's total first (once, however many deletes race), then the item,
    // only while unmarked: one counted in between (the listing backfill) is uncounted again first.
    await uncount(keys.chat(chatId), chatCounter(workspaceId, chatId), owner);
    const old = await chats.take(
      [chatId],
      { expression: 'attribute_exists(pk) AND workspace_id = :ws AND attribute_not_exists(#counted)', names: { '#counted': COUNTED }, values: owner.values },
      (current) => {
        if (current?.workspace_id === workspaceId) return undefined;
        throw chatNotFound();
      },
    );
    if (old) {
      await deleteChatMessages(chatId);
      return old;
    }
  }
  throw unavailable('The chat is being changed too fast to delete; retry', 1);
}

/** The workspace's chat listing as the listing backfill counts it (shared/platform/store/listing-count.ts). */
export function countedChatListing(workspaceId: string): CountedListing {
  return {
    partitions: chatListingPartitions(workspaceId),
    idAttribute: 'chat_id',
    item: keys.chat,
    counter: (chatId) => chatCounter(workspaceId, chatId),
    owner: { expression: 'workspace_id = :ws', values: { ':ws': workspaceId } },
  };
}

export type ChatListingEntry = Pick<ChatItem, 'pk' | 'sk' | 'chat_id'> & Record<string, unknown>;

/** The listing index partitions (gsi1) of a workspace's chats. */
export function chatListingPartitions(workspaceId: string): string[] {
  return Array.from({ length: CHAT_LISTING_SHARDS }, (_, shard) => keys.chatListing(workspaceId, shard).gsi1pk);
}
