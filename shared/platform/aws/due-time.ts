import type { SQSBatchItemFailure, SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import { logger } from '../logger.ts';
import { queueNamed, type QueueName } from './queue.ts';

/*
 * Messages due at a time, on queues whose delay is capped and whole-second.
 *
 * SQS delays a message by 0–900 whole seconds. `sendAt` sends the message inside an
 * envelope carrying its due time, with a delay of min(cap, whole seconds remaining); the
 * consumer (`dueTimeBatch`) re-sends an envelope received more than a second early with
 * the next hop's delay, and hands a due one to the handler. A step due in an hour hops
 * four times; one due in 1.2 s is sent with delay 1.
 *
 * Precision: never early, and late by the queue's receive latency. The delay is rounded
 * down, so a message is received at most a second before it is due; the consumer then waits
 * out the rest (under a second) before handling it, since a re-send cannot be delayed by
 * less than a second. In AWS the receive latency is the event source's polling (tens to a
 * few hundred milliseconds once a message is visible); locally the in-process queue fires
 * within a few milliseconds of visibility.
 *
 * Delivery is at least once, as with any SQS message: a hop that was re-sent but whose
 * original delete failed arrives twice, so handlers must be idempotent (the call engine's
 * state transitions are conditional writes).
 */

/** SQS's largest DelaySeconds. */
export const SQS_MAX_DELAY_SECONDS = 900;

export interface DueTimeOptions {
  /** The longest delay of one hop; SQS's 900 s unless a test injects a small one. */
  maxDelaySeconds?: number;
}

/** What travels on the queue: the message and when it is due (epoch ms). */
interface DueEnvelope<T = unknown> {
  due_at_ms: number;
  message: T;
}

const ENVELOPE_KEYS = ['due_at_ms', 'message'].join(',');

/** The envelope in `body`, or undefined for a plain message (due on receipt). */
function envelopeOf(body: unknown): DueEnvelope | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  if (Object.keys(body).sort().join(',') !== ENVELOPE_KEYS) return undefined;
  const { due_at_ms: dueAt, message } = body as DueEnvelope;
  return Number.isFinite(dueAt) && typeof message === 'object' && message !== null ? { due_at_ms: dueAt, message } : undefined;
}

/** Whole seconds to delay a hop: rounded down (never received late because of it), capped. */
export function hopDelaySeconds(dueAtEpochMs: number, nowMs: number, maxDelaySeconds = SQS_MAX_DELAY_SECONDS): number {
  return Math.min(maxDelaySeconds, Math.max(0, Math.floor((dueAtEpochMs - nowMs) / 1000)));
}

function checkCap(maxDelaySeconds: number): number {
  if (!Number.isInteger(maxDelaySeconds) || maxDelaySeconds < 1 || maxDelaySeconds > SQS_MAX_DELAY_SECONDS) {
    throw new Error(`maxDelaySeconds must be a whole number from 1 to ${SQS_MAX_DELAY_SECONDS}, not ${maxDelaySeconds}`);
  }
  return maxDelaySeconds;
}

/** Queues `message` on `queueName` to be handled at `dueAtEpochMs` (now or past: at once). */
export async function sendAt(queueName: QueueName, message: object, dueAtEpochMs: number, options: DueTimeOptions = {}): Promise<void> {
  if (!Number.isFinite(dueAtEpochMs)) throw new Error(`dueAtEpochMs must be a finite epoch time, not ${dueAtEpochMs}`);
  const cap = checkCap(options.maxDelaySeconds ?? SQS_MAX_DELAY_SECONDS);
  const envelope: DueEnvelope = { due_at_ms: Math.round(dueAtEpochMs), message };
  await queueNamed(queueName).send(envelope, { delaySeconds: hopDelaySeconds(envelope.due_at_ms, Date.now(), cap) });
}

export interface DueTimeBatchOptions<T> extends DueTimeOptions {
  /** The message as the handler takes it, or undefined when it is malformed (then dropped: redelivery cannot fix it). */
  parse(message: unknown): T | undefined;
  /** Handles one due message; a throw reports it as a batch item failure, so SQS redelivers only it. */
  handle(message: T, record: SQSRecord): Promise<void>;
}

/** Under this much early, a received message is waited for rather than re-sent (a re-send's delay is whole seconds). */
const WAIT_BELOW_MS = 1000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Consumes one SQS batch of `queueName` (partial batch failures on): each record is either
 * re-sent for its next hop, or waited for (under a second) and handed to `handle`. A
 * record whose re-send or handler failed is reported in `batchItemFailures`; a malformed
 * one is logged and dropped. Plain messages (no envelope) are due on receipt.
 */
export async function dueTimeBatch<T>(queueName: QueueName, event: SQSEvent, options: DueTimeBatchOptions<T>): Promise<SQSBatchResponse> {
  const cap = checkCap(options.maxDelaySeconds ?? SQS_MAX_DELAY_SECONDS);
  const batchItemFailures: SQSBatchItemFailure[] = [];
  await Promise.all(
    event.Records.map(async (record) => {
      let body: unknown;
      try {
        body = JSON.parse(record.body);
      } catch {
        body = undefined;
      }
      const envelope = envelopeOf(body);
      const message = options.parse(envelope ? envelope.message : body);
      if (message === undefined) {
        logger.error('dropping malformed queue message', { queue: queueName, message_id: record.messageId });
        return;
      }
      try {
        const early = envelope ? envelope.due_at_ms - Date.now() : 0;
        if (early >= WAIT_BELOW_MS) {
          await queueNamed(queueName).send(envelope!, { delaySeconds: hopDelaySeconds(envelope!.due_at_ms, Date.now(), cap) });
          return;
        }
        // A timer may fire a millisecond before the wall clock says it is due: wait until it does.
        for (let left = early; left > 0; left = envelope!.due_at_ms - Date.now()) await sleep(left);
        await options.handle(message, record);
      } catch (error) {
        logger.error('queue message failed; SQS redelivers it', {
          queue: queueName,
          message_id: record.messageId,
          error: error instanceof Error ? error.message : String(error),
        });
        batchItemFailures.push({ itemIdentifier: record.messageId });
      }
    }),
  );
  return { batchItemFailures };
}
