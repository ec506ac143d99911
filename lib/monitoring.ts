import { Duration, Stack } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as cloudwatchActions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as subscriptions from 'aws-cdk-lib/aws-sns-subscriptions';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import type { ParleyFunction } from './parley-function.ts';
import { VOICE_WORKER_ALARM_THRESHOLDS, VOICE_WORKER_CPU_TARGET_PERCENT, type VoiceWorker } from './voice-worker.ts';

/**
 * Every alarm of the stack and the dashboard that shows the same: one SNS topic the
 * operator subscribes to (context `alarmEmails`, or by hand), and optionally an existing
 * topic as well (context `alarmTopicArn`). docs/operations.md is the runbook: what each
 * alarm means and what to do.
 */

/** Metric math alarms may read at most 10 metrics (a hard CloudWatch limit). */
export const MAX_METRICS_PER_ALARM = 10;

/** The operations Parley sends to DynamoDB (shared/platform/aws/lambda-sdk/client-dynamodb.js). */
export const TABLE_OPERATIONS = ['GetItem', 'BatchGetItem', 'Query', 'PutItem', 'UpdateItem', 'DeleteItem', 'BatchWriteItem', 'TransactWriteItems'] as const;

/** Alarm thresholds (docs/operations.md explains each). */
export const ALARM_THRESHOLDS = {
  /** Percent of API requests answered 5xx, per minute, in 3 of 5 minutes (with at least MIN_REQUESTS). */
  api5xxPercent: 5,
  /** Requests a minute below which the 5xx rate is not judged (a single failure of two requests is not an outage). */
  api5xxMinRequests: 20,
  /** The API's p99 latency, per 5 minutes, three periods running. Model turns and outbound tests take seconds; most routes ~100 ms. */
  apiP99LatencyMs: 8000,
  /** Share of the account's concurrent executions in use (Maximum per minute, five minutes running). */
  accountConcurrencyShare: 0.8,
  /** A dead-letter message this old is half way to SQS dropping it (14 days' retention). */
  deadLetterAgeDays: 7,
};

export interface WorkQueue {
  queue: sqs.IQueue;
  /** For alarm descriptions and the dashboard: "webhooks", "call steps". */
  label: string;
  /** The oldest message may be this old before something is wrong (the consumer is stuck, throttled or failing). */
  maxAge: Duration;
}

export interface DeadLetterQueue {
  queue: sqs.IQueue;
  label: string;
  /** Alarm on the first message, saying this; without it only the age alarm covers the queue (the webhook dead letters). */
  onFirstMessage?: string;
}

export interface MonitoringProps {
  stage: string;
  functions: readonly (readonly [string, ParleyFunction])[];
  workQueues: readonly WorkQueue[];
  deadLetterQueues: readonly DeadLetterQueue[];
  api: apigwv2.HttpApi;
  table: dynamodb.ITable;
  /** Global secondary index names of the table (their throttles count too). */
  indexNames: readonly string[];
  scheduleRules: readonly events.Rule[];
  /** The account's concurrent executions quota (context accountConcurrency). */
  accountConcurrency: number;
  alarmTopicArn?: string;
  alarmEmails: readonly string[];
  /** The voice worker's service, when deployed (lib/voice-worker.ts): its alarms and a dashboard row. */
  voiceWorker?: VoiceWorker;
}

export class Monitoring extends Construct {
  readonly topic: sns.Topic;
  readonly alarms: cloudwatch.Alarm[] = [];
  /** Each function's error alarm: the rollback alarm of its deployment group. */
  readonly errorAlarms = new Map<string, cloudwatch.Alarm>();
  readonly dashboard: cloudwatch.Dashboard;
  private readonly actions: cloudwatch.IAlarmAction[];

  constructor(scope: Construct, id: string, props: MonitoringProps) {
    super(scope, id);
    this.topic = new sns.Topic(this, 'AlarmTopic', { displayName: `Parley ${props.stage} alarms`, enforceSSL: true });
    NagSuppressions.addResourceSuppressions(this.topic, [
      {
        id: 'AwsSolutions-SNS2',
        reason:
          'The topic carries CloudWatch alarm notifications only (alarm names, states and metric values, no customer data); CloudWatch can publish to a KMS-encrypted topic only with a customer key whose policy admits it, which this topic does not need.',
      },
    ]);
    for (const email of props.alarmEmails) {
      const subscription = this.topic.addSubscription(new subscriptions.EmailSubscription(email));
      NagSuppressions.addResourceSuppressions(subscription, [
        {
          id: 'Serverless-SNSRedrivePolicy',
          reason: 'An alarm email that cannot be delivered has nothing to retry from a queue: the alarm stays in ALARM on the dashboard and in CloudWatch until someone looks.',
        },
      ]);
    }
    this.actions = [new cloudwatchActions.SnsAction(this.topic)];
    if (props.alarmTopicArn) this.actions.push(new cloudwatchActions.SnsAction(sns.Topic.fromTopicArn(this, 'GivenAlarmTopic', props.alarmTopicArn)));

    // Dead letters: the first message is an incident (a job stopped, a call is stuck).
    for (const { queue, label, onFirstMessage } of props.deadLetterQueues) {
      if (!onFirstMessage) continue;
      this.alarm(`${pascal(label)}DeadLettersAlarm`, {
        alarmDescription: `${onFirstMessage}: see the messages in ${queue.node.id}`,
        metric: queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
      });
    }
    // Dead letters kept too long are dropped by SQS at 14 days: one alarm over all of them.
    const deadLetterAges = Object.fromEntries(
      props.deadLetterQueues.map(({ queue }, index) => [`d${index}`, queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(15), statistic: 'Maximum' })]),
    );
    this.alarm('DeadLetterAgeAlarm', {
      alarmDescription: `A dead-letter message is over ${ALARM_THRESHOLDS.deadLetterAgeDays} days old; SQS drops it at 14. Redrive or record it (${props.deadLetterQueues.map((q) => q.label).join(', ')})`,
      metric: new cloudwatch.MathExpression({
        expression: `MAX([${Object.keys(deadLetterAges).join(', ')}])`,
        usingMetrics: deadLetterAges,
        label: 'Oldest dead letter (s)',
        period: Duration.minutes(15),
      }),
      threshold: ALARM_THRESHOLDS.deadLetterAgeDays * 24 * 3600,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
    });
    // Work queues: the oldest message's age says the consumer is not keeping up.
    for (const { queue, label, maxAge } of props.workQueues) {
      this.alarm(`${pascal(label)}QueueAgeAlarm`, {
        alarmDescription: `The oldest ${label} message has waited over ${maxAge.toHumanString()}: its consumer is failing, throttled or stuck`,
        metric: queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum' }),
        threshold: maxAge.toSeconds(),
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
      });
    }

    // Each function's unhandled errors (crashes, timeouts, failed queue batches, init
    // failures; an HTTP handler's own 4xx/5xx answers are not Lambda errors). One alarm per
    // function because it is also that function's deployment rollback alarm.
    for (const [name, fn] of props.functions) {
      this.errorAlarms.set(
        name,
        this.alarm(`${pascal(name)}ErrorsAlarm`, {
          alarmDescription: `The ${name} function failed (crash, timeout or failed batch) in 2 of 5 minutes; a deployment in progress rolls back`,
          metric: fn.metricErrors({ period: Duration.minutes(1), statistic: 'Sum' }),
          threshold: 1,
          comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
          evaluationPeriods: 5,
          datapointsToAlarm: 2,
        }),
      );
    }
    // Throttles: grouped, up to 10 functions an alarm (the metric math limit), since a
    // throttle means a function hit its reserved concurrency and the fix is the same for all
    // (raise that function's reservation); the alarm names its functions, the dashboard
    // shows which one.
    const groups = chunks(props.functions, MAX_METRICS_PER_ALARM);
    groups.forEach((group, index) => {
      const usingMetrics = Object.fromEntries(group.map(([, fn], i) => [`t${i}`, fn.metricThrottles({ period: Duration.minutes(1), statistic: 'Sum' })]));
      this.alarm(`Throttles${index + 1}Alarm`, {
        alarmDescription: `Throttled invocations (reserved concurrency reached) of ${group.map(([name]) => name).join(', ')}, in 3 of 5 minutes`,
        metric: new cloudwatch.MathExpression({ expression: Object.keys(usingMetrics).join(' + '), usingMetrics, label: 'Throttles', period: Duration.minutes(1) }),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 5,
        datapointsToAlarm: 3,
      });
    });

    const accountConcurrency = new cloudwatch.Metric({
      namespace: 'AWS/Lambda',
      metricName: 'ConcurrentExecutions',
      statistic: 'Maximum',
      period: Duration.minutes(1),
      label: 'Account concurrent executions',
    });
    this.alarm('AccountConcurrencyAlarm', {
      alarmDescription: `The account's concurrent executions (every function in this region, every stage) are above ${ALARM_THRESHOLDS.accountConcurrencyShare * 100}% of its ${props.accountConcurrency} quota for 5 minutes: unreserved functions will be throttled`,
      metric: accountConcurrency,
      threshold: Math.floor(props.accountConcurrency * ALARM_THRESHOLDS.accountConcurrencyShare),
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 5,
    });

    const requests = props.api.metricCount({ period: Duration.minutes(1), statistic: 'Sum' });
    const serverErrors = props.api.metricServerError({ period: Duration.minutes(1), statistic: 'Sum' });
    const errorRate = new cloudwatch.MathExpression({
      expression: `IF(requests >= ${ALARM_THRESHOLDS.api5xxMinRequests}, 100 * errors / requests, 0)`,
      usingMetrics: { requests, errors: serverErrors },
      label: 'API 5xx (%)',
      period: Duration.minutes(1),
    });
    this.alarm('Api5xxRateAlarm', {
      alarmDescription: `Over ${ALARM_THRESHOLDS.api5xxPercent}% of API requests answered 5xx in 3 of 5 minutes (500: a bug, see the function's logs; 502/503: a vendor or AWS did not answer)`,
      metric: errorRate,
      threshold: ALARM_THRESHOLDS.api5xxPercent,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 5,
      datapointsToAlarm: 3,
    });
    const latency = props.api.metricLatency({ period: Duration.minutes(5), statistic: 'p99' });
    this.alarm('ApiLatencyAlarm', {
      alarmDescription: `The API's p99 latency is over ${ALARM_THRESHOLDS.apiP99LatencyMs} ms for 15 minutes`,
      metric: latency,
      threshold: ALARM_THRESHOLDS.apiP99LatencyMs,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
    });

    const failedRuns = Object.fromEntries(
      props.scheduleRules.map((rule, index) => [
        `r${index}`,
        new cloudwatch.Metric({ namespace: 'AWS/Events', metricName: 'FailedInvocations', dimensionsMap: { RuleName: rule.ruleName }, statistic: 'Sum', period: Duration.minutes(5) }),
      ]),
    );
    if (props.scheduleRules.length) {
      this.alarm('FailedSchedulesAlarm', {
        alarmDescription: 'EventBridge could not invoke a scheduled job (batch passes, OAuth refresh, hourly billing); the events are in the schedule dead letters',
        metric: new cloudwatch.MathExpression({ expression: Object.keys(failedRuns).join(' + '), usingMetrics: failedRuns, label: 'Failed scheduled invocations', period: Duration.minutes(5) }),
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        evaluationPeriods: 1,
      });
    }

    const throttleMetrics: Record<string, cloudwatch.IMetric> = {};
    const tableMetric = (metricName: string, indexName?: string) =>
      new cloudwatch.Metric({
        namespace: 'AWS/DynamoDB',
        metricName,
        dimensionsMap: { TableName: props.table.tableName, ...(indexName ? { GlobalSecondaryIndexName: indexName } : {}) },
        statistic: 'Sum',
        period: Duration.minutes(5),
      });
    for (const [index, name] of [undefined, ...props.indexNames].entries()) {
      throttleMetrics[`r${index}`] = tableMetric('ReadThrottleEvents', name);
      throttleMetrics[`w${index}`] = tableMetric('WriteThrottleEvents', name);
    }
    this.alarm('TableThrottlesAlarm', {
      alarmDescription: 'DynamoDB throttled reads or writes of the table or its indexes in two 5-minute periods running (a hot partition or a burst past twice the previous peak)',
      metric: new cloudwatch.MathExpression({ expression: Object.keys(throttleMetrics).join(' + '), usingMetrics: throttleMetrics, label: 'Throttle events', period: Duration.minutes(5) }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 2,
    });
    const systemErrors = Object.fromEntries(
      TABLE_OPERATIONS.map((operation, index) => [
        `s${index}`,
        new cloudwatch.Metric({ namespace: 'AWS/DynamoDB', metricName: 'SystemErrors', dimensionsMap: { TableName: props.table.tableName, Operation: operation }, statistic: 'Sum', period: Duration.minutes(5) }),
      ]),
    );
    this.alarm('TableSystemErrorsAlarm', {
      alarmDescription: 'DynamoDB answered 500 (system errors) in two 5-minute periods running: requests were answered 503 after retries',
      metric: new cloudwatch.MathExpression({ expression: Object.keys(systemErrors).join(' + '), usingMetrics: systemErrors, label: 'System errors', period: Duration.minutes(5) }),
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: 2,
    });

    const worker = props.voiceWorker ? this.voiceWorkerAlarms(props.voiceWorker) : undefined;

    // The dashboard: the alarms' states first, then the metrics behind each.
    const fns = props.functions;
    const byFunction = (metric: (fn: ParleyFunction) => cloudwatch.Metric, label: string) =>
      fns.map(([name, fn]) => metric(fn).with({ label: `${name} ${label}` }));
    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      dashboardName: `Parley-${props.stage}-${Stack.of(this).region}`,
      defaultInterval: Duration.hours(3),
    });
    this.dashboard.addWidgets(new cloudwatch.AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 24, height: 8 }));
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: 'API requests and 5xx', left: [requests.with({ label: 'Requests' }), serverErrors.with({ label: '5xx' }), props.api.metricClientError({ period: Duration.minutes(1) }).with({ label: '4xx' })], right: [errorRate], width: 8 }),
      new cloudwatch.GraphWidget({
        title: 'API latency (ms)',
        left: [props.api.metricLatency({ statistic: 'p50', period: Duration.minutes(5) }).with({ label: 'p50' }), latency.with({ label: 'p99' })],
        leftAnnotations: [{ value: ALARM_THRESHOLDS.apiP99LatencyMs, label: 'p99 alarm' }],
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Account concurrent executions',
        left: [accountConcurrency],
        leftAnnotations: [{ value: props.accountConcurrency * ALARM_THRESHOLDS.accountConcurrencyShare, label: 'alarm' }],
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: 'Function errors', left: byFunction((fn) => fn.metricErrors({ period: Duration.minutes(1), statistic: 'Sum' }), 'errors'), width: 8, legendPosition: cloudwatch.LegendPosition.RIGHT }),
      new cloudwatch.GraphWidget({ title: 'Function throttles', left: byFunction((fn) => fn.metricThrottles({ period: Duration.minutes(1), statistic: 'Sum' }), 'throttles'), width: 8, legendPosition: cloudwatch.LegendPosition.RIGHT }),
      new cloudwatch.GraphWidget({ title: 'Function duration p99 (ms)', left: byFunction((fn) => fn.metricDuration({ period: Duration.minutes(5), statistic: 'p99' }), 'p99'), width: 8, legendPosition: cloudwatch.LegendPosition.RIGHT }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({
        title: 'Oldest message age (s)',
        left: props.workQueues.map(({ queue, label }) => queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum' }).with({ label })),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Dead letters (messages)',
        left: props.deadLetterQueues.map(({ queue, label }) => queue.metricApproximateNumberOfMessagesVisible({ period: Duration.minutes(5), statistic: 'Maximum' }).with({ label })),
        width: 8,
      }),
      new cloudwatch.GraphWidget({
        title: 'Failed scheduled invocations',
        left: Object.values(failedRuns).map((metric, index) => (metric as cloudwatch.Metric).with({ label: props.scheduleRules[index]!.node.id })),
        width: 8,
      }),
    );
    this.dashboard.addWidgets(
      new cloudwatch.GraphWidget({ title: 'DynamoDB throttle events', left: Object.values(throttleMetrics), width: 12 }),
      new cloudwatch.GraphWidget({ title: 'DynamoDB system errors', left: Object.values(systemErrors).map((metric, index) => (metric as cloudwatch.Metric).with({ label: TABLE_OPERATIONS[index] })), width: 12 }),
    );
    if (worker) this.dashboard.addWidgets(...worker.widgets);
  }

  /**
   * The voice worker's alarms (docs/operations.md, The voice worker): no task running, no
   * worker registered with LiveKit, calls failing, replies slow. The first two treat missing
   * data as breaching: a service with no task publishes nothing at all.
   */
  private voiceWorkerAlarms(worker: VoiceWorker): { widgets: cloudwatch.IWidget[] } {
    const down = VOICE_WORKER_ALARM_THRESHOLDS.downMinutes;
    const running = worker.metricRunningTasks({ period: Duration.minutes(1), statistic: 'Minimum' });
    this.alarm('VoiceWorkerTasksAlarm', {
      alarmDescription: `No voice worker task has been running for ${down} minutes: calls connect to silence. See the service's events (a task that cannot start says why) and the worker's log`,
      metric: running,
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: down,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    const registered = worker.metric('WorkerRegistered', { period: Duration.minutes(1), statistic: 'Maximum' });
    this.alarm('VoiceWorkerRegisteredAlarm', {
      alarmDescription: `No voice worker has been registered with LiveKit for ${down} minutes: dispatched calls find no agent. Check LIVEKIT_URL, the LiveKit keys in the vendor secret, and LiveKit's status`,
      metric: registered,
      threshold: 1,
      comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
      evaluationPeriods: down,
      treatMissingData: cloudwatch.TreatMissingData.BREACHING,
    });
    const started = worker.metric('JobStarted', { period: Duration.minutes(5), statistic: 'Sum' });
    const failed = worker.metric('JobFailed', { period: Duration.minutes(5), statistic: 'Sum' });
    const { failedJobsMin, failedJobsPercent, voiceToVoiceP90Ms } = VOICE_WORKER_ALARM_THRESHOLDS;
    // Failed as a share of the calls that started or failed (a job can fail before it counts
    // as started), judged once at least failedJobsMin failed.
    const failedShare = new cloudwatch.MathExpression({
      expression: `IF(FILL(failed, 0) >= ${failedJobsMin}, 100 * FILL(failed, 0) / MAX([FILL(started, 0), FILL(failed, 0)]), 0)`,
      usingMetrics: { started, failed },
      label: 'Failed calls (%)',
      period: Duration.minutes(5),
    });
    this.alarm('VoiceWorkerJobsFailingAlarm', {
      alarmDescription: `Over ${failedJobsPercent}% of calls failed in the worker in 5 minutes (at least ${failedJobsMin}): the JobFailed reason dimension says which vendor or stage, the worker's log says why`,
      metric: failedShare,
      threshold: failedJobsPercent,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
    });
    const p90 = worker.metric('VoiceToVoiceMs', { period: Duration.minutes(5), statistic: 'p90' });
    this.alarm('VoiceWorkerLatencyAlarm', {
      alarmDescription: `Voice-to-voice p90 over ${voiceToVoiceP90Ms} ms in 2 of 3 five-minute periods: callers wait for answers. Compare the model's and the voice's first-byte times in the calls' latency`,
      metric: p90,
      threshold: voiceToVoiceP90Ms,
      comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 3,
      datapointsToAlarm: 2,
    });
    const cpu = worker.service.metricCpuUtilization({ period: Duration.minutes(1) });
    return {
      widgets: [
        new cloudwatch.GraphWidget({ title: 'Voice worker tasks', left: [running.with({ label: 'Running tasks' }), registered.with({ label: 'Registered with LiveKit' })], width: 6 }),
        new cloudwatch.GraphWidget({
          title: 'Voice worker CPU (%)',
          left: [cpu.with({ statistic: 'Average', label: 'Average' }), cpu.with({ statistic: 'Maximum', label: 'Maximum' })],
          leftAnnotations: [{ value: VOICE_WORKER_CPU_TARGET_PERCENT, label: 'scaling target' }],
          width: 6,
        }),
        new cloudwatch.GraphWidget({ title: 'Voice worker calls', left: [started.with({ label: 'Started' }), failed.with({ label: 'Failed' })], right: [failedShare], width: 6 }),
        new cloudwatch.GraphWidget({
          title: 'Voice-to-voice (ms)',
          left: [worker.metric('VoiceToVoiceMs', { period: Duration.minutes(5), statistic: 'p50', label: 'p50' }), p90.with({ label: 'p90' })],
          leftAnnotations: [{ value: voiceToVoiceP90Ms, label: 'p90 alarm' }],
          width: 6,
        }),
      ],
    };
  }

  private alarm(id: string, props: cloudwatch.AlarmProps): cloudwatch.Alarm {
    const alarm = new cloudwatch.Alarm(this, id, { treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING, ...props });
    for (const action of this.actions) alarm.addAlarmAction(action);
    this.alarms.push(alarm);
    return alarm;
  }
}

export const pascal = (name: string) =>
  name
    .split(/[^A-Za-z0-9]+/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');

function chunks<T>(items: readonly T[], size: number): T[][] {
  const count = Math.ceil(items.length / size);
  // Even groups (27 → 9, 9, 9) rather than 10, 10, 7.
  const per = Math.ceil(items.length / count);
  return Array.from({ length: count }, (_, index) => items.slice(index * per, (index + 1) * per));
}
