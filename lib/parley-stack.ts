import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { JOBS, type JobName, type JobSpec } from '../shared/jobs.ts';
import type { Domain, ThrottleClass } from '../shared/platform/http/route.ts';
import { servedRoutes, type ServedRoute } from '../shared/route-table.ts';
import { tableDefinition } from '../shared/platform/store/keys.ts';
import { contextValue, functionSettings, settingsEnvironment, type FunctionSettings } from './deploy-settings.ts';
import { FixedEgress } from './fixed-egress.ts';
import { FUNCTIONS, type FunctionName, type FunctionSpec } from './functions.ts';
import { LiveMonitorStack } from './live-monitor-stack.ts';
import { Monitoring } from './monitoring.ts';
import { ParleyApi, type Throttle } from './parley-api.ts';
import { ParleyData } from './parley-data.ts';
import type { ParleyFunction, ParleyResources } from './parley-function.ts';
import { DEFAULT_ACCOUNT_CONCURRENCY, ParleyFunctions } from './parley-functions.ts';
import { ParleyJobs } from './parley-jobs.ts';
import type { RouteStack } from './route-stack.ts';
import { LAMBDA_CONCURRENCY_QUOTA } from './scale.ts';
import { PRODUCTION_STAGE, scopedName, stageContext, stageSettings, type StageProps, type StageSettings } from './stage.ts';
import { VoiceWorker, voiceWorkerSettings } from './voice-worker.ts';

/** NAT gateways (each with its address) fixed egress creates by default (context `fixedEgressNatGateways`): one per zone. */
const DEFAULT_EGRESS_NAT_GATEWAYS = 2;

/** The one function the WebSocket monitors' API invokes (trigger `websocket`). */
function websocketFunction(): FunctionSpec {
  const [spec, ...more] = FUNCTIONS.filter((entry) => entry.trigger.kind === 'websocket');
  if (!spec || more.length) throw new Error('lib/functions.ts must have exactly one websocket function');
  return spec;
}

export interface ParleyStackProps extends StackProps, StageProps {
  /** The routes to serve; the route table's by default (tests pass more to check growth). */
  routes?: readonly ServedRoute[];
  /** SIP_HOST, SIP_IP_RANGES, PUBLIC_BASE_URL of the functions; from context when not given. */
  settings?: Partial<FunctionSettings>;
  /** Overrides of the manifest's reservations (lib/functions.ts), or false for no reservations at all. */
  reservedConcurrency?: Partial<Record<FunctionName, number>> | false;
  apiThrottle?: Throttle;
  routeThrottles?: Partial<Record<ThrottleClass, Throttle>>;
  routesPerApiQuota?: number;
  /** The background jobs (shared/jobs.ts by default; tests pass them all live to check scheduling). */
  jobs?: readonly JobSpec[];
}

/**
 * One Parley stage. The stack composes its parts: what it keeps (lib/parley-data.ts), the
 * queues and schedules of the jobs (lib/parley-jobs.ts), the functions of the manifest
 * (lib/functions.ts, lib/parley-functions.ts), the HTTP API (lib/parley-api.ts), the
 * WebSocket monitor (lib/live-monitor-stack.ts), fixed egress, the voice worker and the
 * alarms (lib/monitoring.ts). The parts create their resources in the stack itself, so the
 * logical IDs stay those of the deployed stack.
 */
export class ParleyStack extends Stack {
  readonly settings: StageSettings;
  readonly data: ParleyData;
  readonly jobs: ParleyJobs;
  readonly http: ParleyApi;
  readonly functions: ParleyFunctions;
  readonly monitoring: Monitoring;
  readonly liveMonitor: LiveMonitorStack;
  /** The VPC, NAT gateways and addresses of fixed egress; undefined unless context `fixedEgress` is true. */
  readonly egress?: FixedEgress;
  /** The voice agent worker on ECS Fargate; undefined without `livekitUrl` (or with `voiceWorker: false`). */
  readonly voiceWorker?: VoiceWorker;

  constructor(scope: Construct, id: string, props: ParleyStackProps = {}) {
    const settingsOfStage = stageSettings(scope, props);
    super(scope, id, { terminationProtection: settingsOfStage.stage === PRODUCTION_STAGE, ...props });
    this.settings = settingsOfStage;
    const { stage } = settingsOfStage;

    // Checked first: a missing setting, an over-quota route table or too many reservations fails before any work.
    const settings = functionSettings(this, props.settings);
    const routes = props.routes ?? servedRoutes();
    ParleyApi.checkRouteQuota(this, routes, props.routesPerApiQuota);
    ParleyApi.checkThrottleQuota(this, stage);
    const jobs = props.jobs ?? JOBS;

    this.data = new ParleyData(this, settingsOfStage);
    this.jobs = new ParleyJobs(this, jobs);
    const queue = (resource: Parameters<ParleyJobs['queue']>[0]) => this.jobs.queue(resource).queue;
    const resources: ParleyResources = {
      table: this.data.table,
      key: this.data.key,
      webhookQueue: queue('webhookQueue'),
      callStepsQueue: queue('callStepsQueue'),
      contactJobsQueue: queue('contactJobsQueue'),
      exportJobsQueue: queue('exportJobsQueue'),
      integrationJobsQueue: queue('integrationJobsQueue'),
      kbJobsQueue: queue('kbJobsQueue'),
      vendorSecret: this.data.vendorSecret,
      recordingsBucket: this.data.recordingsBucket,
      knowledgeBaseBucket: this.data.knowledgeBaseBucket,
    };
    this.functions = new ParleyFunctions(this, { stage, resources, jobs, reservedConcurrency: props.reservedConcurrency });

    // The API first: its endpoint is the functions' PUBLIC_BASE_URL unless one is given.
    this.http = new ParleyApi(this, { settings: settingsOfStage, routes, apiThrottle: props.apiThrottle, routeThrottles: props.routeThrottles });
    // The WebSocket monitor (docs/calls.md, Live calls): its function first, then its API in a
    // nested stack; every other function learns where to push from the API's stage.
    const baseEnvironment = settingsEnvironment(settings, this.http.publicUrl ?? this.http.api.apiEndpoint);
    // No LIVE_WS_*: the function is the API's target, and finds its management endpoint in each event.
    const liveMonitorFunction = this.functions.add(websocketFunction(), baseEnvironment);
    this.liveMonitor = new LiveMonitorStack(this, 'LiveMonitor', { handler: liveMonitorFunction.live, apiName: scopedName(stage, 'live') });
    // Fixed egress (opt-in): the addresses are every function's EGRESS_IP_ADDRESSES (GET /workspace/egress).
    if (contextValue(this, 'fixedEgress') === true) {
      const natGateways = Number(contextValue(this, 'fixedEgressNatGateways') ?? DEFAULT_EGRESS_NAT_GATEWAYS);
      this.egress = new FixedEgress(this, 'Egress', { natGateways });
      new CfnOutput(this, 'EgressAddresses', { value: this.egress.addressList(), description: 'Fixed egress addresses customers allowlist (EGRESS_IP_ADDRESSES)' });
    }
    const network = this.egress ? { vpc: this.egress.vpc, securityGroup: this.egress.securityGroup } : undefined;
    const environment = {
      ...baseEnvironment,
      LIVE_WS_MANAGEMENT_URL: this.liveMonitor.managementUrl,
      LIVE_WS_URL: this.liveMonitor.url,
      ...(this.egress ? { EGRESS_IP_ADDRESSES: this.egress.addressList() } : {}),
    };
    for (const spec of FUNCTIONS) {
      if (spec.trigger.kind === 'websocket') continue;
      this.functions.add(spec, environment, spec.egress ? network : undefined);
    }
    this.connectRouteInvokers();

    // The voice worker (lib/voice-worker.ts), when calls run on LiveKit: the functions'
    // settings, and fixed egress's private subnets when that is on (custom functions, custom
    // LLMs and app tools leave from the same addresses as the functions' requests).
    const worker = voiceWorkerSettings(this, settings.livekitUrl);
    if (worker) {
      this.voiceWorker = new VoiceWorker(this, 'VoiceWorker', {
        stage,
        resources,
        environment,
        settings: worker,
        network,
        logGroupName: `/parley/${stage}/voice-worker`,
      });
    }

    this.pushToLiveMonitors(liveMonitorFunction);
    this.jobs.connect(this.functions.byName, this.functions.reserved);
    this.http.serve(this.functions.byName);

    this.monitoring = new Monitoring(this, 'Monitoring', {
      stage,
      functions: this.functions.entries(),
      workQueues: this.jobs.workQueues(),
      deadLetterQueues: this.jobs.deadLetterQueues(),
      api: this.http.api,
      table: this.data.table,
      indexNames: tableDefinition.globalSecondaryIndexes.map((index) => index.indexName),
      scheduleRules: this.jobs.scheduleRules,
      accountConcurrency: Number(stageContext(this, stage, LAMBDA_CONCURRENCY_QUOTA.context) ?? DEFAULT_ACCOUNT_CONCURRENCY),
      alarmTopicArn: this.settings.alarmTopicArn,
      alarmEmails: this.settings.alarmEmails,
      voiceWorker: this.voiceWorker,
    });
    this.functions.safeDeploys(this.settings.deployment, this.monitoring.errorAlarms);
    this.outputs();
  }

  /**
   * The functions whose entries name route groups they invoke (the assistant's tools): each
   * may invoke exactly those groups' `live` aliases, and finds them in ROUTE_FUNCTION_NAMES
   * (`<function name>:live`, the qualifier shared/platform/aws/lambda-invoke.ts sends).
   */
  private connectRouteInvokers(): void {
    for (const spec of FUNCTIONS) {
      if (!spec.invokesRoutes?.length) continue;
      const fn = this.functions.byName[spec.name];
      const targets = spec.invokesRoutes.map((group) => [group, this.functions.byName[group]] as const);
      fn.addEnvironment('ROUTE_FUNCTION_NAMES', this.toJsonString(Object.fromEntries(targets.map(([group, target]) => [group, `${target.functionName}:${target.live.aliasName}`]))));
      fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['lambda:InvokeFunction'], resources: targets.map(([, target]) => target.live.functionArn) }));
    }
  }

  /**
   * The functions whose entries say so push call updates to WebSocket monitors. The API's own
   * function cannot name the API (the API names it: a cycle), so its grant names the stage.
   */
  private pushToLiveMonitors(liveMonitorFunction: ParleyFunction): void {
    for (const spec of FUNCTIONS) {
      if (spec.pushesLiveUpdates) this.liveMonitor.grantManageConnections(this.functions.byName[spec.name]);
    }
    liveMonitorFunction.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['execute-api:ManageConnections'],
        resources: [this.formatArn({ service: 'execute-api', resource: '*', resourceName: 'live/*/@connections/*' })],
      }),
    );
    NagSuppressions.addStackSuppressions(this, [
      {
        id: 'AwsSolutions-IAM5',
        reason:
          'Pushing to WebSocket monitors needs execute-api:ManageConnections on every connection of the live stage (connection IDs are made by API Gateway at connect time); the live-ws function, which the API invokes, names the stage without the API ID to avoid a dependency cycle.',
        // Tokens when the stack is environment-agnostic; literals when a stage names its account and region.
        appliesTo: [{ regex: '/^Resource::arn:(<AWS::Partition>|aws[a-z-]*):execute-api:(<AWS::Region>|[a-z0-9-]+):(<AWS::AccountId>|\\d{12}):.*\\/live\\/\\*\\/@connections\\/\\*$/g' }],
      },
    ]);
  }

  private outputs(): void {
    const { knowledgeBaseBucket, recordingsBucket, table, key } = this.data;
    const { api, stage, publicUrl, domainName } = this.http;
    new CfnOutput(this, 'KnowledgeBaseBucketName', { value: knowledgeBaseBucket.bucketName, description: 'Knowledge bases (KNOWLEDGE_BASE_BUCKET)' });
    new CfnOutput(this, 'RecordingsBucketName', { value: recordingsBucket.bucketName, description: 'Call recordings (RECORDINGS_BUCKET)' });
    new CfnOutput(this, 'ApiUrl', { value: publicUrl ?? stage.url, description: 'Parley API base URL' });
    new CfnOutput(this, 'ApiId', { value: api.apiId, description: 'The HTTP API\'s ID (for a "Routes per API" quota raise)' });
    new CfnOutput(this, 'TableName', { value: table.tableName, description: 'The table (TABLE_NAME for the CLI)' });
    new CfnOutput(this, 'KeyArn', { value: key.keyArn, description: 'The KMS key (KMS_KEY_ID for the CLI)' });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn, description: 'Subscribe to get the alarms (docs/operations.md)' });
    new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName, description: 'The CloudWatch dashboard' });
    if (this.voiceWorker) {
      new CfnOutput(this, 'VoiceWorkerCluster', { value: this.voiceWorker.cluster.clusterName, description: 'The voice worker\'s ECS cluster (docs/operations.md, The voice worker)' });
      new CfnOutput(this, 'VoiceWorkerService', { value: this.voiceWorker.service.serviceName, description: 'The voice worker\'s ECS service' });
    }
    if (domainName) {
      new CfnOutput(this, 'ApiDomainTarget', { value: domainName.regionalDomainName, description: 'Where the custom domain\'s DNS record points (done for you with hostedZoneId)' });
    }
  }

  // Shorthands for the parts' resources (the tests and tools read these).
  get table(): dynamodb.Table { return this.data.table; }
  get key(): kms.Key { return this.data.key; }
  get vendorSecret(): secretsmanager.Secret { return this.data.vendorSecret; }
  get recordingsBucket(): s3.Bucket { return this.data.recordingsBucket; }
  get knowledgeBaseBucket(): s3.Bucket { return this.data.knowledgeBaseBucket; }
  get webhookQueue(): sqs.Queue { return this.jobs.queue('webhookQueue').queue; }
  get webhookDeadLetters(): sqs.Queue { return this.jobs.queue('webhookQueue').deadLetters; }
  get callStepsQueue(): sqs.Queue { return this.jobs.queue('callStepsQueue').queue; }
  get callStepsDeadLetters(): sqs.Queue { return this.jobs.queue('callStepsQueue').deadLetters; }
  get contactJobsQueue(): sqs.Queue { return this.jobs.queue('contactJobsQueue').queue; }
  get contactJobsDeadLetters(): sqs.Queue { return this.jobs.queue('contactJobsQueue').deadLetters; }
  get exportJobsQueue(): sqs.Queue { return this.jobs.queue('exportJobsQueue').queue; }
  get exportJobsDeadLetters(): sqs.Queue { return this.jobs.queue('exportJobsQueue').deadLetters; }
  get integrationJobsQueue(): sqs.Queue { return this.jobs.queue('integrationJobsQueue').queue; }
  get integrationJobsDeadLetters(): sqs.Queue { return this.jobs.queue('integrationJobsQueue').deadLetters; }
  get kbJobsQueue(): sqs.Queue { return this.jobs.queue('kbJobsQueue').queue; }
  get kbJobsDeadLetters(): sqs.Queue { return this.jobs.queue('kbJobsQueue').deadLetters; }
  get scheduleDeadLetters(): sqs.Queue { return this.jobs.scheduleDeadLetters; }
  get billingFailures(): sqs.Queue { return this.jobs.billingFailures; }
  get scheduleRules(): events.Rule[] { return this.jobs.scheduleRules; }
  get alarms(): cloudwatch.Alarm[] { return this.monitoring.alarms; }
  get api(): apigwv2.HttpApi { return this.http.api; }
  get stage(): apigwv2.HttpStage { return this.http.stage; }
  get domainName(): apigwv2.DomainName | undefined { return this.http.domainName; }
  get integrations(): Record<Domain, apigwv2.HttpIntegration> { return this.http.integrations; }
  get defaultRoute(): apigwv2.CfnRoute { return this.http.defaultRoute; }
  get routeStacks(): RouteStack[] { return this.http.routeStacks; }
  get deploymentGroups(): Record<FunctionName, codedeploy.LambdaDeploymentGroup> { return this.functions.deploymentGroups; }
  get liveMonitorFunction(): ParleyFunction { return this.functions.byName[websocketFunction().name]; }
  /** The HTTP functions by route group. */
  get domainFunctions(): Record<Domain, ParleyFunction> {
    return Object.fromEntries(FUNCTIONS.flatMap((spec) => (spec.trigger.kind === 'routes' ? [[spec.trigger.routeGroup, this.functions.byName[spec.name]]] : []))) as Record<Domain, ParleyFunction>;
  }
  /** The job functions by job name. */
  get backgroundFunctions(): Record<JobName, ParleyFunction> {
    return Object.fromEntries(
      FUNCTIONS.flatMap((spec) => (spec.trigger.kind === 'queue' || spec.trigger.kind === 'schedule' ? [[spec.name, this.functions.byName[spec.name]]] : [])),
    ) as Record<JobName, ParleyFunction>;
  }
}
