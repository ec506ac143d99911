/*
 * The spec's limits on a conversation's model context: their own module, so a domain reads
 * them without loading the conversation runtime (index.ts).
 */

/** Spec Limits: default workspace LLM token limit, and its range. */
export const DEFAULT_LLM_TOKEN_LIMIT = 32_768;
export const MIN_LLM_TOKEN_LIMIT = 1_024;
export const MAX_LLM_TOKEN_LIMIT = 131_072;
/** Spec Limits: replies are capped at 300 completion tokens. */
export const REPLY_MAX_TOKENS = 300;
