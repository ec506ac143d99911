import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalMessageQueue } from '../../local/local-queue.ts';
import { newTimeOrderedId } from '../../shared/platform/ids.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { queryAll } from '../../shared/platform/store/query.ts';
import { TtlCache } from '../../shared/webhooks/delivery-cache.ts';
import { acquireDeliverySlot, receiverSlowUntil } from '../../shared/webhooks/delivery-slots.ts';
import { deliveryAttempts } from '../../shared/webhooks/store.ts';
import { deliverWebhook, enqueueWebhook, parseWebhookMessage, verifyWebhookSignature, type WebhookMessage } from '../../shared/webhooks/webhooks.ts';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody } from '../support/factories.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

const app = await startTestApp();

const servers: Server[] = [];
afterAll(() => {
  for (const server of servers) {
    server.closeAllConnections();
    server.close();
  }
});

/** A receiver that holds every request until `open()` (a slow endpoint, with no wall-clock wait). */
async function gatedReceiver() {
  const held: (() => void)[] = [];
  let opened = false;
  let hits = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      hits++;
      const answer = () => res.writeHead(200).end('ok');
      if (opened) answer();
      else held.push(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow`,
    hits: () => hits,
    open: () => {
      opened = true;
      for (const answer of held.splice(0)) answer();
    },
  };
}

/**
 * The platform in miniature: a queue whose event source runs two batches of one message at
 * a time, each through deliverWebhook as the consumer does, on a clock that stands still (a
 * deferred message stays delayed, so what the test sees is only what went straight through).
 */
function miniPlatform(inFlightCap: number) {
  const clock = { now: () => 1_000_000_000_000 };
  const queue: LocalMessageQueue = new LocalMessageQueue({ name: 'fairness', batchSize: 1, maxConcurrency: 2, visibilityTimeoutSeconds: 120, clock });
  queue.start(async (event, context) => {
    for (const record of event.Records) {
      await deliverWebhook(parseWebhookMessage(record.body)!, { queue, inFlightCap, remainingMs: () => context.getRemainingTimeInMillis() });
    }
  });
  const enqueue = (workspaceId: string, url: string, count: number) =>
    Promise.all(Array.from({ length: count }, (_, i) => enqueueWebhook({ workspaceId, url, event: 'call_started', payload: { n: i }, timeoutMs: 60_000 }, queue)));
  const deferred = () => queue.list().map((m) => JSON.parse(m.body) as WebhookMessage).filter((m) => m.deferred !== undefined);
  return { queue, enqueue, deferred };
}

describe('per-workspace fairness of webhook delivery', () => {
  it("a workspace's slow receiver holds only its cap: the other workspace's deliveries go straight through, the excess waits in the queue", async () => {
    const [slowWs, fastWs] = [await app.newWorkspace(), await app.newWorkspace()];
    const slow = await gatedReceiver();
    const fast = await webhookReceiver();
    const platform = miniPlatform(1);

    // The slow workspace's events are queued first and would fill both executions.
    await platform.enqueue(slowWs.workspace_id, slow.url, 4);
    await platform.enqueue(fastWs.workspace_id, fast.url, 4);

    await eventually(async () => fast.hits.length, (n) => n === 4);
    // While its one delivery still hangs: the rest were sent back with a delay, not held.
    expect(slow.hits()).toBe(1);
    const deferred = platform.deferred();
    expect(deferred).toHaveLength(3);
    expect(deferred.every((m) => m.workspace_id === slowWs.workspace_id && m.deferred === 1 && m.attempt === 1)).toBe(true);

    slow.open();
    await platform.queue.stop();
  });

  it('without a cap the same slow receiver takes every execution and the other workspace waits behind it', async () => {
    const [slowWs, fastWs] = [await app.newWorkspace(), await app.newWorkspace()];
    const slow = await gatedReceiver();
    const fast = await webhookReceiver();
    const platform = miniPlatform(100);

    await platform.enqueue(slowWs.workspace_id, slow.url, 4);
    await platform.enqueue(fastWs.workspace_id, fast.url, 4);

    await eventually(async () => slow.hits(), (n) => n === 2);
    expect(fast.hits).toHaveLength(0);
    expect(platform.deferred()).toHaveLength(0);

    slow.open();
    await eventually(async () => fast.hits.length, (n) => n === 4);
    await platform.queue.stop();
  });

  it('never admits more than the cap, however many deliveries of the workspace arrive at once', async () => {
    const ws = await app.newWorkspace();
    const slow = await gatedReceiver();
    const sent: WebhookMessage[] = [];
    const queue = { send: async (message: object) => void sent.push(message as WebhookMessage) };
    const messages = Array.from({ length: 12 }, (_, i) => ({
      delivery_id: newTimeOrderedId('webhookDelivery', Date.now() + i),
      workspace_id: ws.workspace_id,
      url: slow.url,
      event: 'call_started',
      body: '{}',
      attempt: 1,
      timeout_ms: 60_000,
    }));
    const results = messages.map((message) => deliverWebhook(message, { queue, inFlightCap: 5 }));
    await eventually(async () => sent.length + slow.hits(), (n) => n === 12);
    // At most the cap at once (a delivery that lost every slot it tried under contention is
    // deferred: a deferral, never an over-admission).
    const posted = slow.hits();
    expect(posted).toBeGreaterThanOrEqual(3);
    expect(posted).toBeLessThanOrEqual(5);
    expect(sent.every((message) => message.deferred === 1)).toBe(true);
    slow.open();
    expect((await Promise.all(results)).filter((result) => result === 'deferred')).toHaveLength(12 - posted);
  });
});

describe('a slow receiver', () => {
  it("an attempt that times out lowers its workspace to the slow receivers' cap of 25 for five minutes; other workspaces keep theirs", async () => {
    const [slowWs, otherWs] = [await app.newWorkspace(), await app.newWorkspace()];
    const hanging = await gatedReceiver();
    const fast = await webhookReceiver();
    const sent: WebhookMessage[] = [];
    const queue = { send: async (message: object) => void sent.push(message as WebhookMessage) };
    const at = Date.now();
    const message = (workspaceId: string, url: string, n: number, timeoutMs?: number): WebhookMessage => ({
      delivery_id: newTimeOrderedId('webhookDelivery', at + n),
      workspace_id: workspaceId,
      url,
      event: 'call_started',
      body: '{}',
      attempt: 1,
      ...(timeoutMs ? { timeout_ms: timeoutMs } : {}),
    });
    /** Holds `count` slots of the workspace's first group for ten minutes, as other consumers' deliveries would. */
    const holdSlots = async (workspaceId: string, count: number) => {
      // One at a time: taken at once, a few would lose their tries to each other and be refused.
      for (let i = 0; i < count; i++) expect(await acquireDeliverySlot(workspaceId, count, { leaseMs: 600_000, now: () => at })).toBeDefined();
    };

    // Its receiver never answers: the attempt times out (100 ms here), is recorded and retried, and marks the receiver.
    expect(await deliverWebhook(message(slowWs.workspace_id, hanging.url, 1, 100), { queue, now: () => at })).toBe('handled');
    expect(sent.map((queued) => queued.attempt)).toEqual([2]);
    expect(await receiverSlowUntil(slowWs.workspace_id)).toBe(at + 5 * 60_000);

    // 25 of its deliveries in flight: the next is deferred, though its own cap (100) has room.
    await holdSlots(slowWs.workspace_id, 25);
    expect(await deliverWebhook(message(slowWs.workspace_id, fast.url, 2), { queue, now: () => at + 1_000 })).toBe('deferred');
    // Another workspace with as many in flight is admitted: only the slow one is narrowed.
    await holdSlots(otherWs.workspace_id, 25);
    expect(await deliverWebhook(message(otherWs.workspace_id, fast.url, 3), { queue, now: () => at + 1_000 })).toBe('handled');
    expect(fast.hits).toHaveLength(1);

    // Five minutes on with no slow attempt since (and past the 15 s cache): its full cap again.
    expect(await deliverWebhook(message(slowWs.workspace_id, fast.url, 4), { queue, now: () => at + 5 * 60_000 + 15_001 })).toBe('handled');
    expect(fast.hits).toHaveLength(2);
    hanging.open();
  });
});

describe('delivery slots', () => {
  it("a consumer that died holding a slot gives it back when its lease ends, not before", async () => {
    const ws = await app.newWorkspace();
    let at = 1_000_000;
    const now = () => at;
    const held = await acquireDeliverySlot(ws.workspace_id, 1, { leaseMs: 30_000, now });
    expect(held).toBeDefined();
    at += 29_999;
    expect(await acquireDeliverySlot(ws.workspace_id, 1, { leaseMs: 30_000, now })).toBeUndefined();
    at += 1;
    const next = await acquireDeliverySlot(ws.workspace_id, 1, { leaseMs: 30_000, now });
    expect(next).toBeDefined();
    // The dead holder's late release does not free the slot its successor holds.
    await held!.release();
    expect(await acquireDeliverySlot(ws.workspace_id, 1, { leaseMs: 30_000, now })).toBeUndefined();
    await next!.release();
    expect(await acquireDeliverySlot(ws.workspace_id, 1, { leaseMs: 30_000, now })).toBeDefined();
  });

  it('spreads a large cap over groups and still admits exactly the cap', async () => {
    const ws = await app.newWorkspace();
    const now = () => 2_000_000;
    const taken = await Promise.all(Array.from({ length: 60 }, () => acquireDeliverySlot(ws.workspace_id, 40, { leaseMs: 60_000, now })));
    // Never more than the cap; a few refusals under contention are deferrals, not over-admission.
    expect(taken.filter(Boolean).length).toBeLessThanOrEqual(40);
    const groups = await Promise.all([0, 1].map((group) => queryAll({ pk: keys.webhookDeliverySlots(ws.workspace_id, group).pk })));
    expect(groups.every((items) => items.length === 1)).toBe(true);
    // Taken one at a time, every free slot is found.
    let more = 0;
    while (await acquireDeliverySlot(ws.workspace_id, 40, { leaseMs: 60_000, now })) more++;
    expect(taken.filter(Boolean).length + more).toBe(40);
  });
});

describe('the delivery cache', () => {
  it('answers an entry until its time is up, shares one load among callers, and forgets a failed load', async () => {
    const cache = new TtlCache<number>(2, 15_000);
    let loads = 0;
    const load = async () => ++loads;
    expect(await Promise.all([cache.get('a', load, 0), cache.get('a', load, 0)])).toEqual([1, 1]);
    expect(await cache.get('a', load, 14_999)).toBe(1);
    expect(await cache.get('a', load, 15_000)).toBe(2);
    await expect(cache.get('b', () => Promise.reject(new Error('down')), 15_000)).rejects.toThrow('down');
    expect(await cache.get('b', load, 15_000)).toBe(3);
    // Full: the oldest entry goes.
    await cache.get('c', load, 15_000);
    expect(await cache.get('a', load, 15_000)).toBe(5);
  });
});

describe('cached reads per delivery', () => {
  it('signs with the key read in the last 15 s, and with the new webhook key once that has passed', async () => {
    const ws = await app.newWorkspace();
    const endpoint = await webhookReceiver();
    const queue = { send: async () => undefined };
    const at = Date.now();
    const delivery = (n: number, nowMs: number) =>
      deliverWebhook(
        { delivery_id: newTimeOrderedId('webhookDelivery', at + n), workspace_id: ws.workspace_id, url: endpoint.url, event: 'call_started', body: '{}', attempt: 1 },
        { queue, now: () => nowMs },
      );

    await delivery(1, at);
    const moved = (await ws.api.post('/api-keys', { body: apiKeyBody({ is_webhook_key: true }) })).body as { api_key: string };
    await delivery(2, at + 14_000);
    await delivery(3, at + 15_001);

    const signedWith = endpoint.hits.map((hit) => (verifyWebhookSignature(hit.body, moved.api_key, hit.headers['x-parley-signature'] as string) ? 'new' : verifyWebhookSignature(hit.body, ws.api_key, hit.headers['x-parley-signature'] as string) ? 'old' : 'neither'));
    expect(signedWith).toEqual(['old', 'old', 'new']);
  });
});

describe('the delivery log, sharded', () => {
  it('spreads a workspace\'s entries over its shards and pages them newest first, each entry once', async () => {
    const ws = await app.newWorkspace();
    const start = Date.now() - 60_000;
    const ids = Array.from({ length: 25 }, (_, i) => newTimeOrderedId('webhookAttempt', start + i * 10));
    await Promise.all(
      ids.map((id, i) =>
        deliveryAttempts.put(ws.workspace_id, {
          webhook_attempt_id: id,
          webhook_delivery_id: `webhook_delivery_${String(i).padStart(24, '0')}`,
          event: 'call_started',
          url: 'https://example.com/hooks',
          attempt: 1,
          success: true,
          status: 200,
          error: null,
          latency_ms: 5,
          will_retry: false,
          test: false,
          created_timestamp: start + i * 10,
          expires_at: Math.floor(start / 1000) + 3600,
        }),
      ),
    );

    const perShard = await Promise.all([0, 1, 2, 3].map((shard) => queryAll(keys.webhookDeliveries(ws.workspace_id, shard))));
    expect(perShard.flat()).toHaveLength(25);
    expect(perShard.filter((entries) => entries.length > 0).length).toBeGreaterThan(1);

    const pages: string[][] = [];
    let after: string | undefined;
    do {
      const page = (await ws.api.get(`/webhook-deliveries?limit=7${after ? `&pagination_key=${after}` : ''}`)).body as { webhook_attempt_id: string }[];
      pages.push(page.map((entry) => entry.webhook_attempt_id));
      after = page.length === 7 ? page.at(-1)!.webhook_attempt_id : undefined;
    } while (after);
    expect(pages.map((page) => page.length)).toEqual([7, 7, 7, 4]);
    expect(pages.flat()).toEqual([...ids].reverse());
  });
});
