import { randomUUID } from 'node:crypto';
import type { SQSEvent } from 'aws-lambda';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { lambdaContext } from '../support/events.ts';
import { apiKeyBody, newAgentWithNumber, newChatAgent } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * The business metrics (shared/platform/observability/metrics.ts) through real flows: counted where the
 * event happens, flushed once per invocation as EMF documents (namespace Parley,
 * dimensions service and stage plus the event's own), which outside Lambda land in the
 * in-memory sink this file reads. No workspace has free credit here, so a fresh one is
 * refused with 402 and a credited one can call and chat.
 */
const app = await startTestApp({ FREE_CREDIT_USD: '0', PARLEY_STAGE: 'ci-stage' });
const { startBackgroundWork } = await import('../../local/background.ts');
const { JOBS } = await import('../../shared/jobs.ts');
const { clearRecordedMetrics, recordedMetrics } = await import('../../shared/platform/observability/metrics.ts');
const { handler: webhookDelivery } = await import('../../functions/webhook-delivery.ts');
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'webhook-delivery' || job.name === 'call-steps'));
afterAll(() => background.stop());
beforeEach(() => clearRecordedMetrics());

type Ws = Awaited<ReturnType<typeof app.newWorkspace>>;

/** Every recorded count of `name`: its event dimensions (service and stage checked and left out) and value. */
function counts(name: string): { dimensions: Record<string, string>; value: number }[] {
  const found: { dimensions: Record<string, string>; value: number }[] = [];
  for (const document of recordedMetrics()) {
    const [directive] = document._aws.CloudWatchMetrics;
    if (!directive!.Metrics.some((metric) => metric.Name === name)) continue;
    expect(directive!.Namespace).toBe('Parley');
    expect(directive!.Metrics.find((metric) => metric.Name === name)!.Unit).toBe('Count');
    const [names] = directive!.Dimensions;
    expect(names!.slice(0, 2)).toEqual(['service', 'stage']);
    expect(document).toMatchObject({ service: 'parley', stage: 'ci-stage' });
    found.push({
      dimensions: Object.fromEntries(names!.slice(2).map((dimension) => [dimension, document[dimension] as string])),
      value: document[name] as number,
    });
  }
  return found;
}

/** The total of `name` per dimension set, as `key=value,…` → count. */
function totals(name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const { dimensions, value } of counts(name)) {
    const id = Object.entries(dimensions).map(([key, value]) => `${key}=${value}`).join(',');
    out[id] = (out[id] ?? 0) + value;
  }
  return out;
}

async function creditedWorkspace(): Promise<Ws> {
  const ws = await app.newWorkspace();
  expect((await ws.api.post('/billing/add-credits', { body: { amount_usd: 20 } })).status).toBe(200);
  return ws;
}

describe('business metrics', () => {
  it('count a call started and ended by outcome, and its webhooks delivered or retried', async () => {
    const ws = await creditedWorkspace();
    // The first delivery fails (retried after a second), the others succeed.
    const hooks = await webhookReceiver((n) => (n === 1 ? 500 : 200));
    const { number } = await newAgentWithNumber(ws.api, { agent: { webhook_url: hooks.url } });
    const created = await ws.api.post('/v2/create-phone-call', {
      body: { from_number: number, to_number: '+14155555555', metadata: { sandbox_call_ms: 300 } },
    });
    expect(created.status).toBe(201);
    const call = (
      await eventually(
        () => ws.api.get(`/v2/get-call/${created.body.call_id}`),
        (res) => res.body.call_analysis !== undefined,
        30_000,
      )
    ).body;
    // call_started, call_ended, call_analyzed: four posts, the first of them failed.
    await eventually(async () => hooks.hits.length, (n) => n === 4, 30_000);
    await eventually(async () => totals('WebhookAttempt'), (t) => (t['result=delivered'] ?? 0) === 3);

    expect(totals('CallStarted')).toEqual({ 'call_type=phone_call': 1 });
    expect(totals('CallEnded')).toEqual({ [`call_status=ended,disconnection_reason=${call.disconnection_reason}`]: 1 });
    expect(call.call_status).toBe('ended');
    expect(totals('WebhookAttempt')).toEqual({ 'result=retried': 1, 'result=delivered': 3 });
  });

  it('count a delivery given up on its last attempt as dead, from the queue consumer', async () => {
    const ws = await app.newWorkspace();
    const hooks = await webhookReceiver(() => 503);
    const message = { delivery_id: `whd_${randomUUID()}`, workspace_id: ws.workspace_id, url: hooks.url, event: 'call_ended', body: '{}', attempt: 4 };
    const event = { Records: [{ messageId: randomUUID(), body: JSON.stringify(message), attributes: { ApproximateReceiveCount: '1' } }] } as unknown as SQSEvent;
    expect(await webhookDelivery(event, lambdaContext())).toEqual({ batchItemFailures: [] });
    expect(hooks.hits).toHaveLength(1);
    // Flushed by the job's wrapper when the invocation ended: one document.
    expect(recordedMetrics()).toHaveLength(1);
    expect(totals('WebhookAttempt')).toEqual({ 'result=dead': 1 });
  });

  it('count chats started and ended by chat type', async () => {
    const ws = await creditedWorkspace();
    const { chatAgent } = await newChatAgent(ws.api);
    const chat = await ws.api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
    expect(chat.status).toBe(201);
    expect((await ws.api.patch(`/end-chat/${chat.body.chat_id}`, { body: {} })).status).toBe(200);
    expect(totals('ChatStarted')).toEqual({ 'chat_type=api_chat': 1 });
    expect(totals('ChatEnded')).toEqual({ 'chat_type=api_chat': 1 });
  });

  it('count a 429 by the limit that refused it, once the request is answered', async () => {
    const created = await app.api.post('/api-keys', { body: apiKeyBody({ rate_limit_per_minute: 1 }) });
    expect(created.status).toBe(201);
    const limited = apiClient(app.url, created.body.api_key);
    expect((await limited.get('/get-api-key-info')).status).toBe(200);
    const refused = await limited.get('/get-api-key-info');
    expect(refused.status).toBe(429);
    expect(totals('RateLimited')).toEqual({ 'kind=key': 1 });
    expect(counts('SpendBlocked')).toEqual([]);
  });

  it('count a 402 by its error_code', async () => {
    const ws = await app.newWorkspace();
    const { chatAgent } = await newChatAgent(ws.api);
    const refused = await ws.api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
    expect(refused.status).toBe(402);
    expect(refused.body.error_code).toBe('credit_exhausted');
    expect(totals('SpendBlocked')).toEqual({ 'error_code=credit_exhausted': 1 });
    expect(counts('RateLimited')).toEqual([]);
    expect(counts('ChatStarted')).toEqual([]);
  });
});
