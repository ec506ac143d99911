import { execFile } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../shared/platform/errors.ts';
import { virtualTime } from '../support/virtual-time.ts';

// Settings are read at load: a short default wait, so the default is observable quickly.
process.env.CPS_MAX_WAIT_MS = '700';
const { config } = await import('../../shared/platform/config.ts');
const { takeAvailableDialTokens, takeDialToken } = await import('../../shared/numbers/cps-limiter.ts');
const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
const { db, tableName } = await import('../../shared/platform/store/db.ts');
const { keys } = await import('../../shared/platform/store/keys.ts');

/** A fresh number per test, so buckets never carry over. */
const newNumber = () => `+1415${String(randomInt(10_000_000)).padStart(7, '0')}`;

/** Each test's takers on virtual time of their own (test/support/virtual-time.ts). */
let time = virtualTime();
beforeEach(() => {
  time = virtualTime();
});

type Outcome = { admitted: true; takenAt: number; waitedMs: number; elapsed: number } | { admitted: false; error: ApiError; elapsed: number };

/** Real time, for takers that share the table with other processes (which read the wall clock). */
const wallTime: typeof time = {
  clock: { now: () => Date.now(), sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) },
  task: (work) => work(),
};

function take(number: string, cps: number, maxWaitMs?: number, on = time): Promise<Outcome> {
  const { clock } = on;
  return on.task(async () => {
    const started = clock.now();
    try {
      const token = await takeDialToken(number, cps, maxWaitMs === undefined ? { clock } : { maxWaitMs, clock });
      return { admitted: true, ...token, elapsed: clock.now() - started };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return { admitted: false, error, elapsed: clock.now() - started };
    }
  });
}

/** A taker that finds the token it waits for taken wakes this much after it is due, at most. */
const WAKE_JITTER_MS = 5;

const admittedTimes = (outcomes: Outcome[]) =>
  outcomes.flatMap((o) => (o.admitted ? [o.takenAt] : [])).sort((a, b) => a - b);

/** No one-second window (half-open) holds more than `cps` admissions. */
function expectAtMostPerSecond(times: number[], cps: number) {
  for (let i = 0; i + cps < times.length; i++) expect(times[i + cps]! - times[i]!).toBeGreaterThanOrEqual(1000);
}

describe('calls-per-second token bucket', () => {
  it('reads CPS_MAX_WAIT_MS at load (default 5000)', () => {
    expect(config.CPS_MAX_WAIT_MS).toBe(700);
  });

  it('admits exactly cps_limit of 30 concurrent takers at once, the next cps_limit a second later, and refuses the rest', async () => {
    const number = newNumber();
    const started = time.clock.now();
    // 1,950 ms of patience reaches the tokens that come back after one second, never those after two.
    const outcomes = await Promise.all(Array.from({ length: 30 }, () => take(number, 4, 1950)));

    const times = admittedTimes(outcomes);
    expect(times).toHaveLength(8);
    expect(outcomes.filter((o) => !o.admitted)).toHaveLength(22);
    // The first four went at once, within the first second; the next four only once their tokens came back.
    expect(times[3]! - started).toBe(0);
    expect(times[4]! - times[0]!).toBeGreaterThanOrEqual(1000);
    expect(times[7]! - times[0]!).toBeLessThanOrEqual(1000 + WAKE_JITTER_MS);
    expectAtMostPerSecond(times, 4);

    for (const outcome of outcomes) {
      // Nobody waits beyond the limit: those refused gave up once the second four were taken.
      expect(outcome.elapsed).toBeLessThanOrEqual(1000 + WAKE_JITTER_MS);
      if (outcome.admitted) continue;
      expect(outcome.error.status).toBe(429);
      expect(outcome.error.message).toBe(`Calls-per-second limit of 4 reached for ${number}; retry shortly`);
      expect(Number(outcome.error.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(outcome.error.headers['retry-after'])).toBeLessThanOrEqual(2);
    }
  });

  it('never over-admits under a sustained stream of takers over several seconds', async () => {
    const number = newNumber();
    const outcomes: Promise<Outcome>[] = [];
    await time.task(async () => {
      for (let wave = 0; wave < 5; wave++) {
        outcomes.push(...Array.from({ length: 6 }, () => take(number, 3, 5000)));
        await time.clock.sleep(300);
      }
    });
    const settled = await Promise.all(outcomes);
    const times = admittedTimes(settled);
    expectAtMostPerSecond(times, 3);
    // Every taker is either admitted or refused with the 429; none disappears.
    expect(settled.filter((o) => o.admitted).length + settled.filter((o) => !o.admitted && o.error.status === 429).length).toBe(30);
  });

  it('holds across processes sharing the table (as Lambda instances do)', async () => {
    const number = newNumber();
    const limiter = new URL('../../shared/numbers/cps-limiter.ts', import.meta.url).href;
    const dir = mkdtempSync(join(tmpdir(), 'parley-cps-'));
    const script = join(dir, 'takers.mts');
    // Each process takes 10 tokens at once from the same number, at the same agreed moment.
    writeFileSync(
      script,
      `const { takeDialToken } = await import(${JSON.stringify(limiter)});
const startAt = Number(process.env.START_AT);
await new Promise((r) => setTimeout(r, Math.max(0, startAt - Date.now())));
const outcomes = await Promise.all(Array.from({ length: 10 }, () =>
  takeDialToken(process.env.NUMBER, 4, { maxWaitMs: 1900 }).then((t) => t.takenAt, (e) => (e.status === 429 ? null : String(e)))));
console.log(JSON.stringify(outcomes));
`,
    );
    const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
    const startAt = Date.now() + 4000;
    const child = () =>
      new Promise<Array<number | null>>((resolve, reject) =>
        execFile(tsx, [script], { env: { ...process.env, NUMBER: number, START_AT: String(startAt) } }, (error, stdout) =>
          error ? reject(error) : resolve(JSON.parse(stdout.trim().split('\n').pop()!)),
        ),
      );
    const here = (async () => {
      await new Promise((resolve) => setTimeout(resolve, startAt - Date.now()));
      return Promise.all(Array.from({ length: 10 }, () => take(number, 4, 1900, wallTime)));
    })();
    const [first, second, own] = await Promise.all([child(), child(), here]);

    const times = [...first, ...second, ...admittedTimes(own)].filter((t): t is number => typeof t === 'number').sort((a, b) => a - b);
    for (const outcome of [...first, ...second]) expect(outcome === null || typeof outcome === 'number').toBe(true);
    expectAtMostPerSecond(times, 4);
    // How many get through depends on when each process really started (a slow start is a
    // later deadline); that no second ever holds more than four does not.
    expect(times.length).toBeGreaterThanOrEqual(4);
  });

  it('takes the tokens free now without waiting, and says when the next comes back', async () => {
    const number = newNumber();
    const { clock } = time;
    const start = clock.now();
    const first = await takeAvailableDialTokens(number, 3, 5, { clock });
    expect(first.tokens).toHaveLength(3);
    expect(first.nextAt).toBe(start + 1000);
    // Nothing free: none taken, no wait, and the time the first returns.
    const none = await takeAvailableDialTokens(number, 3, 2, { clock });
    expect(none).toEqual({ tokens: [], nextAt: start + 1000 });
    expect(clock.now()).toBe(start);
    // Several schedulers at once a second later: the three tokens between them, no more.
    await time.task(() => clock.sleep(1000));
    const concurrent = await Promise.all(Array.from({ length: 4 }, () => takeAvailableDialTokens(number, 3, 2, { clock })));
    expect(concurrent.reduce((sum, taken) => sum + taken.tokens.length, 0)).toBeLessThanOrEqual(3);
    // And a single take then finds none left before the second is out.
    expect((await take(number, 3, 0)).admitted).toBe(false);
    // Less wanted than free: the rest stay free, so more may be taken now.
    const other = newNumber();
    expect((await takeAvailableDialTokens(other, 4, 1, { clock })).nextAt).toBe(clock.now());
  });

  it('keeps each number to itself', async () => {
    const busy = newNumber();
    const quiet = newNumber();
    const burst = await Promise.all(Array.from({ length: 4 }, () => take(busy, 4, 0)));
    expect(burst.every((o) => o.admitted)).toBe(true);
    expect((await take(busy, 4, 0)).admitted).toBe(false);

    // The busy number's empty bucket does not touch the other's: all four of its tokens are there.
    const other = await Promise.all(Array.from({ length: 4 }, () => take(quiet, 4, 0)));
    expect(other.every((o) => o.admitted)).toBe(true);
    expect((await take(quiet, 4, 0)).admitted).toBe(false);
  });

  it('refuses at once with the 429 and its retry-after when the next token is due after the wait allowed', async () => {
    const number = newNumber();
    expect((await take(number, 1, 0)).admitted).toBe(true);
    const refused = await take(number, 1, 0);
    expect(refused.admitted).toBe(false);
    if (refused.admitted) return;
    expect(refused.error.status).toBe(429);
    expect(refused.error.message).toBe(`Calls-per-second limit of 1 reached for ${number}; retry shortly`);
    expect(refused.error.headers).toEqual({ 'retry-after': '1' });
    expect(refused.elapsed).toBe(0);
  });

  it('waits for the next token when it is due within the wait allowed', async () => {
    const number = newNumber();
    const first = await take(number, 1, 0);
    const second = await take(number, 1, 3000);
    expect(first.admitted && second.admitted).toBe(true);
    if (!first.admitted || !second.admitted) return;
    expect(second.takenAt - first.takenAt).toBeGreaterThanOrEqual(1000);
    expect(second.takenAt - first.takenAt).toBeLessThanOrEqual(1000 + WAKE_JITTER_MS);
    expect(second.waitedMs).toBe(second.takenAt - first.takenAt);
    expect(second.elapsed).toBe(second.waitedMs);
  });

  it('uses CPS_MAX_WAIT_MS when no wait is given', async () => {
    const number = newNumber();
    expect((await take(number, 1)).admitted).toBe(true);
    // The token comes back in 1,000 ms, after the 700 ms allowed: refused without waiting.
    const refused = await take(number, 1);
    expect(refused.admitted).toBe(false);
    expect(refused.elapsed).toBe(0);
  });

  it('holds the bucket as one item per number in the table, expiring when idle', async () => {
    const number = newNumber();
    await Promise.all([take(number, 2, 0), take(number, 2, 0)]);
    const { Item } = await db.send(new GetCommand({ TableName: tableName, Key: keys.cpsBucket(number), ConsistentRead: true }));
    expect(Item).toMatchObject({ pk: `CPS#${number}`, sk: 'CPS', t0: expect.any(Number), t1: expect.any(Number) });
    expect(Item!.expires_at).toBeGreaterThan(Date.now() / 1000);
  });

  it('rejects a cps_limit that is not a whole number from 1 to 1000', async () => {
    for (const bad of [0, -1, 1.5, 1001, Number.NaN]) {
      await expect(takeDialToken(newNumber(), bad)).rejects.toThrow(/cps_limit must be a whole number from 1 to 1000/);
    }
  });
});
