import { newTimeOrderedId } from '../../platform/ids.ts';
import type { Caller } from '../tools/dispatch.ts';
import { checkAttachments } from './attachments.ts';
import type { Attachment, CreateSessionInput, Message, Session } from './schemas.ts';
import { createSessionItem, deleteSessionItem, getSessionItem, listMessageItems, pageSessionItems, setSessionAttachments, type MessageItem, type SessionItem } from './store.ts';

/* The assistant's sessions (docs/assistant.md, "Sessions"); a turn is in turn.ts. */

function toSession(item: SessionItem): Session {
  return {
    session_id: item.session_id,
    title: item.title ?? null,
    attachments: item.attachments,
    pending_action: item.pending_action ?? null,
    message_count: item.message_count,
    created_timestamp: item.created_timestamp,
    last_modification_timestamp: item.last_modification_timestamp,
  };
}

export function toMessage(item: MessageItem): Message {
  const { workspace_id: _workspace, session_id: _session, pk: _pk, sk: _sk, ...message } = item as MessageItem & { pk?: string; sk?: string };
  return message;
}

export async function createSession(caller: Caller, body: CreateSessionInput, nowMs = Date.now()): Promise<Session> {
  await checkAttachments(caller, body.attachments);
  const item: SessionItem = {
    workspace_id: caller.principal.workspaceId,
    session_id: newTimeOrderedId('conductorSession', nowMs),
    ...(body.title === undefined ? {} : { title: body.title }),
    attachments: body.attachments,
    message_count: 0,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
  };
  await createSessionItem(item);
  return toSession(item);
}

export async function listSessions(workspaceId: string, query: { limit: number; pagination_key?: string }) {
  const page = await pageSessionItems(workspaceId, { limit: query.limit, after: query.pagination_key });
  const last = page.items.at(-1);
  return { items: page.items.map(toSession), has_more: page.hasMore, ...(page.hasMore && last ? { pagination_key: last.session_id } : {}) };
}

export async function getSession(workspaceId: string, sessionId: string) {
  const item = await getSessionItem(workspaceId, sessionId);
  const messages = await listMessageItems(workspaceId, sessionId);
  return { ...toSession(item), messages: messages.map(toMessage) };
}

export const deleteSession = (workspaceId: string, sessionId: string): Promise<void> => deleteSessionItem(workspaceId, sessionId);

/** Replaces what the session works on; any attachment the caller cannot read refuses the whole list. */
export async function putAttachments(caller: Caller, sessionId: string, attachments: Attachment[], nowMs = Date.now()): Promise<Session> {
  await getSessionItem(caller.principal.workspaceId, sessionId);
  await checkAttachments(caller, attachments);
  return toSession(await setSessionAttachments(caller.principal.workspaceId, sessionId, attachments, nowMs));
}
