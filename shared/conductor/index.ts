/**
 * The assistant ("conductor", docs/assistant.md): sessions/ (sessions, messages, turns),
 * tools/ (Parley's own routes, run as the caller), model/ (offline rules or the language
 * model), walkthrough/, credits/ (the credits' interface).
 */
export { createSession, deleteSession, getSession, listSessions, postMessage, putAttachments, turnEvents } from './sessions/index.ts';
export { capabilities } from './tools/index.ts';
export { walkthrough } from './walkthrough/index.ts';
