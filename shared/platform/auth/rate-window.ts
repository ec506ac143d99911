import { RATE_WINDOW_ATTRIBUTE, rateWindowAttribute } from '../store/keys.ts';

/**
 * Sliding one-minute window, counted per epoch minute on the limited item itself: the
 * current minute's count plus the previous minute's count weighted by how much of it
 * still lies inside the last 60 seconds. Each request is one atomic ADD, so concurrent
 * requests see distinct counts and exactly `limit` of them are admitted.
 */
const WINDOW_MS = 60_000;

export interface WindowReading {
  limit: number;
  /** Requests counted in the window, this one included. */
  used: number;
  allowed: boolean;
  remaining: number;
  /** Seconds until the current minute's counter closes. */
  resetSeconds: number;
  /** Seconds until one more request would be admitted (meaningful when not allowed). */
  retryAfterSeconds: number;
}

export function epochMinute(nowMs: number): number {
  return Math.floor(nowMs / WINDOW_MS);
}

export function readWindow(item: object, nowMs: number, limit: number): WindowReading {
  const minute = epochMinute(nowMs);
  const current = counter(item, minute);
  const previous = counter(item, minute - 1);
  const elapsed = (nowMs % WINDOW_MS) / WINDOW_MS;
  const used = previous * (1 - elapsed) + current;
  const resetSeconds = Math.max(1, Math.ceil((WINDOW_MS - (nowMs % WINDOW_MS)) / 1000));
  return {
    limit,
    used,
    allowed: used <= limit,
    remaining: Math.max(0, Math.floor(limit - used)),
    resetSeconds,
    retryAfterSeconds: retryAfter(previous, current - 1, elapsed, limit, resetSeconds),
  };
}

/** When will `previous·(1-t) + admitted + 1 ≤ limit` hold, this request not counted? */
/** Ceiling that ignores floating-point dust (3.0000000000000027 is 3). */
const ceilSeconds = (seconds: number) => Math.max(1, Math.ceil(seconds - 1e-9));

function retryAfter(previous: number, admitted: number, elapsed: number, limit: number, resetSeconds: number) {
  if (admitted + 1 <= limit) {
    if (previous <= 0) return 1;
    const neededElapsed = 1 - (limit - admitted - 1) / previous;
    return ceilSeconds((neededElapsed - elapsed) * 60);
  }
  // This minute alone is full: wait for it to close, then for it to decay as the previous one.
  const neededElapsed = admitted > 0 ? Math.max(0, 1 - (limit - 1) / admitted) : 0;
  return ceilSeconds(resetSeconds + neededElapsed * 60);
}

function counter(item: object, minute: number): number {
  const value = (item as Record<string, unknown>)[rateWindowAttribute(minute)];
  return typeof value === 'number' ? value : 0;
}

/** Counters of minutes that can no longer affect any window; removed when seen. */
export function staleWindowAttributes(item: Record<string, unknown>, nowMs: number): string[] {
  const oldestLive = epochMinute(nowMs) - 1;
  return Object.keys(item).filter((name) => {
    const match = RATE_WINDOW_ATTRIBUTE.exec(name);
    return match !== null && Number(match[1]) < oldestLive;
  });
}

export function rateHeaders(reading: WindowReading): Record<string, string> {
  return {
    'x-ratelimit-limit': String(reading.limit),
    'x-ratelimit-remaining': String(reading.remaining),
    'x-ratelimit-reset': String(reading.resetSeconds),
  };
}
