/**
 * Every background job, once: what triggers it, how long it may run, how its failures are
 * retried, and whether the feature it serves exists yet. CDK (lib/parley-jobs.ts) deploys
 * and schedules from this list and the local runtime (local/background.ts) runs the same
 * jobs on the same triggers. Each job's handler is `functions/<name>.ts`; what only a deploy
 * needs (memory, grants, the queue's redrive and scaling) is its entry in the function
 * manifest, lib/functions.ts.
 */

import { BATCH_DUE_SHARDS } from './batches/shards.ts';
import type { QueueName } from './platform/aws/queue.ts';

export type JobName = 'webhook-delivery' | 'call-steps' | 'contact-jobs' | 'export-jobs' | 'integration-jobs' | 'kb-jobs' | 'batch-tick' | 'oauth-refresh' | 'billing-hourly' | 'alert-tick';

export interface JobRetries {
  /** Lambda's retries of a failed asynchronous invocation (it retries twice unless told). */
  attempts: number;
  /** An invocation older than this is dropped rather than run late. */
  maxEventAgeSeconds: number;
  /** What still fails goes to a queue with an alarm, for an operator to re-run. */
  onFailure?: 'alarmed-queue';
}

export type JobTrigger =
  | { kind: 'queue'; queue: QueueName }
  | {
      kind: 'schedule';
      /** EventBridge's rate; its floor is one minute (the batch tick paces one-second passes inside it). */
      every: 'minute' | 'hour';
      retries: JobRetries;
      /**
       * Each firing invokes the function once per input, with the input as its event
       * (EventBridge's constant input of one target each; locally one schedule each), so the
       * work splits over invocations that run side by side. Without: one invocation, given
       * the scheduled event.
       */
      inputs?: readonly ScheduledInput[];
    };

/** A scheduled invocation's event when the job's firings are split (JobTrigger `inputs`). */
export interface ScheduledInput {
  /** The due-batch index's shard whose passes the invocation runs (batch-tick). */
  shard: number;
}

/**
 * A message a schedule puts on a queue job's queue (an EventBridge rule with the queue as its
 * target; locally local/background.ts): work a queue job does on a timetable as well as on
 * demand. The schedule adds `scheduled_at`, the ISO time of the firing.
 */
export type ScheduledMessage = {
  /** The rule's name part (`<job>-<name>`). */
  name: string;
  description: string;
  message: Record<string, string>;
} & (
  | {
      every: 'day';
      /** The UTC hour it is sent at. */
      atHourUtc: number;
    }
  | {
      /** EventBridge's rate(1 minute); locally the first one a minute after start. */
      every: 'minute';
    }
  | {
      /** EventBridge's rate(1 hour); locally the first one an hour after start. */
      every: 'hour';
    }
);

export interface JobSpec {
  name: JobName;
  /** Messages a schedule sends to the job's queue (queue jobs only). */
  scheduledMessages?: readonly ScheduledMessage[];
  description: string;
  trigger: JobTrigger;
  timeoutSeconds: number;
  /**
   * The feature the job serves exists. A placeholder is deployed (so its grants and
   * settings are reviewed with the rest) but never scheduled: nothing runs every minute
   * to do nothing.
   */
  live: boolean;
}

const MINUTE_JOB_RETRIES: JobRetries = { attempts: 0, maxEventAgeSeconds: 60 };

export const JOBS: readonly JobSpec[] = [
  {
    name: 'webhook-delivery',
    description: 'Delivers queued webhooks, signing them with the workspace webhook key',
    trigger: { kind: 'queue', queue: 'webhooks' },
    // A webhook attempt may wait up to 60 s (the largest webhook_timeout_ms), plus signing and recording.
    timeoutSeconds: 90,
    live: true,
  },
  {
    name: 'call-steps',
    description: 'Runs the call engine\'s timed steps (dial, the next line, hang up, analysis) when they are due',
    trigger: { kind: 'queue', queue: 'call-steps' },
    // A step is one turn of a call: a language-model answer (its vendor timeout is well
    // under a minute) or a post-call analysis, plus the state writes; a step waits at most
    // one more second for its due time (shared/platform/aws/due-time.ts). The longest is an
    // inbound SIP caller's admission: the call_inbound webhook (three 10 s attempts and
    // 1.5 s of waits), the pre-call workflow (10 s) and the inbound queue's wait
    // (INBOUND_QUEUE_TIMEOUT_MS, 40 s by default): about 82 s.
    timeoutSeconds: 120,
    live: true,
    // Concurrency slots a crashed instance left behind (its call ended, or was never written)
    // are released, and calls stranded in `registered` ended, without waiting for a full
    // workspace to sweep (shared/calls/calls.ts sweepHeldSlots; docs/calls.md, Concurrency).
    scheduledMessages: [
      { name: 'concurrency-sweep', description: 'The scheduled sweep of concurrency slots held by calls no longer in progress', every: 'minute', message: { kind: 'concurrency-sweep' } },
    ],
  },
  {
    name: 'contact-jobs',
    description: 'Runs contacts jobs step by step (the backfill: one page of call history per message; imports: one chunk of rows)',
    trigger: { kind: 'queue', queue: 'contact-jobs' },
    // One page: 200 calls read, at most 200 contact writes; or one import chunk: up to 1,000 rows.
    timeoutSeconds: 120,
    live: true,
  },
  {
    name: 'export-jobs',
    description: 'Runs account-data jobs (an export streamed into its object, a privacy erase of one number, a retention run) and the bounded steps of a deleted workspace\'s purge',
    trigger: { kind: 'queue', queue: 'export-jobs' },
    // One message is one whole job: an export of 100,000 calls streams for a minute or two
    // (docs/performance.md); Lambda's own ceiling is 900 s.
    timeoutSeconds: 900,
    live: true,
    // Every workspace's retention once a day, a bounded run per message, resumable
    // (shared/account-data/retention.ts), at a quiet hour.
    scheduledMessages: [
      { name: 'retention-sweep', description: 'The daily retention sweep of every workspace', every: 'day', atHourUtc: 3, message: { kind: 'retention-sweep' } },
      // Counts what was stored before the listing counters, then is one read an hour
      // (shared/account-data/listing-backfill.ts).
      { name: 'listing-backfill', description: 'Counts calls and chats stored before the listing counters, until every workspace is counted', every: 'hour', message: { kind: 'listing-backfill' } },
      // Adds what ended before the analytics rollups to them, then repairs failed recordings
      // (shared/analytics/backfill).
      { name: 'rollup-backfill', description: 'Adds calls and chats that ended before the analytics rollups to them, and repairs recordings that failed', every: 'hour', message: { kind: 'rollup-backfill' } },
    ],
  },
  {
    name: 'integration-jobs',
    description: 'Runs integrations jobs step by step (a CRM sync: one page of contacts or ended calls pushed per message)',
    trigger: { kind: 'queue', queue: 'integration-jobs' },
    // One page: 50 objects, each up to three vendor requests of at most 10 s (usually well under a second).
    timeoutSeconds: 300,
    live: true,
  },
  {
    name: 'kb-jobs',
    description: 'Ingests knowledge-base sources (extracts, crawls, chunks, embeds) and rebuilds the knowledge base\'s index',
    trigger: { kind: 'queue', queue: 'kb-jobs' },
    // One knowledge base's pending sources: files up to 50 MB to extract, crawls of up to
    // 20 pages at 10 s each, embeddings in batches, then the index. 300 s bounds it. A synced
    // source's step reads one listing page and fetches at most 12 documents, 4 at once (60 s
    // each at worst), or 100 small ones, before queueing the next.
    timeoutSeconds: 300,
    live: true,
    // enable_auto_refresh: the daily sweep of the knowledge bases whose refresh is due
    // (shared/knowledge-bases/auto-refresh.ts), a message on this queue.
    scheduledMessages: [
      { name: 'refresh-sweep', description: 'The daily auto refresh of knowledge bases', every: 'day', atHourUtc: 4, message: { kind: 'refresh-sweep' } },
    ],
  },
  {
    name: 'batch-tick',
    description: 'Runs the one-second batch-call passes of one due-index shard (its event\'s) for one minute per invocation',
    // Each invocation loops through the passes (BATCH_TICK_MS, a second: the calls-per-second
    // tokens come back each second) of its shard for about a minute; 70 s leaves room to
    // finish the last pass. The next minute's invocation may start while this one drains, and
    // each shard's lease in the table keeps its passes from running twice. One invocation per
    // shard, so the shards' dials are marshalled on as many CPUs (docs/scale.md, Batch calls).
    trigger: {
      kind: 'schedule',
      every: 'minute',
      retries: MINUTE_JOB_RETRIES,
      inputs: Array.from({ length: BATCH_DUE_SHARDS }, (_, shard) => ({ shard })),
    },
    timeoutSeconds: 70,
    live: true,
  },
  {
    name: 'oauth-refresh',
    description: 'Refreshes OAuth tokens that are about to expire',
    trigger: { kind: 'schedule', every: 'minute', retries: MINUTE_JOB_RETRIES },
    timeoutSeconds: 60,
    live: true,
  },
  {
    name: 'billing-hourly',
    description: 'Hourly billing: purchased concurrency charges and last month\'s invoices',
    // A missed hour is not made up by the next run: Lambda's two retries, then an alarmed queue.
    trigger: { kind: 'schedule', every: 'hour', retries: { attempts: 2, maxEventAgeSeconds: 3600, onFailure: 'alarmed-queue' } },
    timeoutSeconds: 300,
    live: true,
  },
  {
    name: 'alert-tick',
    description: 'Evaluates the alert rules that are due, from the rollups, and sends alert_triggered and alert_resolved',
    // A pass stops taking rules after 50 s (shared/analytics/alerts/evaluate.ts); the rest stay
    // due for the next minute's, and each rule is taken by a conditional write, so two
    // overlapping passes never evaluate one rule twice.
    trigger: { kind: 'schedule', every: 'minute', retries: MINUTE_JOB_RETRIES },
    timeoutSeconds: 60,
    live: true,
  },
];

export const jobNamed = (name: JobName): JobSpec => JOBS.find((job) => job.name === name)!;
