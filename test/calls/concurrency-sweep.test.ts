import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { localQueue } from '../../local/queues.ts';
import { acquireSlot, getConcurrency, SLOT_RECHECK_MS, SLOT_SETUP_GRACE_MS } from '../../shared/calls/concurrency.ts';
import { STRANDED_REGISTERED_MS, sweepHeldSlots } from '../../shared/calls/calls.ts';
import { newCallItem, putNewCall } from '../../shared/calls/store.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { newTimeOrderedId } from '../../shared/platform/ids.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

async function setup() {
  const ws = await app.newWorkspace();
  const { agent, number } = await newAgentWithNumber(ws.api);
  return { ws, agent, number, client: retellClient(app.url, ws.api_key) };
}

const inUse = async (workspaceId: string) => (await getConcurrency(workspaceId)).current_concurrency;

/** What an instance that crashed after taking the slot leaves: a slot past the grace, and no call record. */
async function crashedBeforeWriting(workspaceId: string) {
  const at = Date.now() - SLOT_SETUP_GRACE_MS - 1000;
  const callId = newTimeOrderedId('call', at);
  await acquireSlot({ workspaceId, callId, kind: 'outbound', now: () => at });
  return callId;
}

/** A call record written `ageMs` ago with its slot, in `status` (nothing will move it: no step is queued). */
async function callWithSlot(ctx: Awaited<ReturnType<typeof setup>>, status: 'registered' | 'ongoing', ageMs: number) {
  const at = Date.now() - ageMs;
  const callId = newTimeOrderedId('call', at);
  await acquireSlot({ workspaceId: ctx.ws.workspace_id, callId, kind: 'outbound', now: () => at });
  await putNewCall(
    newCallItem({
      call_id: callId,
      workspace_id: ctx.ws.workspace_id,
      created_timestamp: at,
      call_type: 'phone_call',
      call_status: status,
      direction: 'outbound',
      agent_id: ctx.agent.agent_id,
      agent_version: 0,
      from_number: ctx.number,
      to_number: '+14155550123',
      ...(status === 'ongoing' ? { start_timestamp: at } : {}),
      engine: { slot: true, media: 'sandbox', origin: 'create-phone-call' },
    }),
  );
  return callId;
}

/** What the EventBridge rule puts on the call-steps queue every minute. */
const sendScheduledSweep = () => {
  const scheduled = jobNamed('call-steps').scheduledMessages!.find((message) => message.name === 'concurrency-sweep')!;
  return localQueue('call-steps').send({ ...scheduled.message, scheduled_at: new Date().toISOString() });
};

const slotOf = (workspaceId: string, callId: string) => table.get<{ gsi1sk?: string }>(keys.concurrencySlot(workspaceId, callId));

describe('the scheduled concurrency sweep', () => {
  it('is a message on the call-steps queue every minute', () => {
    expect(jobNamed('call-steps').scheduledMessages).toEqual([
      expect.objectContaining({ name: 'concurrency-sweep', every: 'minute', message: { kind: 'concurrency-sweep' } }),
    ]);
  });

  it('releases a crashed instance\'s slots in every workspace with no request to them, and ends a stranded call', async () => {
    const a = await setup();
    const b = await setup();
    const crashedA = await crashedBeforeWriting(a.ws.workspace_id);
    const crashedB = await crashedBeforeWriting(b.ws.workspace_id);
    const stranded = await callWithSlot(a, 'registered', STRANDED_REGISTERED_MS + 1000);
    // Being set up (inside the grace, no record yet), and in progress for minutes: both keep their slots.
    const fresh = newTimeOrderedId('call', Date.now());
    await acquireSlot({ workspaceId: b.ws.workspace_id, callId: fresh, kind: 'outbound' });
    const ongoing = await callWithSlot(b, 'ongoing', SLOT_SETUP_GRACE_MS + 60_000);
    expect([await inUse(a.ws.workspace_id), await inUse(b.ws.workspace_id)]).toEqual([2, 3]);

    await sendScheduledSweep();
    await eventually(
      async () => [await inUse(a.ws.workspace_id), await inUse(b.ws.workspace_id)],
      (counts) => counts[0] === 0 && counts[1] === 2,
      20_000,
    );
    expect(await slotOf(a.ws.workspace_id, crashedA)).toBeUndefined();
    expect(await slotOf(b.ws.workspace_id, crashedB)).toBeUndefined();
    expect(await a.client.call.retrieve(stranded)).toMatchObject({ call_status: 'error', disconnection_reason: 'error_unknown' });
    // The ongoing call is looked at again in SLOT_RECHECK_MS, not every minute.
    const kept = await slotOf(b.ws.workspace_id, ongoing);
    const nextLook = Number(kept!.gsi1sk!.split('#')[0]);
    expect(nextLook).toBeGreaterThan(Date.now() + SLOT_RECHECK_MS - 30_000);
    expect(nextLook).toBeLessThanOrEqual(Date.now() + SLOT_RECHECK_MS);
    expect(await slotOf(b.ws.workspace_id, fresh)).toBeDefined();

    // The API agrees, and the freed slots are usable.
    expect((await a.client.concurrency.retrieve()).current_concurrency).toBe(0);
    const again = await a.ws.api.post('/v2/stop-call/' + ongoing, { body: {} });
    expect(again.status).toBe(404);
    const stop = await b.ws.api.post(`/v2/stop-call/${ongoing}`, { body: {} });
    expect(stop.status).toBe(200);
    expect(await inUse(b.ws.workspace_id)).toBe(1);
  });

  it('keeps a registered call\'s slot until it is stranded, and looks again exactly then', async () => {
    const ctx = await setup();
    const age = STRANDED_REGISTERED_MS - 60_000;
    const young = await callWithSlot(ctx, 'registered', age);
    const createdAt = (await table.get<{ created_timestamp: number }>(keys.call(young)))!.created_timestamp;
    const result = await sweepHeldSlots();
    expect(result.released.filter((slot) => slot.workspace_id === ctx.ws.workspace_id)).toEqual([]);
    expect(result.ended).not.toContain(young);
    expect((await ctx.client.call.retrieve(young)).call_status).toBe('registered');
    // Stranded in a minute: that is when the sweep looks again (not SLOT_RECHECK_MS later).
    expect(Number((await slotOf(ctx.ws.workspace_id, young))!.gsi1sk!.split('#')[0])).toBe(createdAt + STRANDED_REGISTERED_MS);
    // Not due again: a second pass leaves it alone.
    const second = await sweepHeldSlots();
    expect(second.released.filter((slot) => slot.workspace_id === ctx.ws.workspace_id)).toEqual([]);
    expect(await inUse(ctx.ws.workspace_id)).toBe(1);
    // When it is due, the pass ends it and frees the slot.
    const later = await sweepHeldSlots({ now: () => createdAt + STRANDED_REGISTERED_MS + 1 });
    expect(later.ended).toContain(young);
    expect(await inUse(ctx.ws.workspace_id)).toBe(0);
    expect(await ctx.client.call.retrieve(young)).toMatchObject({ call_status: 'error', disconnection_reason: 'error_unknown' });
  });

  it('releases each slot once when passes overlap (a duplicated message), and the counter stays exact', async () => {
    const ctx = await setup();
    const crashed = await Promise.all(Array.from({ length: 6 }, () => crashedBeforeWriting(ctx.ws.workspace_id)));
    const ongoing = await callWithSlot(ctx, 'ongoing', SLOT_SETUP_GRACE_MS + 1000);
    const passes = await Promise.all([sweepHeldSlots(), sweepHeldSlots(), sweepHeldSlots()]);
    const released = passes.flatMap((pass) => pass.released).filter((slot) => slot.workspace_id === ctx.ws.workspace_id).map((slot) => slot.call_id);
    expect(released.sort()).toEqual([...crashed].sort());
    expect(passes.reduce((sum, pass) => sum + pass.rescheduled, 0)).toBeGreaterThanOrEqual(1);
    expect(await inUse(ctx.ws.workspace_id)).toBe(1);
    expect(await slotOf(ctx.ws.workspace_id, ongoing)).toBeDefined();
  });
});
