import { randomUUID } from 'node:crypto';
import type { Context, ScheduledEvent } from 'aws-lambda';
import { handler as batchTick } from '../functions/batch-tick.ts';
import { handler as callSteps } from '../functions/call-steps.ts';
import { handler as contactJobs } from '../functions/contact-jobs.ts';
import { handler as exportJobs } from '../functions/export-jobs.ts';
import { handler as integrationJobs } from '../functions/integration-jobs.ts';
import { handler as kbJobs } from '../functions/kb-jobs.ts';
import { handler as billingHourly } from '../functions/billing-hourly.ts';
import { handler as oauthRefresh } from '../functions/oauth-refresh.ts';
import { handler as alertTick } from '../functions/alert-tick.ts';
import { handler as webhookDelivery } from '../functions/webhook-delivery.ts';
import { localLambdaContext } from './local-context.ts';
import { localQueue } from './queues.ts';
import { config } from '../shared/platform/config.ts';
import { JOBS, type JobName, type JobSpec, type ScheduledInput } from '../shared/jobs.ts';
import type { LocalMessageQueue, SqsConsumer } from './local-queue.ts';

type ScheduledHandler = (event: ScheduledEvent, context: Context, options: { signal?: AbortSignal }) => Promise<unknown>;
/** A job whose firings are split (shared/jobs.ts `inputs`): its handler is given one input. */
type SplitHandler = (event: ScheduledInput, context: Context, options: { signal?: AbortSignal }) => Promise<unknown>;

interface ScheduleSpec {
  name: string;
  periodMs: number;
  /** When the first invocation fires, given the start time. */
  firstAt: (nowMs: number) => number;
  timeoutMs: number;
  /** One invocation: the event it gets is built from the firing's time `at`. */
  invoke: (at: number, context: Context, options: { signal?: AbortSignal }) => Promise<unknown>;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/**
 * EventBridge stand-in for one rule: fires at a fixed rate with a ScheduledEvent. A firing
 * that comes while the previous invocation still runs waits for it (never two at once);
 * firings missed meanwhile collapse into that one.
 */
class LocalSchedule {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private pendingAt?: number;
  private stopped = false;
  private readonly abort = new AbortController();

  constructor(private readonly spec: ScheduleSpec) {}

  start(): void {
    this.arm(this.spec.firstAt(Date.now()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.abort.abort();
    while (this.running) await this.running;
  }

  private arm(at: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => this.fire(at), Math.max(0, at - Date.now()));
  }

  private fire(at: number): void {
    let next = at + this.spec.periodMs;
    while (next <= Date.now()) next += this.spec.periodMs;
    this.arm(next);
    if (this.running) {
      this.pendingAt = at;
      return;
    }
    this.invoke(at);
  }

  private invoke(at: number): void {
    const run = this.spec
      .invoke(at, localLambdaContext(`parley-${this.spec.name}`, this.spec.timeoutMs), { signal: this.abort.signal })
      .then(
        () => undefined,
        (error: unknown) => console.error(`${this.spec.name} failed: ${error instanceof Error ? error.message : String(error)}`),
      )
      .finally(() => {
        this.running = undefined;
        const pending = this.pendingAt;
        this.pendingAt = undefined;
        if (pending !== undefined && !this.stopped) this.invoke(pending);
      });
    this.running = run;
  }
}

/** A firing's time as EventBridge writes it (whole seconds, UTC). */
const firingTime = (atMs: number) => new Date(atMs).toISOString().replace(/\.\d{3}Z$/, 'Z');

function scheduledEvent(name: string, atMs: number): ScheduledEvent {
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: firingTime(atMs),
    region: config.AWS_REGION,
    resources: [`arn:aws:events:${config.AWS_REGION}:000000000000:rule/parley-${name}`],
    detail: {},
  };
}

type QueueJob = 'webhook-delivery' | 'call-steps' | 'contact-jobs' | 'export-jobs' | 'integration-jobs' | 'kb-jobs';

/** The queue consumers, each the handler CDK attaches to its queue's event source. */
const QUEUE_HANDLERS: Record<QueueJob, SqsConsumer> = {
  'webhook-delivery': webhookDelivery,
  'call-steps': callSteps,
  'contact-jobs': contactJobs,
  'export-jobs': exportJobs,
  'integration-jobs': integrationJobs,
  'kb-jobs': kbJobs,
};

const SCHEDULED_HANDLERS: Record<Exclude<JobName, QueueJob>, ScheduledHandler> = {
  'batch-tick': batchTick,
  'oauth-refresh': oauthRefresh,
  'billing-hourly': billingHourly,
  'alert-tick': alertTick,
};

/** The handlers of the scheduled jobs whose firings are split, each invocation given its input. */
const SPLIT_HANDLERS: Partial<Record<Exclude<JobName, QueueJob>, SplitHandler>> = {
  'batch-tick': batchTick,
};

/** When a job's first local run fires: minute jobs at start, hourly ones on the hour (as a rate rule would). */
const firstRun = (every: 'minute' | 'hour') => (every === 'minute' ? (now: number) => now : (now: number) => Math.ceil(now / HOUR) * HOUR);

/**
 * In-process stand-ins for the SQS consumer and the EventBridge schedules, invoking the
 * same handlers CDK deploys, for the same jobs (shared/jobs.ts): a job whose feature does
 * not exist yet is not scheduled here either. `stop()` lets in-flight work finish; queued
 * messages stay in the table (local/queue-store.ts) for the next start.
 */
export function startBackgroundWork(jobs: readonly JobSpec[] = JOBS): { stop(): Promise<void> } {
  const queues: LocalMessageQueue[] = [];
  for (const job of jobs) {
    if (job.trigger.kind !== 'queue' || !job.live) continue;
    const queue = localQueue(job.trigger.queue);
    queue.start(QUEUE_HANDLERS[job.name as QueueJob]);
    queues.push(queue);
  }
  const schedules: LocalSchedule[] = [];
  for (const job of jobs) {
    if (job.trigger.kind !== 'schedule' || !job.live) continue;
    const name = job.name as Exclude<JobName, QueueJob>;
    const timing = { periodMs: job.trigger.every === 'minute' ? MINUTE : HOUR, firstAt: firstRun(job.trigger.every), timeoutMs: job.timeoutSeconds * 1000 };
    if (!job.trigger.inputs) {
      const handler = SCHEDULED_HANDLERS[name];
      schedules.push(new LocalSchedule({ name, ...timing, invoke: (at, context, options) => handler(scheduledEvent(name, at), context, options) }));
      continue;
    }
    // As EventBridge does with a target per input: each firing invokes the handler once per
    // input, side by side (a schedule each, so one slow invocation delays no other).
    const handler = SPLIT_HANDLERS[name];
    if (!handler) throw new Error(`${name} splits its firings (inputs in shared/jobs.ts) but local/background.ts has no SPLIT_HANDLERS entry for it`);
    job.trigger.inputs.forEach((input, index) => {
      schedules.push(new LocalSchedule({ name: `${name}-${index}`, ...timing, invoke: (_at, context, options) => handler(input, context, options) }));
    });
  }
  // Messages a schedule sends to a queue job (the daily retention sweep at its UTC hour, the listing backfill every hour, the concurrency sweep every minute).
  for (const job of jobs) {
    if (job.trigger.kind !== 'queue' || !job.live) continue;
    const queue = localQueue(job.trigger.queue);
    for (const scheduled of job.scheduledMessages ?? []) {
      schedules.push(
        new LocalSchedule({
          name: `${job.name}-${scheduled.name}`,
          periodMs: scheduled.every === 'minute' ? MINUTE : scheduled.every === 'hour' ? HOUR : DAY,
          firstAt: (now) => {
            // A rate rule's first firing comes a period after it is created.
            if (scheduled.every === 'minute') return now + MINUTE;
            if (scheduled.every === 'hour') return now + HOUR;
            const at = Math.floor(now / DAY) * DAY + scheduled.atHourUtc * HOUR;
            return at > now ? at : at + DAY;
          },
          timeoutMs: 60_000,
          invoke: async (at) => {
            await queue.send({ ...scheduled.message, scheduled_at: firingTime(at) });
          },
        }),
      );
    }
  }
  for (const schedule of schedules) schedule.start();
  return {
    stop: async () => {
      await Promise.all([...schedules.map((schedule) => schedule.stop()), ...queues.map((queue) => queue.stop())]);
    },
  };
}
