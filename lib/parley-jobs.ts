import { Duration, type Stack } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import type { JobName, JobSpec, ScheduledInput } from '../shared/jobs.ts';
import { contextValue } from './deploy-settings.ts';
import { FUNCTIONS, type FunctionName, type JobQueueSpec } from './functions.ts';
import type { DeadLetterQueue, WorkQueue } from './monitoring.ts';
import { pascal } from './monitoring.ts';
import type { ParleyFunction, QueueResource } from './parley-function.ts';

/** EventBridge's targets per rule: a job whose firings split into more inputs gets a rule per this many. */
const TARGETS_PER_RULE = 5;

const DEAD_LETTERS_HAVE_NO_REDRIVE = {
  id: 'Serverless-SQSRedrivePolicy',
  reason: 'This is a dead-letter queue: nothing consumes it, so there is nothing to redrive to; its depth and age are alarmed and an operator redrives it (docs/operations.md).',
};

/** A queue job's queue and its dead letters, with the job and its manifest queue entry. */
export interface JobQueue {
  job: JobName;
  spec: JobQueueSpec;
  queue: sqs.Queue;
  deadLetters: sqs.Queue;
}

/**
 * The background work around the job functions (lib/functions.ts, shared/jobs.ts): each
 * queue job's queue and dead letters, the schedules' dead letters and billing's failures,
 * and, once the functions exist, the event sources and EventBridge rules that invoke them.
 * Its resources are the stack's children (see lib/parley-data.ts for why).
 */
export class ParleyJobs {
  /** The queue of every queue job in the manifest, in its order. */
  readonly queues: JobQueue[] = [];
  /** Scheduled invocations EventBridge could not deliver to their function. */
  readonly scheduleDeadLetters: sqs.Queue;
  /** Hourly billing invocations that failed after Lambda's retries (on-failure destination). */
  readonly billingFailures: sqs.Queue;
  readonly scheduleRules: events.Rule[] = [];

  constructor(
    private readonly stack: Stack,
    private readonly jobs: readonly JobSpec[],
  ) {
    // A message that failed its receives goes to the dead letters, with an alarm unless the
    // manifest says otherwise (lib/functions.ts, deadLetterAlarm).
    for (const spec of FUNCTIONS) {
      if (spec.trigger.kind !== 'queue') continue;
      const job = this.jobSpec(spec.name);
      if (job.trigger.kind !== 'queue') throw new Error(`${spec.name} is a queue job in lib/functions.ts but a ${job.trigger.kind} job in shared/jobs.ts`);
      this.queues.push({ job: job.name, spec: spec.trigger.queue, ...this.jobQueue(spec.trigger.queue, job) });
    }

    // Dead letters of the schedules (EventBridge could not invoke the function) and billing's
    // failed invocations; both alarm on their first message. SQS-managed encryption, as below.
    this.scheduleDeadLetters = new sqs.Queue(stack, 'ScheduleDeadLetters', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.billingFailures = new sqs.Queue(stack, 'BillingFailures', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    for (const queue of [this.scheduleDeadLetters, this.billingFailures]) {
      NagSuppressions.addResourceSuppressions(queue, [
        DEAD_LETTERS_HAVE_NO_REDRIVE,
        {
          id: 'AwsSolutions-SQS3',
          reason:
            'This queue is itself where failed scheduled invocations end up (an EventBridge target DLQ or a Lambda on-failure destination); an alarm fires on its first message.',
        },
      ]);
    }
  }

  /** The queue a manifest entry names (the shared resources every function is told about). */
  queue(resource: QueueResource): JobQueue {
    const found = this.queues.find((entry) => entry.spec.resource === resource);
    if (!found) throw new Error(`No queue job in lib/functions.ts consumes ${resource}`);
    return found;
  }

  /** The job's runtime facts (shared/jobs.ts, or the jobs the stack was given). */
  jobSpec(name: FunctionName): JobSpec {
    const job = this.jobs.find((candidate) => candidate.name === name);
    if (!job) throw new Error(`${name} is a job in lib/functions.ts but not in shared/jobs.ts`);
    return job;
  }

  /**
   * Each queue job's function consumes its queue; each live scheduled job runs on its
   * EventBridge rule; each live queue job's scheduled messages are sent by theirs.
   * `reserved` is the functions' reservations, checked against the event sources.
   */
  connect(functions: Readonly<Partial<Record<FunctionName, ParleyFunction>>>, reserved: Readonly<Partial<Record<FunctionName, number>>> | undefined): void {
    for (const { job, spec, queue } of this.queues) {
      this.consume(functions[job]!, job, queue, spec, reserved?.[job]);
    }
    // Messages a schedule sends to a queue job (shared/jobs.ts scheduledMessages): the daily
    // retention sweep and the knowledge bases' daily auto refresh; the concurrency sweep every minute.
    this.scheduleMessages();

    // Lambda retries a failed asynchronous invocation twice by itself. The minute jobs are
    // not retried (the next minute's run does the same work, under the same lease), and an
    // invocation older than its minute is dropped. A missed billing hour is not made up by
    // the next run, so billing keeps Lambda's two retries, and what still fails goes to an
    // alarmed queue for an operator to re-run.
    for (const spec of FUNCTIONS) {
      if (spec.trigger.kind !== 'schedule') continue;
      const job = this.jobSpec(spec.name);
      if (job.trigger.kind !== 'schedule') throw new Error(`${spec.name} is a scheduled job in lib/functions.ts but a ${job.trigger.kind} job in shared/jobs.ts`);
      if (!job.live) continue;
      const { retries, inputs } = job.trigger;
      this.schedule(`${pascal(job.name)}Schedule`, functions[job.name]!, job.trigger.every === 'minute' ? Duration.minutes(1) : Duration.hours(1), {
        retryAttempts: retries.attempts,
        maxEventAge: Duration.seconds(retries.maxEventAgeSeconds),
        onFailure: retries.onFailure === 'alarmed-queue' ? this.billingFailures : undefined,
      }, inputs);
    }
  }

  /** The work queues' age alarms (monitoring), from the manifest. */
  workQueues(): WorkQueue[] {
    return this.queues.map(({ queue, spec }) => ({ queue, label: spec.label, maxAge: spec.maxAge }));
  }

  /**
   * Every dead-letter queue for monitoring: the schedules' and billing's, then the queue
   * jobs' that alarm on their first message, then those watched by age only.
   */
  deadLetterQueues(): DeadLetterQueue[] {
    return [
      { queue: this.scheduleDeadLetters, label: 'schedule', onFirstMessage: 'EventBridge could not invoke a scheduled Parley job' },
      { queue: this.billingFailures, label: 'billing failures', onFirstMessage: 'An hourly billing run failed after its retries' },
      ...this.queues.filter(({ spec }) => spec.deadLetterAlarm).map(({ deadLetters, spec }) => ({ queue: deadLetters, label: spec.label, onFirstMessage: spec.deadLetterAlarm })),
      ...this.queues.filter(({ spec }) => !spec.deadLetterAlarm).map(({ deadLetters, spec }) => ({ queue: deadLetters, label: spec.label })),
    ];
  }

  /**
   * A queue job's queue and its dead letters, `<id>Queue` and `<id>DeadLetters`. SQS-managed
   * encryption: a KMS key here would need kms:GenerateDataKey/Decrypt on the envelope key for
   * every producer and consumer. The visibility timeout is six function timeouts (AWS's
   * guidance for Lambda consumers), so retries of a throttled batch do not make messages
   * visible again mid-processing.
   */
  private jobQueue(spec: JobQueueSpec, job: JobSpec): { queue: sqs.Queue; deadLetters: sqs.Queue } {
    const deadLetters = new sqs.Queue(this.stack, `${spec.id}DeadLetters`, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    NagSuppressions.addResourceSuppressions(deadLetters, [DEAD_LETTERS_HAVE_NO_REDRIVE]);
    const queue = new sqs.Queue(this.stack, `${spec.id}Queue`, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(job.timeoutSeconds * 6),
      deadLetterQueue: { queue: deadLetters, maxReceiveCount: spec.maxReceiveCount },
    });
    return { queue, deadLetters };
  }

  /**
   * The job's function consumes its queue, reporting the messages of a batch that failed.
   * Its event source may use at most the function's reservation, or its own polling would be
   * throttled (a throttled batch comes back only after the visibility timeout).
   */
  private consume(fn: ParleyFunction, job: JobName, queue: sqs.Queue, spec: JobQueueSpec, reserved: number | undefined): void {
    let maxConcurrency = spec.maxConcurrency;
    if (spec.maxConcurrencyContext) {
      const key = spec.maxConcurrencyContext;
      maxConcurrency = Number(contextValue(this.stack, key) ?? spec.maxConcurrency);
      if (!Number.isInteger(maxConcurrency) || maxConcurrency < 2 || maxConcurrency > 1000) {
        throw new Error(`${key} must be a whole number from 2 to 1000, not ${maxConcurrency}`);
      }
      if (reserved !== undefined && reserved < maxConcurrency) {
        throw new Error(
          `The ${job} function's reserved concurrency (${reserved}) is below ${key} (${maxConcurrency}): the event source would be throttled. Raise the one or lower the other.`,
        );
      }
    } else if (reserved !== undefined && reserved < maxConcurrency) {
      throw new Error(
        `The ${job} function's reserved concurrency (${reserved}) is below its event source's maximum concurrency (${maxConcurrency}): the event source would be throttled.`,
      );
    }
    const alias = fn.live;
    alias.addEventSource(new SqsEventSource(queue, { batchSize: spec.batchSize, reportBatchItemFailures: true, maxConcurrency }));
    NagSuppressions.addResourceSuppressions(
      alias,
      [
        {
          id: 'Serverless-LambdaEventSourceMappingDestination',
          reason: 'An SQS event source has no on-failure destination of its own: a message that keeps failing goes to the queue\'s dead-letter queue by its redrive policy (with an alarm).',
        },
      ],
      true,
    );
  }

  /**
   * An EventBridge rule invoking a background function, with the function's asynchronous
   * invocation settings. The rule's own retries and dead-letter queue cover only failing to
   * hand the event to Lambda; once handed over, `retries` decides. With `inputs`, each firing
   * invokes the function once per input, the input as its event: a target each, in rules of
   * at most EventBridge's five targets (`<id>`, then `<id>2`, …).
   */
  private schedule(
    id: string,
    fn: ParleyFunction,
    every: Duration,
    retries: { retryAttempts: number; maxEventAge: Duration; onFailure?: sqs.IQueue },
    inputs?: readonly ScheduledInput[],
  ): void {
    const alias = fn.live;
    alias.configureAsyncInvoke({
      retryAttempts: retries.retryAttempts,
      maxEventAge: retries.maxEventAge,
      onFailure: retries.onFailure ? new SqsDestination(retries.onFailure) : undefined,
    });
    if (!retries.onFailure) {
      NagSuppressions.addResourceSuppressions(
        alias,
        [
          {
            id: 'Serverless-LambdaAsyncFailureDestination',
            reason: 'A minute job is neither retried nor kept: the next minute\'s run does the same work under the same lease, and a failure shows on the function\'s error alarm.',
          },
        ],
        true,
      );
    }
    const target = (input?: ScheduledInput) =>
      new targets.LambdaFunction(alias, {
        event: input ? events.RuleTargetInput.fromObject(input) : undefined,
        retryAttempts: retries.retryAttempts,
        maxEventAge: retries.maxEventAge,
        deadLetterQueue: this.scheduleDeadLetters,
      });
    const groups: (ScheduledInput | undefined)[][] = [];
    if (!inputs) groups.push([undefined]);
    else for (let start = 0; start < inputs.length; start += TARGETS_PER_RULE) groups.push(inputs.slice(start, start + TARGETS_PER_RULE));
    groups.forEach((group, index) => {
      const rule = new events.Rule(this.stack, index === 0 ? id : `${id}${index + 1}`, {
        schedule: events.Schedule.rate(every),
        targets: group.map(target),
      });
      this.scheduleRules.push(rule);
    });
  }

  /**
   * An EventBridge rule per scheduled message of a live queue job, sending it (with the
   * firing's time as `scheduled_at`) to the job's queue; EventBridge's own retries, then the
   * schedules' alarmed dead letters. The queue's consumer does the rest as for any message.
   */
  private scheduleMessages(): void {
    for (const job of this.jobs) {
      if (!job.live) continue;
      for (const scheduled of job.scheduledMessages ?? []) {
        const queue = this.queues.find((entry) => entry.job === job.name)?.queue;
        if (!queue) throw new Error(`${job.name} has a scheduled message (${scheduled.name}) but no queue to send it to`);
        new events.Rule(this.stack, `${pascal(job.name)}${pascal(scheduled.name)}Schedule`, {
          description: scheduled.description,
          schedule:
            scheduled.every === 'minute'
              ? events.Schedule.rate(Duration.minutes(1))
              : scheduled.every === 'hour'
                ? events.Schedule.rate(Duration.hours(1))
                : events.Schedule.cron({ minute: '0', hour: String(scheduled.atHourUtc) }),
          targets: [
            new targets.SqsQueue(queue, {
              message: events.RuleTargetInput.fromObject({ ...scheduled.message, scheduled_at: events.EventField.time }),
              // A minute's message is not retried and is dropped after its minute, as the minute
              // jobs are: the next minute's does the same work.
              retryAttempts: scheduled.every === 'minute' ? 0 : 3,
              maxEventAge: scheduled.every === 'minute' ? Duration.minutes(1) : Duration.hours(1),
              deadLetterQueue: this.scheduleDeadLetters,
            }),
          ],
        });
      }
    }
  }
}
