import { createHash, randomUUID } from 'node:crypto';
import type { Context, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { localLambdaContext } from './local-context.ts';
import type { MessageQueue, SendOptions } from '../shared/platform/aws/queue.ts';

/** Shaped exactly like a Lambda SQS handler, so the deployed handler runs unchanged. */
export type SqsConsumer = (event: SQSEvent, context: Context) => Promise<SQSBatchResponse | void>;

export interface LocalQueueOptions {
  name: string;
  /** How long a received message stays hidden: whole seconds, 1–43,200. */
  visibilityTimeoutSeconds?: number;
  /** Redrive policy: after this many receives the next receive moves it to the dead-letter queue. */
  maxReceiveCount?: number;
  /** Messages per consumer invocation, 1–10 (Lambda's limit without a batching window). */
  batchSize?: number;
  /** Batches in flight at once (Lambda runs several pollers). */
  maxConcurrency?: number;
  /** How long the consumer's context says it may run. */
  consumerTimeoutMs?: number;
  region?: string;
  /** Where a thrown consumer error is reported; it never includes message bodies. */
  onConsumerError?: (error: unknown) => void;
  /**
   * Where messages are kept besides memory, so a new queue of the same name (a restarted
   * process) resumes them; memory only when absent. The dead-letter queue uses it too.
   */
  store?: LocalQueueStore;
  /** Where a failed write to the store is reported (the queue carries on from memory). */
  onStoreError?: (error: unknown) => void;
  /** Where delays and visibility timeouts read the time (the wall clock unless a test gives its own). */
  clock?: { now(): number };
}

/**
 * A durable home for a local queue's messages (local/queue-store.ts keeps them in the
 * table). Every change of a message is written through, in order per message: `save`
 * after a send or a receive, `remove` after a delete or a move to the dead-letter queue.
 */
export interface LocalQueueStore {
  /** Every message held for `queue`, in any order. */
  load(queue: string): Promise<StoredMessage[]>;
  save(queue: string, message: StoredMessage): Promise<void>;
  remove(queue: string, messageId: string): Promise<void>;
}

export interface QueuedMessage {
  messageId: string;
  body: string;
  receiveCount: number;
  sentTimestamp: number;
}

export interface StoredMessage {
  messageId: string;
  body: string;
  md5OfBody: string;
  sentTimestamp: number;
  firstReceiveTimestamp?: number;
  receiveCount: number;
  /** Epoch ms from which the message can be received (delay or visibility timeout). */
  visibleAt: number;
  /** Only the latest receive's handle deletes the message, as in SQS. */
  receiptHandle?: string;
}

/** SQS's limit for the conservative MaximumMessageSize every queue accepts. */
const MAX_MESSAGE_BYTES = 256 * 1024;
const MAX_DELAY_SECONDS = 900;
const MAX_VISIBILITY_SECONDS = 43_200;

class InvalidParameterValue extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidParameterValue';
  }
}

function wholeNumberIn(value: number, min: number, max: number, what: string): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new InvalidParameterValue(`${what} must be a whole number from ${min} to ${max}, got ${value}`);
  }
  return value;
}

/**
 * In-process stand-in for an SQS standard queue with a Lambda event source mapping
 * (ReportBatchItemFailures on) and a redrive policy. It keeps the semantics the code
 * relies on: per-message delay, visibility timeout, ApproximateReceiveCount, batches of up
 * to 10, partial batch failures, whole-batch failure on a thrown error or an invalid
 * batch response, and the dead-letter queue after maxReceiveCount.
 *
 * Messages live in memory and, with a `store`, are written through to it: a queue created
 * over the same store resumes them, as SQS keeps messages across a consumer's restart. A
 * message received when the process stopped stays hidden until its visibility timeout
 * ends, then is delivered again with its receive count. Delivery is at least once: a
 * message handled just before the process died may come again.
 */
export class LocalMessageQueue implements MessageQueue {
  readonly name: string;
  readonly arn: string;
  readonly deadLetterQueue?: LocalMessageQueue;
  private readonly region: string;
  private readonly visibilityMs: number;
  private readonly maxReceiveCount?: number;
  private readonly batchSize: number;
  private readonly maxConcurrency: number;
  private readonly consumerTimeoutMs: number;
  private readonly onConsumerError: (error: unknown) => void;
  private readonly clock: { now(): number };
  private readonly messages = new Map<string, StoredMessage>();
  private readonly inFlight = new Set<Promise<void>>();
  private idleWaiters: (() => void)[] = [];
  private consumer?: SqsConsumer;
  private timer?: NodeJS.Timeout;
  private readonly store?: LocalQueueStore;
  private readonly onStoreError: (error: unknown) => void;
  /** The last write of each message to the store, so its writes land in order. */
  private readonly writes = new Map<string, Promise<void>>();
  /** Until the stored messages are loaded, nothing is received (a resumed message could be redelivered out of turn). */
  private loaded: boolean;
  /** Resolves once the messages the store held are back in the queue (at once without a store). */
  readonly resumed: Promise<void>;

  constructor(options: LocalQueueOptions) {
    this.name = options.name;
    this.region = options.region ?? 'us-east-1';
    this.arn = `arn:aws:sqs:${this.region}:000000000000:${options.name}`;
    // 0 is valid in SQS, but with a consumer attached it would redeliver every batch while in flight.
    this.visibilityMs =
      wholeNumberIn(options.visibilityTimeoutSeconds ?? 30, 1, MAX_VISIBILITY_SECONDS, 'VisibilityTimeout') * 1000;
    this.batchSize = wholeNumberIn(options.batchSize ?? 10, 1, 10, 'BatchSize');
    this.maxConcurrency = wholeNumberIn(options.maxConcurrency ?? 5, 1, 1000, 'MaximumConcurrency');
    this.consumerTimeoutMs = options.consumerTimeoutMs ?? this.visibilityMs;
    this.onConsumerError =
      options.onConsumerError ??
      ((error) => console.error(`${this.name}: consumer failed: ${error instanceof Error ? error.message : String(error)}`));
    this.clock = options.clock ?? { now: () => Date.now() };
    this.store = options.store;
    this.onStoreError =
      options.onStoreError ??
      ((error) => console.error(`${this.name}: queue store failed: ${error instanceof Error ? error.message : String(error)}`));
    if (options.maxReceiveCount !== undefined) {
      this.maxReceiveCount = wholeNumberIn(options.maxReceiveCount, 1, 1000, 'maxReceiveCount');
      this.deadLetterQueue = new LocalMessageQueue({
        name: `${options.name}-dlq`,
        region: this.region,
        store: options.store,
        onStoreError: options.onStoreError,
        clock: this.clock,
      });
    }
    this.loaded = !this.store;
    this.resumed = this.store ? this.resume(this.store) : Promise.resolve();
  }

  /** Takes in what the store holds for this queue (oldest first), beside anything sent meanwhile. */
  private async resume(store: LocalQueueStore): Promise<void> {
    try {
      const stored = await store.load(this.name);
      stored.sort((a, b) => a.sentTimestamp - b.sentTimestamp);
      const sentMeanwhile = [...this.messages.values()];
      this.messages.clear();
      for (const message of stored) this.messages.set(message.messageId, message);
      for (const message of sentMeanwhile) this.messages.set(message.messageId, message);
    } catch (error) {
      this.onStoreError(error);
    }
    this.loaded = true;
    this.pump();
    this.settleIdle();
  }

  /** Writes one message's change to the store after its previous one; resolves when it landed. */
  private persist(messageId: string, write: (store: LocalQueueStore) => Promise<void>): Promise<void> {
    if (!this.store) return Promise.resolve();
    const store = this.store;
    const landed = (this.writes.get(messageId) ?? Promise.resolve()).then(() => write(store));
    const tail = landed.then(
      () => undefined,
      (error: unknown) => this.onStoreError(error),
    );
    this.writes.set(messageId, tail);
    void tail.then(() => {
      if (this.writes.get(messageId) === tail) this.writes.delete(messageId);
      this.settleIdle();
    });
    return landed;
  }

  private save(message: StoredMessage): Promise<void> {
    const copy = { ...message };
    return this.persist(message.messageId, (store) => store.save(this.name, copy));
  }

  /** Resolves once the message is in the store too (as SendMessage answers once SQS has it). */
  async send(message: object, options: SendOptions = {}): Promise<void> {
    await this.enqueue(JSON.stringify(message), options).stored;
  }

  /** SendMessage with a raw body; returns the MessageId (its write to the store is under way). */
  sendBody(body: string, options: SendOptions = {}): string {
    return this.enqueue(body, options).messageId;
  }

  private enqueue(body: string, options: SendOptions): { messageId: string; stored: Promise<void> } {
    const delaySeconds = wholeNumberIn(options.delaySeconds ?? 0, 0, MAX_DELAY_SECONDS, 'DelaySeconds');
    if (Buffer.byteLength(body, 'utf8') > MAX_MESSAGE_BYTES) {
      throw new InvalidParameterValue(`Message body must be at most ${MAX_MESSAGE_BYTES} bytes`);
    }
    const now = this.clock.now();
    const stored: StoredMessage = {
      messageId: randomUUID(),
      body,
      md5OfBody: createHash('md5').update(body, 'utf8').digest('hex'),
      sentTimestamp: now,
      receiveCount: 0,
      visibleAt: now + delaySeconds * 1000,
    };
    this.messages.set(stored.messageId, stored);
    // Written before the pump can receive it, so the receive's write lands after this one.
    const written = this.save(stored);
    this.pump();
    return { messageId: stored.messageId, stored: written };
  }

  /** Attaches the consumer and starts polling. */
  start(consumer: SqsConsumer): void {
    if (this.consumer) throw new Error(`${this.name} already has a consumer`);
    this.consumer = consumer;
    this.pump();
  }

  /** Stops polling and waits for the batches in flight; undelivered messages stay queued. */
  async stop(): Promise<void> {
    this.consumer = undefined;
    clearTimeout(this.timer);
    this.timer = undefined;
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
    await this.flushed();
  }

  /** Resolves once every write to the store so far has landed (or failed and been reported). */
  async flushed(): Promise<void> {
    while (this.writes.size > 0) await Promise.all([...this.writes.values()]);
  }

  /** Resolves once no message is queued, delayed, hidden or in flight, and the store has every change. */
  whenIdle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Every message still held (visible, delayed or in flight), oldest first. */
  list(): QueuedMessage[] {
    return [...this.messages.values()].map((m) => ({
      messageId: m.messageId,
      body: m.body,
      receiveCount: m.receiveCount,
      sentTimestamp: m.sentTimestamp,
    }));
  }

  private isIdle(): boolean {
    return this.loaded && this.messages.size === 0 && this.inFlight.size === 0 && this.writes.size === 0;
  }

  private pump(): void {
    if (!this.consumer || !this.loaded) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    // One reading of the clock serves the receive and the wake-up, so each message is either
    // received now or waited for. With a second, later reading, a message that became visible
    // between the two would be neither, and with no batch in flight to pump again it would stay
    // queued (a timer fires by the event loop's clock, and can find the wall clock a millisecond
    // short of the due time).
    const now = this.clock.now();
    while (this.inFlight.size < this.maxConcurrency) {
      const batch = this.receive(now);
      if (batch.length === 0) break;
      this.dispatch(batch);
    }
    let next: number | undefined;
    for (const message of this.messages.values()) {
      if (message.visibleAt > now && (next === undefined || message.visibleAt < next)) next = message.visibleAt;
    }
    // Visible messages left behind by a full set of pollers are picked up when a batch finishes.
    if (next !== undefined) {
      this.timer = setTimeout(() => this.pump(), next - now);
      this.timer.unref();
    }
    this.settleIdle();
  }

  private receive(now: number): SQSRecord[] {
    const records: SQSRecord[] = [];
    for (const message of this.messages.values()) {
      if (records.length >= this.batchSize) break;
      if (message.visibleAt > now) continue;
      if (this.maxReceiveCount !== undefined && message.receiveCount >= this.maxReceiveCount) {
        this.messages.delete(message.messageId);
        // Into the dead-letter queue's store first: a crash between the two writes leaves a copy in both, never in neither.
        const landed = this.deadLetterQueue!.acceptRedriven(message);
        void this.persist(message.messageId, (store) => landed.then(() => store.remove(this.name, message.messageId)));
        continue;
      }
      message.receiveCount += 1;
      message.firstReceiveTimestamp ??= now;
      message.receiptHandle = randomUUID();
      message.visibleAt = now + this.visibilityMs;
      records.push(this.toRecord(message));
    }
    return records;
  }

  /** A redriven message keeps its ID, body and receive count, as SQS's redrive does. */
  private acceptRedriven(message: StoredMessage): Promise<void> {
    const redriven = { ...message, receiptHandle: undefined, visibleAt: this.clock.now() };
    this.messages.set(message.messageId, redriven);
    const written = this.save(redriven);
    this.pump();
    return written.catch(() => undefined);
  }

  private toRecord(message: StoredMessage): SQSRecord {
    return {
      messageId: message.messageId,
      receiptHandle: message.receiptHandle!,
      body: message.body,
      attributes: {
        ApproximateReceiveCount: String(message.receiveCount),
        SentTimestamp: String(message.sentTimestamp),
        SenderId: 'LOCAL',
        ApproximateFirstReceiveTimestamp: String(message.firstReceiveTimestamp),
      },
      messageAttributes: {},
      md5OfBody: message.md5OfBody,
      eventSource: 'aws:sqs',
      eventSourceARN: this.arn,
      awsRegion: this.region,
    };
  }

  private dispatch(records: SQSRecord[]): void {
    const consumer = this.consumer!;
    const run = (async () => {
      // The receive (count, visibility) is stored before the consumer runs: a process that
      // dies mid-batch leaves these messages hidden until their visibility timeout, as in SQS.
      await Promise.all(
        records.map((record) => {
          const stored = this.messages.get(record.messageId);
          return stored ? this.save(stored).catch(() => undefined) : undefined;
        }),
      );
      let failed: Set<string> | 'all';
      try {
        const response = await consumer({ Records: records }, localLambdaContext(`${this.name}-consumer`, this.consumerTimeoutMs));
        failed = failedIds(response, records);
      } catch (error) {
        this.onConsumerError(error);
        failed = 'all';
      }
      for (const record of records) {
        const stored = this.messages.get(record.messageId);
        // Received again after its visibility timeout: this older receipt no longer deletes it.
        if (!stored || stored.receiptHandle !== record.receiptHandle) continue;
        // A failed message stays hidden until the visibility timeout set when it was received.
        if (failed === 'all' || failed.has(record.messageId)) continue;
        this.messages.delete(record.messageId);
        void this.persist(record.messageId, (store) => store.remove(this.name, record.messageId)).catch(() => undefined);
      }
    })();
    this.inFlight.add(run);
    void run.finally(() => {
      this.inFlight.delete(run);
      this.pump();
      this.settleIdle();
    });
  }

  private settleIdle(): void {
    if (!this.isIdle() || this.idleWaiters.length === 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

/**
 * Lambda's reading of a batch response: nothing or an empty list is full success; an
 * identifier that is empty or not in the batch makes the whole batch a failure.
 */
function failedIds(response: SQSBatchResponse | void, records: SQSRecord[]): Set<string> | 'all' {
  const failures = response?.batchItemFailures;
  if (!failures || failures.length === 0) return new Set();
  const inBatch = new Set(records.map((r) => r.messageId));
  const ids = new Set<string>();
  for (const failure of failures) {
    if (!failure?.itemIdentifier || !inBatch.has(failure.itemIdentifier)) return 'all';
    ids.add(failure.itemIdentifier);
  }
  return ids;
}
