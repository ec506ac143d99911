/**
 * The system dynamic variables that say who and what a conversation is. The conversation
 * fills them last (shared/conversation/variables.ts), so a prompt that trusts
 * `{{from_number}}` gets the number the call came from, never one a request or the caller's
 * words chose; a browser's key may not pass them at all (auth/public-start.ts), since on a
 * web call `from_number` and `to_number` have no platform value to win with.
 * `current_time` is not among them: a request may pass the time written as it wants it.
 */
export const IDENTITY_VARIABLES: readonly string[] = ['call_id', 'session_type', 'from_number', 'to_number'];
