import { describe, expect, it } from 'vitest';
import { credentialPuts, issueSecret } from '../../shared/platform/auth/credentials.ts';
import { admit } from '../../shared/platform/auth/gate.ts';
import { shardShare, shardsFor } from '../../shared/platform/auth/key-shards.ts';
import { table, TransactionCancelled } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { emulateItemLimits } from '../support/item-limits.ts';

/*
 * The request gate's hot items under the target load, scaled down (docs/scale.md, "Hot items:
 * the request gate"): one key taking 100,000 requests a minute (1,667 a second) while
 * DynamoDB takes at most 1,000 writes a second on one item. Everything is divided by 50:
 * 20 writes an item a virtual second, 34 requests a virtual second, a limit of 2,000 a
 * minute, and a shard sized for 10 writes a second (500 ÷ 50), which gives the key the same
 * 4 shards as the real one. Time is the requests' own clock (`admit`'s `nowMs`), so a
 * virtual minute takes what DynamoDB Local takes to serve it, not a minute.
 */

const app = await startTestApp();

const SCALE = 50;
const WRITES_PER_ITEM_SECOND = 1_000 / SCALE;
const LIMIT = 100_000 / SCALE;
const SHARD_WRITES_PER_SECOND = 500 / SCALE;
const REQUESTS_PER_SECOND = Math.ceil(100_000 / 60 / SCALE);
/** Requests of a second arrive in groups, one after another: each group's requests at once. */
const GROUPS_PER_SECOND = 12;

async function keyWith(limit: number, shards: number) {
  const secret = await issueSecret('secret', app.workspace.workspace_id);
  await table.transact(credentialPuts(app.workspace.workspace_id, secret, { kind: 'secret', name: 'load', rate_limit_per_minute: limit }, Date.now(), shards));
  return `Bearer ${secret.value}`;
}

/** The start of a minute after the wall clock's, so the key's window starts empty. */
const nextMinute = () => (Math.floor(Date.now() / 60_000) + 2) * 60_000;

type Outcome = 'admitted' | 'refused' | 'throttled';

async function present(authorization: string, nowMs: number): Promise<Outcome> {
  try {
    await admit({ access: 'any-key' }, { sourceIp: '198.51.100.7', authorization }, nowMs);
    return 'admitted';
  } catch (error) {
    if ((error as { status?: number }).status === 429) return 'refused';
    if ((error as Error).name === 'ProvisionedThroughputExceededException') return 'throttled';
    throw error;
  }
}

/** Drives `perSecond` requests a virtual second from `startMs` for `seconds`, under the item limits. */
async function drive(authorization: string, startMs: number, seconds: number, perSecond = REQUESTS_PER_SECOND) {
  let clock = startMs;
  const limits = emulateItemLimits({ writesPerSecond: WRITES_PER_ITEM_SECOND, nowMs: () => clock });
  const counts: Record<Outcome, number> = { admitted: 0, refused: 0, throttled: 0 };
  try {
    for (let second = 0; second < seconds; second++) {
      for (let group = 0; group < GROUPS_PER_SECOND; group++) {
        clock = startMs + second * 1000 + Math.floor((group * 1000) / GROUPS_PER_SECOND);
        const size = Math.floor(((group + 1) * perSecond) / GROUPS_PER_SECOND) - Math.floor((group * perSecond) / GROUPS_PER_SECOND);
        const at = clock;
        for (const outcome of await Promise.all(Array.from({ length: size }, () => present(authorization, at)))) counts[outcome] += 1;
      }
    }
  } finally {
    limits.stop();
  }
  return { counts, limits };
}

describe('the request gate at the target load, scaled down 50 times', () => {
  it('gives the target key 4 shards, as the real one', () => {
    expect(shardsFor(LIMIT, SHARD_WRITES_PER_SECOND)).toBe(4);
    expect(shardsFor(100_000)).toBe(4);
    expect(shardsFor(30_000)).toBe(1);
  });

  it('throttles the unsharded design: one item takes every request', async () => {
    const { counts, limits } = await drive(await keyWith(LIMIT, 1), nextMinute(), 3);
    expect(counts.throttled).toBeGreaterThan(0);
    expect(limits.throttledItems.size).toBe(1);
    expect(limits.busiest.writes).toBeGreaterThan(WRITES_PER_ITEM_SECOND);
  }, 30_000);

  it('admits exactly the limit on 4 shards, never throttled, through a minute of overload', async () => {
    const shards = shardsFor(LIMIT, SHARD_WRITES_PER_SECOND);
    const authorization = await keyWith(LIMIT, shards);
    const start = nextMinute();
    // 34 a second for a minute is 2,040: 40 more than the limit, refused at the minute's end.
    const { counts, limits } = await drive(authorization, start, 60);
    expect(limits.throttled).toBe(0);
    expect(limits.cancelled).toBe(0);
    expect(counts).toEqual({ admitted: LIMIT, refused: REQUESTS_PER_SECOND * 60 - LIMIT, throttled: 0 });
    expect(limits.busiest.writes).toBeGreaterThan(0);
    expect(limits.busiest.writes).toBeLessThanOrEqual(WRITES_PER_ITEM_SECOND);
  }, 120_000);
});

describe('the emulation of DynamoDB limits', () => {
  it('cancels a transaction that writes an item another transaction in flight writes', async () => {
    const limits = emulateItemLimits({ writesPerSecond: 1_000, nowMs: () => 0 });
    const key = { pk: `EMULATION#${Date.now()}`, sk: 'CONFLICT' };
    const write = (n: number) => table.transact([{ Update: { Key: key, UpdateExpression: 'ADD n :n', ExpressionAttributeValues: { ':n': n } } }]);
    try {
      const outcomes = await Promise.allSettled([write(1), write(2)]);
      expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected']);
      const rejected = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
      expect(rejected.reason).toBeInstanceOf(TransactionCancelled);
      expect((rejected.reason as TransactionCancelled).conflicted).toBe(true);
      expect(limits.cancelled).toBe(1);
    } finally {
      limits.stop();
    }
  });
});

describe('exact admission across a minute boundary', () => {
  it('admits the limit in a minute, then what the sliding window frees, never more', async () => {
    const limit = 10;
    const shards = 3;
    const authorization = await keyWith(limit, shards);
    const start = nextMinute();
    const burst = async (nowMs: number, size: number) => {
      const outcomes = await Promise.all(Array.from({ length: size }, () => present(authorization, nowMs)));
      return outcomes.filter((outcome) => outcome === 'admitted').length;
    };

    // Minute 0, from empty: exactly the limit, however the bursts spread over the shards.
    expect(await burst(start + 10_000, 6)).toBe(6);
    expect(await burst(start + 59_999, 12)).toBe(4);

    // Minute 1: each shard frees share·elapsed of the previous minute's share. Admitted so far
    // is, at each instant, exactly what the shards' windows allow (a request is refused only
    // when every shard is full): Σ floor(share_i·elapsed). That is never more than one window
    // over the whole key would allow, floor(limit·elapsed), and less by the rounding of at
    // most N-1 requests.
    let admitted = 0;
    for (const seconds of [0, 6, 15, 30, 45, 59]) {
      const elapsed = seconds / 60;
      admitted += await burst(start + 60_000 + seconds * 1000, 12);
      const allowed = Array.from({ length: shards }, (_, i) => shardShare(limit, shards, i)).reduce(
        (sum, share) => sum + Math.floor(share - share * (1 - elapsed) + 1e-9),
        0,
      );
      expect(admitted).toBe(allowed);
      expect(admitted).toBeLessThanOrEqual(Math.floor(limit * elapsed + 1e-9));
      expect(admitted).toBeGreaterThanOrEqual(Math.floor(limit * elapsed + 1e-9) - (shards - 1));
    }

    // Minute 3, nothing counted in minute 2: the whole limit again, exactly.
    expect(await burst(start + 180_000 + 1_000, 20)).toBe(limit);
  }, 30_000);
});
