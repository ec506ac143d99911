import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Conflict, Unprocessable } from '../../shared/platform/errors.ts';
import {
  IDEMPOTENCY_LEASE_MS,
  IDEMPOTENCY_WINDOW_MS,
  IdempotencyKey,
  canonicalJson,
  withIdempotency,
} from '../../shared/calls/idempotency.ts';
import { table } from '../../shared/platform/store/table.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { sha256 } from '../../shared/platform/crypto/hash.ts';

const newWorkspace = () => `workspace_${randomBytes(12).toString('hex')}`;
const newKey = () => `key-${randomBytes(6).toString('hex')}`;

/** A promise settled from outside: a run that lasts as long as the test says. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A clock the test moves. */
function clock(start = Date.now()) {
  let at = start;
  return { now: () => at, advance: (ms: number) => void (at += ms) };
}

async function outcome<T>(work: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await work };
  } catch (error) {
    return { ok: false, error };
  }
}

describe('IdempotencyKey', () => {
  it('takes 1 to 200 printable characters, spaces and non-ASCII included', () => {
    for (const key of ['a', 'x'.repeat(200), 'order 42 / retry #1', 'réessai-émoji-👍']) {
      expect(IdempotencyKey.safeParse(key).success).toBe(true);
    }
  });

  it('refuses an empty key, 201 characters and control characters, with one message', () => {
    for (const key of ['', 'x'.repeat(201), 'tab\there', 'new\nline', 'nul\u0000', 'del\u007f', 'c1\u0085']) {
      const parsed = IdempotencyKey.safeParse(key);
      expect(parsed.success).toBe(false);
      expect(parsed.error!.issues.map((issue) => issue.message)).toEqual(['idempotency_key must be 1 to 200 printable characters']);
    }
  });
});

describe('withIdempotency', () => {
  it('without a key runs every time', async () => {
    let runs = 0;
    const workspaceId = newWorkspace();
    for (let i = 0; i < 3; i++) {
      await withIdempotency({ workspaceId, key: undefined, request: { a: 1 }, run: async () => ++runs });
    }
    expect(runs).toBe(3);
  });

  it('20 concurrent identical requests run once: each gets the response or 409, and repeats after get the response', async () => {
    const workspaceId = newWorkspace();
    const key = newKey();
    const request = { to_number: '+14155550100', metadata: { n: 1 } };
    let runs = 0;
    // The holder runs until the other 19 have been answered: none of them can find it finished.
    const othersAnswered = deferred<void>();
    let refusals = 0;
    const run = async () => {
      runs++;
      await othersAnswered.promise;
      return { call_id: `call_${randomBytes(12).toString('hex')}`, call_status: 'registered', metadata: { n: 1 } };
    };

    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () =>
        outcome(withIdempotency({ workspaceId, key, request, run })).then((settled) => {
          if (!settled.ok && ++refusals === 19) othersAnswered.resolve();
          return settled;
        }),
      ),
    );

    expect(runs).toBe(1);
    const answered = outcomes.flatMap((o) => (o.ok ? [o.value] : []));
    const refused = outcomes.flatMap((o) => (o.ok ? [] : [o.error]));
    expect(answered.length + refused.length).toBe(20);
    // The holder answers; the 19 others all arrived while it ran, so all were refused.
    expect(answered).toHaveLength(1);
    for (const error of refused) {
      expect(error).toBeInstanceOf(Conflict);
      expect((error as Conflict).status).toBe(409);
      expect((error as Conflict).message).toBe(`A request with idempotency_key ${key} is still being processed`);
    }

    // Once it finished, every repeat (concurrent ones too) gets the same response and runs nothing.
    const repeats = await Promise.all(Array.from({ length: 20 }, () => withIdempotency({ workspaceId, key, request, run })));
    expect(runs).toBe(1);
    for (const repeat of repeats) expect(repeat).toEqual(answered[0]);
  });

  it('a repeat with the keys of its body in another order is the same request', async () => {
    const workspaceId = newWorkspace();
    const key = newKey();
    let runs = 0;
    const first = await withIdempotency({ workspaceId, key, request: { a: 1, b: { c: 2, d: [1, { e: 3, f: 4 }] } }, run: async () => ++runs });
    const second = await withIdempotency({ workspaceId, key, request: { b: { d: [1, { f: 4, e: 3 }], c: 2 }, a: 1 }, run: async () => ++runs });
    expect([first, second, runs]).toEqual([1, 1, 1]);
    expect(canonicalJson({ b: 1, a: [{ d: 1, c: 2 }] })).toBe('{"a":[{"c":2,"d":1}],"b":1}');
  });

  it('the same key with another body is 422 naming the key, while running and after', async () => {
    const workspaceId = newWorkspace();
    const key = newKey();
    const gate = deferred<string>();
    const claimed = deferred<void>();
    // run starts once the claim is written: from then on the key is taken.
    const first = withIdempotency({ workspaceId, key, request: { to_number: '+14155550100' }, run: () => (claimed.resolve(), gate.promise) });
    await claimed.promise;

    const whileRunning = await outcome(withIdempotency({ workspaceId, key, request: { to_number: '+14155550199' }, run: async () => 'other' }));
    expect(whileRunning.ok).toBe(false);
    const error = (whileRunning as { error: Unprocessable }).error;
    expect(error).toBeInstanceOf(Unprocessable);
    expect([error.status, error.message]).toEqual([422, `idempotency_key ${key} was already used with a different request`]);

    gate.resolve('first');
    expect(await first).toBe('first');
    await expect(
      withIdempotency({ workspaceId, key, request: { to_number: '+14155550199' }, run: async () => 'other' }),
    ).rejects.toThrow(new Unprocessable(`idempotency_key ${key} was already used with a different request`));
    // The original body still gets the original response.
    expect(await withIdempotency({ workspaceId, key, request: { to_number: '+14155550100' }, run: async () => 'again' })).toBe('first');
  });

  it('a claim whose holder died expires with its lease, and the retry runs; the late holder cannot overwrite it', async () => {
    const workspaceId = newWorkspace();
    const key = newKey();
    const time = clock();
    const options = { now: time.now, leaseMs: 30_000 };
    const request = { to_number: '+14155550100' };
    const stuck = deferred<string>();
    let runs = 0;

    // The first holder "dies": its run never finishes while the test watches.
    const claimed = deferred<void>();
    const dead = withIdempotency({ workspaceId, key, request, run: () => (runs++, claimed.resolve(), stuck.promise) }, options);
    await claimed.promise;
    time.advance(29_999);
    await expect(withIdempotency({ workspaceId, key, request, run: async () => (runs++, 'early') }, options)).rejects.toBeInstanceOf(Conflict);

    time.advance(1);
    expect(await withIdempotency({ workspaceId, key, request, run: async () => (runs++, 'retry') }, options)).toBe('retry');
    expect(runs).toBe(2);

    // The old holder wakes up: it answers its own caller, but the key keeps the retry's response.
    stuck.resolve('late');
    expect(await dead).toBe('late');
    expect(await withIdempotency({ workspaceId, key, request, run: async () => (runs++, 'third') }, options)).toBe('retry');
    expect(runs).toBe(2);
  });

  it('a thrown run releases the claim at once, so a retry runs (and a thrown run is never answered to repeats)', async () => {
    const workspaceId = newWorkspace();
    const key = newKey();
    const request = { to_number: '+14155550100' };
    await expect(
      withIdempotency({ workspaceId, key, request, run: async () => Promise.reject(new Error('dial failed')) }),
    ).rejects.toThrow('dial failed');
    expect(await table.get(keys.idempotencyClaim(workspaceId, sha256(key)))).toBeUndefined();
    expect(await withIdempotency({ workspaceId, key, request, run: async () => 'placed' })).toBe('placed');
  });

  it('the response is kept for the window after it, then the key is free again (same body or another)', async () => {
    const workspaceId = newWorkspace();
    const key = newKey();
    const time = clock();
    const options = { now: time.now };
    let runs = 0;
    const run = async () => ({ call_id: `call_${++runs}` });

    expect(await withIdempotency({ workspaceId, key, request: { a: 1 }, run }, options)).toEqual({ call_id: 'call_1' });
    time.advance(IDEMPOTENCY_WINDOW_MS - 1);
    expect(await withIdempotency({ workspaceId, key, request: { a: 1 }, run }, options)).toEqual({ call_id: 'call_1' });
    time.advance(1);
    expect(await withIdempotency({ workspaceId, key, request: { a: 1 }, run }, options)).toEqual({ call_id: 'call_2' });
    time.advance(IDEMPOTENCY_WINDOW_MS);
    expect(await withIdempotency({ workspaceId, key, request: { a: 2 }, run }, options)).toEqual({ call_id: 'call_3' });
    expect(runs).toBe(3);

    // The item expires by TTL a minute after its window; decisions never wait for TTL.
    const item = await table.get(keys.idempotencyClaim(workspaceId, sha256(key)));
    expect(item).toMatchObject({ status: 'completed', workspace_id: workspaceId, window_until: time.now() + IDEMPOTENCY_WINDOW_MS });
    expect(item!.expires_at).toBe(Math.ceil((time.now() + IDEMPOTENCY_WINDOW_MS) / 1000) + 60);
  });

  it('keys are scoped to the workspace: two workspaces with the same key are independent', async () => {
    const key = newKey();
    const [a, b] = [newWorkspace(), newWorkspace()];
    let runs = 0;
    const request = { to_number: '+14155550100' };
    const [ra, rb] = await Promise.all([
      withIdempotency({ workspaceId: a, key, request, run: async () => `a${++runs}` }),
      withIdempotency({ workspaceId: b, key, request: { other: true }, run: async () => `b${++runs}` }),
    ]);
    expect(runs).toBe(2);
    expect(await withIdempotency({ workspaceId: a, key, request, run: async () => 'x' })).toBe(ra);
    expect(await withIdempotency({ workspaceId: b, key, request: { other: true }, run: async () => 'y' })).toBe(rb);
  });

  it('keeps the response exactly (nulls, empty strings, nested values) and answers the first caller the same', async () => {
    const workspaceId = newWorkspace();
    const key = newKey();
    const value = { a: null, b: '', c: [0, 1.5, -2], d: { e: false }, f: undefined };
    const first = await withIdempotency({ workspaceId, key, request: {}, run: async () => value });
    const repeat = await withIdempotency({ workspaceId, key, request: {}, run: async () => ({}) });
    expect(first).toStrictEqual({ a: null, b: '', c: [0, 1.5, -2], d: { e: false } });
    expect(repeat).toStrictEqual(first);
  });

  it('uses a lease of a minute and a window of an hour by default', () => {
    expect([IDEMPOTENCY_LEASE_MS, IDEMPOTENCY_WINDOW_MS]).toEqual([60_000, 3_600_000]);
  });
});
