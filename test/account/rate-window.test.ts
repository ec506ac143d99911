import { describe, expect, it } from 'vitest';
import { rateHeaders, readWindow, staleWindowAttributes } from '../../shared/platform/auth/rate-window.ts';

const MINUTE = 60_000;
const minuteStart = 29_000_000 * MINUTE;
const at = (seconds: number) => minuteStart + seconds * 1000;
const counts = (previous: number, current: number) => ({ rl_28999999: previous, rl_29000000: current });

describe('sliding one-minute window', () => {
  it('admits up to the limit within one minute', () => {
    expect(readWindow(counts(0, 10), at(30), 10)).toMatchObject({ allowed: true, remaining: 0 });
    expect(readWindow(counts(0, 11), at(30), 10)).toMatchObject({ allowed: false, remaining: 0 });
  });

  it('weights the previous minute by the share of it still inside the last 60 seconds', () => {
    // 45 s into the minute, a quarter of the previous minute still counts: 40 × 0.25 + 5 = 15.
    expect(readWindow(counts(40, 5), at(45), 20)).toMatchObject({ used: 15, remaining: 5, allowed: true });
    expect(readWindow(counts(40, 5), at(15), 20)).toMatchObject({ used: 35, allowed: false });
  });

  it('reports the seconds until the current minute closes', () => {
    expect(readWindow({}, at(15.2), 10).resetSeconds).toBe(45);
    expect(readWindow({}, at(59.9), 10).resetSeconds).toBe(1);
  });

  it('tells a refused caller when one more request fits', () => {
    // previous 20, 10 admitted now, limit 20, at 30 s: 20×(1−t)+10+1 ≤ 20 ⇒ t ≥ 0.55 ⇒ 3 s from 0.5.
    expect(readWindow(counts(20, 11), at(30), 20).retryAfterSeconds).toBe(3);
    // This minute alone is full: wait for it to close (30 s) and decay below the limit.
    expect(readWindow(counts(0, 11), at(30), 10).retryAfterSeconds).toBe(30 + 6);
  });

  it('renders the x-ratelimit headers', () => {
    expect(rateHeaders(readWindow(counts(0, 3), at(50), 600))).toEqual({
      'x-ratelimit-limit': '600',
      'x-ratelimit-remaining': '597',
      'x-ratelimit-reset': '10',
    });
  });

  it('finds counters of minutes that can no longer matter', () => {
    expect(staleWindowAttributes({ rl_28999997: 1, rl_28999998: 2, ...counts(1, 1), name: 'x' }, at(1))).toEqual([
      'rl_28999997',
      'rl_28999998',
    ]);
  });
});
