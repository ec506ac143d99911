import { fileURLToPath } from 'node:url';
import { Duration, IgnoreMode, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import { Platform } from 'aws-cdk-lib/aws-ecr-assets';
import * as ecs from 'aws-cdk-lib/aws-ecs';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as logs from 'aws-cdk-lib/aws-logs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import { HEALTH_CHECK_SCRIPT } from '../worker/src/health.ts';
import { WORKER_METRICS_NAMESPACE, WORKER_METRICS_SERVICE } from '../worker/src/metrics.ts';
import { contextValue } from './deploy-settings.ts';
import { grantParleyAccess, parleyStage, resourceEnvironment, type ParleyAccess, type ParleyResources } from './parley-function.ts';
import { SCALE_TARGET, voiceWorkerTasksFor } from './scale.ts';
import { scopedName } from './stage.ts';

/*
 * The voice agent worker (worker/, docs/operations.md "The voice worker"): a LiveKit Agents
 * process on ECS Fargate that joins every call's room Parley dispatches it to. It registers
 * with LiveKit over an outbound WebSocket and takes jobs from it, so nothing connects to it:
 * no load balancer, no inbound rule.
 *
 * The image is built from worker/Dockerfile with the repository root as its context. At synth
 * CDK only stages that context (the files the root .dockerignore lets through: a few MB of
 * sources) and hashes it; Docker builds and pushes the image at deploy (`cdk deploy`, or
 * `cdk-assets` in a pipeline), so `cdk synth` stays offline and needs no Docker.
 */

const PROJECT_ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * What the worker's task role may do on the shared resources (grantParleyAccess, as for a
 * function), each for what the conversation runtime does on a call:
 * - the table, read and write: it reads the agent version, its Retell LLM or flow, the
 *   workspace and its credentials; app tools (integrations' executeTool) write the
 *   connection's status and its refreshed tokens;
 * - the key, `generateDataKey` and `decrypt` under the envelope's encryption context only:
 *   custom functions are signed with the workspace's sealed webhook key (decrypt), app tools
 *   open their connection's tokens (decrypt) and seal refreshed ones (generateDataKey);
 * - the vendor secret, read: the model, voice and speech vendors' keys.
 * Nothing else: reports and knowledge retrieval go to Parley's API over HTTPS (the report
 * token), so the worker holds no queue and neither bucket; a turn run without the worker's
 * `retrieve` would reach for the knowledge-base bucket and be refused.
 */
const WORKER_ACCESS: ParleyAccess = { table: 'readWrite', key: ['generateDataKey', 'decrypt'], vendorSecret: 'read' };

/**
 * One task's size. Per call, measured: 7.0 % of a vCPU (VOICE_WORKER_CALLS_PER_VCPU in
 * lib/scale.ts) and a job process of its own of at most about 150 MiB (the bundled agent loaded)
 * plus 7 MiB while the call runs; speech, model and voice run at the vendors, the local work
 * is voice activity and end-of-turn detection, resampling and the conversation runtime.
 * LiveKit marks a worker full at a CPU load of 0.7 (its production `loadThreshold`): 2 vCPU
 * take about 20 calls, 14 at the 50 % scaling target (docs/scale.md, "Voice worker").
 */
export const VOICE_WORKER_SIZE = { cpu: 2048, memoryMiB: 4096 } as const;

/**
 * Average CPU the service scales on: below LiveKit's 0.7 at which a worker stops taking jobs,
 * so a new task is running before the busy ones turn calls away.
 */
export const VOICE_WORKER_CPU_TARGET_PERCENT = 50;

/**
 * Fargate's longest stop timeout. On SIGTERM the worker stops taking jobs and waits for its
 * calls (LiveKit's drain); a call still running after this is cut when ECS kills the task.
 * Scale-in and deployments never send SIGTERM to a task with calls (scale-in protection,
 * worker/src/task-protection.ts), so this bounds only other stops (a failed health check, a
 * manual stop, a Fargate retirement).
 */
const VOICE_WORKER_STOP_TIMEOUT = Duration.seconds(120);

const DEFAULT_VOICE_WORKER_MIN_TASKS = 1;
/**
 * Enough tasks for the target's calls at the scaling target (700: 10,000 calls at 14.3 a
 * task). A ceiling, not a cost: the service runs what its CPU asks for. It needs the
 * account's Fargate vCPU quota (docs/scale.md, "Quotas a deployment needs").
 */
export const DEFAULT_VOICE_WORKER_MAX_TASKS = voiceWorkerTasksFor(SCALE_TARGET.concurrentCalls, VOICE_WORKER_SIZE.cpu / 1024, VOICE_WORKER_CPU_TARGET_PERCENT);

/** Alarm thresholds (docs/operations.md, The voice worker). */
export const VOICE_WORKER_ALARM_THRESHOLDS = {
  /** Voice-to-voice p90 target (the goal is a p50 of 700 ms; Retell publishes about 800 ms). */
  voiceToVoiceP90Ms: 1500,
  /** Failed jobs as a share of jobs, per 5 minutes... */
  failedJobsPercent: 10,
  /** ...once at least this many failed in the 5 minutes (one failure of two calls is not an outage). */
  failedJobsMin: 3,
  /** Minutes without a running task, or without a registered worker. */
  downMinutes: 3,
};

type VoiceWorkerArchitecture = 'arm64' | 'x86_64';

export interface VoiceWorkerSettings {
  minTasks: number;
  maxTasks: number;
  /** arm64 (Graviton, the default) or x86_64 for a deploy machine that cannot build arm64 images. */
  architecture: VoiceWorkerArchitecture;
}

/**
 * Whether to deploy the worker, and how: context `voiceWorker` (default: on exactly when
 * `livekitUrl` is set: without LiveKit, calls run in the sandbox and nothing would dispatch
 * the worker), `voiceWorkerMinTasks` (1), `voiceWorkerMaxTasks` (700, the target's), `voiceWorkerArchitecture`.
 */
export function voiceWorkerSettings(scope: Construct, livekitUrl: string | undefined): VoiceWorkerSettings | undefined {
  const wanted = contextValue(scope, 'voiceWorker');
  if (wanted !== undefined && typeof wanted !== 'boolean') throw new Error(`voiceWorker must be true or false, not ${JSON.stringify(wanted)}`);
  if (wanted === true && !livekitUrl) {
    throw new Error('voiceWorker needs livekitUrl (the LiveKit server the worker registers with, LIVEKIT_URL): pass -c livekitUrl=wss://<your LiveKit host>');
  }
  if (wanted === false || !livekitUrl) return undefined;
  // At least one task: CPU target tracking cannot scale up from none (no task, no CPU metric).
  const count = (name: string, fallback: number) => {
    const value = contextValue(scope, name) ?? fallback;
    if (!Number.isInteger(value) || (value as number) < 1 || (value as number) > 1000) throw new Error(`${name} must be a whole number of tasks from 1 to 1000, not ${JSON.stringify(value)}`);
    return value as number;
  };
  const minTasks = count('voiceWorkerMinTasks', DEFAULT_VOICE_WORKER_MIN_TASKS);
  const maxTasks = count('voiceWorkerMaxTasks', DEFAULT_VOICE_WORKER_MAX_TASKS);
  if (maxTasks < minTasks) throw new Error(`voiceWorkerMaxTasks (${maxTasks}) must be at least voiceWorkerMinTasks (${minTasks})`);
  const architecture = contextValue(scope, 'voiceWorkerArchitecture') ?? 'arm64';
  if (architecture !== 'arm64' && architecture !== 'x86_64') throw new Error(`voiceWorkerArchitecture must be arm64 or x86_64, not ${JSON.stringify(architecture)}`);
  return { minTasks, maxTasks, architecture };
}

export interface VoiceWorkerProps {
  stage: string;
  resources: ParleyResources;
  /** The functions' environment (deploy settings, LIVEKIT_URL and LIVEKIT_AGENT_NAME among them). */
  environment: Record<string, string>;
  settings: VoiceWorkerSettings;
  /** Fixed egress (lib/fixed-egress.ts): the tasks run in its private subnets behind its addresses. */
  network?: { vpc: ec2.IVpc; securityGroup: ec2.ISecurityGroup };
  logGroupName: string;
}

export class VoiceWorker extends Construct {
  readonly cluster: ecs.Cluster;
  readonly service: ecs.FargateService;
  readonly taskDefinition: ecs.FargateTaskDefinition;
  readonly taskRole: iam.Role;
  readonly logGroup: logs.LogGroup;
  readonly container: ecs.ContainerDefinition;
  /** The worker's own VPC when fixed egress is off. */
  readonly vpc?: ec2.Vpc;
  readonly scaling: ecs.ScalableTaskCount;
  /** The `stage` dimension of the worker's metrics (worker/src/metrics.ts). */
  readonly metricsStage: string;

  constructor(scope: Construct, id: string, props: VoiceWorkerProps) {
    super(scope, id);
    const stack = Stack.of(this);
    const { resources, settings } = props;

    // Without fixed egress: a VPC of its own with public subnets in two zones and no NAT
    // gateway. A task needs outbound only (LiveKit's WebSocket and media, the vendors, AWS
    // APIs); a public address with a security group that admits nothing inbound gives it
    // that for about $3.60 a task-month, where NAT gateways cost about $33 a month each plus
    // $0.045 per GB. The table is reached through a gateway endpoint (free).
    let vpc: ec2.IVpc;
    let securityGroup: ec2.ISecurityGroup;
    if (props.network) {
      ({ vpc, securityGroup } = props.network);
    } else {
      const flowLogs = new logs.LogGroup(this, 'FlowLogs', { retention: logs.RetentionDays.ONE_MONTH });
      this.vpc = new ec2.Vpc(this, 'Vpc', {
        maxAzs: 2,
        natGateways: 0,
        subnetConfiguration: [{ name: 'public', subnetType: ec2.SubnetType.PUBLIC, cidrMask: 24 }],
        gatewayEndpoints: { DynamoDb: { service: ec2.GatewayVpcEndpointAwsService.DYNAMODB } },
        // Rejected traffic only, as fixed egress logs: enough to see what the group refused.
        flowLogs: { Rejected: { trafficType: ec2.FlowLogTrafficType.REJECT, destination: ec2.FlowLogDestination.toCloudWatchLogs(flowLogs) } },
      });
      vpc = this.vpc;
      securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', { vpc, description: 'Parley voice worker: outbound only', allowAllOutbound: true });
    }

    const clusterName = scopedName(props.stage, 'voice');
    this.cluster = new ecs.Cluster(this, 'Cluster', {
      vpc,
      clusterName,
      // Running task count, CPU and memory per service for the alarms and the dashboard
      // (a few custom metrics a month).
      containerInsightsV2: ecs.ContainerInsights.ENABLED,
    });

    this.taskRole = new iam.Role(this, 'TaskRole', {
      // Only ECS tasks of this account may take the role (the confused-deputy guard AWS advises).
      assumedBy: new iam.ServicePrincipal('ecs-tasks.amazonaws.com').withConditions({
        StringEquals: { 'aws:SourceAccount': stack.account },
        ArnLike: { 'aws:SourceArn': stack.formatArn({ service: 'ecs', resource: '*' }) },
      }),
      description: 'Parley voice worker tasks',
    });
    grantParleyAccess(this.taskRole, resources, WORKER_ACCESS);
    // Scale-in protection: the container agent calls UpdateTaskProtection with the task role's
    // credentials (worker/src/task-protection.ts), on this cluster's tasks only.
    this.taskRole.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ecs:UpdateTaskProtection'],
        resources: [stack.formatArn({ service: 'ecs', resource: 'task', resourceName: `${clusterName}/*` })],
      }),
    );
    NagSuppressions.addResourceSuppressions(
      this.taskRole,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'Task IDs are made by ECS at launch: a task protects itself through the agent, so the grant names every task of the worker\'s own cluster, and only those.',
          // Tokens when the stack is environment-agnostic; literals when a stage names its account and region.
          appliesTo: [{ regex: '/^Resource::arn:(<AWS::Partition>|aws[a-z-]*):ecs:(<AWS::Region>|[a-z0-9-]+):(<AWS::AccountId>|\\d{12}):task\\/parley-[a-z0-9-]+-voice\\/\\*$/g' }],
        },
      ],
      true,
    );

    this.logGroup = new logs.LogGroup(this, 'Logs', { retention: logs.RetentionDays.ONE_MONTH, logGroupName: props.logGroupName });
    const arm = settings.architecture === 'arm64';
    this.taskDefinition = new ecs.FargateTaskDefinition(this, 'Task', {
      cpu: VOICE_WORKER_SIZE.cpu,
      memoryLimitMiB: VOICE_WORKER_SIZE.memoryMiB,
      runtimePlatform: { cpuArchitecture: arm ? ecs.CpuArchitecture.ARM64 : ecs.CpuArchitecture.X86_64, operatingSystemFamily: ecs.OperatingSystemFamily.LINUX },
      taskRole: this.taskRole,
    });

    this.metricsStage = parleyStage(this);
    const image = ecs.ContainerImage.fromAsset(PROJECT_ROOT, {
      file: 'worker/Dockerfile',
      platform: arm ? Platform.LINUX_ARM64 : Platform.LINUX_AMD64,
      // The root .dockerignore, with Docker's rules (negations), decides what is staged.
      ignoreMode: IgnoreMode.DOCKER,
    });
    this.container = this.taskDefinition.addContainer('Worker', {
      image,
      essential: true,
      logging: ecs.LogDrivers.awsLogs({ logGroup: this.logGroup, streamPrefix: 'worker' }),
      environment: {
        PARLEY_STAGE: this.metricsStage,
        ...props.environment,
        ...resourceEnvironment(resources),
        // Lambda sets the region itself; a task is told.
        AWS_REGION: stack.region,
        // LiveKit's load (its CPU share, against loadThreshold 0.7) counts the task's vCPUs.
        NUM_CPUS: String(VOICE_WORKER_SIZE.cpu / 1024),
      },
      // The LiveKit CLI reads its credentials from the environment; ECS puts them there from
      // the vendor secret when the task starts (the execution role reads the secret). A task
      // started before they were in the secret does not start (docs/operations.md).
      secrets: {
        LIVEKIT_API_KEY: ecs.Secret.fromSecretsManager(resources.vendorSecret, 'LIVEKIT_API_KEY'),
        LIVEKIT_API_SECRET: ecs.Secret.fromSecretsManager(resources.vendorSecret, 'LIVEKIT_API_SECRET'),
      },
      healthCheck: {
        command: ['CMD', 'node', '-e', HEALTH_CHECK_SCRIPT],
        interval: Duration.seconds(30),
        timeout: Duration.seconds(5),
        startPeriod: Duration.seconds(60),
        retries: 3,
      },
      stopTimeout: VOICE_WORKER_STOP_TIMEOUT,
      // An init process reaps the job processes' children and passes SIGTERM on to node.
      linuxParameters: new ecs.LinuxParameters(this, 'Linux', { initProcessEnabled: true }),
    });

    this.service = new ecs.FargateService(this, 'Service', {
      cluster: this.cluster,
      taskDefinition: this.taskDefinition,
      // No desired count: autoscaling owns it (a template value would reset it on every deploy);
      // the scalable target's minimum applies from the start.
      securityGroups: [securityGroup],
      vpcSubnets: { subnetType: props.network ? ec2.SubnetType.PRIVATE_WITH_EGRESS : ec2.SubnetType.PUBLIC },
      assignPublicIp: !props.network,
      // New tasks start before old ones stop; a deployment whose tasks never turn healthy
      // stops and rolls back to the last working one.
      minHealthyPercent: 100,
      maxHealthyPercent: 200,
      circuitBreaker: { enable: true, rollback: true },
      // Rebalancing across zones would stop tasks to start others elsewhere: never one with calls.
      availabilityZoneRebalancing: ecs.AvailabilityZoneRebalancing.DISABLED,
      propagateTags: ecs.PropagatedTagSource.SERVICE,
      enableECSManagedTags: true,
    });

    this.scaling = this.service.autoScaleTaskCount({ minCapacity: settings.minTasks, maxCapacity: settings.maxTasks });
    this.scaling.scaleOnCpuUtilization('Cpu', {
      targetUtilizationPercent: VOICE_WORKER_CPU_TARGET_PERCENT,
      // Out fast (a call waits for a worker), in slowly; scale-in only ever stops idle tasks.
      scaleOutCooldown: Duration.seconds(60),
      scaleInCooldown: Duration.minutes(5),
    });

    NagSuppressions.addResourceSuppressions(
      this.taskDefinition,
      [
        {
          id: 'AwsSolutions-ECS2',
          reason: 'The environment holds settings and resource names (the functions\' same settings), no secret: the LiveKit credentials come from Secrets Manager through `secrets`.',
        },
        {
          id: 'AwsSolutions-IAM5',
          reason: 'The execution role\'s ecr:GetAuthorizationToken takes no resource (the ECR service authorization reference); its other grants name the image repository, the log group and the vendor secret.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
  }

  /** The worker's metrics (worker/src/metrics.ts), as the alarms and the dashboard read them. */
  metric(name: 'JobStarted' | 'JobFailed' | 'VoiceToVoiceMs' | 'WorkerRegistered', props: cloudwatch.MetricOptions): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: WORKER_METRICS_NAMESPACE,
      metricName: name,
      dimensionsMap: { service: WORKER_METRICS_SERVICE, stage: this.metricsStage },
      ...props,
    });
  }

  /** Container Insights' running task count of the service. */
  metricRunningTasks(props: cloudwatch.MetricOptions): cloudwatch.Metric {
    return new cloudwatch.Metric({
      namespace: 'ECS/ContainerInsights',
      metricName: 'RunningTaskCount',
      dimensionsMap: { ClusterName: this.cluster.clusterName, ServiceName: this.service.serviceName },
      ...props,
    });
  }
}
