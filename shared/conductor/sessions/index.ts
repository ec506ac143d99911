/**
 * Assistant sessions: routes.ts (served by the conductor function), schemas.ts, the
 * sessions in sessions.ts, a turn in turn.ts, attachments checked in attachments.ts, the
 * items in store.ts.
 */
export { createSession, deleteSession, getSession, listSessions, putAttachments } from './sessions.ts';
export { postMessage, turnEvents } from './turn.ts';
