import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { runBatchPass } from '../../shared/batches/scheduler.ts';
import { csvPhoneNumber, csvVariableName, parseDashboardCsv } from '../../shared/platform/text/csv.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
// The call engine's steps run; the batch passes run only when a test calls them.
const background = startBackgroundWork(JOBS.filter((job) => job.name !== 'batch-tick'));
afterAll(() => background.stop());

async function setup(options: { agents?: boolean } = {}) {
  const ws = await app.newWorkspace();
  const { agent } = await newAgent(ws.api);
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: {
      phone_number: number,
      termination_uri: 'sip:trunk.example.com',
      ...(options.agents === false ? {} : { outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] }),
    },
  });
  expect(imported.status).toBe(201);
  return { ws, agent, number, client: retellClient(app.url, ws.api_key) };
}

const callee = (i: number) => `+1415555${String(1000 + i)}`;
/** Sandbox calls that end quickly. */
const quick = { sandbox_call_ms: 300, sandbox_user_says: [] as string[] };

describe('create-batch-call', () => {
  it('creates a planned batch with the spec defaults, through retell-sdk unchanged', async () => {
    const { number, client, ws } = await setup();
    const before = Date.now();
    const created: any = await client.batchCall.createBatchCall({ from_number: number, tasks: [{ to_number: callee(1) }, { to_number: callee(2) }] });
    expect(created).toMatchObject({
      name: 'Batch call',
      from_number: number,
      status: 'planned',
      reserved_concurrency: 0,
      honor_internal_dnc: false,
      total_task_count: 2,
      sent_count: 0,
      picked_up_count: 0,
      successful_count: 0,
    });
    expect(created.batch_call_id).toMatch(/^batch_call_[0-9a-f]{24}$/);
    expect(created.scheduled_timestamp).toBeGreaterThanOrEqual(before);
    expect(created.trigger_timestamp).toBe(created.scheduled_timestamp);
    expect(created).not.toHaveProperty('call_time_window');

    const got = await ws.api.get(`/get-batch-call/${created.batch_call_id}`);
    expect(got.status).toBe(200);
    expect(got.body.tasks).toEqual([
      { task_index: 0, to_number: callee(1), retell_llm_dynamic_variables: {}, metadata: {}, status: 'pending', call_id: null, error: null },
      { task_index: 1, to_number: callee(2), retell_llm_dynamic_variables: {}, metadata: {}, status: 'pending', call_id: null, error: null },
    ]);
  });

  it('keeps every field given, and a draft stays a draft', async () => {
    const { ws, number, agent } = await setup();
    const window = { windows: [{ start: 540, end: 1020 }, { start: 1320, end: 120 }], timezone: 'America/New_York', day: ['Monday', 'Friday'] };
    const created = await ws.api.post('/create-batch-call', {
      body: {
        name: 'Renewals',
        from_number: number,
        draft: true,
        trigger_timestamp: 1_900_000_000_000,
        reserved_concurrency: 2,
        honor_internal_dnc: true,
        call_time_window: window,
        tasks: [{ to_number: callee(3), retell_llm_dynamic_variables: { name: 'Ada', visits: 3 }, metadata: { crm: 7 }, override_agent_id: agent.agent_id }],
      },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ name: 'Renewals', status: 'draft', trigger_timestamp: 1_900_000_000_000, reserved_concurrency: 2, honor_internal_dnc: true, call_time_window: window });
    const got = await ws.api.get(`/get-batch-call/${created.body.batch_call_id}`);
    expect(got.body.tasks[0]).toMatchObject({ retell_llm_dynamic_variables: { name: 'Ada', visits: '3' }, metadata: { crm: 7 }, override_agent_id: agent.agent_id });
    // The timezone defaults to Australia/Sydney.
    const sydney = await ws.api.post('/create-batch-call', {
      body: { from_number: number, draft: true, call_time_window: { windows: [{ start: 0, end: 1440 }] }, tasks: [{ to_number: callee(4) }] },
    });
    expect(sydney.body.call_time_window).toEqual({ windows: [{ start: 0, end: 1440 }], timezone: 'Australia/Sydney' });
  });

  it('refuses what cannot be dialled, naming the field and the task index', async () => {
    const { ws, number } = await setup();
    const bad = (body: Record<string, unknown>) => ws.api.post('/create-batch-call', { body: { from_number: number, tasks: [{ to_number: callee(1) }], ...body } });

    const other = freshNumber();
    expect((await bad({ from_number: other })).body).toEqual({ status: 404, message: `from_number ${other} is not a number in this workspace` });
    expect((await bad({ tasks: [{ to_number: callee(1) }, { to_number: '+1234' }] })).body).toEqual({
      status: 400,
      message: 'tasks.1.to_number: +1234 is not a valid E.164 number',
    });
    const unknownAgent = 'agent_' + '0'.repeat(24);
    expect((await bad({ tasks: [{ to_number: callee(1), override_agent_id: unknownAgent }] })).body).toEqual({
      status: 400,
      message: `tasks.0.override_agent_id: Agent ${unknownAgent} not found`,
    });
    expect((await bad({ tasks: [] })).status).toBe(400);
    expect((await bad({ tasks: undefined })).body).toEqual({ status: 400, message: 'tasks: Required' });
    expect((await bad({ tasks_csv: 'phone\n+14155551234\n' })).body).toEqual({ status: 400, message: 'tasks_csv: Give tasks or tasks_csv, not both' });
    const zone = await bad({ call_time_window: { windows: [{ start: 60, end: 120 }], timezone: 'Mars/Olympus' } });
    expect(zone.status).toBe(400);
    expect(zone.body.message).toContain('call_time_window.timezone');
    const empty = await bad({ call_time_window: { windows: [{ start: 60, end: 60 }] } });
    expect(empty.status).toBe(400);
    expect(empty.body.message).toContain('call_time_window.windows.0');
    expect((await bad({ call_time_window: { windows: [{ start: 0, end: 1441 }] } })).status).toBe(400);
    expect((await bad({ reserved_concurrency: -1 })).status).toBe(400);
    expect((await ws.api.get('/list-batch-calls')).body).toEqual([]);

    // A number without outbound agents: every task needs its own.
    const { ws: ws2, number: bare, agent } = await setup({ agents: false });
    const noAgent = await ws2.api.post('/create-batch-call', {
      body: { from_number: bare, tasks: [{ to_number: callee(1), override_agent_id: agent.agent_id }, { to_number: callee(2) }] },
    });
    expect(noAgent.body).toEqual({ status: 400, message: `tasks.1: No agent: ${bare} has no outbound agents and the task has no override_agent_id` });
    const client = retellClient(app.url, ws2.api_key);
    const failure = await sdkFailure(client.batchCall.createBatchCall({ from_number: bare, tasks: [{ to_number: callee(1) }] }));
    expect(failure.status).toBe(400);
  });

  it('takes the dashboard CSV and reports the rows it skipped', async () => {
    const { ws, number } = await setup();
    const csv = ['Mobile,First Name,Appt (Date)', '0412 345 678,Ada,"Mon, 3pm"', '', '(02) 9374-4000,Bob,Tue', 'call me,Cy,Wed', '+1 415-555-1234,Di,Thu'].join('\r\n');
    const created = await ws.api.post('/create-batch-call', { body: { from_number: number, tasks_csv: csv } });
    expect(created.status).toBe(201);
    expect(created.body.total_task_count).toBe(3);
    expect(created.body.skipped_rows).toEqual([{ row: 5, value: 'call me', reason: 'call me is not a valid E.164 number' }]);
    const got = await ws.api.get(`/get-batch-call/${created.body.batch_call_id}`);
    expect(got.body.tasks.map((task: any) => [task.to_number, task.retell_llm_dynamic_variables])).toEqual([
      ['+61412345678', { first_name: 'Ada', appt__date_: 'Mon, 3pm' }],
      ['+61293744000', { first_name: 'Bob', appt__date_: 'Tue' }],
      ['+14155551234', { first_name: 'Di', appt__date_: 'Thu' }],
    ]);
    const none = await ws.api.post('/create-batch-call', { body: { from_number: number, tasks_csv: 'phone\nnope\n' } });
    expect(none.body).toEqual({ status: 400, message: 'tasks_csv: No row has a valid E.164 number (1 skipped)' });
    const broken = await ws.api.post('/create-batch-call', { body: { from_number: number, tasks_csv: 'phone\n"+14155551234\n' } });
    expect(broken.status).toBe(400);
    expect(broken.body.message).toMatch(/^tasks_csv: Not valid CSV: /);
  });

  it('applies the CSV rules as the spec states them (the reusable module)', () => {
    expect(csvVariableName('First Name')).toBe('first_name');
    expect(csvVariableName('Ünit-Price ($)')).toBe('_nit_price____');
    expect(csvPhoneNumber('0312345678')).toBe('+61312345678');
    expect(csvPhoneNumber('07 3123 4567')).toBe('+61731234567');
    expect(csvPhoneNumber('08 8123 4567')).toBe('+61881234567');
    // 05 and 09 are not converted; eleven digits are not.
    expect(csvPhoneNumber('0512345678')).toBeUndefined();
    expect(csvPhoneNumber('04123456789')).toBeUndefined();
    expect(csvPhoneNumber('[+1] (415) 555-1234')).toBe('+14155551234');
    const parsed = parseDashboardCsv('\ufeffnumber\n+14155551234\n0412345678\n', { maxRows: 10, field: 'f' });
    expect(parsed.variables).toEqual([]);
    expect(parsed.rows.map((row) => row.phone_number)).toEqual(['+14155551234', '+61412345678']);
    expect(() => parseDashboardCsv('n\n+14155551234\n+14155551235\n', { maxRows: 1, field: 'f' })).toThrow('f: At most 1 rows (the header not counted)');
  });

  it('writes 10,000 tasks in chunks and refuses 10,001', async () => {
    const { ws, number } = await setup();
    const tasks = Array.from({ length: 10_000 }, (_, i) => ({ to_number: `+1415555${String(i % 9000 + 1000).padStart(4, '0')}`, retell_llm_dynamic_variables: { row: String(i) } }));
    const created = await ws.api.post('/create-batch-call', { body: { from_number: number, draft: true, tasks } });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.total_task_count).toBe(10_000);
    const got = await ws.api.get(`/get-batch-call/${created.body.batch_call_id}`);
    expect(got.body.tasks).toHaveLength(10_000);
    expect(got.body.tasks[9_999]).toMatchObject({ task_index: 9_999, retell_llm_dynamic_variables: { row: '9999' }, status: 'pending' });
    const tooMany = await ws.api.post('/create-batch-call', { body: { from_number: number, draft: true, tasks: [...tasks, { to_number: callee(1) }] } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toMatch(/^tasks: /);
    const stopped = await ws.api.post(`/stop-batch-call/${created.body.batch_call_id}`);
    expect(stopped.body).toEqual({ batch_call_id: created.body.batch_call_id, status: 'stopped', cancelled_tasks: 10_000 });
  }, 60_000);
});

describe('list, get, start, stop, delete', () => {
  it('lists the workspace\'s batches newest first; another workspace\'s batch is a 404 everywhere', async () => {
    const { ws, number } = await setup();
    const first = await ws.api.post('/create-batch-call', { body: { name: 'one', from_number: number, draft: true, tasks: [{ to_number: callee(1) }] } });
    const second = await ws.api.post('/create-batch-call', { body: { name: 'two', from_number: number, draft: true, tasks: [{ to_number: callee(1) }] } });
    const list = await ws.api.get('/list-batch-calls');
    expect(list.status).toBe(200);
    expect(list.body.map((batch: any) => batch.name)).toEqual(['two', 'one']);
    expect(list.body[0]).not.toHaveProperty('tasks');

    const other = await app.newWorkspace();
    const id = first.body.batch_call_id;
    for (const [method, path] of [
      ['get', `/get-batch-call/${id}`],
      ['post', `/start-batch-call/${id}`],
      ['post', `/stop-batch-call/${id}`],
      ['delete', `/delete-batch-call/${id}`],
    ] as const) {
      expect((await other.api[method](path)).body, path).toEqual({ status: 404, message: 'Batch call not found' });
    }
    expect((await other.api.get('/list-batch-calls')).body).toEqual([]);
    expect((await ws.api.get('/get-batch-call/batch_call_123')).status).toBe(400);
    expect(second.status).toBe(201);
  });

  it('starts only drafts, moving a past trigger to now; stops cancel pending tasks', async () => {
    const { ws, number } = await setup();
    const draft = await ws.api.post('/create-batch-call', {
      body: { from_number: number, draft: true, trigger_timestamp: 1000, tasks: [1, 2, 3].map((i) => ({ to_number: callee(i) })) },
    });
    const id = draft.body.batch_call_id;
    const before = Date.now();
    const started = await ws.api.post(`/start-batch-call/${id}`);
    expect(started.status).toBe(200);
    expect(started.body).toEqual({ batch_call_id: id, status: 'planned' });
    const got = await ws.api.get(`/get-batch-call/${id}`);
    expect(got.body.trigger_timestamp).toBeGreaterThanOrEqual(before);
    expect((await ws.api.post(`/start-batch-call/${id}`)).body).toEqual({ status: 400, message: `Batch call ${id} is planned: only a draft can be started` });

    const stopped = await ws.api.post(`/stop-batch-call/${id}`);
    expect(stopped.body).toEqual({ batch_call_id: id, status: 'stopped', cancelled_tasks: 3 });
    const after = await ws.api.get(`/get-batch-call/${id}`);
    expect(after.body.status).toBe('stopped');
    expect(after.body.cancelled_count).toBe(3);
    expect(after.body.tasks.map((task: any) => task.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect((await ws.api.post(`/stop-batch-call/${id}`)).body).toEqual({
      status: 400,
      message: `Batch call ${id} is stopped: only a draft, planned or ongoing batch can be stopped`,
    });
    // A stopped batch is never dialled.
    await runBatchPass();
    expect((await ws.api.post('/v3/list-calls', { body: { filter_criteria: { batch_call_id: [id] } } })).body).toEqual([]);
  });

  it('a batch runs to sent: counters, the batch_dial line, list-calls by batch_call_id; delete keeps the calls unlinked', async () => {
    const { ws, number } = await setup();
    const created = await ws.api.post('/create-batch-call', {
      body: { from_number: number, tasks: [callee(1), '+14155550001', callee(2)].map((to) => ({ to_number: to, metadata: quick })) },
    });
    const id = created.body.batch_call_id;
    await runBatchPass();
    const dialled = await ws.api.get(`/get-batch-call/${id}`);
    expect(dialled.body.tasks.map((task: any) => task.status)).toEqual(['called', 'called', 'called']);
    expect(dialled.body.sent_count).toBe(3);
    const callIds = dialled.body.tasks.map((task: any) => task.call_id);

    const listed = await ws.api.post('/v3/list-calls', { body: { filter_criteria: { batch_call_id: [id] }, sort_order: 'ascending' } });
    expect(listed.body.map((call: any) => call.call_id).sort()).toEqual([...callIds].sort());
    expect(listed.body.every((call: any) => call.batch_call_id === id)).toBe(true);

    // Wait for every call to be analysed (the busy one ends not_connected, with no analysis).
    const calls = await eventually(
      () => Promise.all(callIds.map(async (callId: string) => (await ws.api.get(`/v2/get-call/${callId}`)).body)),
      (all: any[]) => all.every((call) => call.call_status === 'not_connected' || call.call_analysis !== undefined),
      30_000,
    );
    const successful = calls.filter((call: any) => call.call_analysis?.call_successful === true).length;
    const counted = await eventually(
      async () => (await ws.api.get(`/get-batch-call/${id}`)).body,
      (batch: any) => batch.picked_up_count === 2 && batch.successful_count === successful,
    );
    expect(counted).toMatchObject({ sent_count: 3, picked_up_count: 2, successful_count: successful, failed_count: 0 });
    for (const call of calls) expect(call.call_cost.product_costs.find((line: any) => line.product === 'batch_dial')).toEqual({ product: 'batch_dial', unit_price: 0, cost: 1 });

    await runBatchPass();
    expect((await ws.api.get(`/get-batch-call/${id}`)).body.status).toBe('sent');

    const deleted = await ws.api.delete(`/delete-batch-call/${id}`);
    expect(deleted.status).toBe(204);
    expect((await ws.api.get(`/get-batch-call/${id}`)).status).toBe(404);
    for (const callId of callIds) {
      const call = await ws.api.get(`/v2/get-call/${callId}`);
      expect(call.status).toBe(200);
      expect(call.body).not.toHaveProperty('batch_call_id');
    }
    expect((await ws.api.post('/v3/list-calls', { body: { filter_criteria: { batch_call_id: [id] } } })).body).toEqual([]);
  }, 60_000);

  it('delete: pending tasks are never called', async () => {
    const { ws, number } = await setup();
    const created = await ws.api.post('/create-batch-call', { body: { from_number: number, tasks: [{ to_number: callee(5), metadata: quick }] } });
    expect((await ws.api.delete(`/delete-batch-call/${created.body.batch_call_id}`)).status).toBe(204);
    await runBatchPass();
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toEqual([]);
    expect((await ws.api.delete(`/delete-batch-call/${created.body.batch_call_id}`)).status).toBe(404);
  });
});

describe('override agents are referenced while the batch may still dial them', () => {
  const refusal = (agentId: string, batchCallId: string) => ({
    status: 409,
    message: `Agent ${agentId} is used by batch call ${batchCallId}; remove the agent from them before deleting it`,
  });

  it('an override agent cannot be deleted until its batch is stopped, sent or deleted', async () => {
    const { ws, number } = await setup();
    const [{ agent: stopped }, { agent: sent }, { agent: deleted }] = await Promise.all([newAgent(ws.api), newAgent(ws.api), newAgent(ws.api)]);
    const batchWith = async (agentId: string, draft = false) => {
      const created = await ws.api.post('/create-batch-call', {
        body: { from_number: number, draft, tasks: [{ to_number: callee(1), metadata: quick, override_agent_id: agentId }, { to_number: callee(2), metadata: quick, override_agent_id: agentId }] },
      });
      expect(created.status).toBe(201);
      return created.body.batch_call_id as string;
    };
    const [draftId, sentId, deletedId] = await Promise.all([batchWith(stopped.agent_id, true), batchWith(sent.agent_id), batchWith(deleted.agent_id)]);

    for (const [agentId, batchId] of [[stopped.agent_id, draftId], [sent.agent_id, sentId], [deleted.agent_id, deletedId]] as const) {
      const refused = await ws.api.delete(`/delete-agent/${agentId}`);
      expect({ status: refused.status, message: refused.body.message }).toEqual(refusal(agentId, batchId));
    }

    // Stopped (a draft here): released.
    expect((await ws.api.post(`/stop-batch-call/${draftId}`)).status).toBe(200);
    expect((await ws.api.delete(`/delete-agent/${stopped.agent_id}`)).status).toBe(204);
    // Deleted while planned: released with the record.
    expect((await ws.api.delete(`/delete-batch-call/${deletedId}`)).status).toBe(204);
    expect((await ws.api.delete(`/delete-agent/${deleted.agent_id}`)).status).toBe(204);
    // Sent: released by the pass that sent it.
    await runBatchPass();
    expect((await ws.api.get(`/get-batch-call/${sentId}`)).body.status).toBe('sent');
    expect((await ws.api.delete(`/delete-agent/${sent.agent_id}`)).status).toBe(204);
    // Deleting a sent batch releases nothing twice.
    expect((await ws.api.delete(`/delete-batch-call/${sentId}`)).status).toBe(204);
  });

  it(`refuses more than 48 different override agents in one batch, and leaves nothing referenced`, async () => {
    const { ws, number } = await setup();
    const agents = await Promise.all(Array.from({ length: 49 }, () => newAgent(ws.api)));
    const tasks = agents.map(({ agent }, i) => ({ to_number: callee(i), override_agent_id: agent.agent_id }));
    const refused = await ws.api.post('/create-batch-call', { body: { from_number: number, tasks } });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe('tasks: At most 48 different override_agent_id values in one batch (49 given)');
    expect((await ws.api.delete(`/delete-agent/${agents[0]!.agent.agent_id}`)).status).toBe(204);
    // 48 fit in the create's one transaction.
    const created = await ws.api.post('/create-batch-call', { body: { from_number: number, tasks: tasks.slice(1) } });
    expect(created.status).toBe(201);
    expect((await ws.api.delete(`/delete-agent/${agents[48]!.agent.agent_id}`)).status).toBe(409);
  });
});
