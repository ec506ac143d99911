import { randomBytes } from 'node:crypto';
import { describe, expect, it, vi } from 'vitest';
import { Invalid, TooManyRequests } from '../../shared/platform/errors.ts';
import { ConcurrencySettingsView, ConcurrencyView, UpdateConcurrencySettingsBody } from '../../shared/calls/schemas.ts';
import {
  SLOT_SETUP_GRACE_MS,
  acquireSlot,
  acquireSlots,
  burstLimit,
  getConcurrency,
  getConcurrencySettings,
  releaseSlot,
  ON_DEMAND_SWEEP_INTERVAL_MS,
  sweepSlots,
  sweepSlotsWhenFull,
  updateConcurrencySettings,
  type CallKind,
} from '../../shared/calls/concurrency.ts';
import { createWorkspace } from '../../shared/account/workspaces.ts';
import { table } from '../../shared/platform/store/table.ts';
import { keys } from '../../shared/platform/store/keys.ts';

/** A real workspace (the limit is read from its record), with the given concurrency_limit. */
async function workspaceWithLimit(limit: number): Promise<string> {
  const { workspace_id } = await createWorkspace(`Concurrency ${randomBytes(3).toString('hex')}`);
  await table.update({
    Key: keys.workspace(workspace_id),
    UpdateExpression: 'SET concurrency_limit = :limit',
    ExpressionAttributeValues: { ':limit': limit },
  });
  return workspace_id;
}

const newCallId = () => `call_${randomBytes(12).toString('hex')}`;

type Admission = { callId: string; admitted: true; burst: boolean } | { callId: string; admitted: false; error: TooManyRequests };

async function admit(workspaceId: string, kind: CallKind, callId = newCallId()): Promise<Admission> {
  try {
    const { burst } = await acquireSlot({ workspaceId, callId, kind });
    return { callId, admitted: true, burst };
  } catch (error) {
    if (!(error instanceof TooManyRequests)) throw error;
    return { callId, admitted: false, error };
  }
}

const admitMany = (workspaceId: string, kind: CallKind, count: number) =>
  Promise.all(Array.from({ length: count }, () => admit(workspaceId, kind)));

const admittedOf = (outcomes: Admission[]) => outcomes.flatMap((o) => (o.admitted ? [o] : []));
const refusedOf = (outcomes: Admission[]) => outcomes.flatMap((o) => (o.admitted ? [] : [o]));

async function slotItems(workspaceId: string) {
  const query = keys.concurrencySlots(workspaceId);
  return table.queryAll<{ call_id: string; burst: boolean; kind: string }>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': query.pk, ':prefix': query.skPrefix },
  });
}

const inUse = async (workspaceId: string) => (await getConcurrency(workspaceId)).current_concurrency;

describe('concurrency slots', () => {
  it('limit + 5 concurrent acquires: exactly limit admitted, 5 refused with 429; all released: counter 0', async () => {
    const workspaceId = await workspaceWithLimit(10);
    const outcomes = await admitMany(workspaceId, 'outbound', 15);

    const admitted = admittedOf(outcomes);
    expect(admitted).toHaveLength(10);
    expect(admitted.every((o) => !o.burst)).toBe(true);
    const refused = refusedOf(outcomes);
    expect(refused).toHaveLength(5);
    for (const { error } of refused) {
      expect([error.status, error.message, error.headers['retry-after']]).toEqual([
        429,
        'Concurrency limit reached: 10 calls in progress (limit 10)',
        '5',
      ]);
    }
    expect(await inUse(workspaceId)).toBe(10);
    expect((await slotItems(workspaceId)).map((s) => s.call_id).sort()).toEqual(admitted.map((o) => o.callId).sort());

    const released = await Promise.all(admitted.map((o) => releaseSlot(workspaceId, o.callId)));
    expect(released).toEqual(Array(10).fill(true));
    expect(await inUse(workspaceId)).toBe(0);
    expect(await slotItems(workspaceId)).toEqual([]);
    // A refused call held nothing: releasing it changes nothing.
    expect(await releaseSlot(workspaceId, refused[0]!.callId)).toBe(false);
    expect(await inUse(workspaceId)).toBe(0);
  });

  it('reserved inbound slots: outbound, web and batch stop at limit − reserved while inbound goes on to the limit', async () => {
    const workspaceId = await workspaceWithLimit(5);
    await updateConcurrencySettings(workspaceId, { reserved_inbound_concurrency: 2 });

    const outbound = await admitMany(workspaceId, 'outbound', 5);
    expect(admittedOf(outbound)).toHaveLength(3);
    expect(refusedOf(outbound).map((o) => o.error.message)).toEqual(
      Array(2).fill('Concurrency limit reached: 3 calls in progress (limit 5, 2 reserved for inbound calls)'),
    );
    for (const kind of ['web', 'batch'] as const) expect((await admit(workspaceId, kind)).admitted).toBe(false);

    const inbound = await admitMany(workspaceId, 'inbound', 3);
    expect(admittedOf(inbound)).toHaveLength(2);
    expect(refusedOf(inbound).map((o) => o.error.message)).toEqual(['Concurrency limit reached: 5 calls in progress (limit 5)']);
    expect(await inUse(workspaceId)).toBe(5);

    // Inbound calls may use the unreserved slots too: with outbound gone, 5 inbound fit.
    for (const o of admittedOf([...outbound, ...inbound])) await releaseSlot(workspaceId, o.callId);
    expect(admittedOf(await admitMany(workspaceId, 'inbound', 6))).toHaveLength(5);
    expect(await inUse(workspaceId)).toBe(5);
  });

  it('burst admits up to min(3 × limit, limit + 300), flagging exactly the calls over the limit', async () => {
    expect([burstLimit(1), burstLimit(20), burstLimit(150), burstLimit(1000)]).toEqual([3, 60, 450, 1300]);

    const workspaceId = await workspaceWithLimit(4);
    await updateConcurrencySettings(workspaceId, { burst_enabled: true });
    const outcomes = await admitMany(workspaceId, 'outbound', 14);

    const admitted = admittedOf(outcomes);
    expect(admitted).toHaveLength(12);
    expect(admitted.filter((o) => !o.burst)).toHaveLength(4);
    expect(admitted.filter((o) => o.burst)).toHaveLength(8);
    expect(refusedOf(outcomes).map((o) => o.error.message)).toEqual(
      Array(2).fill('Concurrency limit reached: 12 calls in progress (limit 4, burst limit 12)'),
    );
    // The slot records carry the flag each call was admitted with.
    const slots = await slotItems(workspaceId);
    expect(slots.filter((s) => s.burst)).toHaveLength(8);
    expect(await inUse(workspaceId)).toBe(12);
  });

  it('burst with reserved inbound slots: outbound up to burst limit − reserved, inbound to the burst limit', async () => {
    const workspaceId = await workspaceWithLimit(2);
    await updateConcurrencySettings(workspaceId, { burst_enabled: true, reserved_inbound_concurrency: 1 });
    // Limit 2, burst limit 6, 1 reserved: outbound normal cap 1, burst cap 5.
    const outbound = await admitMany(workspaceId, 'outbound', 7);
    expect(admittedOf(outbound).map((o) => o.burst).sort()).toEqual([false, true, true, true, true]);
    const inbound = await admitMany(workspaceId, 'inbound', 2);
    expect(admittedOf(inbound).map((o) => o.burst)).toEqual([true]);
    expect(await inUse(workspaceId)).toBe(6);
  });

  it('with every slot reserved, outbound calls run on burst alone', async () => {
    const workspaceId = await workspaceWithLimit(2);
    await updateConcurrencySettings(workspaceId, { burst_enabled: true, reserved_inbound_concurrency: 2 });
    // Limit 2, burst limit 6, 2 reserved: outbound normal cap 0, burst cap 4.
    const outbound = await admitMany(workspaceId, 'outbound', 5);
    expect(admittedOf(outbound).map((o) => o.burst)).toEqual([true, true, true, true]);
    expect(refusedOf(outbound)).toHaveLength(1);
  });

  it('a call admitted twice holds one slot; a call released by many ends at once is counted once', async () => {
    const workspaceId = await workspaceWithLimit(3);
    const callId = newCallId();
    const twice = await Promise.all(Array.from({ length: 5 }, () => acquireSlot({ workspaceId, callId, kind: 'outbound' })));
    expect(twice).toEqual(Array(5).fill({ burst: false }));
    const other = await admit(workspaceId, 'outbound');
    expect(await inUse(workspaceId)).toBe(2);

    // Hang-up, stop, timeout and a duplicated event race to release it: one release counts.
    const releases = await Promise.all(Array.from({ length: 8 }, () => releaseSlot(workspaceId, callId)));
    expect(releases.filter(Boolean)).toHaveLength(1);
    expect(await inUse(workspaceId)).toBe(1);
    expect(await releaseSlot(workspaceId, callId)).toBe(false);
    expect(await releaseSlot(workspaceId, other.callId)).toBe(true);
    expect(await inUse(workspaceId)).toBe(0);
    // The counter never goes below zero, however many releases come.
    expect(await releaseSlot(workspaceId, other.callId)).toBe(false);
    expect(await inUse(workspaceId)).toBe(0);
  });

  it('sweep releases the slot of a call no longer in progress (a crashed instance), after the setup grace', async () => {
    const workspaceId = await workspaceWithLimit(5);
    let at = Date.now();
    const now = () => at;
    const [ongoing, crashed, unwritten, fresh] = [newCallId(), newCallId(), newCallId(), newCallId()];
    for (const callId of [ongoing, crashed, unwritten]) await acquireSlot({ workspaceId, callId, kind: 'outbound', now });
    at += SLOT_SETUP_GRACE_MS;
    await acquireSlot({ workspaceId, callId: fresh, kind: 'outbound', now });
    // The calls domain knows only `ongoing`; `crashed` ended without releasing, `unwritten` never got a record,
    // `fresh` is being set up (its record is not written yet either).
    const asked: string[] = [];
    const isCallInProgress = async (callId: string) => (asked.push(callId), callId === ongoing);

    const first = await sweepSlots(workspaceId, isCallInProgress, { now });
    expect(first.checked).toBe(4);
    expect(first.released.sort()).toEqual([crashed, unwritten].sort());
    expect(asked.sort()).toEqual([ongoing, crashed, unwritten].sort());
    expect(await inUse(workspaceId)).toBe(2);

    at += SLOT_SETUP_GRACE_MS;
    expect((await sweepSlots(workspaceId, isCallInProgress, { now })).released).toEqual([fresh]);
    expect(await inUse(workspaceId)).toBe(1);
    expect((await slotItems(workspaceId)).map((s) => s.call_id)).toEqual([ongoing]);
    // The freed slots are usable again.
    expect(admittedOf(await admitMany(workspaceId, 'outbound', 5))).toHaveLength(4);
  });

  it('concurrent releases and sweeps release each slot once: the counter is exact', async () => {
    const workspaceId = await workspaceWithLimit(20);
    const past = () => Date.now() - 2 * SLOT_SETUP_GRACE_MS;
    const calls = Array.from({ length: 12 }, () => newCallId());
    await Promise.all(calls.map((callId) => acquireSlot({ workspaceId, callId, kind: 'outbound', now: past })));
    const survivor = calls[11]!;
    const isCallInProgress = async (callId: string) => callId === survivor;

    const [releases, sweepA, sweepB] = await Promise.all([
      Promise.all(calls.slice(0, 6).map((callId) => releaseSlot(workspaceId, callId))),
      sweepSlots(workspaceId, isCallInProgress),
      sweepSlots(workspaceId, isCallInProgress),
    ]);
    const releasedBy = [...releases.flatMap((ok, i) => (ok ? [calls[i]!] : [])), ...sweepA.released, ...sweepB.released];
    // Every call but the survivor released exactly once, by whichever got there first.
    expect(releasedBy.sort()).toEqual(calls.slice(0, 11).sort());
    expect(await inUse(workspaceId)).toBe(1);
    expect((await slotItems(workspaceId)).map((s) => s.call_id)).toEqual([survivor]);
  });

  it('an admission whose answer was lost (a timeout after DynamoDB applied it) releases what it took', async () => {
    const workspaceId = await workspaceWithLimit(3);
    const callId = newCallId();
    const transact = table.transact.bind(table);
    // The real transaction is applied; only its answer is lost on the way back.
    const spy = vi.spyOn(table, 'transact').mockImplementationOnce(async (ops) => {
      await transact(ops);
      throw Object.assign(new Error('socket timed out'), { name: 'TimeoutError' });
    });
    try {
      await expect(acquireSlot({ workspaceId, callId, kind: 'outbound' })).rejects.toThrow('socket timed out');
    } finally {
      spy.mockRestore();
    }
    expect(await inUse(workspaceId)).toBe(0);
    expect(await slotItems(workspaceId)).toEqual([]);
  });

  it('sweep never releases a slot the call took again after the sweep judged it', async () => {
    const workspaceId = await workspaceWithLimit(3);
    const callId = newCallId();
    await acquireSlot({ workspaceId, callId, kind: 'inbound', now: () => Date.now() - 2 * SLOT_SETUP_GRACE_MS });
    // While the sweep asks about the call, the call's slot is released and taken again.
    const result = await sweepSlots(workspaceId, async () => {
      await releaseSlot(workspaceId, callId);
      await acquireSlot({ workspaceId, callId, kind: 'inbound' });
      return false;
    });
    expect(result.released).toEqual([]);
    expect(await inUse(workspaceId)).toBe(1);
  });
});

describe('slots taken together (a batch pass reserving its dials)', () => {
  const counterOf = async (workspaceId: string) => (await getConcurrency(workspaceId)).current_concurrency;

  it('admits in order up to the cap, flags exactly the burst ones, and keeps the counter equal to the slot items', async () => {
    const workspaceId = await workspaceWithLimit(4);
    await updateConcurrencySettings(workspaceId, { burst_enabled: true, reserved_inbound_concurrency: 1 });
    const [first] = admittedOf([await admit(workspaceId, 'outbound')]);
    const callIds = Array.from({ length: 15 }, newCallId);

    const taken = await acquireSlots({ workspaceId, callIds, kind: 'batch' });

    // limit 4, 1 reserved: normal cap 3, burst cap min(12, 304) − 1 = 11; one slot was in use.
    expect([...taken.keys()]).toEqual(callIds.slice(0, 10));
    expect([...taken.values()].map((slot) => slot.burst)).toEqual([false, false, true, true, true, true, true, true, true, true]);
    expect(await counterOf(workspaceId)).toBe(11);
    expect((await slotItems(workspaceId)).map((slot) => slot.call_id).sort()).toEqual([first!.callId, ...callIds.slice(0, 10)].sort());
    expect((await admit(workspaceId, 'batch')).admitted).toBe(false);
    expect((await admit(workspaceId, 'inbound')).admitted).toBe(true);
  });

  it('leaves out a call that already holds a slot, and crosses the 100-operation transaction limit', async () => {
    const workspaceId = await workspaceWithLimit(300);
    const callIds = Array.from({ length: 150 }, newCallId);
    await acquireSlot({ workspaceId, callId: callIds[7]!, kind: 'batch' });

    const taken = await acquireSlots({ workspaceId, callIds, kind: 'batch' });

    expect(taken.size).toBe(149);
    expect(taken.has(callIds[7]!)).toBe(false);
    expect(await counterOf(workspaceId)).toBe(150);
    expect(await slotItems(workspaceId)).toHaveLength(150);
  });

  it('beside single admissions racing for the same counter, never exceeds the limit and stays exact', async () => {
    const workspaceId = await workspaceWithLimit(30);
    const callIds = Array.from({ length: 25 }, newCallId);

    const [taken, singles] = await Promise.all([acquireSlots({ workspaceId, callIds, kind: 'batch' }), admitMany(workspaceId, 'outbound', 20)]);

    expect(taken.size + admittedOf(singles).length).toBe(30);
    expect(refusedOf(singles).length).toBe(20 - admittedOf(singles).length);
    expect(await counterOf(workspaceId)).toBe(30);
    expect(await slotItems(workspaceId)).toHaveLength(30);
    await Promise.all([...taken.keys()].map((callId) => releaseSlot(workspaceId, callId)));
    expect(await counterOf(workspaceId)).toBe(admittedOf(singles).length);
  });
});

describe('concurrency settings and GET /get-concurrency', () => {
  it('answers the spec shape: base, purchased, reserved, burst limit (0 when burst is off)', async () => {
    const small = await workspaceWithLimit(10);
    expect(ConcurrencyView.parse(await getConcurrency(small))).toEqual({
      current_concurrency: 0,
      concurrency_limit: 10,
      base_concurrency: 10,
      purchased_concurrency: 0,
      reserved_inbound_concurrency: 0,
      concurrency_burst_enabled: false,
      concurrency_burst_limit: 0,
      concurrency_purchase_limit: 980,
      remaining_purchase_limit: 980,
    });

    const large = await workspaceWithLimit(150);
    expect(await updateConcurrencySettings(large, { reserved_inbound_concurrency: 7, burst_enabled: true })).toEqual({
      reserved_inbound_concurrency: 7,
      burst_enabled: true,
      concurrency_limit: 150,
    });
    await acquireSlot({ workspaceId: large, callId: newCallId(), kind: 'web' });
    expect(await getConcurrency(large)).toEqual({
      current_concurrency: 1,
      concurrency_limit: 150,
      base_concurrency: 20,
      purchased_concurrency: 130,
      reserved_inbound_concurrency: 7,
      concurrency_burst_enabled: true,
      concurrency_burst_limit: 450,
      concurrency_purchase_limit: 980,
      remaining_purchase_limit: 850,
    });
  });

  it('updates each setting alone, keeps the other, and refuses a reservation above the limit with 400', async () => {
    const workspaceId = await workspaceWithLimit(8);
    expect(ConcurrencySettingsView.parse(await getConcurrencySettings(workspaceId))).toEqual({
      reserved_inbound_concurrency: 0,
      burst_enabled: false,
      concurrency_limit: 8,
    });
    await updateConcurrencySettings(workspaceId, { reserved_inbound_concurrency: 8 });
    await updateConcurrencySettings(workspaceId, { burst_enabled: true });
    expect(await getConcurrencySettings(workspaceId)).toEqual({ reserved_inbound_concurrency: 8, burst_enabled: true, concurrency_limit: 8 });

    const refused = updateConcurrencySettings(workspaceId, { reserved_inbound_concurrency: 9, burst_enabled: false });
    await expect(refused).rejects.toBeInstanceOf(Invalid);
    await expect(refused).rejects.toThrow('reserved_inbound_concurrency 9 is above the concurrency limit 8');
    expect(await getConcurrencySettings(workspaceId)).toEqual({ reserved_inbound_concurrency: 8, burst_enabled: true, concurrency_limit: 8 });
  });

  it('a limit lowered below the reservation reserves the whole limit', async () => {
    const workspaceId = await workspaceWithLimit(10);
    await updateConcurrencySettings(workspaceId, { reserved_inbound_concurrency: 6 });
    await table.update({ Key: keys.workspace(workspaceId), UpdateExpression: 'SET concurrency_limit = :l', ExpressionAttributeValues: { ':l': 4 } });
    expect((await getConcurrency(workspaceId)).reserved_inbound_concurrency).toBe(4);
    expect((await admit(workspaceId, 'outbound')).admitted).toBe(false);
    expect(admittedOf(await admitMany(workspaceId, 'inbound', 5))).toHaveLength(4);
  });

  it('the update body takes 0..1000 and a boolean, and drops unknown fields', () => {
    expect(UpdateConcurrencySettingsBody.parse({ reserved_inbound_concurrency: 0, burst_enabled: false, other: 1 })).toEqual({
      reserved_inbound_concurrency: 0,
      burst_enabled: false,
    });
    for (const body of [{ reserved_inbound_concurrency: -1 }, { reserved_inbound_concurrency: 1.5 }, { reserved_inbound_concurrency: 1001 }, { burst_enabled: 'yes' }]) {
      expect(UpdateConcurrencySettingsBody.safeParse(body).success).toBe(false);
    }
  });

  it('a full workspace sweeps on demand at most once an interval, over its oldest slots only', async () => {
    const workspaceId = await workspaceWithLimit(150);
    let at = Date.now();
    const now = () => at;
    // Time-ordered call IDs, so the slots' keys sort oldest first.
    const ids = Array.from({ length: 140 }, (_, i) => `call_${(at + i).toString(16).padStart(12, '0')}${randomBytes(6).toString('hex')}`);
    await acquireSlots({ workspaceId, callIds: ids, kind: 'outbound', now });
    at += SLOT_SETUP_GRACE_MS;
    const asked: string[] = [];
    const crashed = async (callId: string) => (asked.push(callId), false);

    const first = await sweepSlotsWhenFull(workspaceId, crashed, { now });
    expect(first!.checked).toBe(100);
    expect(first!.released.sort()).toEqual(ids.slice(0, 100).sort());
    // Every refusal within the interval leaves the sweep alone: nothing read, nothing asked.
    asked.length = 0;
    at += ON_DEMAND_SWEEP_INTERVAL_MS - 1;
    expect(await Promise.all([1, 2, 3].map(() => sweepSlotsWhenFull(workspaceId, crashed, { now })))).toEqual([undefined, undefined, undefined]);
    expect(asked).toEqual([]);
    // Once the interval has passed, one (of several at once) sweeps the rest.
    at += 1;
    const racing = await Promise.all([1, 2, 3].map(() => sweepSlotsWhenFull(workspaceId, crashed, { now })));
    expect(racing.filter((result) => result !== undefined)).toHaveLength(1);
    expect(racing.find((result) => result !== undefined)!.released.sort()).toEqual(ids.slice(100).sort());
    expect(await inUse(workspaceId)).toBe(0);
  });
});
