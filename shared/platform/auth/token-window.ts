import { config } from '../config.ts';
import { tooManyRequests } from '../errors.ts';
import { keys } from '../store/keys.ts';
import { countRequest, uncountRequest } from './request-counter.ts';
import { rateHeaders, readWindow } from './rate-window.ts';

/** What a public route's per-token window counts: a share token (by hash), a public chat, a web call's log. */
export type TokenKind = 'share' | 'chat' | 'call';

const TOKEN_WINDOW_TTL_SECONDS = 180;

/**
 * Counts one request in the token's own sliding minute (PUBLIC_RATE_LIMIT_PER_TOKEN), beside
 * the per-IP window the gate already counted: 429 with `retry-after` over it, the refused
 * request taken back out (as the key windows do). `id` is never a raw secret: a share token
 * arrives here as its SHA-256, chats and calls by their IDs.
 */
export async function countTokenRequest(kind: TokenKind, id: string, nowMs = Date.now()): Promise<Record<string, string>> {
  const key = keys.tokenRateWindow(kind, id);
  const item = await countRequest(key, nowMs, { mustExist: false, ttlSeconds: TOKEN_WINDOW_TTL_SECONDS });
  const window = readWindow(item ?? {}, nowMs, config.PUBLIC_RATE_LIMIT_PER_TOKEN);
  if (!window.allowed) {
    await uncountRequest(key, nowMs);
    const error = tooManyRequests(
      `Rate limit exceeded for this ${kind === 'share' ? 'share link' : kind}: ${window.limit} requests per minute. Retry in ${window.retryAfterSeconds}s.`,
      window.retryAfterSeconds,
    );
    Object.assign(error.headers, rateHeaders(window), error.headers);
    throw error;
  }
  return rateHeaders(window);
}
