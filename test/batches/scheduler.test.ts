import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { insideWindow, nextOpening } from '../../shared/batches/index.ts';
import { runBatchPass } from '../../shared/batches/scheduler.ts';
import { CLAIM_RETRY_MS } from '../../shared/batches/pass.ts';
import { JOBS } from '../../shared/jobs.ts';
import { paymentRequired } from '../../shared/platform/errors.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent, newAgentWithNumber } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
// The call engine's steps run; the batch passes run only when a test calls them (with its clock).
const background = startBackgroundWork(JOBS.filter((job) => job.name !== 'batch-tick'));
afterAll(() => background.stop());

const callee = (i: number) => `+1415555${String(1000 + i)}`;
const quick = { sandbox_call_ms: 200, sandbox_user_says: [] as string[] };

async function setup(options: { limit?: number; cps?: number } = {}) {
  const ws = await app.newWorkspace();
  if (options.limit) expect((await ws.api.patch('/workspace', { body: { concurrency_limit: options.limit } })).status).toBe(200);
  const { number } = await newAgentWithNumber(ws.api, { number: options.cps ? { cps_limit: options.cps } : {} });
  const createBatch = async (body: Record<string, unknown>) => {
    const created = await ws.api.post('/create-batch-call', { body: { from_number: number, ...body } });
    expect(created.status).toBe(201);
    return created.body.batch_call_id as string;
  };
  const batch = async (id: string) => (await ws.api.get(`/get-batch-call/${id}`)).body;
  const batchCalls = async (id: string) => (await ws.api.post('/v3/list-calls', { body: { limit: 1000, filter_criteria: { batch_call_id: [id] } } })).body as any[];
  return { ws, number, createBatch, batch, batchCalls };
}

describe('call_time_window', () => {
  // 2026-01-09 is a Friday.
  const at = (iso: string) => Date.parse(iso);
  const lateFriday = { windows: [{ start: 22 * 60, end: 2 * 60 }], timezone: 'America/New_York', day: ['Friday' as const] };

  it('is evaluated in the window\'s time zone, wrapping past midnight from a listed day', () => {
    expect(insideWindow(lateFriday, at('2026-01-10T03:30:00Z'))).toBe(true); // Friday 22:30 in New York
    expect(insideWindow(lateFriday, at('2026-01-10T06:59:00Z'))).toBe(true); // Saturday 01:59, the window started Friday
    expect(insideWindow(lateFriday, at('2026-01-10T07:00:00Z'))).toBe(false); // Saturday 02:00: closed (end is exclusive)
    expect(insideWindow(lateFriday, at('2026-01-10T02:59:00Z'))).toBe(false); // Friday 21:59
    expect(insideWindow(lateFriday, at('2026-01-09T03:30:00Z'))).toBe(false); // Thursday 22:30: Thursday is not listed
    expect(insideWindow(lateFriday, at('2026-01-11T04:00:00Z'))).toBe(false); // Saturday 23:00
    // The same instant in Sydney is Saturday afternoon.
    const sydneyWeekend = { windows: [{ start: 13 * 60, end: 15 * 60 }], timezone: 'Australia/Sydney', day: ['Saturday' as const] };
    expect(insideWindow(sydneyWeekend, at('2026-01-10T03:30:00Z'))).toBe(true); // 14:30 AEDT
    expect(insideWindow({ ...sydneyWeekend, timezone: 'Europe/London' }, at('2026-01-10T03:30:00Z'))).toBe(false);
    // Several windows; no day list means every day.
    const twoWindows = { windows: [{ start: 9 * 60, end: 12 * 60 }, { start: 14 * 60, end: 17 * 60 }], timezone: 'Europe/London' };
    expect(insideWindow(twoWindows, at('2026-01-07T13:00:00Z'))).toBe(false);
    expect(insideWindow(twoWindows, at('2026-01-07T15:00:00Z'))).toBe(true);
    // Daylight saving: 09:00 in New York is 14:00 UTC in January and 13:00 UTC in July.
    const morning = { windows: [{ start: 9 * 60, end: 10 * 60 }], timezone: 'America/New_York' };
    expect(insideWindow(morning, at('2026-01-07T14:30:00Z'))).toBe(true);
    expect(insideWindow(morning, at('2026-07-07T13:30:00Z'))).toBe(true);
    expect(insideWindow(morning, at('2026-07-07T14:30:00Z'))).toBe(false);
  });

  it('finds the next opening exactly', () => {
    expect(nextOpening(lateFriday, at('2026-01-10T02:00:00Z'))).toBe(at('2026-01-10T03:00:00Z'));
    expect(nextOpening(lateFriday, at('2026-01-10T07:00:00Z'))).toBe(at('2026-01-17T03:00:00Z'));
  });

  it('a pass waits outside the window (its due time moves to the opening) and dials inside it', async () => {
    const { createBatch, batch } = await setup();
    const fridayEvening = at('2026-01-10T02:00:00Z'); // Friday 21:00 in New York
    const id = await createBatch({ trigger_timestamp: fridayEvening - 60_000, call_time_window: lateFriday, tasks: [{ to_number: callee(1), metadata: quick }] });
    await runBatchPass({ now: fridayEvening });
    expect((await batch(id)).tasks[0].status).toBe('pending');
    await runBatchPass({ now: at('2026-01-10T02:59:00Z') });
    expect((await batch(id)).tasks[0].status).toBe('pending');
    await runBatchPass({ now: at('2026-01-10T03:00:00Z') });
    expect((await batch(id)).tasks[0].status).toBe('called');
  });

  it('a batch whose trigger time has not come waits', async () => {
    const { createBatch, batch } = await setup();
    const id = await createBatch({ trigger_timestamp: Date.now() + 3_600_000, tasks: [{ to_number: callee(1), metadata: quick }] });
    await runBatchPass();
    expect((await batch(id)).status).toBe('planned');
    await runBatchPass({ now: Date.now() + 3_600_001 });
    expect((await batch(id)).tasks[0].status).toBe('called');
  });
});

describe('the pass', () => {
  it('never exceeds free capacity (limit − reserved_concurrency − in progress) while tasks run', async () => {
    const limit = 4;
    const { ws, createBatch, batch } = await setup({ limit });
    const id = await createBatch({ reserved_concurrency: 1, tasks: Array.from({ length: 9 }, (_, i) => ({ to_number: callee(i), metadata: { ...quick, sandbox_call_ms: 800 } })) });
    let maxInUse = 0;
    let passes = 0;
    for (;;) {
      const before = (await ws.api.get('/get-concurrency')).body.current_concurrency as number;
      const pass = await runBatchPass();
      const after = (await ws.api.get('/get-concurrency')).body.current_concurrency as number;
      // Calls may end between the reading and the pass (freeing capacity), never start elsewhere.
      expect(pass.dialled).toBeLessThanOrEqual(limit - 1);
      expect(before).toBeLessThanOrEqual(limit - 1);
      maxInUse = Math.max(maxInUse, after);
      expect(after).toBeLessThanOrEqual(limit - 1);
      passes += 1;
      const state = await batch(id);
      if (state.status === 'sent') break;
      expect(passes).toBeLessThan(200);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
    expect(maxInUse).toBe(3);
    const done = await batch(id);
    expect(done.sent_count).toBe(9);
    expect(new Set(done.tasks.map((task: any) => task.call_id)).size).toBe(9);
  }, 60_000);

  it('two concurrent passes over 80 tasks dial 80 calls, no task twice', async () => {
    const { createBatch, batch, batchCalls } = await setup({ limit: 1000, cps: 1000 });
    // Numbers ending 0002 are not answered in the sandbox: the calls end at their dial step, lightly.
    // 80 tasks: more than two passes' parallel dials (32 each), so both take and contend for tasks.
    const id = await createBatch({ tasks: Array.from({ length: 80 }, (_, i) => ({ to_number: `+1415${200 + i}0002` })) });
    await Promise.all([runBatchPass(), runBatchPass()]);
    // A dial the store refused under the load stays claimed; a later pass retries it with the same key.
    for (let i = 0; i < 5 && (await batch(id)).status !== 'sent'; i++) await runBatchPass({ now: Date.now() + CLAIM_RETRY_MS });
    const done = await batch(id);
    expect(done.status).toBe('sent');
    expect(done.sent_count).toBe(80);
    const callIds = done.tasks.map((task: any) => task.call_id);
    expect(new Set(callIds).size).toBe(80);
    const calls = await batchCalls(id);
    expect(calls).toHaveLength(80);
    expect(new Set(calls.map((call: any) => call.to_number)).size).toBe(80);
  }, 60_000);

  it('a pass killed between the dial and the mark: the next pass finds the call, dials nothing again', async () => {
    const { createBatch, batch, batchCalls } = await setup();
    const id = await createBatch({ tasks: [1, 2, 3].map((i) => ({ to_number: callee(i), metadata: { sandbox_call_ms: 600_000 } })) });
    await runBatchPass({
      afterDial: async () => {
        throw new Error('the pass died here');
      },
    });
    const dying = await batch(id);
    expect(dying.tasks.map((task: any) => task.status)).toEqual(['dialing', 'dialing', 'dialing']);
    const placed = await batchCalls(id);
    expect(placed).toHaveLength(3);
    // A pass right after leaves the fresh claims alone (their pass may still be running).
    await runBatchPass();
    expect((await batch(id)).tasks.map((task: any) => task.status)).toEqual(['dialing', 'dialing', 'dialing']);
    // Once the claims are old, a pass resolves them with the calls already placed.
    await runBatchPass({ now: Date.now() + CLAIM_RETRY_MS + 1000 });
    const recovered = await batch(id);
    expect(recovered.tasks.map((task: any) => task.status)).toEqual(['called', 'called', 'called']);
    expect(recovered.tasks.map((task: any) => task.call_id).sort()).toEqual(placed.map((call: any) => call.call_id).sort());
    expect(recovered.sent_count).toBe(3);
    expect(await batchCalls(id)).toHaveLength(3);
  });

  it('honor_internal_dnc skips numbers flagged at dial time (after the batch was created)', async () => {
    const { ws, createBatch, batch } = await setup();
    const id = await createBatch({ honor_internal_dnc: true, tasks: [1, 2, 3].map((i) => ({ to_number: callee(i), metadata: quick })) });
    const asked: string[][] = [];
    const flagged = new Set([callee(2)]);
    await runBatchPass({
      doNotCall: async (workspaceId, numbers) => {
        if (workspaceId !== ws.workspace_id) return new Set();
        asked.push([...numbers]);
        return new Set(numbers.filter((number) => flagged.has(number)));
      },
    });
    expect(asked).toEqual([[callee(1), callee(2), callee(3)]]);
    const done = await batch(id);
    expect(done.tasks.map((task: any) => [task.status, task.error])).toEqual([
      ['called', null],
      ['skipped', `${callee(2)} is flagged do-not-call`],
      ['called', null],
    ]);
    expect(done).toMatchObject({ sent_count: 2, skipped_count: 1 });

    // Without honor_internal_dnc the check is not asked.
    const plain = await createBatch({ tasks: [{ to_number: callee(2), metadata: quick }] });
    await runBatchPass({ doNotCall: async (workspaceId) => (workspaceId === ws.workspace_id ? new Set([callee(2)]) : new Set()) });
    expect((await batch(plain)).tasks[0].status).toBe('called');
  });

  it("honor_internal_dnc asks the workspace's contacts: a contact flagged after the batch was created is skipped", async () => {
    const { ws, createBatch, batch } = await setup();
    const contact = await ws.api.post('/create-contact', { body: { phone_number: callee(5), first_name: 'Ada' } });
    expect(contact.status).toBe(201);
    const id = await createBatch({ honor_internal_dnc: true, tasks: [4, 5].map((i) => ({ to_number: callee(i), metadata: quick })) });
    // Flagged after the batch was created: the pass asks at dial time.
    const flagged = await ws.api.patch(`/update-contact/${contact.body.contact_id}`, { body: { do_not_call: true } });
    expect(flagged.status).toBe(200);
    // Another workspace's contact of the same number, flagged, changes nothing here.
    const other = await app.newWorkspace();
    expect((await other.api.post('/create-contact', { body: { phone_number: callee(4), do_not_call: true } })).status).toBe(201);

    await runBatchPass();
    const done = await batch(id);
    expect(done.tasks.map((task: any) => [task.status, task.error])).toEqual([
      ['called', null],
      ['skipped', `${callee(5)} is flagged do-not-call`],
    ]);
    expect(done).toMatchObject({ sent_count: 1, skipped_count: 1 });
  });

  it('credit exhausted: the task gets a not_connected call with no_valid_payment, and fails', async () => {
    const { ws, createBatch, batch } = await setup();
    const id = await createBatch({ tasks: [{ to_number: callee(1), metadata: quick }] });
    await runBatchPass({
      canSpend: async (workspaceId) => {
        if (workspaceId === ws.workspace_id) throw paymentRequired('Credit balance is exhausted', 'credit_exhausted');
      },
    });
    const done = await batch(id);
    expect(done.tasks[0]).toMatchObject({ status: 'failed', error: 'no_valid_payment: Credit balance is exhausted' });
    expect(done).toMatchObject({ status: 'sent', sent_count: 0, failed_count: 1 });
    const call = (await ws.api.get(`/v2/get-call/${done.tasks[0].call_id}`)).body;
    expect(call).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'no_valid_payment', batch_call_id: id });
    expect(call.call_cost.product_costs.map((line: any) => line.product)).not.toContain('batch_dial');
    // The slot the pass reserved for the dial went back when the task got no dial.
    expect((await ws.api.get('/get-concurrency')).body.current_concurrency).toBe(0);
  });

  it("one pass dials each task with its own agent and version (agents are resolved once per pass, not shared across tasks)", async () => {
    const { ws, createBatch, batchCalls } = await setup();
    const { agent: other } = await newAgent(ws.api);
    // Version 0 published, then an edit: version 1 is the latest.
    expect((await ws.api.post(`/publish-agent-version/${other.agent_id}`, { body: { version: 0 } })).status).toBe(200);
    expect((await ws.api.patch(`/update-agent/${other.agent_id}`, { body: { agent_name: 'edited' } })).status).toBe(200);
    const id = await createBatch({
      tasks: [
        { to_number: callee(1), metadata: quick },
        { to_number: callee(2), metadata: quick, override_agent_id: other.agent_id },
        { to_number: callee(3), metadata: quick, override_agent_id: other.agent_id, override_agent_version: '0' },
        { to_number: callee(4), metadata: quick },
      ],
    });
    const pass = await runBatchPass();
    expect(pass.dialled).toBe(4);
    const calls = await batchCalls(id);
    const byCallee = Object.fromEntries(calls.map((call: any) => [call.to_number, [call.agent_id, call.agent_version]]));
    const numberAgent = calls.find((call: any) => call.to_number === callee(1)).agent_id;
    expect(numberAgent).not.toBe(other.agent_id);
    expect(byCallee).toEqual({
      [callee(1)]: [numberAgent, 0],
      [callee(2)]: [other.agent_id, 1],
      [callee(3)]: [other.agent_id, 0],
      [callee(4)]: [numberAgent, 0],
    });
  });

  it("a task's agent_override is checked at create and runs on that task's call only", async () => {
    const { ws, number, createBatch, batch, batchCalls } = await setup();
    const refused = await ws.api.post('/create-batch-call', {
      body: { from_number: number, tasks: [{ to_number: callee(1) }, { to_number: callee(2), agent_override: { agent: { voice_speed: 9 } } }] },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe('tasks.1.agent_override.agent.voice_speed: Must be at most 2');

    const override = { retell_llm: { begin_message: 'Hello from the batch override.' } };
    const id = await createBatch({ tasks: [{ to_number: callee(1), metadata: quick, agent_override: override }, { to_number: callee(2), metadata: quick }] });
    expect((await batch(id)).tasks[0].agent_override).toEqual(override);
    await runBatchPass();
    const ended = await eventually(
      () => batchCalls(id),
      (calls) => calls.length === 2 && calls.every((call: any) => call.call_status === 'ended'),
      20_000,
    );
    const firstLine = async (to: string) => {
      const call = (await ws.api.get(`/v2/get-call/${ended.find((c: any) => c.to_number === to).call_id}`)).body;
      return call.transcript_object[0].content;
    };
    expect(await firstLine(callee(1))).toBe('Hello from the batch override.');
    expect(await firstLine(callee(2))).not.toBe('Hello from the batch override.');
  });

  it('a task that cannot be dialled fails with its error; the rest go on', async () => {
    const { ws, number, createBatch, batch } = await setup();
    const id = await createBatch({ tasks: [{ to_number: callee(1), metadata: quick }, { to_number: callee(2), metadata: { sandbox_call_ms: -5 } }] });
    await runBatchPass();
    const done = await batch(id);
    expect(done.tasks.map((task: any) => [task.status, task.error])).toEqual([
      ['called', null],
      ['failed', 'metadata.sandbox_call_ms: Must be a whole number from 0 to 3600000'],
    ]);
    expect(done.status).toBe('sent');
    // A number removed from the workspace fails every task with the 404's message.
    const gone = await createBatch({ tasks: [{ to_number: callee(3) }] });
    expect((await ws.api.delete(`/delete-phone-number/${encodeURIComponent(number)}`)).status).toBe(204);
    await runBatchPass();
    expect((await batch(gone)).tasks[0]).toMatchObject({ status: 'failed', error: `from_number ${number} is not a number in this workspace` });
    // The failed dials' reserved slots were released; the one call placed releases its own when it ends.
    await eventually(
      async () => (await ws.api.get('/get-concurrency')).body.current_concurrency as number,
      (inUse) => inUse === 0,
    );
  });
});
