import { verify as retellVerify } from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const CALLER = '+14155550123';

/** A workspace whose number answers with an agent (and, when given, asks an inbound webhook first). */
async function inboundSetup(numberFields: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url } });
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }], ...numberFields },
  });
  expect(imported.status, JSON.stringify(imported.body)).toBe(201);
  return { ws, hooks, agent, number, client: retellClient(app.url, ws.api_key) };
}

const ring = (api: Awaited<ReturnType<typeof inboundSetup>>['ws']['api'], to: string, extra: Record<string, unknown> = {}) =>
  api.post('/sandbox/inbound-call', { body: { from_number: CALLER, to_number: to, ...extra } });

describe('POST /sandbox/inbound-call', () => {
  it('answers with the number\'s agent, SIP X- headers as variables, and runs the call to its end', async () => {
    const { ws, hooks, agent, number, client } = await inboundSetup();
    const res = await ring(ws.api, number, { sip_headers: { 'X-Customer-Id': 'c-42', Via: 'SIP/2.0/TCP edge' } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      call_type: 'phone_call',
      direction: 'inbound',
      call_status: 'registered',
      agent_id: agent.agent_id,
      from_number: CALLER,
      to_number: number,
      retell_llm_dynamic_variables: { 'x-customer-id': 'c-42' },
      metadata: { sip_headers: { 'X-Customer-Id': 'c-42', Via: 'SIP/2.0/TCP edge' } },
    });
    const callId = res.body.call_id;
    await client.call.stop(callId).catch(() => undefined);
    const ended: any = await eventually(() => client.call.retrieve(callId), (call: any) => call.call_status === 'ended');
    expect(ended.direction).toBe('inbound');
    await eventually(async () => hooks.events(callId), (events) => events.includes('call_ended'));
  });

  it('applies the call_inbound webhook\'s answer: another agent, its variables as strings, metadata', async () => {
    const ws = await app.newWorkspace();
    const { agent: picked } = await newAgent(ws.api);
    const { agent: override } = await newAgent(ws.api);
    const inbound = await webhookReceiver(() => ({
      status: 200,
      body: JSON.stringify({ call_inbound: { override_agent_id: override.agent_id, dynamic_variables: { tier: 'gold', vip: true, visits: 3 }, metadata: { crm: 'x1' } } }),
    }));
    const number = freshNumber();
    await ws.api.post('/import-phone-number', {
      body: { phone_number: number, termination_uri: 'sip:trunk.example.com', inbound_agents: [{ agent_id: picked.agent_id, weight: 1 }], inbound_webhook_url: inbound.url },
    });

    const res = await ring(ws.api, number, { sip_headers: { 'X-Tier': 'silver' } });
    expect(res.status).toBe(201);
    expect(res.body.agent_id).toBe(override.agent_id);
    expect(res.body.retell_llm_dynamic_variables).toEqual({ 'x-tier': 'silver', tier: 'gold', vip: 'true', visits: '3' });
    expect(res.body.metadata).toMatchObject({ crm: 'x1' });

    expect(inbound.hits).toHaveLength(1);
    const sent = inbound.hits[0]!;
    expect(sent.json).toEqual({
      event: 'call_inbound',
      call_inbound: { call_id: res.body.call_id, agent_id: picked.agent_id, agent_version: null, from_number: CALLER, to_number: number },
    });
    expect(await retellVerify(sent.body, ws.api_key, sent.headers['x-retell-signature'] as string)).toBe(true);
    expect(sent.headers['x-parley-signature']).toBe(sent.headers['x-retell-signature']);

    // The attempt is in the workspace's delivery log, naming no call.
    const log = await ws.api.get('/webhook-deliveries');
    expect(log.status).toBe(200);
    expect(log.body).toHaveLength(1);
    expect(log.body[0]).toEqual({
      webhook_attempt_id: expect.stringMatching(/^\S+$/),
      webhook_delivery_id: expect.stringMatching(/^\S+$/),
      event: 'call_inbound',
      url: inbound.url,
      attempt: 1,
      success: true,
      status: 200,
      error: null,
      latency_ms: expect.any(Number),
      will_retry: false,
      test: false,
      created_timestamp: expect.any(Number),
    });
  });

  it('retries a failing webhook after 0.5 s and 1 s, then answers with the picked agent', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api);
    const inbound = await webhookReceiver(() => 500);
    const number = freshNumber();
    await ws.api.post('/import-phone-number', {
      body: { phone_number: number, termination_uri: 'sip:trunk.example.com', inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }], inbound_webhook_url: inbound.url },
    });
    const res = await ring(ws.api, number);
    expect(res.status).toBe(201);
    expect(res.body.agent_id).toBe(agent.agent_id);
    expect(inbound.hits).toHaveLength(3);
    const [first, second, third] = inbound.hits.map((hit) => hit.at);
    expect(second! - first!).toBeGreaterThanOrEqual(450);
    expect(third! - second!).toBeGreaterThanOrEqual(950);
    // Every attempt carries the same call_id: the call the caller gets if accepted.
    expect(new Set(inbound.hits.map((hit) => hit.json.call_inbound && (hit.json.call_inbound as any).call_id)).size).toBe(1);

    // The delivery log has the three attempts of one delivery, newest first.
    const log = (await ws.api.get('/webhook-deliveries')).body.filter((entry: any) => entry.event === 'call_inbound');
    expect(log.map((entry: any) => [entry.attempt, entry.success, entry.status, entry.error, entry.will_retry, entry.url, entry.test])).toEqual([
      [3, false, 500, 'Endpoint replied 500', false, inbound.url, false],
      [2, false, 500, 'Endpoint replied 500', true, inbound.url, false],
      [1, false, 500, 'Endpoint replied 500', true, inbound.url, false],
    ]);
    expect(new Set(log.map((entry: any) => entry.webhook_delivery_id)).size).toBe(1);
    expect(log[0].created_timestamp - log[2].created_timestamp).toBeGreaterThanOrEqual(1450);
    expect(JSON.stringify(log)).not.toContain(res.body.call_id);
  });

  it('creates no call when the webhook rejects, names no agent, or names an agent of another workspace', async () => {
    const ws = await app.newWorkspace();
    const stranger = await newAgent((await app.newWorkspace()).api);
    const answers = [{ reject: true }, {}, { override_agent_id: stranger.agent.agent_id }];
    const reasons: string[] = [];
    for (const answer of answers) {
      const inbound = await webhookReceiver(() => ({ status: 200, body: JSON.stringify({ call_inbound: answer }) }));
      const number = freshNumber();
      await ws.api.post('/import-phone-number', { body: { phone_number: number, termination_uri: 'sip:trunk.example.com', inbound_webhook_url: inbound.url } });
      const res = await ring(ws.api, number);
      expect(res.status).toBe(200);
      expect(res.body.call_id).toBeNull();
      reasons.push(res.body.reason);
    }
    expect(reasons[0]).toBe('rejected by the inbound webhook');
    expect(reasons[1]).toMatch(/has no inbound agent and the webhook named none$/);
    expect(reasons[2]).toBe(`agent ${stranger.agent.agent_id} is not in this workspace`);
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toEqual([]);
  });

  it('refuses a caller from a country not allowed, before the webhook', async () => {
    const inbound = await webhookReceiver();
    const { ws, number } = await inboundSetup({ allowed_inbound_country_list: ['GB'], inbound_webhook_url: inbound.url });
    const res = await ring(ws.api, number);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ call_id: null, reason: `caller ${CALLER} is not in allowed_inbound_country_list` });
    expect(inbound.hits).toHaveLength(0);
  });

  it('does not ring another workspace\'s number, and is not part of the deployed API', async () => {
    const { number } = await inboundSetup();
    const other = await app.newWorkspace();
    const res = await ring(other.api, number);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ call_id: null, reason: `${number} is not a number in this workspace` });
    const { servedRoutes } = await import('../../shared/route-table.ts');
    expect(servedRoutes().some((route) => route.path.startsWith('/sandbox/'))).toBe(false);
  });
});
