import { conflict, notFound } from '../../platform/errors.ts';
import { keys } from '../../platform/store/keys.ts';
import { defineEntity, table, TransactionCancelled, type TransactOp } from '../../platform/store/table.ts';
import type { Attachment, Message, PendingAction } from './schemas.ts';

/*
 * The assistant's items (docs/data-model.md): sessions in the workspace's `WS#<ws>#CONDUCTOR`
 * partition (`SESSION#<id>`, time-ordered IDs, so the list is newest first) beside the
 * walkthrough's `PROGRESS` marker; a session's messages in `WS#<ws>#CONDUCTOR#<session>`
 * (`MESSAGE#<id>`, time-ordered, read oldest first). A turn is one transaction: the
 * session's count and pending action (conditional on the count read, so two turns at once
 * cannot both land), its two messages, and the audit entries of what its tools changed.
 */

export interface SessionItem {
  workspace_id: string;
  session_id: string;
  title?: string;
  attachments: Attachment[];
  pending_action?: PendingAction;
  message_count: number;
  created_timestamp: number;
  last_modification_timestamp: number;
}

export type MessageItem = Message & { workspace_id: string; session_id: string };

const sessionNotFound = (sessionId: string) => notFound(`Assistant session ${sessionId} not found`);

const sessions = defineEntity<SessionItem & { pk: string; sk: string }, [workspaceId: string, sessionId: string]>({
  key: keys.conductorSession,
  notFound: (_workspaceId, sessionId) => sessionNotFound(sessionId),
});

export const getSessionItem = (workspaceId: string, sessionId: string): Promise<SessionItem> => sessions.mustGet(workspaceId, sessionId);

export async function createSessionItem(item: SessionItem): Promise<void> {
  await sessions.create(item, item.workspace_id, item.session_id);
}

/** A page of the workspace's sessions, newest first, after `after`. */
export async function pageSessionItems(workspaceId: string, options: { limit: number; after?: string }): Promise<{ items: SessionItem[]; hasMore: boolean }> {
  const partition = keys.conductorSessions(workspaceId);
  const page = await table.queryPage<SessionItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: false,
    Limit: options.limit + 1,
    ...(options.after ? { ExclusiveStartKey: keys.conductorSession(workspaceId, options.after) } : {}),
  });
  return { items: page.items.slice(0, options.limit), hasMore: page.items.length > options.limit };
}

export async function setSessionAttachments(workspaceId: string, sessionId: string, attachments: Attachment[], nowMs: number): Promise<SessionItem> {
  const written = await sessions.setFields([workspaceId, sessionId], { set: { attachments, last_modification_timestamp: nowMs } }, () => {
    throw sessionNotFound(sessionId);
  });
  return written!;
}

/** A session's messages, oldest first. */
export function listMessageItems(workspaceId: string, sessionId: string): Promise<MessageItem[]> {
  const partition = keys.conductorMessages(workspaceId, sessionId);
  return table.queryAll<MessageItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
}

/**
 * Writes a turn: its messages, the session's new count and pending action (or none), and
 * `extra` (audit entries) in one transaction, conditional on the count read: a concurrent
 * turn of the same session answers 409; a deleted session 404.
 */
export async function recordTurn(
  session: SessionItem,
  turn: { messages: MessageItem[]; pending?: PendingAction; nowMs: number; extra: TransactOp[] },
): Promise<SessionItem> {
  const { workspace_id: workspaceId, session_id: sessionId } = session;
  const messageCount = session.message_count + turn.messages.length;
  const update: TransactOp = {
    Update: {
      Key: keys.conductorSession(workspaceId, sessionId),
      UpdateExpression: `SET message_count = :count, last_modification_timestamp = :now${turn.pending ? ', pending_action = :pending' : ''}${turn.pending ? '' : ' REMOVE pending_action'}`,
      ConditionExpression: 'attribute_exists(pk) AND message_count = :read',
      ExpressionAttributeValues: { ':count': messageCount, ':now': turn.nowMs, ':read': session.message_count, ...(turn.pending ? { ':pending': turn.pending } : {}) },
    },
  };
  const puts: TransactOp[] = turn.messages.map((message) => ({
    Put: { Item: { ...message, ...keys.conductorMessage(workspaceId, sessionId, message.message_id) }, ConditionExpression: 'attribute_not_exists(pk)' },
  }));
  try {
    await table.transact([update, ...puts, ...turn.extra]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) {
      const current = await sessions.get(workspaceId, sessionId);
      if (!current) throw sessionNotFound(sessionId);
      throw conflict(`Assistant session ${sessionId} answered another message meanwhile; read it again`);
    }
    throw error;
  }
  const { pending_action: _pending, ...rest } = session;
  return { ...rest, ...(turn.pending ? { pending_action: turn.pending } : {}), message_count: messageCount, last_modification_timestamp: turn.nowMs };
}

/** Deletes a session (404 when it is not there), then its messages. */
export async function deleteSessionItem(workspaceId: string, sessionId: string): Promise<void> {
  await sessions.remove(workspaceId, sessionId);
  const messages = await listMessageItems(workspaceId, sessionId);
  await table.batchDelete(messages.map((message) => keys.conductorMessage(workspaceId, sessionId, message.message_id)));
}

interface ProgressItem {
  playground_turn_timestamp?: number;
}

/** Records that the assistant ran a playground turn (a turn stores nothing of its own). */
export async function markPlaygroundTurn(workspaceId: string, nowMs: number): Promise<void> {
  await table.update({
    Key: keys.conductorProgress(workspaceId),
    UpdateExpression: 'SET playground_turn_timestamp = if_not_exists(playground_turn_timestamp, :now)',
    ExpressionAttributeValues: { ':now': nowMs },
  });
}

export async function readProgress(workspaceId: string): Promise<ProgressItem> {
  return (await table.get<ProgressItem>(keys.conductorProgress(workspaceId), { consistent: false })) ?? {};
}
