import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

// Pre-call workflows on inbound calls (spec: Inbound call webhook, step 7), in the sandbox.
const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const CALLER = '+14155550123';

/** A number answered by a fresh agent (begin message naming two variables), with an inbound webhook. */
async function setup(hookVariables: Record<string, unknown>) {
  const ws = await app.newWorkspace();
  const { agent } = await newAgent(ws.api, { llm: { begin_message: 'Hello {{customer_name}}, your tier is {{tier}}.' } });
  const inbound = await webhookReceiver(() => ({ status: 200, body: JSON.stringify({ call_inbound: { dynamic_variables: hookVariables } }) }));
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: {
      phone_number: number,
      termination_uri: 'sip:trunk.example.com',
      inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }],
      inbound_webhook_url: inbound.url,
    },
  });
  expect(imported.status).toBe(201);
  const saveWorkflow = async (steps: unknown[]) => {
    const put = await ws.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, { body: { steps } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  };
  const ring = (sipHeaders: Record<string, string> = {}) =>
    ws.api.post('/sandbox/inbound-call', { body: { from_number: CALLER, to_number: number, sip_headers: sipHeaders } });
  const runs = async () => (await ws.api.get(`/agents/${agent.agent_id}/workflow-runs`)).body;
  return { ws, agent, number, saveWorkflow, ring, runs, client: retellClient(app.url, ws.api_key) };
}

/** An endpoint on 127.0.0.1 that accepts requests and never answers (a slow CRM). */
async function silentServer() {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('pre-call workflows on inbound calls', () => {
  it('joins the workflow outputs to the variables above the SIP headers and the webhook, and the agent says them', async () => {
    const crm = await webhookReceiver(() => ({
      status: 200,
      body: JSON.stringify({ name: 'Ada', tier: 'platinum', visits: 3, diversion: 'from the workflow' }),
    }));
    const { agent, saveWorkflow, ring, runs, client } = await setup({ diversion: 'from the webhook', tier: 'gold', plan: 'basic', 'x-source': 'from the webhook too' });
    await saveWorkflow([
      {
        type: 'http',
        name: 'lookup',
        url: `${crm.url}?caller={{from_number}}&plan={{plan}}&call={{call_id}}`,
        outputs: { customer_name: 'name', tier: 'tier', visits: 'visits', diversion: 'diversion' },
      },
    ]);

    const res = await ring({ Diversion: 'from SIP', 'X-Source': 'from SIP', 'X-Line': 'from SIP' });
    expect(res.status).toBe(201);
    const callId = res.body.call_id;
    // Later wins: SIP headers < the webhook's dynamic_variables < the workflow's outputs; all strings.
    expect(res.body.retell_llm_dynamic_variables).toEqual({
      'x-line': 'from SIP',
      'x-source': 'from the webhook too',
      diversion: 'from the workflow',
      plan: 'basic',
      tier: 'platinum',
      customer_name: 'Ada',
      visits: '3',
    });
    expect(crm.hits).toHaveLength(1);
    const [run] = await runs();
    expect(run).toMatchObject({ agent_id: agent.agent_id, stage: 'pre_call', trigger: 'call', call_id: callId, status: 'succeeded' });
    expect(run.outputs).toEqual({ customer_name: 'Ada', tier: 'platinum', visits: '3', diversion: 'from the workflow' });

    const live: any = await eventually(() => client.call.retrieve(callId), (call: any) => (call.transcript_object?.length ?? 0) > 0);
    expect(live.retell_llm_dynamic_variables).toMatchObject({ customer_name: 'Ada', tier: 'platinum' });
    expect(live.transcript_object[0]).toMatchObject({ role: 'agent', content: 'Hello Ada, your tier is platinum.' });
    await client.call.stop(callId).catch(() => undefined);
  });

  it('gives the workflow the call\'s variables and its own fields as template inputs', async () => {
    const crm = await webhookReceiver(() => ({ status: 200, body: JSON.stringify({ name: 'Grace' }) }));
    const { agent, number, saveWorkflow, ring, client } = await setup({ plan: 'basic' });
    await saveWorkflow([
      {
        type: 'http',
        name: 'lookup',
        method: 'POST',
        url: crm.url,
        body: { caller: '{{from_number}}', dialled: '{{to_number}}', plan: '{{plan}}', call: '{{call_id}}', agent: '{{agent_id}}', direction: '{{direction}}' },
        outputs: { customer_name: 'name' },
      },
    ]);
    const res = await ring({ 'X-Line': '7' });
    expect(res.status).toBe(201);
    expect(crm.hits.map((hit) => hit.json)).toEqual([
      { caller: CALLER, dialled: number, plan: 'basic', call: res.body.call_id, agent: agent.agent_id, direction: 'inbound' },
    ]);
    // Only the outputs join the variables, not the inputs the workflow was given.
    expect(res.body.retell_llm_dynamic_variables).toEqual({ 'x-line': '7', plan: 'basic', customer_name: 'Grace' });
    await client.call.stop(res.body.call_id).catch(() => undefined);
  });

  it('keeps the outputs gathered before a failing step, records the failed run, and still answers the call', async () => {
    const crm = await webhookReceiver((n) => (n === 0 ? { status: 200, body: JSON.stringify({ name: 'Ada' }) } : { status: 500, body: '{"error":"down"}' }));
    const { saveWorkflow, ring, runs, client } = await setup({ tier: 'gold' });
    await saveWorkflow([
      { type: 'http', name: 'lookup', url: crm.url, outputs: { customer_name: 'name' } },
      { type: 'http', name: 'enrich', url: crm.url, outputs: { tier: 'tier' } },
      { type: 'llm', name: 'never', prompt: 'Say hi to {{customer_name}}', outputs: ['greeting'] },
    ]);
    const res = await ring();
    expect(res.status).toBe(201);
    expect(res.body.call_status).toBe('registered');
    expect(res.body.retell_llm_dynamic_variables).toEqual({ tier: 'gold', customer_name: 'Ada' });
    const [run] = await runs();
    expect(run).toMatchObject({ trigger: 'call', call_id: res.body.call_id, status: 'failed', outputs: { customer_name: 'Ada' } });
    expect(run.steps.map((step: { name: string; status: string; error?: string }) => [step.name, step.status, step.error])).toEqual([
      ['lookup', 'succeeded', undefined],
      ['enrich', 'failed', 'Endpoint replied 500'],
      ['never', 'skipped', undefined],
    ]);
    await client.call.stop(res.body.call_id).catch(() => undefined);
  });

  it('does not wait on a slow endpoint past its step timeout: the call goes on without that output', async () => {
    const slow = await silentServer();
    const { saveWorkflow, ring, runs, client } = await setup({ tier: 'gold' });
    await saveWorkflow([{ type: 'http', name: 'slow', url: `${slow}/lookup`, timeout_ms: 300, outputs: { customer_name: 'name' } }]);
    const res = await ring();
    expect(res.status).toBe(201);
    expect(res.body.retell_llm_dynamic_variables).toEqual({ tier: 'gold' });
    const [run] = await runs();
    expect(run).toMatchObject({ status: 'failed', outputs: {}, call_id: res.body.call_id });
    expect(run.steps[0]).toMatchObject({ name: 'slow', status: 'failed', error: 'Timed out after 300 ms' });
    await client.call.stop(res.body.call_id).catch(() => undefined);
  });

  it('runs nothing for a disabled workflow, and nothing for web calls (the spec runs them on inbound calls only)', async () => {
    const crm = await webhookReceiver(() => ({ status: 200, body: JSON.stringify({ name: 'Ada' }) }));
    const { ws, agent, ring, runs, client } = await setup({});
    await ws.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, {
      body: { enabled: false, steps: [{ type: 'http', name: 'lookup', url: crm.url, outputs: { customer_name: 'name' } }] },
    });
    const res = await ring();
    expect(res.status).toBe(201);
    expect(res.body.retell_llm_dynamic_variables).toEqual({});
    await ws.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, {
      body: { enabled: true, steps: [{ type: 'http', name: 'lookup', url: crm.url, outputs: { customer_name: 'name' } }] },
    });
    const web: any = await client.call.createWebCall({ agent_id: agent.agent_id, retell_llm_dynamic_variables: { plan: 'basic' } });
    expect(web.retell_llm_dynamic_variables).toEqual({ plan: 'basic' });
    expect(crm.hits).toHaveLength(0);
    expect(await runs()).toEqual([]);
    await client.call.stop(res.body.call_id).catch(() => undefined);
    await client.call.stop(web.call_id).catch(() => undefined);
  });
});
