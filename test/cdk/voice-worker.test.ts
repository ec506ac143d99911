import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { App, Aspects, Stack, type CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { parleyResources } from '../support/cdk.ts';
import { KEY_CONTEXT_CONDITIONS } from '../../lib/parley-function.ts';
import { ParleyStack } from '../../lib/parley-stack.ts';
import { SCALE_TARGET, VOICE_WORKER_CALLS_PER_VCPU } from '../../lib/scale.ts';
import {
  DEFAULT_VOICE_WORKER_MAX_TASKS,
  VOICE_WORKER_ALARM_THRESHOLDS,
  VOICE_WORKER_CPU_TARGET_PERCENT,
  VOICE_WORKER_SIZE,
  VoiceWorker,
  voiceWorkerSettings,
} from '../../lib/voice-worker.ts';
import { functionSettings } from '../../lib/deploy-settings.ts';
import { WORKER_ENTRIES, WORKER_NODE_MAJOR } from '../../scripts/bundle-worker.ts';
import { PRODUCTION_REQUIRED_SETTINGS } from '../../shared/platform/config.ts';
import { tableDefinition } from '../../shared/platform/store/keys.ts';
import { HEALTH_CHECK_SCRIPT, WORKER_HTTP_PORT } from '../../worker/src/health.ts';

/**
 * The voice worker's deployment (lib/voice-worker.ts, docs/operations.md "The voice worker"):
 * the whole stack synthesized with LiveKit on (cdk-nag's two packs), and again with fixed egress
 * too (no routes); bundling skipped, the image asset only staged.
 */
const ROOT = new URL('../../', import.meta.url);
const PROJECT_CONTEXT = (JSON.parse(readFileSync(new URL('cdk.json', ROOT), 'utf8')) as { context: Record<string, unknown> }).context;
const SETTINGS = { sipHost: 'sip.parley.ai', sipIpRanges: ['34.1.2.0/24'] };
const LIVEKIT = 'wss://parley.livekit.cloud';

interface Synthed {
  app: App;
  stack: ParleyStack;
  worker: VoiceWorker;
  template: Template;
  resources: Record<string, { Type: string; Properties: any; DependsOn?: unknown }>;
  id(construct: { node: { defaultChild?: unknown } }): string;
}

function synth(context: Record<string, unknown>, nag = false, props: { routes?: [] } = {}): Synthed {
  const app = new App({ context: { ...PROJECT_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new ParleyStack(app, 'Parley', { settings: SETTINGS, ...props });
  if (nag) {
    Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
    Aspects.of(app).add(new ServerlessChecks({ verbose: true }));
  }
  const template = Template.fromStack(stack);
  return {
    app,
    stack,
    worker: stack.voiceWorker!,
    template,
    resources: template.toJSON().Resources,
    id: (construct) => stack.getLogicalId(construct.node.defaultChild as CfnResource),
  };
}

let on: Synthed;
let egress: Synthed;
beforeAll(() => {
  on = synth({ livekitUrl: LIVEKIT }, true);
  // No routes: the placement does not depend on them, and the route stacks are most of a synth.
  egress = synth({ livekitUrl: LIVEKIT, fixedEgress: true, voiceWorkerMaxTasks: 4 }, false, { routes: [] });
}, 300_000);

const ofType = (synthed: Synthed, type: string) => Object.entries(synthed.resources).filter(([, resource]) => resource.Type === type);
const policyOf = (synthed: Synthed, roleId: string) =>
  ofType(synthed, 'AWS::IAM::Policy').find(([, policy]) => policy.Properties.Roles.some((role: { Ref: string }) => role.Ref === roleId))![1].Properties.PolicyDocument.Statement;
const container = (synthed: Synthed) => synthed.resources[synthed.id(synthed.worker.taskDefinition)]!.Properties.ContainerDefinitions[0];
const sub = (text: string) => ({ 'Fn::Sub': text });
const arn = (tail: string) => ({ 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':ecs:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, tail]] });
const getAtt = (id: string, attribute = 'Arn') => ({ 'Fn::GetAtt': [id, attribute] });

describe('the voice worker service', () => {
  it('is deployed only when calls run on LiveKit, and can be left out', () => {
    expect(voiceWorkerSettings(new Stack(new App()), undefined)).toBeUndefined();
    expect(voiceWorkerSettings(new Stack(new App({ context: { voiceWorker: 'false' } })), LIVEKIT)).toBeUndefined();
    expect(voiceWorkerSettings(new Stack(new App()), LIVEKIT)).toEqual({ minTasks: 1, maxTasks: 700, architecture: 'arm64' });
    expect(() => voiceWorkerSettings(new Stack(new App({ context: { voiceWorker: true } })), undefined)).toThrow(
      'voiceWorker needs livekitUrl (the LiveKit server the worker registers with, LIVEKIT_URL): pass -c livekitUrl=wss://<your LiveKit host>',
    );
    expect(voiceWorkerSettings(new Stack(new App({ context: { voiceWorkerMinTasks: '3', voiceWorkerMaxTasks: 3 } })), LIVEKIT)).toEqual({ minTasks: 3, maxTasks: 3, architecture: 'arm64' });
    expect(() => voiceWorkerSettings(new Stack(new App({ context: { voiceWorkerMinTasks: '4', voiceWorkerMaxTasks: '3' } })), LIVEKIT)).toThrow('voiceWorkerMaxTasks (3) must be at least voiceWorkerMinTasks (4)');
    expect(() => voiceWorkerSettings(new Stack(new App({ context: { voiceWorkerMinTasks: '0' } })), LIVEKIT)).toThrow('voiceWorkerMinTasks must be a whole number of tasks from 1 to 1000, not 0');
    expect(() => voiceWorkerSettings(new Stack(new App({ context: { voiceWorkerMaxTasks: '2.5' } })), LIVEKIT)).toThrow('voiceWorkerMaxTasks must be a whole number of tasks from 1 to 1000, not 2.5');
    expect(() => voiceWorkerSettings(new Stack(new App({ context: { voiceWorkerArchitecture: 'arm' } })), LIVEKIT)).toThrow('voiceWorkerArchitecture must be arm64 or x86_64, not "arm"');
  });

  it('runs one Fargate service from the worker image, built at deploy from worker/Dockerfile with the repository root as context', () => {
    expect(ofType(on, 'AWS::ECS::Service')).toHaveLength(1);
    expect(ofType(on, 'AWS::ECS::Cluster').map(([, cluster]) => cluster.Properties)).toEqual([
      { ClusterName: 'parley-dev-voice', ClusterSettings: [{ Name: 'containerInsights', Value: 'enabled' }] },
    ]);
    const manifest = JSON.parse(readFileSync(join(on.app.synth().directory, 'Parley.assets.json'), 'utf8'));
    const images = Object.entries(manifest.dockerImages) as [string, { source: { directory: string; dockerFile: string; platform: string } }][];
    expect(images).toHaveLength(1);
    const [hash, image] = images[0]!;
    expect(image.source).toEqual({ directory: `asset.${hash}`, dockerFile: 'worker/Dockerfile', platform: 'linux/arm64' });
    expect(container(on).Image).toEqual(sub(`\${AWS::AccountId}.dkr.ecr.\${AWS::Region}.\${AWS::URLSuffix}/cdk-hnb659fds-container-assets-\${AWS::AccountId}-\${AWS::Region}:${hash}`));
    const task = on.resources[on.id(on.worker.taskDefinition)]!.Properties;
    expect(task).toMatchObject({
      Cpu: String(VOICE_WORKER_SIZE.cpu),
      Memory: String(VOICE_WORKER_SIZE.memoryMiB),
      NetworkMode: 'awsvpc',
      RequiresCompatibilities: ['FARGATE'],
      RuntimePlatform: { CpuArchitecture: 'ARM64', OperatingSystemFamily: 'LINUX' },
      TaskRoleArn: getAtt(on.id(on.worker.taskRole)),
    });
    expect(container(on)).toMatchObject({
      Essential: true,
      StopTimeout: 120,
      LinuxParameters: { InitProcessEnabled: true },
      HealthCheck: { Command: ['CMD', 'node', '-e', HEALTH_CHECK_SCRIPT], Interval: 30, Timeout: 5, StartPeriod: 60, Retries: 3 },
      LogConfiguration: { LogDriver: 'awslogs', Options: { 'awslogs-group': { Ref: on.id(on.worker.logGroup) }, 'awslogs-stream-prefix': 'worker' } },
    });
    expect(on.resources[on.id(on.worker.logGroup)]!.Properties).toEqual({ LogGroupName: '/parley/dev/voice-worker', RetentionInDays: 30 });
    on.template.hasOutput('VoiceWorkerCluster', { Value: { Ref: on.id(on.worker.cluster) } });
    on.template.hasOutput('VoiceWorkerService', { Value: getAtt(on.id(on.worker.service), 'Name') });
  });

  it('stages only the files the Dockerfile copies, so synth never copies node_modules and needs no Docker', () => {
    const outdir = on.app.synth().directory;
    const [staged] = readdirSync(outdir).filter((entry) => entry.startsWith('asset.') && existsSync(join(outdir, entry, 'worker', 'Dockerfile')));
    const dir = join(outdir, staged!);
    expect(readdirSync(dir).sort()).toEqual(['.dockerignore', 'lib', 'package-lock.json', 'package.json', 'scripts', 'shared', 'tsconfig.json', 'worker']);
    expect(readdirSync(join(dir, 'worker')).sort()).toEqual(['Dockerfile', 'assets', 'package-lock.json', 'package.json', 'src']);
    expect(readdirSync(join(dir, 'lib')).sort()).toEqual(['bundle-aliases.ts', 'bundling.ts']);
    expect(readdirSync(join(dir, 'scripts'))).toEqual(['bundle-worker.ts']);
    // Every COPY from the context names something staged.
    const dockerfile = readFileSync(new URL('worker/Dockerfile', ROOT), 'utf8');
    const copies = [...dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm)].flatMap((match) => match[1]!.split(' '));
    expect(copies.length).toBeGreaterThan(5);
    for (const source of copies) expect(existsSync(join(dir, source)), source).toBe(true);
    const bytes = (path: string): number => (statSync(path).isDirectory() ? readdirSync(path).reduce((sum, entry) => sum + bytes(join(path, entry)), 0) : statSync(path).size);
    expect(bytes(dir)).toBeLessThan(10 * 1024 * 1024);
  });

  it('gives the task the functions\' settings, LiveKit\'s among them, and the LiveKit keys from the vendor secret', () => {
    const variables = Object.fromEntries(container(on).Environment.map(({ Name, Value }: { Name: string; Value: unknown }) => [Name, Value]));
    expect(Object.keys(variables).sort()).toEqual(
      [
        'PARLEY_STAGE', 'SIP_HOST', 'SIP_IP_RANGES', 'PUBLIC_BASE_URL', 'LIVEKIT_URL', 'LIVEKIT_AGENT_NAME', 'LIVE_WS_MANAGEMENT_URL', 'LIVE_WS_URL',
        'TABLE_NAME', 'KMS_KEY_ID', 'WEBHOOK_QUEUE_URL', 'CALL_STEPS_QUEUE_URL', 'CONTACT_JOBS_QUEUE_URL', 'EXPORT_JOBS_QUEUE_URL', 'INTEGRATION_JOBS_QUEUE_URL',
        'KB_JOBS_QUEUE_URL', 'KNOWLEDGE_BASE_BUCKET', 'VENDOR_SECRET_ID', 'RECORDINGS_BUCKET', 'PARLEY_ENV', 'AWS_REGION', 'NUM_CPUS',
      ].sort(),
    );
    // Every setting the production check demands: the worker runs the same settings schema.
    for (const name of PRODUCTION_REQUIRED_SETTINGS) expect(variables, name).toHaveProperty(name);
    expect(variables).toMatchObject({
      PARLEY_ENV: 'production',
      PARLEY_STAGE: 'Parley',
      LIVEKIT_URL: LIVEKIT,
      LIVEKIT_AGENT_NAME: 'parley-agent',
      TABLE_NAME: { Ref: on.id(on.stack.table) },
      VENDOR_SECRET_ID: { Ref: on.id(on.stack.vendorSecret) },
      AWS_REGION: { Ref: 'AWS::Region' },
      NUM_CPUS: '2',
      PUBLIC_BASE_URL: getAtt(on.id(on.stack.api), 'ApiEndpoint'),
    });
    const secret = on.id(on.stack.vendorSecret);
    expect(container(on).Secrets).toEqual(
      ['LIVEKIT_API_KEY', 'LIVEKIT_API_SECRET'].map((name) => ({ Name: name, ValueFrom: { 'Fn::Join': ['', [{ Ref: secret }, `:${name}::`]] } })),
    );
    // The functions dispatch the same agent name on the same server.
    for (const [, fn] of ofType(on, 'AWS::Lambda::Function')) {
      if (!fn.Properties.Environment) continue;
      expect(fn.Properties.Environment.Variables).toMatchObject({ LIVEKIT_URL: LIVEKIT, LIVEKIT_AGENT_NAME: 'parley-agent' });
    }
  });

  it('grants the task role exactly the table, the envelope key, the vendor secret and its own scale-in protection', () => {
    const table = on.id(on.stack.table);
    const key = on.id(on.stack.key);
    expect(policyOf(on, on.id(on.worker.taskRole))).toEqual([
      {
        Action: ['dynamodb:BatchGetItem', 'dynamodb:BatchWriteItem', 'dynamodb:ConditionCheckItem', 'dynamodb:DeleteItem', 'dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:UpdateItem'],
        Effect: 'Allow',
        Resource: [getAtt(table), ...tableDefinition.globalSecondaryIndexes.map((index) => ({ 'Fn::Join': ['', [getAtt(table), `/index/${index.indexName}`]] }))],
      },
      {
        Action: ['kms:Decrypt', 'kms:DescribeKey', 'kms:Encrypt', 'kms:GenerateDataKey', 'kms:ReEncryptFrom', 'kms:ReEncryptTo'],
        Condition: { StringEquals: { 'kms:ViaService': { 'Fn::Join': ['', ['dynamodb.', { Ref: 'AWS::Region' }, '.amazonaws.com']] } } },
        Effect: 'Allow',
        Resource: getAtt(key),
      },
      { Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Condition: KEY_CONTEXT_CONDITIONS, Effect: 'Allow', Resource: getAtt(key) },
      { Action: ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'], Effect: 'Allow', Resource: { Ref: on.id(on.stack.vendorSecret) } },
      { Action: 'ecs:UpdateTaskProtection', Effect: 'Allow', Resource: arn(':task/parley-dev-voice/*') },
    ]);
    // Only ECS tasks of this account may assume it.
    expect(on.resources[on.id(on.worker.taskRole)]!.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      {
        Action: 'sts:AssumeRole',
        Effect: 'Allow',
        Principal: { Service: 'ecs-tasks.amazonaws.com' },
        Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } }, ArnLike: { 'aws:SourceArn': arn(':*') } },
      },
    ]);
  });

  it('lets the execution role pull the image, write the log and read the LiveKit keys, and nothing else', () => {
    const executionRole = on.worker.taskDefinition.executionRole!;
    expect(policyOf(on, on.id(executionRole))).toEqual([
      {
        Action: ['ecr:BatchCheckLayerAvailability', 'ecr:BatchGetImage', 'ecr:GetDownloadUrlForLayer'],
        Effect: 'Allow',
        Resource: { 'Fn::Join': ['', ['arn:', { Ref: 'AWS::Partition' }, ':ecr:', { Ref: 'AWS::Region' }, ':', { Ref: 'AWS::AccountId' }, ':repository/', sub('cdk-hnb659fds-container-assets-${AWS::AccountId}-${AWS::Region}')]] },
      },
      // Takes no resource (the one "*": suppressed for cdk-nag with that reason).
      { Action: 'ecr:GetAuthorizationToken', Effect: 'Allow', Resource: '*' },
      { Action: ['logs:CreateLogStream', 'logs:PutLogEvents'], Effect: 'Allow', Resource: getAtt(on.id(on.worker.logGroup)) },
      { Action: ['secretsmanager:DescribeSecret', 'secretsmanager:GetSecretValue'], Effect: 'Allow', Resource: { Ref: on.id(on.stack.vendorSecret) } },
    ]);
    // Both roles open the secret through Secrets Manager only (the key's policy, as for the functions).
    const keyPolicy = on.resources[on.id(on.stack.key)]!.Properties.KeyPolicy.Statement as { Action: unknown; Principal: { AWS: unknown }; Condition?: unknown }[];
    const viaSecrets = keyPolicy.find((statement) => statement.Action === 'kms:Decrypt' && JSON.stringify(statement.Condition).includes('secretsmanager.'))!;
    expect(viaSecrets.Principal.AWS).toEqual(expect.arrayContaining([getAtt(on.id(on.worker.taskRole)), getAtt(on.id(executionRole))]));
  });

  it('may scale to the tasks that carry the target\'s calls at the CPU target, by default (docs/scale.md, Voice worker)', () => {
    const callsAtTarget = (tasks: number) => tasks * (VOICE_WORKER_SIZE.cpu / 1024) * VOICE_WORKER_CALLS_PER_VCPU * (VOICE_WORKER_CPU_TARGET_PERCENT / 100);
    expect(DEFAULT_VOICE_WORKER_MAX_TASKS).toBe(700);
    expect(callsAtTarget(DEFAULT_VOICE_WORKER_MAX_TASKS)).toBeGreaterThanOrEqual(SCALE_TARGET.concurrentCalls);
    expect(callsAtTarget(DEFAULT_VOICE_WORKER_MAX_TASKS - 1)).toBeLessThan(SCALE_TARGET.concurrentCalls);
  });

  it('scales on CPU from the minimum to the maximum tasks, and leaves the count to autoscaling', () => {
    expect(ofType(on, 'AWS::ApplicationAutoScaling::ScalableTarget').map(([, target]) => target.Properties)).toEqual([
      expect.objectContaining({ MinCapacity: 1, MaxCapacity: DEFAULT_VOICE_WORKER_MAX_TASKS, ScalableDimension: 'ecs:service:DesiredCount', ServiceNamespace: 'ecs' }),
    ]);
    expect(ofType(on, 'AWS::ApplicationAutoScaling::ScalingPolicy').map(([, policy]) => policy.Properties.TargetTrackingScalingPolicyConfiguration)).toEqual([
      { PredefinedMetricSpecification: { PredefinedMetricType: 'ECSServiceAverageCPUUtilization' }, TargetValue: VOICE_WORKER_CPU_TARGET_PERCENT, ScaleOutCooldown: 60, ScaleInCooldown: 300 },
    ]);
    expect(ofType(egress, 'AWS::ApplicationAutoScaling::ScalableTarget')[0]![1].Properties).toMatchObject({ MinCapacity: 1, MaxCapacity: 4 });
    const service = on.resources[on.id(on.worker.service)]!.Properties;
    expect(service.DesiredCount).toBeUndefined();
    expect(service).toMatchObject({
      LaunchType: 'FARGATE',
      DeploymentConfiguration: { DeploymentCircuitBreaker: { Enable: true, Rollback: true }, MaximumPercent: 200, MinimumHealthyPercent: 100 },
      AvailabilityZoneRebalancing: 'DISABLED',
      LoadBalancers: [],
    });
  });

  it('runs in a VPC of its own with public subnets and no NAT gateway, admitting nothing inbound', () => {
    expect(ofType(on, 'AWS::EC2::VPC')).toHaveLength(1);
    expect(ofType(on, 'AWS::EC2::NatGateway')).toHaveLength(0);
    const subnets = ofType(on, 'AWS::EC2::Subnet');
    expect(subnets).toHaveLength(2);
    for (const [, subnet] of subnets) expect(subnet.Properties.MapPublicIpOnLaunch).toBe(true);
    const network = on.resources[on.id(on.worker.service)]!.Properties.NetworkConfiguration.AwsvpcConfiguration;
    expect(network.AssignPublicIp).toBe('ENABLED');
    expect(network.Subnets).toEqual(subnets.map(([id]) => ({ Ref: id })));
    const [groupId, group] = ofType(on, 'AWS::EC2::SecurityGroup')[0]!;
    expect(network.SecurityGroups).toEqual([getAtt(groupId, 'GroupId')]);
    expect(group.Properties.SecurityGroupIngress).toBeUndefined();
    expect(group.Properties.SecurityGroupEgress).toEqual([{ CidrIp: '0.0.0.0/0', Description: 'Allow all outbound traffic by default', IpProtocol: '-1' }]);
    // The table through a gateway endpoint, rejected traffic in a flow log.
    expect(ofType(on, 'AWS::EC2::VPCEndpoint').map(([, endpoint]) => endpoint.Properties.VpcEndpointType)).toEqual(['Gateway']);
    expect(ofType(on, 'AWS::EC2::FlowLog').map(([, log]) => log.Properties.TrafficType)).toEqual(['REJECT']);
  });

  it('runs in the private subnets of the fixed-egress VPC when that is on, behind its addresses', () => {
    expect(ofType(egress, 'AWS::EC2::VPC')).toHaveLength(1);
    expect(egress.worker.vpc).toBeUndefined();
    const network = egress.resources[egress.id(egress.worker.service)]!.Properties.NetworkConfiguration.AwsvpcConfiguration;
    expect(network.AssignPublicIp).toBe('DISABLED');
    const privateSubnets = ofType(egress, 'AWS::EC2::Subnet')
      .filter(([, subnet]) => JSON.stringify(subnet.Properties.Tags).includes('Private'))
      .map(([id]) => ({ Ref: id }));
    expect(privateSubnets).toHaveLength(2);
    expect(network.Subnets).toEqual(privateSubnets);
    expect(network.SecurityGroups).toEqual([getAtt(egress.stack.getLogicalId(egress.stack.egress!.securityGroup.node.defaultChild as CfnResource), 'GroupId')]);
    const variables = Object.fromEntries(container(egress).Environment.map(({ Name, Value }: { Name: string; Value: unknown }) => [Name, Value]));
    expect(variables.EGRESS_IP_ADDRESSES).toMatchObject({ 'Fn::Join': [',', expect.any(Array)] });
  });

  it('builds for x86_64 when told, image and task alike', () => {
    const app = new App({ context: { voiceWorkerArchitecture: 'x86_64' } });
    const stack = new Stack(app, 'Bare');
    const settings = voiceWorkerSettings(stack, LIVEKIT)!;
    const worker = new VoiceWorker(stack, 'Worker', { stage: 'dev', resources: parleyResources(stack, { encrypted: true }), environment: {}, settings, logGroupName: '/parley/dev/voice-worker' });
    const template = Template.fromStack(stack).toJSON();
    expect(template.Resources[stack.getLogicalId(worker.taskDefinition.node.defaultChild as CfnResource)].Properties.RuntimePlatform).toEqual({ CpuArchitecture: 'X86_64', OperatingSystemFamily: 'LINUX' });
    const manifest = JSON.parse(readFileSync(join(app.synth().directory, 'Bare.assets.json'), 'utf8'));
    expect((Object.values(manifest.dockerImages)[0] as { source: { platform: string } }).source.platform).toBe('linux/amd64');
  });
});

describe('the voice worker\'s alarms', () => {
  const alarms = () => Object.fromEntries(ofType(on, 'AWS::CloudWatch::Alarm').filter(([id]) => id.includes('VoiceWorker')).map(([id, alarm]) => [id.replace(/^Monitoring/, '').replace(/[0-9A-F]{8}$/, ''), alarm.Properties]));
  const stageDimensions = [{ Name: 'service', Value: 'parley' }, { Name: 'stage', Value: 'Parley' }];

  it('alarm when no task runs and when no worker is registered with LiveKit, counting silence as down', () => {
    const found = alarms();
    expect(Object.keys(found).sort()).toEqual(['VoiceWorkerJobsFailingAlarm', 'VoiceWorkerLatencyAlarm', 'VoiceWorkerRegisteredAlarm', 'VoiceWorkerTasksAlarm']);
    expect(found.VoiceWorkerTasksAlarm).toMatchObject({
      Namespace: 'ECS/ContainerInsights',
      MetricName: 'RunningTaskCount',
      Dimensions: [{ Name: 'ClusterName', Value: { Ref: on.id(on.worker.cluster) } }, { Name: 'ServiceName', Value: getAtt(on.id(on.worker.service), 'Name') }],
      Statistic: 'Minimum',
      Period: 60,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      EvaluationPeriods: VOICE_WORKER_ALARM_THRESHOLDS.downMinutes,
      TreatMissingData: 'breaching',
    });
    expect(found.VoiceWorkerRegisteredAlarm).toMatchObject({
      Namespace: 'Parley',
      MetricName: 'WorkerRegistered',
      Dimensions: stageDimensions,
      Statistic: 'Maximum',
      Period: 60,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      EvaluationPeriods: 3,
      TreatMissingData: 'breaching',
    });
  });

  it('alarm when calls fail and when voice-to-voice p90 is over 1500 ms', () => {
    const found = alarms();
    expect(found.VoiceWorkerJobsFailingAlarm).toMatchObject({ Threshold: 10, ComparisonOperator: 'GreaterThanThreshold', EvaluationPeriods: 1, TreatMissingData: 'notBreaching' });
    const [expression, ...inputs] = found.VoiceWorkerJobsFailingAlarm.Metrics;
    expect(expression.Expression).toBe('IF(FILL(failed, 0) >= 3, 100 * FILL(failed, 0) / MAX([FILL(started, 0), FILL(failed, 0)]), 0)');
    expect(inputs.map((input: any) => [input.Id, input.MetricStat.Metric.MetricName, input.MetricStat.Metric.Namespace, input.MetricStat.Metric.Dimensions, input.MetricStat.Stat, input.MetricStat.Period])).toEqual([
      ['started', 'JobStarted', 'Parley', stageDimensions, 'Sum', 300],
      ['failed', 'JobFailed', 'Parley', stageDimensions, 'Sum', 300],
    ]);
    expect(found.VoiceWorkerLatencyAlarm).toMatchObject({
      Namespace: 'Parley',
      MetricName: 'VoiceToVoiceMs',
      Dimensions: stageDimensions,
      ExtendedStatistic: 'p90',
      Period: 300,
      Threshold: 1500,
      ComparisonOperator: 'GreaterThanThreshold',
      EvaluationPeriods: 3,
      DatapointsToAlarm: 2,
      TreatMissingData: 'notBreaching',
    });
    // Each notifies the stack's alarm topic.
    for (const alarm of Object.values(found)) expect(alarm.AlarmActions).toEqual([{ Ref: on.id(on.stack.monitoring.topic) }]);
  });

  it('sit on the operations dashboard with the worker\'s metrics', () => {
    const body = JSON.stringify(ofType(on, 'AWS::CloudWatch::Dashboard')[0]![1].Properties.DashboardBody);
    for (const id of ofType(on, 'AWS::CloudWatch::Alarm').filter(([each]) => each.includes('VoiceWorker')).map(([each]) => each)) expect(body, id).toContain(id);
    for (const title of ['Voice worker tasks', 'Voice worker CPU (%)', 'Voice worker calls', 'Voice-to-voice (ms)']) expect(body, title).toContain(`\\"title\\":\\"${title}\\"`);
  });
});

describe('the voice worker under cdk-nag', () => {
  it('reports no unsuppressed finding, error or warning, of either pack', () => {
    // The assembly the first synth made (Annotations.fromStack would synthesize the whole app again).
    const messages = on.app.synth().getStackArtifact(on.stack.artifactId).messages;
    const nag = messages.filter((message) => /^(AwsSolutions|Serverless)-/.test(String(message.entry.data)));
    expect(nag.filter((message) => message.level === 'error' || message.level === 'warning').map((message) => `${message.id}: ${String(message.entry.data)}`)).toEqual([]);
    // The checks really ran: the worker's resources were judged (and found compliant or suppressed).
    const outdir = on.app.synth().directory;
    const [file] = readdirSync(outdir).filter((name) => /^AwsSolutions-+Parley-NagReport\.csv$/.test(name));
    const report = readFileSync(join(outdir, file!), 'utf8');
    expect(report).toContain('"AwsSolutions-ECS4","Parley/VoiceWorker/Cluster/Resource","Compliant"');
    expect(report).toContain('"AwsSolutions-IAM5","Parley/VoiceWorker/TaskRole/DefaultPolicy/Resource","Suppressed"');
  });
});

describe('the image and the deployment agree', () => {
  const dockerfile = readFileSync(new URL('worker/Dockerfile', ROOT), 'utf8');

  it('runs the task\'s health check as the image\'s HEALTHCHECK, on LiveKit\'s worker port', () => {
    expect(dockerfile).toContain(`CMD ["node", "-e", ${JSON.stringify(HEALTH_CHECK_SCRIPT)}]`);
    expect(HEALTH_CHECK_SCRIPT).toContain(`http://127.0.0.1:${WORKER_HTTP_PORT}/`);
    // LiveKit Agents' production default port, which worker/src/main.ts keeps.
    const agents = readFileSync(new URL('worker/node_modules/@livekit/agents/dist/worker.js', ROOT), 'utf8');
    expect(agents).toMatch(new RegExp(`static port\\(production\\) \\{\\s*if \\(production\\) \\{\\s*return ${WORKER_HTTP_PORT};`));
  });

  it('starts the bundled main entry in production mode, as a user that is not root, on the Node.js the bundle targets', () => {
    expect(dockerfile).toContain(`ARG NODE_IMAGE=node:${WORKER_NODE_MAJOR}-bookworm-slim`);
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^CMD \["node", "--enable-source-maps", "dist\/main\.mjs", "start"\]$/m);
    expect(Object.keys(WORKER_ENTRIES).sort()).toEqual(['agent', 'main']);
    expect(dockerfile).toContain('RUN npx tsx scripts/bundle-worker.ts');
    expect(dockerfile).toContain('ONNXRUNTIME_NODE_INSTALL=skip');
  });

  it('puts the worker in npm run synth (CI\'s offline synth), with an example LiveKit server', () => {
    const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { scripts: Record<string, string> };
    expect(pkg.scripts.synth).toMatch(/ -c livekitUrl=wss:\/\/livekit\.example\.invalid$/);
    expect(PROJECT_CONTEXT.livekitUrl).toBeUndefined();
  });

  it('checks LiveKit\'s settings at synth: a URL the worker can use, an agent name only with it', () => {
    const scope = (context: Record<string, unknown>) => new Stack(new App({ context }));
    expect(functionSettings(scope({ livekitUrl: LIVEKIT, livekitAgentName: ' parley-prod ' }), SETTINGS)).toMatchObject({ livekitUrl: LIVEKIT, livekitAgentName: 'parley-prod' });
    expect(() => functionSettings(scope({ livekitUrl: 'parley.livekit.cloud' }), SETTINGS)).toThrow('Parley deploy settings livekitUrl and livekitAgentName: Invalid Parley settings: LIVEKIT_URL: Must be a ws://, wss://, http:// or https:// URL');
    expect(() => functionSettings(scope({ livekitAgentName: 'parley-prod' }), SETTINGS)).toThrow('livekitAgentName goes with livekitUrl');
    expect(functionSettings(scope({}), SETTINGS).livekitUrl).toBeUndefined();
  });
});
