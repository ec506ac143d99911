import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import { config, runsInLambda } from '../config.ts';
import type { RateLimitKind } from '../errors.ts';
import { onFirstUse } from '../lazy.ts';
import { logger } from '../logger.ts';

/**
 * Business metrics in CloudWatch's embedded metric format (EMF), through
 * Powertools Metrics: namespace `Parley`, dimensions `service` (parley) and `stage`
 * (PARLEY_STAGE) on every metric, plus the event's own dimension(s) below. Code counts an
 * event with countMetric() wherever it happens; the counts are buffered and flushed once
 * per invocation (flushMetrics: the HTTP pipeline's telemetry middleware and the jobs'
 * `instrumented` wrapper call it), one EMF line per distinct set of dimensions.
 *
 * Where the lines go: in Lambda, standard output (CloudWatch Logs turns them into
 * metrics); anywhere else (npm start, tests) an in-memory sink that recordedMetrics()
 * reads, so nothing is printed locally.
 *
 * Dimension values are bounded (an enum, a reason, a code), never an ID: each distinct
 * combination is a CloudWatch metric of its own.
 */
export const METRICS_NAMESPACE = 'Parley';
export const METRICS_SERVICE = 'parley';


/** Each event and the dimensions it is counted by. */
export interface MetricDimensions {
  /** A call reached `ongoing` (the call_started event), by call_type (phone_call, web_call). */
  CallStarted: { call_type: string };
  /** A call ended (call_ended), by its final call_status and disconnection_reason. */
  CallEnded: { call_status: string; disconnection_reason: string };
  /**
   * One webhook delivery attempt from the queue: `delivered` (2xx), `retried` (failed, the
   * next attempt queued), `dead` (the last attempt failed: given up), `failed` (the attempt's
   * record or retry could not be written: SQS redelivers the message), `duplicate` (another
   * copy of the message holds or finished the attempt: nothing sent).
   */
  WebhookAttempt: { result: 'delivered' | 'retried' | 'dead' | 'failed' | 'duplicate' | 'deferred' };
  /** One batch task's dial: placed, refused by the spend check, failed, or deferred (cps or capacity). */
  BatchDial: { result: 'placed' | 'spend_blocked' | 'failed' | 'deferred' };
  ChatStarted: { chat_type: string };
  ChatEnded: { chat_type: string };
  /** A request answered 429, by the limit that refused it. */
  RateLimited: { kind: RateLimitKind };
  /** A request answered 402 by the spend check, by its error_code (`none` without one). */
  SpendBlocked: { error_code: string };
}
export type MetricName = keyof MetricDimensions;

/** One EMF document, as written (or recorded). */
export interface EmfDocument {
  _aws: { Timestamp: number; CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] };
  [key: string]: unknown;
}

interface Pending {
  dimensions: Record<string, string>;
  counts: Map<MetricName, number>;
}

/** Counts since the last flush, by dimension set. */
const pending = new Map<string, Pending>();

/** Most documents the local sink keeps (a long `npm start` drops the oldest). */
const RECORDED_MAX = 10_000;
const recorded: EmfDocument[] = [];

const emf: Metrics = onFirstUse(
  () =>
    new Metrics({
      namespace: METRICS_NAMESPACE,
      serviceName: METRICS_SERVICE,
      defaultDimensions: { stage: config.PARLEY_STAGE },
    }),
  { bindMethods: true },
);

const dimensionValue = (value: string) => (value === '' ? 'none' : value.slice(0, 250));

/** Counts one event (or `value` of them) in this invocation's buffer. */
export function countMetric<N extends MetricName>(name: N, dimensions: MetricDimensions[N], value = 1): void {
  const dims: Record<string, string> = {};
  for (const key of Object.keys(dimensions).sort()) dims[key] = dimensionValue(String((dimensions as Record<string, unknown>)[key] ?? 'none'));
  const id = JSON.stringify(dims);
  let entry = pending.get(id);
  if (!entry) pending.set(id, (entry = { dimensions: dims, counts: new Map() }));
  entry.counts.set(name, (entry.counts.get(name) ?? 0) + value);
}

/**
 * Writes the buffered counts (one EMF document per dimension set) and empties the buffer.
 * Never throws: losing a metric must not fail the invocation that produced it.
 */
export function flushMetrics(): void {
  if (pending.size === 0) return;
  const groups = [...pending.values()];
  pending.clear();
  try {
    for (const { dimensions, counts } of groups) {
      for (const [key, value] of Object.entries(dimensions)) emf.addDimension(key, value);
      for (const [name, count] of counts) emf.addMetric(name, MetricUnit.Count, count);
      const document = emf.serializeMetrics() as EmfDocument;
      emf.clearMetrics();
      emf.clearDimensions();
      write(document);
    }
  } catch (error) {
    logger.error('metrics not written', { error: error instanceof Error ? error.message : String(error) });
  }
}

function write(document: EmfDocument): void {
  if (runsInLambda) {
    // CloudWatch Logs extracts the metrics from this line of the function's log.
    process.stdout.write(`${JSON.stringify(document)}\n`);
    return;
  }
  recorded.push(document);
  if (recorded.length > RECORDED_MAX) recorded.splice(0, recorded.length - RECORDED_MAX);
}

/** The documents flushed outside Lambda (local runs, tests), oldest first. */
export function recordedMetrics(): readonly EmfDocument[] {
  return recorded;
}

/** Forgets the recorded documents and any unflushed counts (tests). */
export function clearRecordedMetrics(): void {
  recorded.length = 0;
  pending.clear();
}
