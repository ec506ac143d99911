import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp({ CPS_MAX_WAIT_MS: '20000', DEFAULT_CPS_CUSTOM: '1000' });
const background = startBackgroundWork();
afterAll(() => background.stop());

async function dialSetup(limit?: number) {
  const ws = await app.newWorkspace();
  if (limit) expect((await ws.api.patch('/workspace', { body: { concurrency_limit: limit } })).status).toBe(200);
  const { agent, number } = await newAgentWithNumber(ws.api);
  return { ws, agent, number, client: retellClient(app.url, ws.api_key) };
}

describe('idempotent create-phone-call', () => {
  it('places exactly one call for 20 concurrent identical requests, and returns it to later repeats', async () => {
    const { ws, number } = await dialSetup();
    const body = { from_number: number, to_number: '+14155550199', idempotency_key: 'order-7781', metadata: { sandbox_call_ms: 60_000 } };
    const answers = await Promise.all(Array.from({ length: 20 }, () => ws.api.post('/v2/create-phone-call', { body })));
    const created = answers.filter((res) => res.status === 201);
    const busy = answers.filter((res) => res.status === 409);
    expect(created.length + busy.length).toBe(20);
    expect(new Set(created.map((res) => res.body.call_id)).size).toBe(1);
    for (const res of busy) expect(res.body).toEqual({ status: 409, message: 'A request with idempotency_key order-7781 is still being processed' });

    const callId = created[0]!.body.call_id;
    const again = await ws.api.post('/v2/create-phone-call', { body });
    expect(again.status).toBe(201);
    expect(again.body.call_id).toBe(callId);
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toHaveLength(1);

    const changed = await ws.api.post('/v2/create-phone-call', { body: { ...body, to_number: '+14155550198' } });
    expect(changed.status).toBe(422);
    expect(changed.body).toEqual({ status: 422, message: 'idempotency_key order-7781 was already used with a different request' });
    await ws.api.post(`/v2/stop-call/${callId}`, { body: {} });
  });
});

describe('concurrency', () => {
  it('admits exactly the limit of limit+5 concurrent calls, and every slot comes back when they end', async () => {
    const limit = 4;
    const { ws, number, client } = await dialSetup(limit);
    const answers = await Promise.all(
      Array.from({ length: limit + 5 }, (_, i) =>
        ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: `+1415555${String(1100 + i)}`, metadata: { sandbox_call_ms: 60_000 } } }),
      ),
    );
    const admitted = answers.filter((res) => res.status === 201);
    expect(admitted).toHaveLength(limit);
    const refused = answers.filter((res) => res.status === 429);
    expect(refused).toHaveLength(5);
    expect(refused[0]!.body.message).toBe(`Concurrency limit reached: ${limit} calls in progress (limit ${limit})`);
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(limit);
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toHaveLength(limit);

    await Promise.all(admitted.map((res) => ws.api.post(`/v2/stop-call/${res.body.call_id}`, { body: {} })));
    const after = await client.concurrency.retrieve();
    expect(after).toMatchObject({ current_concurrency: 0, concurrency_limit: limit });
  });

  it('gives a slot back exactly once when a call is not connected, stopped, or deleted while running', async () => {
    const { ws, number, client } = await dialSetup(2);
    const busy: any = await client.call.createPhoneCall({ from_number: number, to_number: '+14155550001' });
    await eventually(() => client.call.retrieve(busy.call_id) as Promise<any>, (call) => call.call_status === 'not_connected');
    const running: any = await client.call.createPhoneCall({ from_number: number, to_number: '+14155550100', metadata: { sandbox_call_ms: 60_000 } });
    await client.call.delete(running.call_id);
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(0);
    // Both slots are free again: two calls fit.
    const a: any = await client.call.createPhoneCall({ from_number: number, to_number: '+14155550101', metadata: { sandbox_call_ms: 60_000 } });
    const b: any = await client.call.createPhoneCall({ from_number: number, to_number: '+14155550102', metadata: { sandbox_call_ms: 60_000 } });
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(2);
    await ws.api.post(`/v2/stop-call/${a.call_id}`, { body: {} });
    await ws.api.post(`/v2/stop-call/${b.call_id}`, { body: {} });
    await ws.api.post(`/v2/stop-call/${b.call_id}`, { body: {} });
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(0);
  });

  it('ends a call stranded in registered (its instance died before queueing its first step) when the workspace is full', async () => {
    const { ws, agent, number, client } = await dialSetup(1);
    const { acquireSlot } = await import('../../shared/calls/concurrency.ts');
    const { newCallItem, putNewCall } = await import('../../shared/calls/store.ts');
    const { STRANDED_REGISTERED_MS } = await import('../../shared/calls/calls.ts');
    const { newTimeOrderedId } = await import('../../shared/platform/ids.ts');
    // What a create that died after writing its call leaves: the slot and a registered call nothing moves.
    const createdAt = Date.now() - STRANDED_REGISTERED_MS - 1000;
    const strandedId = newTimeOrderedId('call', createdAt);
    await acquireSlot({ workspaceId: ws.workspace_id, callId: strandedId, kind: 'outbound', now: () => createdAt });
    await putNewCall(
      newCallItem({
        call_id: strandedId,
        workspace_id: ws.workspace_id,
        created_timestamp: createdAt,
        call_type: 'phone_call',
        call_status: 'registered',
        direction: 'outbound',
        agent_id: agent.agent_id,
        agent_version: 0,
        from_number: number,
        to_number: '+14155550123',
        engine: { slot: true, media: 'sandbox', origin: 'create-phone-call' },
      }),
    );
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(1);

    const next = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: '+14155550124', metadata: { sandbox_call_ms: 60_000 } } });
    expect(next.status).toBe(201);
    expect(await client.call.retrieve(strandedId)).toMatchObject({ call_status: 'error', disconnection_reason: 'error_unknown' });
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(1);
    await ws.api.post(`/v2/stop-call/${next.body.call_id}`, { body: {} });
    expect((await client.concurrency.retrieve()).current_concurrency).toBe(0);
  });

  it('keeps reserved inbound slots from web calls, and sets burst through the settings', async () => {
    const { ws, agent, client } = await dialSetup(2);
    const set = await ws.api.patch('/update-concurrency-settings', { body: { reserved_inbound_concurrency: 2 } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ reserved_inbound_concurrency: 2, burst_enabled: false });
    const web = await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } });
    expect(web.status).toBe(429);
    const tooMany = await ws.api.patch('/update-concurrency-settings', { body: { reserved_inbound_concurrency: 3 } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toBe('reserved_inbound_concurrency 3 is above the concurrency limit 2');

    await ws.api.patch('/update-concurrency-settings', { body: { reserved_inbound_concurrency: 0, burst_enabled: true } });
    const calls: any[] = [];
    for (let i = 0; i < 3; i++) calls.push(await client.call.createWebCall({ agent_id: agent.agent_id }));
    expect(calls.map((call) => call.concurrency_burst)).toEqual([false, false, true]);
    expect(await client.concurrency.retrieve()).toMatchObject({ current_concurrency: 3, concurrency_burst_enabled: true, concurrency_burst_limit: 6 });
    await Promise.all(calls.map((call) => ws.api.post(`/v2/stop-call/${call.call_id}`, { body: {} })));
  });
});
