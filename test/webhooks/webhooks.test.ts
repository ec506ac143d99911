import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { SQSRecord } from 'aws-lambda';
import { verify as retellVerify } from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { handler as webhookDelivery } from '../../functions/webhook-delivery.ts';
import { startBackgroundWork } from '../../local/background.ts';
import { localLambdaContext } from '../../local/local-context.ts';
import { localWebhookQueue } from '../../local/queues.ts';
import { newId, newTimeOrderedId } from '../../shared/platform/ids.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { queryAll } from '../../shared/platform/store/query.ts';
import { attemptClaims } from '../../shared/webhooks/store.ts';
import { deliverWebhook, enqueueWebhook, signWebhook, type WebhookMessage, verifyWebhookSignature, webhookSigningSecret } from '../../shared/webhooks/webhooks.ts';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody } from '../support/factories.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

interface Hit {
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
}

const receivers: Server[] = [];
afterAll(async () => {
  await Promise.all(
    receivers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
  );
});

/** A webhook endpoint on 127.0.0.1 answering the nth request (from 0) with `reply(n)`. */
async function receiver(reply: (n: number) => number | 'hang' = () => 200) {
  const hits: Hit[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const n = hits.length;
      hits.push({ at: Date.now(), headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const answer = reply(n);
      if (answer !== 'hang') res.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receivers.push(server);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, hits };
}

const settle = () => localWebhookQueue().whenIdle();
const signatureOf = (hit: Hit) => hit.headers['x-parley-signature'] as string;

describe('webhook signing', () => {
  it('signs with the webhook key, the same value in both headers, verifiable by the Retell SDK', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver();
    const deliveryId = await enqueueWebhook({
      workspaceId: ws.workspace_id,
      url: endpoint.url,
      event: 'call_started',
      payload: { call: { call_id: 'call_1' } },
    });
    await settle();

    expect(endpoint.hits).toHaveLength(1);
    const hit = endpoint.hits[0]!;
    expect(hit.body).toBe('{"event":"call_started","call":{"call_id":"call_1"}}');
    expect(hit.headers['content-type']).toBe('application/json');
    expect(signatureOf(hit)).toMatch(/^v=\d+,d=[0-9a-f]{64}$/);
    expect(hit.headers['x-retell-signature']).toBe(signatureOf(hit));
    expect(verifyWebhookSignature(hit.body, ws.api_key, signatureOf(hit))).toBe(true);
    expect(await retellVerify(hit.body, ws.api_key, signatureOf(hit))).toBe(true);
    expect(verifyWebhookSignature(`${hit.body} `, ws.api_key, signatureOf(hit))).toBe(false);

    const log = await ws.api.get('/webhook-deliveries');
    expect(log.status).toBe(200);
    expect(log.body).toHaveLength(1);
    expect(log.body[0]).toMatchObject({
      webhook_delivery_id: deliveryId,
      event: 'call_started',
      url: endpoint.url,
      attempt: 1,
      success: true,
      status: 200,
      error: null,
      will_retry: false,
      test: false,
    });
  });

  it('signs with the oldest remaining secret key once the webhook key is deleted', async () => {
    const ws = await app.newWorkspace();
    const defaultKey = (await ws.api.get('/get-api-key-info')).body;
    const older = (await ws.api.post('/api-keys', { body: apiKeyBody() })).body;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const newer = (await ws.api.post('/api-keys', { body: apiKeyBody() })).body;
    expect(defaultKey.is_webhook_key).toBe(true);
    expect(older.is_webhook_key).toBe(false);

    const deleted = await ws.api.withKey(older.api_key).delete(`/api-keys/${defaultKey.api_key_id}`);
    expect(deleted.status).toBe(204);
    const remaining = (await ws.api.withKey(older.api_key).get('/api-keys')).body as { is_webhook_key: boolean }[];
    expect(remaining.map((key) => key.is_webhook_key)).toEqual([false, false]);

    const endpoint = await receiver();
    await enqueueWebhook({ workspaceId: ws.workspace_id, url: endpoint.url, event: 'call_ended', payload: { call: {} } });
    await settle();

    expect(endpoint.hits).toHaveLength(1);
    const hit = endpoint.hits[0]!;
    expect(verifyWebhookSignature(hit.body, older.api_key, signatureOf(hit))).toBe(true);
    expect(verifyWebhookSignature(hit.body, newer.api_key, signatureOf(hit))).toBe(false);
    expect(verifyWebhookSignature(hit.body, ws.api_key, signatureOf(hit))).toBe(false);
    expect(await webhookSigningSecret(ws.workspace_id)).toBe(older.api_key);
  });

  it('follows the webhook flag to the key it was moved to', async () => {
    const ws = await app.newWorkspace();
    const flagged = (await ws.api.post('/api-keys', { body: apiKeyBody({ is_webhook_key: true }) })).body;
    expect(await webhookSigningSecret(ws.workspace_id)).toBe(flagged.api_key);
  });

  it('verifies the signature format exactly and rejects stale timestamps', () => {
    const body = '{"event":"test"}';
    expect(signWebhook(body, 'key_secret', 1_700_000_000_000)).toBe(
      `v=1700000000000,d=${createHmacHex('key_secret', `${body}1700000000000`)}`,
    );
    const signature = signWebhook(body, 'key_secret', 1_700_000_000_000);
    expect(verifyWebhookSignature(body, 'key_secret', signature, { nowMs: 1_700_000_000_000 + 300_000 })).toBe(true);
    expect(verifyWebhookSignature(body, 'key_secret', signature, { nowMs: 1_700_000_000_000 + 300_001 })).toBe(false);
    expect(verifyWebhookSignature(body, 'other', signature, { nowMs: 1_700_000_000_000 })).toBe(false);
    expect(verifyWebhookSignature(body, 'key_secret', 'v=1,d=zz', { nowMs: 1 })).toBe(false);
  });
});

describe('webhook retries', () => {
  it('sends a body past a queue message\'s size whole and alike on every attempt, and drops what it stored after the last', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver((n) => (n < 1 ? 503 : 200));
    // A long call's transcript: 900 KB of JSON, with characters of two, three and four bytes (a part never splits one).
    const lines = Array.from({ length: 6000 }, (_, n) => ({ role: n % 2 ? 'user' : 'agent', content: `Línea ${n}: ¿qué tal? 你好 🎧 ${'x'.repeat(100)}` }));
    const deliveryId = await enqueueWebhook({ workspaceId: ws.workspace_id, url: endpoint.url, event: 'call_ended', payload: { call: { call_id: 'call_long', transcript_object: lines } } });
    await settle();

    const expected = JSON.stringify({ event: 'call_ended', call: { call_id: 'call_long', transcript_object: lines } });
    expect(Buffer.byteLength(expected)).toBeGreaterThan(900_000);
    expect(endpoint.hits.map((hit) => hit.body === expected)).toEqual([true, true]);
    for (const hit of endpoint.hits) expect(verifyWebhookSignature(hit.body, ws.api_key, signatureOf(hit))).toBe(true);
    expect(await queryAll(keys.webhookBodyParts(deliveryId))).toEqual([]);
    const log = (await ws.api.get('/webhook-deliveries')).body as Record<string, unknown>[];
    expect(log.map((entry) => [entry.webhook_delivery_id, entry.attempt, entry.success])).toEqual([
      [deliveryId, 2, true],
      [deliveryId, 1, false],
    ]);
  });

  it('retries a failing endpoint after 1 s and 2 s and logs every attempt', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver((n) => (n < 2 ? 500 : 204));
    const deliveryId = await enqueueWebhook({ workspaceId: ws.workspace_id, url: endpoint.url, event: 'call_analyzed', payload: {} });
    await settle();

    expect(endpoint.hits).toHaveLength(3);
    expect(new Set(endpoint.hits.map((hit) => hit.body))).toEqual(new Set(['{"event":"call_analyzed"}']));
    const log = (await ws.api.get('/webhook-deliveries')).body as Record<string, unknown>[];
    expect(log.map((entry) => [entry.attempt, entry.success, entry.status, entry.will_retry, entry.error])).toEqual([
      [3, true, 204, false, null],
      [2, false, 500, true, 'Endpoint replied 500'],
      [1, false, 500, true, 'Endpoint replied 500'],
    ]);
    expect(new Set(log.map((entry) => entry.webhook_delivery_id))).toEqual(new Set([deliveryId]));
    const [third, second, first] = log.map((entry) => entry.created_timestamp as number);
    expect(second! - first!).toBeGreaterThanOrEqual(1000);
    expect(third! - second!).toBeGreaterThanOrEqual(2000);
    expect(endpoint.hits[1]!.at - endpoint.hits[0]!.at).toBeGreaterThanOrEqual(1000);
    expect(endpoint.hits[2]!.at - endpoint.hits[1]!.at).toBeGreaterThanOrEqual(2000);
  });

  it('gives up after 3 retries waiting 1, 2 and 4 s, recording the final failure', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver(() => 503);
    await enqueueWebhook({ workspaceId: ws.workspace_id, url: endpoint.url, event: 'call_ended', payload: {} });
    await settle();

    expect(endpoint.hits).toHaveLength(4);
    const log = (await ws.api.get('/webhook-deliveries')).body as Record<string, unknown>[];
    expect(log.map((entry) => [entry.attempt, entry.success, entry.status, entry.will_retry])).toEqual([
      [4, false, 503, false],
      [3, false, 503, true],
      [2, false, 503, true],
      [1, false, 503, true],
    ]);
    const started = log.map((entry) => entry.created_timestamp as number).reverse();
    expect(started[1]! - started[0]!).toBeGreaterThanOrEqual(1000);
    expect(started[2]! - started[1]!).toBeGreaterThanOrEqual(2000);
    expect(started[3]! - started[2]!).toBeGreaterThanOrEqual(4000);
    expect(localWebhookQueue().deadLetterQueue!.list()).toEqual([]);

    const limited = await ws.api.get('/webhook-deliveries?limit=2');
    expect(limited.body.map((entry: { attempt: number }) => entry.attempt)).toEqual([4, 3]);
  });

  it('counts a timeout (the given per-attempt timeout) as a failed attempt', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver((n) => (n === 0 ? 'hang' : 200));
    await enqueueWebhook({ workspaceId: ws.workspace_id, url: endpoint.url, event: 'call_started', payload: {}, timeoutMs: 300 });
    await settle();

    expect(endpoint.hits).toHaveLength(2);
    const log = (await ws.api.get('/webhook-deliveries')).body as Record<string, unknown>[];
    expect(log.map((entry) => [entry.attempt, entry.success, entry.status, entry.error, entry.will_retry])).toEqual([
      [2, true, 200, null, false],
      [1, false, null, 'Timed out after 300 ms', true],
    ]);
    expect(log[1]!.latency_ms as number).toBeGreaterThanOrEqual(300);
  });

  it("uses the workspace's webhook_timeout_ms when no timeout is given", async () => {
    const ws = await app.newWorkspace();
    const patched = await ws.api.patch('/workspace/settings', { body: { webhook_timeout_ms: 1000 } });
    expect(patched.status).toBe(200);
    const endpoint = await receiver((n) => (n === 0 ? 'hang' : 200));
    await enqueueWebhook({ workspaceId: ws.workspace_id, url: endpoint.url, event: 'call_started', payload: {} });
    await settle();

    const log = (await ws.api.get('/webhook-deliveries')).body as Record<string, unknown>[];
    expect(log.map((entry) => [entry.attempt, entry.success, entry.error])).toEqual([
      [2, true, null],
      [1, false, 'Timed out after 1000 ms'],
    ]);
  });
});

describe('POST /workspace/test-webhook', () => {
  it('sends one signed test event to the given URL and reports success', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver();
    const res = await ws.api.post('/workspace/test-webhook', { body: { url: endpoint.url } });

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, status: 200, latency_ms: expect.any(Number), error: null });
    expect(endpoint.hits).toHaveLength(1);
    const hit = endpoint.hits[0]!;
    expect(JSON.parse(hit.body)).toEqual({ event: 'test', workspace_id: ws.workspace_id, timestamp: expect.any(Number) });
    expect(hit.headers['x-retell-signature']).toBe(signatureOf(hit));
    expect(verifyWebhookSignature(hit.body, ws.api_key, signatureOf(hit))).toBe(true);

    const log = (await ws.api.get('/webhook-deliveries')).body;
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ event: 'test', url: endpoint.url, attempt: 1, success: true, status: 200, will_retry: false, test: true });
  });

  it('reports a non-2xx reply as a failure, with no retry', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver(() => 503);
    const res = await ws.api.post('/workspace/test-webhook', { body: { url: endpoint.url } });

    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: false, status: 503, latency_ms: expect.any(Number), error: 'Endpoint replied 503' });
    await settle();
    expect(endpoint.hits).toHaveLength(1);
    const log = (await ws.api.get('/webhook-deliveries')).body;
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ success: false, status: 503, will_retry: false, test: true });
  });

  it('reports an unreachable endpoint as a failure without a status', async () => {
    const ws = await app.newWorkspace();
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));

    const res = await ws.api.post('/workspace/test-webhook', { body: { url: `http://127.0.0.1:${port}/hooks` } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: false, status: null, latency_ms: expect.any(Number), error: 'Request failed: ECONNREFUSED' });
  });

  it('defaults to the saved workspace webhook_url', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver();
    expect((await ws.api.patch('/workspace', { body: { webhook_url: endpoint.url } })).status).toBe(200);
    const res = await ws.api.post('/workspace/test-webhook');

    expect(res.status).toBe(200);
    expect(res.body.success).toBe(true);
    expect(endpoint.hits).toHaveLength(1);
  });

  it('answers 400 when neither a url nor a saved webhook_url exists, or the url is not http(s)', async () => {
    const ws = await app.newWorkspace();
    const none = await ws.api.post('/workspace/test-webhook', { body: {} });
    expect(none.status).toBe(400);
    expect(none.body.message).toBe('Give a url, or set the workspace webhook_url first');

    const bad = await ws.api.post('/workspace/test-webhook', { body: { url: 'ftp://example.com/hooks' } });
    expect(bad.status).toBe(400);
    expect((await ws.api.get('/webhook-deliveries')).body).toEqual([]);
  });

  it('requires the admin scope, as does the delivery log', async () => {
    const ws = await app.newWorkspace();
    const scoped = (await ws.api.post('/api-keys', { body: apiKeyBody({ scopes: ['calls'] }) })).body;
    const client = ws.api.withKey(scoped.api_key);
    expect((await client.post('/workspace/test-webhook', { body: { url: 'http://127.0.0.1:1/' } })).status).toBe(403);
    expect((await client.get('/webhook-deliveries')).status).toBe(403);
  });
});

const record = (messageId: string, body: string): SQSRecord => ({
  messageId,
  receiptHandle: `handle-${messageId}`,
  body,
  attributes: { ApproximateReceiveCount: '1', SentTimestamp: '0', SenderId: 'test', ApproximateFirstReceiveTimestamp: '0' },
  messageAttributes: {},
  md5OfBody: '',
  eventSource: 'aws:sqs',
  eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:test',
  awsRegion: 'us-east-1',
});
const message = (overrides: Partial<WebhookMessage>): WebhookMessage => ({
  delivery_id: 'webhook_delivery_000000000000000000000001',
  workspace_id: app.workspace.workspace_id,
  url: 'http://127.0.0.1:1/',
  event: 'call_started',
  body: '{"event":"call_started"}',
  attempt: 1,
  ...overrides,
});

describe('webhook-delivery handler', () => {
  it('reports only the message whose attempt could not be recorded, not failed deliveries or malformed messages', async () => {
    const ws = await app.newWorkspace();
    const failing = await receiver(() => 500);
    const response = await webhookDelivery(
      {
        Records: [
          record('delivered-but-failed', JSON.stringify(message({ workspace_id: ws.workspace_id, url: failing.url, attempt: 4 }))),
          record('malformed', '{"not":"a webhook"}'),
          // A partition key over DynamoDB's 2,048-byte limit: the attempt cannot be looked up or recorded.
          record('unrecordable', JSON.stringify(message({ workspace_id: 'w'.repeat(3000) }))),
        ],
      },
      localLambdaContext('parley-webhook-delivery', 60_000),
    );

    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'unrecordable' }] });
    expect(failing.hits).toHaveLength(1);
    const log = (await ws.api.get('/webhook-deliveries')).body;
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ attempt: 4, success: false, status: 500, will_retry: false });
  });

  it('cuts an attempt short of the consumer deadline and counts it as a timeout', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await receiver(() => 'hang');
    const response = await webhookDelivery(
      { Records: [record('near-deadline', JSON.stringify(message({ workspace_id: ws.workspace_id, url: endpoint.url, attempt: 4 })))] },
      localLambdaContext('parley-webhook-delivery', 5_400),
    );

    expect(response).toEqual({ batchItemFailures: [] });
    const log = (await ws.api.get('/webhook-deliveries')).body;
    expect(log).toHaveLength(1);
    expect(log[0].success).toBe(false);
    expect(log[0].error).toMatch(/^Timed out after \d+ ms$/);
  });
});

describe('one delivery per event', () => {
  const sentTo = () => {
    const sent: { message: WebhookMessage; delaySeconds?: number }[] = [];
    return { sent, queue: { send: async (message: object, options: { delaySeconds?: number } = {}) => void sent.push({ message: message as WebhookMessage, ...options }) } };
  };
  const fresh = async (reply: () => number, delayMs = 0) => {
    const ws = await app.newWorkspace();
    const endpoint = await webhookReceiver(reply, { delayMs });
    return { ws, endpoint, message: message({ workspace_id: ws.workspace_id, delivery_id: newId('webhookDelivery'), url: endpoint.url }) };
  };

  it('the same message handled twice at once makes one POST, one log entry and one queued retry; a later copy does nothing', async () => {
    const { ws, endpoint, message: first } = await fresh(() => 500, 1000);
    const { sent, queue } = sentTo();
    const results = await Promise.all([deliverWebhook(first, { queue }), deliverWebhook(first, { queue })]);

    expect(results.sort()).toEqual(['handled', 'in_progress']);
    expect(endpoint.hits).toHaveLength(1);
    const log = (await ws.api.get('/webhook-deliveries')).body;
    expect(log).toEqual([expect.objectContaining({ webhook_delivery_id: first.delivery_id, attempt: 1, status: 500, will_retry: true })]);
    expect(sent).toEqual([{ message: { ...first, attempt: 2 }, delaySeconds: 1 }]);

    // The copy that found the attempt in progress comes back after the visibility timeout: nothing left to do.
    expect(await deliverWebhook(first, { queue })).toBe('duplicate');
    expect(endpoint.hits).toHaveLength(1);
    expect((await ws.api.get('/webhook-deliveries')).body).toHaveLength(1);
    expect(sent).toHaveLength(1);
  });

  it('the consumer reports the copy whose attempt another consumer holds, so SQS brings it back, and deletes it once the attempt is done', async () => {
    const { endpoint, message: body } = await fresh(() => 200, 1000);
    const event = { Records: [record('twice', JSON.stringify(body))] };
    const answers = await Promise.all([
      webhookDelivery(event, localLambdaContext('parley-webhook-delivery', 60_000)),
      webhookDelivery(event, localLambdaContext('parley-webhook-delivery', 60_000)),
    ]);
    expect(answers.map((answer) => answer.batchItemFailures).sort((a, b) => a.length - b.length)).toEqual([[], [{ itemIdentifier: 'twice' }]]);
    expect(endpoint.hits).toHaveLength(1);
    expect(await webhookDelivery(event, localLambdaContext('parley-webhook-delivery', 60_000))).toEqual({ batchItemFailures: [] });
    expect(endpoint.hits).toHaveLength(1);
  });

  it('a consumer that died after claiming, before its POST: the message that comes back after the lease delivers it', async () => {
    const { ws, endpoint, message: body } = await fresh(() => 200);
    const t0 = Date.now();
    // What the dead consumer left: a claim with a lease (its invocation's time), no outcome.
    const taken = await attemptClaims.claim({
      workspaceId: ws.workspace_id,
      deliveryId: body.delivery_id,
      attempt: 1,
      holder: 'dead-consumer',
      attemptId: newTimeOrderedId('webhookAttempt', t0),
      nowMs: t0,
      leaseUntil: t0 + 95_000,
      expiresAt: Math.floor(t0 / 1000) + 3600,
    });
    expect('claim' in taken).toBe(true);

    const { sent, queue } = sentTo();
    expect(await deliverWebhook(body, { queue, now: () => t0 + 60_000 })).toBe('in_progress');
    expect(endpoint.hits).toHaveLength(0);
    expect(await deliverWebhook(body, { queue, now: () => t0 + 95_000 })).toBe('handled');
    expect(endpoint.hits).toHaveLength(1);
    expect(endpoint.hits[0]!.headers['x-parley-event-id']).toBe(body.delivery_id);
    expect((await ws.api.get('/webhook-deliveries')).body).toEqual([expect.objectContaining({ webhook_delivery_id: body.delivery_id, attempt: 1, success: true })]);
    expect(sent).toEqual([]);
    expect(await deliverWebhook(body, { queue, now: () => t0 + 200_000 })).toBe('duplicate');
    expect(endpoint.hits).toHaveLength(1);
  });

  it('a message that comes back because its retry could not be queued records it and queues it without posting again', async () => {
    const { ws, endpoint, message: body } = await fresh(() => 503);
    const t0 = Date.now();
    const broken = { send: async () => Promise.reject(new Error('SQS unavailable')) };
    await expect(deliverWebhook(body, { queue: broken, now: () => t0 })).rejects.toThrow('SQS unavailable');
    expect(endpoint.hits).toHaveLength(1);

    const { sent, queue } = sentTo();
    // Before the failed consumer's lease ends the attempt is still its own; SQS brings the message back later.
    expect(await deliverWebhook(body, { queue, now: () => t0 + 1_000 })).toBe('in_progress');
    expect(await deliverWebhook(body, { queue, now: () => t0 + 10 * 60_000 })).toBe('handled');
    expect(endpoint.hits).toHaveLength(1);
    expect((await ws.api.get('/webhook-deliveries')).body).toEqual([expect.objectContaining({ attempt: 1, status: 503, will_retry: true })]);
    expect(sent).toEqual([{ message: { ...body, attempt: 2 }, delaySeconds: 1 }]);
  });

  it('every attempt of one event carries the same event ID (its delivery ID), with the signature headers as they were', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await webhookReceiver((n) => (n < 2 ? 500 : 200));
    const deliveryId = await enqueueWebhook({ workspaceId: ws.workspace_id, url: endpoint.url, event: 'call_ended', payload: { call: { call_id: 'call_2' } } });
    // The retries come 1 s and 2 s apart, behind whatever the file's earlier tests left on the
    // local queue (a stalled endpoint holds its batch until the attempt's timeout): a loaded
    // CI machine once took over 10 s.
    await eventually(async () => endpoint.hits.length, (count) => count === 3, 30_000);
    await settle();
    expect(endpoint.hits.map((hit) => hit.headers['x-parley-event-id'])).toEqual([deliveryId, deliveryId, deliveryId]);
    for (const hit of endpoint.hits) {
      expect(verifyWebhookSignature(hit.body, ws.api_key, hit.headers['x-parley-signature'] as string)).toBe(true);
      expect(hit.headers['x-retell-signature']).toBe(hit.headers['x-parley-signature']);
    }
    const log = (await ws.api.get('/webhook-deliveries')).body as { webhook_delivery_id: string; attempt: number }[];
    expect(log.map((entry) => [entry.webhook_delivery_id, entry.attempt])).toEqual([
      [deliveryId, 3],
      [deliveryId, 2],
      [deliveryId, 1],
    ]);

    const test = await ws.api.post('/workspace/test-webhook', { body: { url: endpoint.url } });
    expect(test.body).toMatchObject({ success: true });
    const testEntry = (await ws.api.get('/webhook-deliveries')).body[0];
    expect(testEntry.test).toBe(true);
    expect(endpoint.hits.at(-1)!.headers['x-parley-event-id']).toBe(testEntry.webhook_delivery_id);
  });
});

function createHmacHex(secret: string, input: string): string {
  return createHmac('sha256', secret).update(input).digest('hex');
}
