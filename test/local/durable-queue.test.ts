import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalMessageQueue, type LocalQueueOptions, type LocalQueueStore } from '../../local/local-queue.ts';
import { tableQueueStore } from '../../local/queue-store.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { queryAll } from '../../shared/platform/store/query.ts';

/*
 * The local queue over the table (DynamoDB Local): what one queue object stored, a new one
 * of the same name resumes, as `npm start` does after a restart. "Dropping" a queue is
 * what a stopped process does: nothing of it runs on, nothing more reaches the table.
 */

const stopAtEnd: LocalMessageQueue[] = [];
afterEach(async () => {
  await Promise.all(stopAtEnd.splice(0).map((queue) => queue.stop()));
});

let names = 0;
const freshName = () => `durable-${++names}`;

function open(name: string, options: Partial<LocalQueueOptions> = {}) {
  const queue = new LocalMessageQueue({
    name,
    visibilityTimeoutSeconds: 1,
    onConsumerError: () => undefined,
    store: tableQueueStore,
    onStoreError: (error) => {
      throw error;
    },
    ...options,
  });
  stopAtEnd.push(queue);
  return queue;
}

/**
 * The table store until `die()`: afterwards nothing more is written, as when the process
 * is killed (a write that was under way is lost with it).
 */
function mortalStore(): { store: LocalQueueStore; die(): void } {
  let dead = false;
  const unless = (write: () => Promise<void>) => (dead ? Promise.resolve() : write());
  return {
    store: {
      load: (queue) => tableQueueStore.load(queue),
      save: (queue, message) => unless(() => tableQueueStore.save(queue, message)),
      remove: (queue, messageId) => unless(() => tableQueueStore.remove(queue, messageId)),
    },
    die: () => {
      dead = true;
    },
  };
}

function recorder() {
  const received: { at: number; record: SQSRecord }[] = [];
  const consumer = async (event: SQSEvent) => {
    for (const record of event.Records) received.push({ at: Date.now(), record });
  };
  return { received, consumer };
}

const storedItems = (name: string) => queryAll(keys.localQueueMessages(name));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the local queue kept in the table', () => {
  it('delivers from a new queue what a dropped one had stored, and deletes it from the table once handled', async () => {
    const name = freshName();
    const before = open(name);
    await before.send({ n: 1 });
    const [stored] = before.list();
    // `before` is dropped here: no consumer ever ran on it.

    const after = open(name);
    const { received, consumer } = recorder();
    after.start(consumer);
    await after.whenIdle();
    expect(received.map(({ record }) => [record.messageId, record.body, record.attributes.ApproximateReceiveCount])).toEqual([
      [stored!.messageId, '{"n":1}', '1'],
    ]);
    expect(received[0]!.record.attributes.SentTimestamp).toBe(String(stored!.sentTimestamp));
    expect(await storedItems(name)).toEqual([]);
  });

  it('keeps a delay across the restart: a 2 s delay is not delivered at 1 s', async () => {
    const name = freshName();
    const sentAt = Date.now();
    await open(name).send({ n: 1 }, { delaySeconds: 2 });

    const after = open(name);
    const { received, consumer } = recorder();
    after.start(consumer);
    await sleep(Math.max(0, sentAt + 1000 - Date.now()));
    expect(received).toEqual([]);
    await after.whenIdle();
    expect(received).toHaveLength(1);
    expect(received[0]!.at - sentAt).toBeGreaterThanOrEqual(2000);
  });

  it('delivers again, after its visibility timeout, a message the stopped process had received but not finished', async () => {
    const name = freshName();
    const mortal = mortalStore();
    const crashed = open(name, { store: mortal.store });
    let finish!: () => void;
    const stuck = new Promise<void>((resolve) => (finish = resolve));
    let receivedAt = 0;
    crashed.start(async () => {
      receivedAt ||= Date.now();
      await stuck;
    });
    await crashed.send({ n: 1 });
    while (!receivedAt) await sleep(10);
    mortal.die();

    const after = open(name);
    const { received, consumer } = recorder();
    after.start(consumer);
    await after.whenIdle();
    finish();
    expect(received).toHaveLength(1);
    // Hidden until the visibility timeout of the receive that was under way, then its second receive.
    expect(received[0]!.at - Number(received[0]!.record.attributes.ApproximateFirstReceiveTimestamp)).toBeGreaterThanOrEqual(1000);
    expect(Number(received[0]!.record.attributes.ApproximateFirstReceiveTimestamp)).toBeLessThanOrEqual(receivedAt);
    expect(received[0]!.record.attributes.ApproximateReceiveCount).toBe('2');
    expect(await storedItems(name)).toEqual([]);
  });

  it('redelivers only the failed message of a batch, from the table after a restart as well', async () => {
    const name = freshName();
    const first = open(name);
    for (const n of [1, 2, 3]) await first.send({ n });
    const seen: { n: number; count: string }[] = [];
    first.start(async (event) => {
      const failed = event.Records.filter((r) => JSON.parse(r.body).n === 2);
      for (const r of event.Records) seen.push({ n: JSON.parse(r.body).n, count: r.attributes.ApproximateReceiveCount });
      return { batchItemFailures: failed.map((r) => ({ itemIdentifier: r.messageId })) };
    });
    while (seen.length < 3) await sleep(10);
    await first.stop();
    expect(seen.sort((a, b) => a.n - b.n)).toEqual([
      { n: 1, count: '1' },
      { n: 2, count: '1' },
      { n: 3, count: '1' },
    ]);
    const items = await storedItems(name);
    expect(items.map((item) => [item.body, item.receive_count])).toEqual([['{"n":2}', 1]]);

    const second = open(name);
    const { received, consumer } = recorder();
    second.start(consumer);
    await second.whenIdle();
    expect(received.map(({ record }) => [record.body, record.attributes.ApproximateReceiveCount])).toEqual([['{"n":2}', '2']]);
  });

  it('keeps the dead-letter queue in the table too', async () => {
    const name = freshName();
    const queue = open(name, { maxReceiveCount: 1 });
    await queue.send({ n: 1 });
    queue.start(async (event) => ({ batchItemFailures: event.Records.map((r) => ({ itemIdentifier: r.messageId })) }));
    await queue.whenIdle();
    await queue.deadLetterQueue!.flushed();
    expect(await storedItems(name)).toEqual([]);
    expect((await storedItems(`${name}-dlq`)).map((item) => [item.body, item.receive_count])).toEqual([['{"n":1}', 1]]);

    const restarted = open(name, { maxReceiveCount: 1 });
    await restarted.deadLetterQueue!.resumed;
    expect(restarted.deadLetterQueue!.list().map((m) => [m.body, m.receiveCount])).toEqual([['{"n":1}', 1]]);
  });
});
