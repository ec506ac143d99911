import { createHash } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalMessageQueue, type LocalQueueOptions, type LocalQueueStore } from '../../local/local-queue.ts';
import { tableQueueStore } from '../../local/queue-store.ts';

interface Received {
  at: number;
  records: SQSRecord[];
}

const queues: LocalMessageQueue[] = [];
afterEach(async () => {
  await Promise.all(queues.splice(0).map((queue) => queue.stop()));
});

/** The table store under a partition of each test's own, so one test's leftovers never reach the next. */
let partitions = 0;
function ownPartitions(store: LocalQueueStore): LocalQueueStore {
  const prefix = `semantics-${++partitions}-`;
  return {
    load: (queue) => store.load(prefix + queue),
    save: (queue, message) => store.save(prefix + queue, message),
    remove: (queue, messageId) => store.remove(prefix + queue, messageId),
  };
}

/** Every semantic holds in memory and with the durable store the local runtime uses. */
const STORES = { memory: () => undefined, table: () => ownPartitions(tableQueueStore) };

/** A consumer that records every batch and answers with `respond` (which may throw). */
function recorder(respond: (event: SQSEvent, call: number) => SQSBatchResponse | void = () => undefined) {
  const batches: Received[] = [];
  const consumer = async (event: SQSEvent) => {
    batches.push({ at: Date.now(), records: event.Records });
    return respond(event, batches.length);
  };
  return { batches, consumer };
}

const bodies = (records: SQSRecord[]) => records.map((r) => JSON.parse(r.body).n as number).sort((a, b) => a - b);
const receiveCounts = (records: SQSRecord[]) => records.map((r) => r.attributes.ApproximateReceiveCount);
/**
 * Visibility runs from the receive (as in SQS), which the record carries; the consumer is
 * called a little after it, by a margin that grows when the machine is busy.
 */
const sinceFirstReceive = (at: number, records: SQSRecord[]) =>
  at - Math.max(...records.map((r) => Number(r.attributes.ApproximateFirstReceiveTimestamp)));

describe.each(Object.keys(STORES) as (keyof typeof STORES)[])('LocalMessageQueue (%s)', (kind) => {
  // In memory only the queue's own timers take time, so fake timers run its delays and
  // visibility timeouts at once and to the millisecond. The table store talks to DynamoDB
  // Local over sockets whose client keeps its own timers: it stays on real time.
  const fakeTime = kind === 'memory';
  beforeEach(() => {
    if (fakeTime) vi.useFakeTimers();
  });
  afterEach(() => {
    if (fakeTime) vi.useRealTimers();
  });

  /** Waits for the queue to go idle, running its timers when time is fake. */
  async function drained(queue: LocalMessageQueue): Promise<void> {
    if (!fakeTime) return queue.whenIdle();
    let idle = false;
    void queue.whenIdle().then(() => {
      idle = true;
    });
    await vi.runAllTimersAsync();
    // A lost wake-up leaves no timer to run: fail here rather than hang until the test timeout.
    expect(idle, 'idle once no timer is left').toBe(true);
  }

  /** At least `ms` on real time (a busy machine adds to it); exactly `ms` on fake time. */
  function expectWaited(waited: number, ms: number) {
    if (fakeTime) expect(waited).toBe(ms);
    else expect(waited).toBeGreaterThanOrEqual(ms);
  }

  /**
   * The default visibility timeout (30 s) unless a test redelivers: with the table on real
   * time, a busy machine can take over a second to store a batch's receive, and a 1 s timeout
   * would then deliver the batch again.
   */
  function newQueue(options: Partial<LocalQueueOptions> = {}) {
    const queue = new LocalMessageQueue({
      name: 'test-queue',
      onConsumerError: () => undefined,
      store: STORES[kind](),
      onStoreError: (error) => {
        throw error;
      },
      ...options,
    });
    queues.push(queue);
    return queue;
  }

  it('delivers records shaped like SQS event records', async () => {
    const queue = newQueue();
    const { batches, consumer } = recorder();
    await queue.send({ n: 1 });
    queue.start(consumer);
    await drained(queue);
    expect(batches).toHaveLength(1);
    const record = batches[0]!.records[0]!;
    expect(record.body).toBe('{"n":1}');
    expect(record.md5OfBody).toBe(createHash('md5').update('{"n":1}').digest('hex'));
    expect(record.eventSource).toBe('aws:sqs');
    expect(record.eventSourceARN).toBe('arn:aws:sqs:us-east-1:000000000000:test-queue');
    expect(record.attributes.ApproximateReceiveCount).toBe('1');
    expect(record.attributes.SentTimestamp).toMatch(/^\d+$/);
    expect(record.attributes.ApproximateFirstReceiveTimestamp).toMatch(/^\d+$/);
    expect(record.receiptHandle).not.toBe('');
    expect(queue.list()).toEqual([]);
  });

  it('honours DelaySeconds and validates it like SQS', async () => {
    const queue = newQueue();
    const { batches, consumer } = recorder();
    queue.start(consumer);
    const sentAt = Date.now();
    await queue.send({ n: 1 }, { delaySeconds: 1 });
    await drained(queue);
    expect(batches).toHaveLength(1);
    expectWaited(batches[0]!.at - sentAt, 1000);

    for (const delaySeconds of [-1, 901, 1.5]) {
      await expect(queue.send({ n: 2 }, { delaySeconds })).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    }
    expect(queue.list()).toEqual([]);
  });

  it('redelivers only the reported batch item failures, after the visibility timeout, with the receive count incremented', async () => {
    const queue = newQueue({ visibilityTimeoutSeconds: 1 });
    const { batches, consumer } = recorder((event, call) => {
      if (call > 1) return { batchItemFailures: [] };
      const failed = event.Records.find((r) => JSON.parse(r.body).n === 2)!;
      return { batchItemFailures: [{ itemIdentifier: failed.messageId }] };
    });
    for (const n of [1, 2, 3]) await queue.send({ n });
    queue.start(consumer);
    await drained(queue);

    expect(batches).toHaveLength(2);
    expect(bodies(batches[0]!.records)).toEqual([1, 2, 3]);
    expect(receiveCounts(batches[0]!.records)).toEqual(['1', '1', '1']);
    expect(bodies(batches[1]!.records)).toEqual([2]);
    expect(receiveCounts(batches[1]!.records)).toEqual(['2']);
    expect(batches[1]!.records[0]!.messageId).toBe(batches[0]!.records.find((r) => JSON.parse(r.body).n === 2)!.messageId);
    expectWaited(sinceFirstReceive(batches[1]!.at, batches[0]!.records), 1000);
  });

  it('redelivers the whole batch when the consumer throws', async () => {
    const queue = newQueue({ visibilityTimeoutSeconds: 1 });
    const { batches, consumer } = recorder((_event, call) => {
      if (call === 1) throw new Error('handler crashed');
    });
    for (const n of [1, 2, 3]) await queue.send({ n });
    queue.start(consumer);
    await drained(queue);

    expect(batches).toHaveLength(2);
    expect(bodies(batches[1]!.records)).toEqual([1, 2, 3]);
    expect(receiveCounts(batches[1]!.records)).toEqual(['2', '2', '2']);
    expectWaited(sinceFirstReceive(batches[1]!.at, batches[0]!.records), 1000);
  });

  it('treats a batch response naming a message outside the batch as a whole-batch failure', async () => {
    const queue = newQueue({ visibilityTimeoutSeconds: 1 });
    const { batches, consumer } = recorder((_event, call) =>
      call === 1 ? { batchItemFailures: [{ itemIdentifier: 'not-in-this-batch' }] } : undefined,
    );
    for (const n of [1, 2]) await queue.send({ n });
    queue.start(consumer);
    await drained(queue);

    expect(batches).toHaveLength(2);
    expect(bodies(batches[1]!.records)).toEqual([1, 2]);
    expect(receiveCounts(batches[1]!.records)).toEqual(['2', '2']);
  });

  it('moves a message to the dead-letter queue after maxReceiveCount receives', async () => {
    const queue = newQueue({ visibilityTimeoutSeconds: 1, maxReceiveCount: 2 });
    const { batches, consumer } = recorder((event) => {
      const poison = event.Records.filter((r) => JSON.parse(r.body).n === 1);
      return { batchItemFailures: poison.map((r) => ({ itemIdentifier: r.messageId })) };
    });
    for (const n of [1, 2]) await queue.send({ n });
    queue.start(consumer);
    await drained(queue);

    const poisonReceives = batches.flatMap((b) => b.records).filter((r) => JSON.parse(r.body).n === 1);
    expect(receiveCounts(poisonReceives)).toEqual(['1', '2']);
    const dead = queue.deadLetterQueue!.list();
    expect(dead).toHaveLength(1);
    expect(dead[0]!.messageId).toBe(poisonReceives[0]!.messageId);
    expect(dead[0]!.body).toBe('{"n":1}');
    expect(dead[0]!.receiveCount).toBe(2);
    expect(queue.deadLetterQueue!.arn).toBe('arn:aws:sqs:us-east-1:000000000000:test-queue-dlq');
    expect(queue.list()).toEqual([]);
  });

  it('hands the consumer batches of at most 10', async () => {
    const queue = newQueue();
    const { batches, consumer } = recorder();
    for (let n = 1; n <= 25; n++) await queue.send({ n });
    queue.start(consumer);
    await drained(queue);

    expect(batches.map((b) => b.records.length).sort((a, b) => a - b)).toEqual([5, 10, 10]);
    expect(batches.flatMap((b) => bodies(b.records)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
  });

  it('keeps undelivered messages across stop and start, and rejects oversized bodies', async () => {
    const queue = newQueue();
    const { batches, consumer } = recorder();
    await queue.send({ n: 1 });
    expect(queue.list().map((m) => m.body)).toEqual(['{"n":1}']);
    queue.start(consumer);
    await drained(queue);
    await queue.stop();
    await queue.send({ n: 2 });
    expect(batches).toHaveLength(1);
    queue.start(consumer);
    await drained(queue);
    expect(batches).toHaveLength(2);
    expect(() => queue.sendBody('x'.repeat(256 * 1024 + 1))).toThrow(/at most 262144 bytes/);
  });
});

describe('LocalMessageQueue wake-ups', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('receives a message that becomes visible while the queue schedules its next receive', async () => {
    // Node fires a timer by the event loop's time, cached at the start of the turn, so at the
    // timer's first reading the wall clock can still be a millisecond short of the due time and
    // tick over by the next reading. This clock does that in every millisecond.
    let lastTick = Number.NEGATIVE_INFINITY;
    const clock = {
      now() {
        const tick = Date.now();
        const reading = tick > lastTick ? tick - 1 : tick;
        lastTick = tick;
        return reading;
      },
    };
    const queue = new LocalMessageQueue({ name: 'wake-up-queue', visibilityTimeoutSeconds: 1, clock });
    queues.push(queue);
    const { batches, consumer } = recorder();
    queue.start(consumer);
    await queue.send({ n: 1 }, { delaySeconds: 1 });

    await vi.advanceTimersByTimeAsync(5000);
    expect(batches).toHaveLength(1);
    expect(queue.list()).toEqual([]);
  });
});
