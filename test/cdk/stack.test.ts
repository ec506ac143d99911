import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Aspects, Stack, type CfnResource } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { parleyResources } from '../support/cdk.ts';
import { invokedRouteGroups } from '../../shared/conductor/tools/catalog.ts';
import {
  KEY_CONTEXT_CONDITIONS,
  PARLEY_RUNTIME,
  ParleyFunction,
  parleyStage,
  type KeyUse,
  type ParleyAccess,
} from '../../lib/parley-function.ts';
import { ParleyStack, type ParleyStackProps } from '../../lib/parley-stack.ts';
import { DEFAULT_RESERVED_CONCURRENCY, FUNCTIONS, functionNamed, type FunctionName, type JobQueueSpec } from '../../lib/functions.ts';
import { DEFAULT_API_THROTTLE, DEFAULT_ROUTE_THROTTLES } from '../../lib/parley-api.ts';
import { DEFAULT_ACCOUNT_CONCURRENCY, UNRESERVED_CONCURRENCY_MINIMUM } from '../../lib/parley-functions.ts';
import type { JobName } from '../../shared/jobs.ts';

type BackgroundName = JobName;
/** The manifest's queue settings of a queue job (lib/functions.ts). */
const queueOf = (name: JobName): JobQueueSpec => {
  const { trigger } = functionNamed(name);
  if (trigger.kind !== 'queue') throw new Error(`${name} is not a queue job`);
  return trigger.queue;
};
const WEBHOOK_MAX_CONCURRENCY = queueOf('webhook-delivery').maxConcurrency;
const CALL_STEPS_MAX_CONCURRENCY = queueOf('call-steps').maxConcurrency;
import { DOMAINS, THROTTLE_CLASSES, type Domain, type RouteDefinition } from '../../shared/platform/http/route.ts';
import { servedRoutes, type ServedRoute } from '../../shared/route-table.ts';
import { loadConfig, PRODUCTION_REQUIRED_SETTINGS } from '../../shared/platform/config.ts';
import { JOBS } from '../../shared/jobs.ts';
import { BATCH_DUE_SHARDS } from '../../shared/batches/shards.ts';
import { tableDefinition } from '../../shared/platform/store/keys.ts';
import { PRODUCTION_TEST_SETTINGS } from '../support/production-settings.ts';

// Several tests synthesize the whole stack more than once (each ~15 s alone, far longer on a
// loaded 2-core CI machine): the default 30 s was timing out there.
vi.setConfig({ testTimeout: 300_000 });

/*
 * A synthesis holds this fork's event loop for seconds (tens on a loaded machine), and vitest's
 * worker gives up on a report to the main process it cannot hear answered within 60 s. So a
 * test yields before each synthesis after its first, and before it starts, letting the
 * answers in: no block of synchronous work spans more than one synthesis.
 */
const breathe = () => new Promise<void>((resolve) => setTimeout(resolve, 100));
beforeEach(breathe);

const RESOURCE_LIMIT = 500;
const FUNCTION_ENTRY = fileURLToPath(new URL('../../functions/meta.ts', import.meta.url));

/** Deploy settings as an operator would pass them (public-looking, not local or example values). */
const SETTINGS = { sipHost: 'sip.parley.ai', sipIpRanges: ['34.1.2.0/24', '2600:1f18::/36'] };

/** cdk.json's context, which `cdk synth` and `cdk deploy` read. */
const PROJECT_CONTEXT = (JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as { context: Record<string, unknown> }).context;

function synth(
  routes?: readonly ServedRoute[],
  nag = true,
  props: Omit<ParleyStackProps, 'routes'> = {},
  context: Record<string, unknown> = {},
) {
  // Skipping bundling keeps the tests fast; `npm run synth` bundles for real. The project's
  // own cdk.json context applies, as it does to `cdk synth` (the raised routes quota).
  const app = new App({ context: { ...PROJECT_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
  const stack = new ParleyStack(app, 'Parley', { routes, settings: SETTINGS, ...props });
  if (nag) Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  const template = Template.fromStack(stack);
  const nested = stack.routeStacks.map((routeStack) => ({
    routeStack,
    template: Template.fromStack(routeStack),
    // The parameters the parent passes in, so a nested Ref can be followed to the parent.
    parameters: template.toJSON().Resources[stack.getLogicalId(routeStack.nestedStackResource as CfnResource)]
      .Properties.Parameters as Record<string, { Ref: string }>,
  }));
  const live = Template.fromStack(stack.liveMonitor);
  return { app, stack, template, nested, live };
}

type Synth = ReturnType<typeof synth>;

const logicalId = (synthed: Synth, resource: { node: { defaultChild?: unknown } }) =>
  synthed.stack.getLogicalId(resource.node.defaultChild as CfnResource);

/** A function's `live` alias, which every trigger invokes (the alias's Ref is its ARN). */
const aliasId = (synthed: Synth, fn: ParleyFunction) => logicalId(synthed, fn.live);
/** How CDK names an alias in an event source mapping: `<function name>:live` from the alias ARN. */
const aliasFunctionName = (synthed: Synth, fn: ParleyFunction) => ({
  'Fn::Join': ['', [{ 'Fn::Select': [6, { 'Fn::Split': [':', { Ref: aliasId(synthed, fn) }] }] }, ':live']],
});

interface Statement {
  Action: string | string[];
  Resource: unknown;
  Condition?: Record<string, Record<string, unknown>>;
}

/** The statements of the role policy CDK attached to a function. */
function statementsOf(stack: Stack, template: Template, fn: ParleyFunction): Statement[] {
  const policy = fn.role!.node.tryFindChild('DefaultPolicy')!.node.defaultChild as CfnResource;
  return template.toJSON().Resources[stack.getLogicalId(policy)].Properties.PolicyDocument.Statement;
}

const actionsOf = (statements: Statement[], where: (statement: Statement) => boolean = () => true) =>
  new Set(statements.filter(where).flatMap((statement) => [statement.Action].flat()));

const KEY_USE_ACTION: Record<KeyUse, string> = {
  generateDataKey: 'kms:GenerateDataKey',
  decrypt: 'kms:Decrypt',
  encrypt: 'kms:Encrypt',
};

const mentions = (statement: Statement, logicalIds: readonly string[]) =>
  logicalIds.some((id) => JSON.stringify(statement.Resource).includes(`"${id}"`));

/** The logical IDs of the queues a ParleyAccess names, by its option. */
type QueueIds = Record<'webhookQueue' | 'callStepsQueue' | 'contactJobsQueue' | 'exportJobsQueue' | 'integrationJobsQueue' | 'kbJobsQueue', string>;

const queueIdsOf = (synthed: Synth): QueueIds => ({
  webhookQueue: logicalId(synthed, synthed.stack.webhookQueue),
  callStepsQueue: logicalId(synthed, synthed.stack.callStepsQueue),
  contactJobsQueue: logicalId(synthed, synthed.stack.contactJobsQueue),
  exportJobsQueue: logicalId(synthed, synthed.stack.exportJobsQueue),
  integrationJobsQueue: logicalId(synthed, synthed.stack.integrationJobsQueue),
  kbJobsQueue: logicalId(synthed, synthed.stack.kbJobsQueue),
});

/**
 * Checks a function's role against its declared access, in both directions. SQS actions
 * are those of the queues `access` names, each checked on its own queue, except on
 * `otherQueues` (an on-failure destination).
 */
function expectGrantsMatch(
  statements: Statement[],
  access: ParleyAccess,
  label: string,
  queues: QueueIds,
  otherQueues: readonly string[] = [],
) {
  const sqsStatements = statements.filter((s) => [s.Action].flat().some((a) => a.startsWith('sqs:')));
  for (const statement of sqsStatements.filter((s) => mentions(s, otherQueues))) {
    expect([statement.Action].flat().sort(), label).toEqual(['sqs:GetQueueAttributes', 'sqs:GetQueueUrl', 'sqs:SendMessage']);
  }
  // (With @aws-cdk/aws-iam:minimizePolicies a send to the destination may share a statement with
  // a send to one of `queues`; the per-queue checks below read each queue's own actions.)
  for (const statement of sqsStatements.filter((s) => !mentions(s, otherQueues))) {
    expect(mentions(statement, Object.values(queues)), `${label}: ${JSON.stringify(statement.Resource)}`).toBe(true);
  }
  for (const [option, queueId] of Object.entries(queues) as [keyof QueueIds, string][]) {
    const onQueue = actionsOf(statements, (s) => mentions(s, [queueId]));
    expect(onQueue.has('sqs:SendMessage'), `${label} ${option}`).toBe(access[option]?.includes('send') ?? false);
    expect(onQueue.has('sqs:ReceiveMessage'), `${label} ${option}`).toBe(access[option]?.includes('consume') ?? false);
  }
  const all = actionsOf(statements);
  // Direct use of the key is conditioned on the envelope's encryption context; any other use goes through a service.
  const direct = (statement: Statement) => statement.Condition?.StringEquals?.['kms:ViaService'] === undefined;
  for (const statement of statements.filter((s) => direct(s) && [s.Action].flat().some((a) => a.startsWith('kms:')))) {
    expect(statement.Condition, label).toEqual(KEY_CONTEXT_CONDITIONS);
  }
  expect([...all].filter((action) => action.includes('*')), label).toEqual([]);
  expect(all.has('dynamodb:GetItem'), label).toBe(access.table !== undefined);
  expect(all.has('dynamodb:PutItem'), label).toBe(access.table === 'readWrite');
  // Nothing scans the table: every read knows its partition (the workspace purge too: shared/members/purge-sources.ts).
  expect(all.has('dynamodb:Scan'), label).toBe(false);
  expect(actionsOf(statements, (s) => direct(s) && [s.Action].flat().some((a) => a.startsWith('kms:'))), label).toEqual(
    new Set((access.key ?? []).map((use) => KEY_USE_ACTION[use])),
  );
  // Any other use of the key goes through a service on the function's behalf.
  for (const statement of statements.filter((s) => !direct(s) && [s.Action].flat().some((a) => a.startsWith('kms:')))) {
    expect(statement.Condition!.StringEquals!['kms:ViaService'], label).toBeDefined();
  }
  expect(all.has('secretsmanager:GetSecretValue'), label).toBe(access.vendorSecret === 'read');
  const s3On = (prefix: string) => actionsOf(statements, (s) => JSON.stringify(s.Resource).includes(`/${prefix}/*`));
  expect(s3On('recordings').has('s3:PutObject'), label).toBe(access.recordings === 'readWrite');
  expect(s3On('knowledge-bases').has('s3:PutObject'), label).toBe(access.knowledgeBases === 'readWrite');
  expect(s3On('uploads').has('s3:PutObject'), label).toBe(access.uploads === 'readWrite');
  expect(all.has('s3:PutObject'), label).toBe(access.recordings === 'readWrite' || access.knowledgeBases === 'readWrite' || access.uploads === 'readWrite');
  expect(all.has('logs:PutLogEvents'), label).toBe(true);
}

const resourceCount = (template: Template) => Object.keys(template.toJSON().Resources ?? {}).length;

/** Every route as (key → integration logical ID in the parent), `$default` included. */
function routeTargets(synthed: Synth): Map<string, string[]> {
  const targets = new Map<string, string[]>();
  const add = (key: string, integration: string) => targets.set(key, [...(targets.get(key) ?? []), integration]);
  const integrationOf = (target: unknown, parameters: Record<string, { Ref: string }> | undefined) => {
    const [, parts] = (target as { 'Fn::Join': [string, [string, { Ref: string }]] })['Fn::Join'];
    expect(parts[0]).toBe('integrations/');
    const ref = parts[1].Ref;
    return parameters ? parameters[ref]!.Ref : ref;
  };
  for (const route of Object.values(synthed.template.findResources('AWS::ApiGatewayV2::Route'))) {
    add(route.Properties.RouteKey, integrationOf(route.Properties.Target, undefined));
  }
  for (const { template, parameters } of synthed.nested) {
    for (const route of Object.values(template.findResources('AWS::ApiGatewayV2::Route'))) {
      add(route.Properties.RouteKey, integrationOf(route.Properties.Target, parameters));
    }
  }
  return targets;
}

function syntheticRoutes(count: number): ServedRoute[] {
  return Array.from({ length: count }, (_, i) => {
    const domain = DOMAINS[i % DOMAINS.length] as Domain;
    const method = (['GET', 'POST', 'PATCH', 'DELETE'] as const)[i % 4]!;
    const path = `/synthetic-${Math.floor(i / 4)}/{id}`;
    return { id: `synthetic${i}`, key: `${method} ${path}`, method, path, domain, route: {} as RouteDefinition };
  });
}

// Every job live, so the scheduling of each kind of job is checked; the default list
// schedules only jobs whose feature exists (tested in 'scheduled jobs').
const parley = synth(undefined, true, { jobs: JOBS.map((job) => ({ ...job, live: true })) });

describe('ParleyStack', () => {
  it('serves every route key exactly once, plus $default and the CORS preflights', () => {
    const targets = routeTargets(parley);
    const expected = [...servedRoutes().map((route) => route.key), '$default', 'OPTIONS /{proxy+}'];
    expect([...targets.keys()].sort()).toEqual(expected.sort());
    for (const [key, integrations] of targets) expect(integrations, key).toHaveLength(1);
  });

  it("targets each route at its domain's integration, and $default at meta", () => {
    const integrationFor = (domain: Domain) => logicalId(parley, parley.stack.integrations[domain]);
    const targets = routeTargets(parley);
    for (const route of servedRoutes()) expect(targets.get(route.key), route.key).toEqual([integrationFor(route.domain)]);
    expect(targets.get('$default')).toEqual([integrationFor('meta')]);
    // CORS preflights go to the public function (docs/browser.md).
    expect(targets.get('OPTIONS /{proxy+}')).toEqual([integrationFor('public')]);

    const integrations = parley.template.findResources('AWS::ApiGatewayV2::Integration');
    for (const domain of DOMAINS) {
      expect(integrations[integrationFor(domain)]!.Properties).toMatchObject({
        IntegrationType: 'AWS_PROXY',
        PayloadFormatVersion: '2.0',
        IntegrationUri: { Ref: aliasId(parley, parley.stack.domainFunctions[domain]) },
      });
    }
  });

  it('grants API Gateway one invoke permission per domain function, for the whole API', () => {
    const permissions = Object.values(parley.template.findResources('AWS::Lambda::Permission')).filter(
      (permission) => permission.Properties.Principal === 'apigateway.amazonaws.com',
    );
    expect(permissions).toHaveLength(DOMAINS.length);
    for (const domain of DOMAINS) {
      const fn = aliasId(parley, parley.stack.domainFunctions[domain]);
      const mine = permissions.filter((p) => JSON.stringify(p.Properties.FunctionName).includes(fn));
      expect(mine, domain).toHaveLength(1);
      expect(JSON.stringify(mine[0]!.Properties.SourceArn)).toMatch(/\/\*\/\*"\]\]\}$/);
    }
  });

  it('has one arm64 function per domain plus the background functions and the WebSocket monitor\'s, on the newest Node.js', () => {
    const resources = parley.template.findResources('AWS::Lambda::Function');
    const functions = Object.values(resources);
    expect(functions).toHaveLength(DOMAINS.length + JOBS.length + 1);
    const liveWs = logicalId(parley, parley.stack.liveMonitorFunction);
    for (const [id, fn] of Object.entries(resources)) {
      // The WebSocket API's own function finds its endpoint in each event (it cannot name the API that names it).
      const liveSettings = id === liveWs ? [] : ['LIVE_WS_MANAGEMENT_URL', 'LIVE_WS_URL'];
      // The functions that run requests through other functions (the assistant's tools) name them.
      const invoked = id === logicalId(parley, parley.stack.domainFunctions.conductor) ? ['ROUTE_FUNCTION_NAMES'] : [];
      expect(fn.Properties.Runtime).toBe(PARLEY_RUNTIME.name);
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      // Sized per function (lib/functions.ts; test/cdk/manifest.test.ts checks each).
      expect(fn.Properties.MemorySize).toBeGreaterThanOrEqual(256);
      expect(Object.keys(fn.Properties.Environment.Variables).sort()).toEqual(
        [
          'KMS_KEY_ID',
          'NODE_OPTIONS',
          'PARLEY_ENV',
          'PARLEY_STAGE',
          'POWERTOOLS_SERVICE_NAME',
          'PUBLIC_BASE_URL',
          'SIP_HOST',
          'SIP_IP_RANGES',
          'TABLE_NAME',
          'VENDOR_SECRET_ID',
          'RECORDINGS_BUCKET',
          'WEBHOOK_QUEUE_URL',
          'CALL_STEPS_QUEUE_URL',
          'CONTACT_JOBS_QUEUE_URL',
          'EXPORT_JOBS_QUEUE_URL',
          'INTEGRATION_JOBS_QUEUE_URL',
          'KB_JOBS_QUEUE_URL',
          'KNOWLEDGE_BASE_BUCKET',
          ...liveSettings,
          ...invoked,
        ].sort(),
      );
      expect(fn.Properties.LoggingConfig.LogGroup).toBeDefined();
      // Every setting production refuses to start without (Lambda itself sets AWS_REGION).
      const environment = Object.keys(fn.Properties.Environment.Variables);
      expect(PRODUCTION_REQUIRED_SETTINGS.filter((name) => name !== 'AWS_REGION' && !environment.includes(name)), id).toEqual([]);
    }
    expect(PARLEY_RUNTIME.name).toMatch(/^nodejs(2[2-9]|[3-9]\d)\.x$/);
  });

  it("lets the conductor invoke exactly its tools' functions, by their live aliases, and names them", () => {
    const variables = functionResource(parley, parley.stack.domainFunctions.conductor).Properties.Environment.Variables;
    const names = JSON.stringify(variables.ROUTE_FUNCTION_NAMES);
    const invokeStatements = Object.values(parley.template.findResources('AWS::IAM::Policy')).flatMap((policy) =>
      (policy.Properties.PolicyDocument.Statement as { Action: string | string[]; Resource: unknown }[]).filter((statement) => [statement.Action].flat().includes('lambda:InvokeFunction')),
    );
    expect(invokeStatements).toHaveLength(1);
    const resources = JSON.stringify(invokeStatements[0]!.Resource);
    for (const domain of DOMAINS) {
      const invoked = invokedRouteGroups().includes(domain);
      expect(resources.includes(`"${aliasId(parley, parley.stack.domainFunctions[domain])}"`), domain).toBe(invoked);
      expect(names.includes(`"${logicalId(parley, parley.stack.domainFunctions[domain])}"`), domain).toBe(invoked);
    }
  });

  it('grants each function exactly the access its spec declares', () => {
    for (const domain of DOMAINS) {
      const fn = parley.stack.domainFunctions[domain];
      expectGrantsMatch(statementsOf(parley.stack, parley.template, fn), functionNamed(domain).access, domain, queueIdsOf(parley));
    }
    for (const { name, access } of FUNCTIONS.filter((spec) => spec.trigger.kind === 'queue' || spec.trigger.kind === 'schedule') as { name: BackgroundName; access: ParleyAccess }[]) {
      const fn = parley.stack.backgroundFunctions[name];
      const statements = statementsOf(parley.stack, parley.template, fn);
      // Billing's on-failure destination: it may send there, and only there besides its access.
      const failures = name === 'billing-hourly' ? [logicalId(parley, parley.stack.billingFailures)] : [];
      expect(statements.some((statement) => mentions(statement, failures)), name).toBe(failures.length > 0);
      expectGrantsMatch(statements, access, name, queueIdsOf(parley), failures);
    }
    parley.template.resourceCountIs('AWS::IAM::ManagedPolicy', 0);
    for (const role of Object.values(parley.template.findResources('AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('grants the options no Parley function uses today the same way', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Grants');
    const resources = parleyResources(stack, { encrypted: true });
    const access: ParleyAccess = {
      table: 'read',
      key: ['encrypt'],
      webhookQueue: ['send'],
      // What the calls domain will need: schedule a call's steps, never consume them.
      callStepsQueue: ['send'],
      contactJobsQueue: ['send'],
      exportJobsQueue: ['send'],
      integrationJobsQueue: ['send'],
      kbJobsQueue: ['send'],
      vendorSecret: 'read',
      recordings: 'readWrite',
      knowledgeBases: 'readWrite',
    };
    const fn = new ParleyFunction(stack, 'Fn', { entry: FUNCTION_ENTRY, resources, access });
    const queues = {
      webhookQueue: stack.getLogicalId(resources.webhookQueue.node.defaultChild as CfnResource),
      callStepsQueue: stack.getLogicalId(resources.callStepsQueue.node.defaultChild as CfnResource),
      contactJobsQueue: stack.getLogicalId(resources.contactJobsQueue.node.defaultChild as CfnResource),
      exportJobsQueue: stack.getLogicalId(resources.exportJobsQueue.node.defaultChild as CfnResource),
      integrationJobsQueue: stack.getLogicalId(resources.integrationJobsQueue.node.defaultChild as CfnResource),
      kbJobsQueue: stack.getLogicalId(resources.kbJobsQueue.node.defaultChild as CfnResource),
    };
    expectGrantsMatch(statementsOf(stack, Template.fromStack(stack), fn), access, 'all options', queues);
  });

  it('builds the table from tableDefinition', () => {
    parley.template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      Properties: Match.objectLike({
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: [
          { AttributeName: tableDefinition.partitionKey, KeyType: 'HASH' },
          { AttributeName: tableDefinition.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: tableDefinition.globalSecondaryIndexes.map((index) =>
          Match.objectLike({
            IndexName: index.indexName,
            KeySchema: [
              { AttributeName: index.partitionKey, KeyType: 'HASH' },
              { AttributeName: index.sortKey, KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...index.projection.nonKeyAttributes] },
          }),
        ),
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: tableDefinition.timeToLiveAttribute, Enabled: true },
        SSESpecification: Match.objectLike({ SSEEnabled: true, SSEType: 'KMS' }),
      }),
    });
    parley.template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    // Scoped by stage (dev by default), so stages share an account.
    parley.template.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/parley-dev' });
  });

  it('gives the webhook queue a dead-letter queue and a visibility timeout of six worker timeouts', () => {
    const queueId = logicalId(parley, parley.stack.webhookQueue);
    const queue = parley.template.findResources('AWS::SQS::Queue')[queueId]!;
    expect(queue.Properties.RedrivePolicy).toEqual({
      deadLetterTargetArn: { 'Fn::GetAtt': [logicalId(parley, parley.stack.webhookDeadLetters), 'Arn'] },
      maxReceiveCount: 5,
    });
    const worker = parley.stack.backgroundFunctions['webhook-delivery'];
    const workerTimeout = parley.template.findResources('AWS::Lambda::Function')[logicalId(parley, worker)]!.Properties
      .Timeout as number;
    expect(queue.Properties.VisibilityTimeout).toBeGreaterThanOrEqual(6 * workerTimeout);
    // One attempt may wait the largest webhook_timeout_ms (60 s) before the worker records it.
    expect(workerTimeout).toBeGreaterThan(60);
    parley.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [queueId, 'Arn'] },
      FunctionName: aliasFunctionName(parley, worker),
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('gives the call-steps queue a dead-letter queue with an alarm, SQS-managed encryption, and a consumer reporting item failures', () => {
    const queueId = logicalId(parley, parley.stack.callStepsQueue);
    const deadLettersId = logicalId(parley, parley.stack.callStepsDeadLetters);
    const queues = parley.template.findResources('AWS::SQS::Queue');
    const worker = parley.stack.backgroundFunctions['call-steps'];
    const workerTimeout = functionResource(parley, worker).Properties.Timeout as number;
    expect(workerTimeout).toBe(120);
    expect(queues[queueId]!.Properties).toEqual({
      SqsManagedSseEnabled: true,
      VisibilityTimeout: 6 * workerTimeout,
      RedrivePolicy: { deadLetterTargetArn: { 'Fn::GetAtt': [deadLettersId, 'Arn'] }, maxReceiveCount: 5 },
    });
    expect(queues[deadLettersId]!.Properties).toEqual({ SqsManagedSseEnabled: true, MessageRetentionPeriod: 14 * 24 * 3600 });
    // Both refuse requests without TLS, as the webhook queue does.
    for (const id of [queueId, deadLettersId]) {
      parley.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: id }],
        PolicyDocument: Match.objectLike({
          Statement: Match.arrayWith([Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } })]),
        }),
      });
    }
    parley.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      EventSourceArn: { 'Fn::GetAtt': [queueId, 'Arn'] },
      FunctionName: aliasFunctionName(parley, worker),
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
      ScalingConfig: { MaximumConcurrency: CALL_STEPS_MAX_CONCURRENCY },
    });
    expect(functionResource(parley, worker).Properties.ReservedConcurrentExecutions).toBeGreaterThanOrEqual(CALL_STEPS_MAX_CONCURRENCY);
    expect(() => synth(undefined, false, {}, { reservedConcurrency: { 'call-steps': CALL_STEPS_MAX_CONCURRENCY - 1 } })).toThrow(
      `The call-steps function's reserved concurrency (${CALL_STEPS_MAX_CONCURRENCY - 1}) is below its event source's maximum concurrency (${CALL_STEPS_MAX_CONCURRENCY})`,
    );
    parley.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Threshold: 1,
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [deadLettersId, 'QueueName'] } }],
    });
    // The queue's URL is set on every function, so the calls domain only needs the grant.
    for (const [name, fn] of allFunctions(parley)) {
      expect(functionResource(parley, fn).Properties.Environment.Variables.CALL_STEPS_QUEUE_URL, name).toEqual({ Ref: queueId });
    }
  });

  it('schedules the four periodic functions', () => {
    const schedules: [BackgroundName, string][] = [
      ['oauth-refresh', 'rate(1 minute)'],
      ['billing-hourly', 'rate(1 hour)'],
      ['alert-tick', 'rate(1 minute)'],
    ];
    // The four periodic functions (batch-tick's 8 shards in two rules of EventBridge's at most
    // five targets), plus the scheduled queue messages (the daily retention sweep and the hourly
    // listing and rollup backfills to export-jobs, the daily refresh sweep to kb-jobs, the
    // concurrency sweep to call-steps; tested below).
    expect(Object.keys(parley.template.findResources('AWS::Events::Rule'))).toHaveLength(10);
    for (const [name, rate] of schedules) {
      parley.template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: rate,
        State: 'ENABLED',
        Targets: [
          Match.objectLike({
            Arn: { Ref: aliasId(parley, parley.stack.backgroundFunctions[name]) },
          }),
        ],
      });
    }
    const batchTick = parley.template.findResources('AWS::Lambda::Function')[
      logicalId(parley, parley.stack.backgroundFunctions['batch-tick'])
    ]!;
    expect(batchTick.Properties.Timeout).toBe(70);
  });

  it('invokes batch-tick once a minute for each shard of the due-batch index, the shard as its event', () => {
    const alias = { Ref: aliasId(parley, parley.stack.backgroundFunctions['batch-tick']) };
    const rules = Object.values(parley.template.findResources('AWS::Events::Rule')).filter((rule) =>
      (rule.Properties.Targets as { Arn: unknown }[]).some((target) => JSON.stringify(target.Arn) === JSON.stringify(alias)),
    );
    expect(rules.map((rule) => rule.Properties.Targets.length)).toEqual([5, BATCH_DUE_SHARDS - 5]);
    const targets = rules.flatMap((rule) => {
      expect(rule.Properties.ScheduleExpression).toBe('rate(1 minute)');
      return rule.Properties.Targets as { Arn: unknown; Input: string }[];
    });
    for (const target of targets) expect(target.Arn).toEqual(alias);
    expect(targets.map((target) => JSON.parse(target.Input))).toEqual(Array.from({ length: BATCH_DUE_SHARDS }, (_, shard) => ({ shard })));
    // Each shard's invocation runs about 70 s a minute, so two of each may overlap.
    expect(functionResource(parley, parley.stack.backgroundFunctions['batch-tick']).Properties.ReservedConcurrentExecutions).toBe(2 * BATCH_DUE_SHARDS);
  });

  it('sends the daily retention sweep to the export-jobs queue at 03:00 UTC, with its time and the schedules\' dead letters', () => {
    const queueArn = { 'Fn::GetAtt': [logicalId(parley, parley.stack.exportJobsQueue), 'Arn'] };
    parley.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(0 3 * * ? *)',
      State: 'ENABLED',
      Targets: [
        Match.objectLike({
          Arn: queueArn,
          InputTransformer: { InputPathsMap: { time: '$.time' }, InputTemplate: '{"kind":"retention-sweep","scheduled_at":<time>}' },
          DeadLetterConfig: { Arn: { 'Fn::GetAtt': [logicalId(parley, parley.stack.scheduleDeadLetters), 'Arn'] } },
          RetryPolicy: { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 },
        }),
      ],
    });
    // EventBridge may send to the queue, for this rule only.
    parley.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      PolicyDocument: Match.objectLike({
        Statement: Match.arrayWith([
          Match.objectLike({ Action: Match.arrayWith(['sqs:SendMessage']), Principal: { Service: 'events.amazonaws.com' }, Resource: queueArn }),
        ]),
      }),
    });
  });

  it('logs API access as JSON on an auto-deployed $default stage', () => {
    const stages = Object.values(parley.template.findResources('AWS::ApiGatewayV2::Stage'));
    expect(stages).toHaveLength(1);
    expect(stages[0]!.Properties).toMatchObject({ StageName: '$default', AutoDeploy: true });
    const format = JSON.parse(stages[0]!.Properties.AccessLogSettings.Format);
    expect(format).toMatchObject({
      requestId: '$context.requestId',
      ip: '$context.identity.sourceIp',
      routeKey: '$context.routeKey',
      status: '$context.status',
      // What the integration itself said, beside API Gateway's status.
      integrationError: '$context.integrationErrorMessage',
      integrationStatus: '$context.integration.status',
      integrationServiceError: '$context.integration.error',
      integrationServiceLatencyMs: '$context.integration.latency',
    });
    // No API Gateway CORS: it would overwrite the functions' per-origin CORS headers (docs/browser.md).
    const apis = Object.values(parley.template.findResources('AWS::ApiGatewayV2::Api')).filter((api) => api.Properties.ProtocolType === 'HTTP');
    expect(apis).toHaveLength(1);
    expect(apis[0]!.Properties.CorsConfiguration).toBeUndefined();
    parley.template.hasOutput('ApiUrl', {});
  });

  it('traces every function with X-Ray: active tracing, the X-Ray grant and nothing else on "*", and a stage for the metrics', () => {
    const resources = parley.template.findResources('AWS::Lambda::Function');
    const all = [...Object.values(parley.stack.domainFunctions), ...Object.values(parley.stack.backgroundFunctions), parley.stack.liveMonitorFunction];
    expect(all).toHaveLength(Object.keys(resources).length);
    for (const [id, fn] of Object.entries(resources)) {
      expect(fn.Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
      expect(fn.Properties.Environment.Variables.PARLEY_STAGE, id).toBe('Parley');
    }
    for (const fn of all) {
      const statements = statementsOf(parley.stack, parley.template, fn);
      const anywhere = statements.filter((statement) => statement.Resource === '*');
      expect(anywhere.map((statement) => [statement.Action].flat().sort()), fn.node.id).toEqual([['xray:PutTelemetryRecords', 'xray:PutTraceSegments']]);
    }
    // The context value `stage` names the stage instead of the stack.
    expect(parleyStage(new Stack(new App({ context: { stage: 'prod' } }), 'Parley-prod'))).toBe('prod');
    expect(parleyStage(new Stack(new App(), 'Parley-staging'))).toBe('Parley-staging');
  });

  it('keeps every stack under the CloudFormation resource limit', () => {
    expect(resourceCount(parley.template)).toBeLessThan(RESOURCE_LIMIT);
    for (const { template } of parley.nested) expect(resourceCount(template)).toBeLessThan(RESOURCE_LIMIT);
  });

  it('reports no unsuppressed cdk-nag errors, and really ran the checks', () => {
    // The parent's annotations include its nested stacks' constructs.
    const errors = Annotations.fromStack(parley.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'));
    expect(errors.map((error) => `${error.id}: ${String(error.entry.data)}`)).toEqual([]);

    const outdir = parley.app.synth().directory;
    const reports = readdirSync(outdir).filter((file) => /^AwsSolutions-.*-NagReport\.csv$/.test(file));
    // The parent, the route stacks and the WebSocket monitor's stack.
    expect(reports).toHaveLength(2 + parley.nested.length);
    const rows = reports.flatMap((file) => readFileSync(join(outdir, file), 'utf8').split('\n').slice(1));
    expect(rows.some((row) => row.startsWith('"AwsSolutions-L1","') && row.includes('"Compliant"'))).toBe(true);
    expect(rows.filter((row) => row.includes('"Non-Compliant"'))).toEqual([]);
  });
});

const functionResource = (synthed: Synth, fn: ParleyFunction) =>
  synthed.template.findResources('AWS::Lambda::Function')[logicalId(synthed, fn)]!;

const allFunctions = (synthed: Synth): [FunctionName, ParleyFunction][] => [
  ...(Object.entries(synthed.stack.domainFunctions) as [FunctionName, ParleyFunction][]),
  ...(Object.entries(synthed.stack.backgroundFunctions) as [FunctionName, ParleyFunction][]),
  ['live-ws', synthed.stack.liveMonitorFunction],
];

const stageOf = (synthed: Synth) => Object.values(synthed.template.findResources('AWS::ApiGatewayV2::Stage'))[0]!;

describe('throttling and isolation', () => {
  it('throttles every route by default at the stage', () => {
    expect(stageOf(parley).Properties.DefaultRouteSettings).toEqual({
      ThrottlingRateLimit: DEFAULT_API_THROTTLE.rateLimit,
      ThrottlingBurstLimit: DEFAULT_API_THROTTLE.burstLimit,
    });
  });

  it('throttles the outbound and vendor routes tighter, and the calls-media routes by theirs, by their route-table class', () => {
    const settings = stageOf(parley).Properties.RouteSettings as Record<string, Record<string, number>>;
    const throttled = servedRoutes().filter((route) => route.route.throttle);
    expect(Object.keys(settings).sort()).toEqual(throttled.map((route) => route.key).sort());
    for (const route of throttled) {
      const limit = DEFAULT_ROUTE_THROTTLES[route.route.throttle!];
      expect(settings[route.key], route.key).toEqual({ ThrottlingRateLimit: limit.rateLimit, ThrottlingBurstLimit: limit.burstLimit });
    }
    // conversation, worker and media are sized from the target instead (test/cdk/scale.test.ts).
    expect(THROTTLE_CLASSES).toEqual(['outbound', 'vendor', 'conversation', 'worker', 'media']);
    for (const throttleClass of ['outbound', 'vendor'] as const) {
      expect(DEFAULT_ROUTE_THROTTLES[throttleClass].rateLimit).toBeLessThan(DEFAULT_API_THROTTLE.rateLimit / 10);
      expect(DEFAULT_ROUTE_THROTTLES[throttleClass].burstLimit).toBeLessThan(DEFAULT_API_THROTTLE.burstLimit / 10);
    }
    // The expensive routes of the issue, by key: a route losing its flag fails here.
    for (const key of [
      'POST /workspace/test-webhook',
      'POST /agents/{agent_id}/workflows/{stage}/test',
      'GET /get-mcp-tools/{agent_id}',
      'POST /test-custom-llm-connection',
      'POST /test-sip-connection',
      'POST /test-phone-number-connection/{phone_number}',
    ]) {
      expect(settings[key], key).toMatchObject({ ThrottlingRateLimit: DEFAULT_ROUTE_THROTTLES.outbound.rateLimit });
    }
    for (const key of ['POST /generate-agent', 'POST /agents/{agent_id}/copilot', 'POST /clone-voice', 'POST /create-phone-number']) {
      expect(settings[key], key).toMatchObject({ ThrottlingRateLimit: DEFAULT_ROUTE_THROTTLES.vendor.rateLimit });
    }
    expect(settings['GET /get-agent/{agent_id}']).toBeUndefined();
  });

  it('updates the stage only after the nested stacks that create the throttled routes', () => {
    const dependsOn = stageOf(parley).DependsOn as string[];
    for (const { routeStack } of parley.nested) {
      expect(dependsOn).toContain(parley.stack.getLogicalId(routeStack.nestedStackResource as CfnResource));
    }
  });

  it('takes the limits from context', async () => {
    const synthed = synth(undefined, false, {}, {
      apiThrottle: '{"rateLimit":50,"burstLimit":100}',
      routeThrottle: { outbound: { rateLimit: 1, burstLimit: 2 } },
    });
    const stage = stageOf(synthed).Properties;
    expect(stage.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
    expect(stage.RouteSettings['POST /test-sip-connection']).toEqual({ ThrottlingRateLimit: 1, ThrottlingBurstLimit: 2 });
    expect(stage.RouteSettings['POST /generate-agent']).toEqual({
      ThrottlingRateLimit: DEFAULT_ROUTE_THROTTLES.vendor.rateLimit,
      ThrottlingBurstLimit: DEFAULT_ROUTE_THROTTLES.vendor.burstLimit,
    });
    await breathe();
    expect(() => synth(undefined, false, {}, { apiThrottle: '{"rateLimit":50}' })).toThrow('apiThrottle must be');
  });

  it('reserves concurrency for every function, those not sized from the target within half of a default account', () => {
    let total = 0;
    for (const [name, fn] of allFunctions(parley)) {
      const reserved = functionResource(parley, fn).Properties.ReservedConcurrentExecutions as number;
      expect(reserved, name).toBe(DEFAULT_RESERVED_CONCURRENCY[name]);
      expect(reserved, name).toBeGreaterThanOrEqual(2);
      total += reserved;
    }
    expect(Object.keys(DEFAULT_RESERVED_CONCURRENCY).sort()).toEqual(allFunctions(parley).map(([name]) => name).sort());
    // AWS keeps 100 unreserved; the functions whose load does not grow with calls take at most
    // half of what is left of a default account. calls, calls-media, chats, public and webhook-delivery
    // are sized from the target (lib/scale.ts, docs/scale.md), which needs a raised quota (test/cdk/scale.test.ts).
    const fromTarget = (['calls', 'calls-media', 'chats', 'public', 'webhook-delivery'] as const).reduce((sum, name) => sum + DEFAULT_RESERVED_CONCURRENCY[name], 0);
    expect(total - fromTarget).toBeLessThanOrEqual((DEFAULT_ACCOUNT_CONCURRENCY - UNRESERVED_CONCURRENCY_MINIMUM) / 2);
  });

  it('takes reserved concurrency from context, and refuses more than the account can reserve', async () => {
    const raised = synth(undefined, false, {}, { reservedConcurrency: '{"agents":200}' });
    expect(functionResource(raised, raised.stack.domainFunctions.agents).Properties.ReservedConcurrentExecutions).toBe(200);
    expect(functionResource(raised, raised.stack.domainFunctions.flows).Properties.ReservedConcurrentExecutions).toBe(
      DEFAULT_RESERVED_CONCURRENCY.flows,
    );
    await breathe();
    const none = synth(undefined, false, {}, { reservedConcurrency: 'false' });
    for (const [name, fn] of allFunctions(none)) {
      expect(functionResource(none, fn).Properties.ReservedConcurrentExecutions, name).toBeUndefined();
    }
    await breathe();
    const total = Object.values(DEFAULT_RESERVED_CONCURRENCY).reduce((sum, value) => sum + value, 0) - DEFAULT_RESERVED_CONCURRENCY.agents + 700;
    expect(() => synth(undefined, false, {}, { reservedConcurrency: { agents: 700 }, accountConcurrency: String(total) })).toThrow(
      `reserve ${total} concurrent executions and AWS keeps 100 unreserved, so the account needs ${total + 100}, more than accountConcurrency (${total})`,
    );
    await breathe();
    expect(() => synth(undefined, false, {}, { reservedConcurrency: { agents: 700 }, accountConcurrency: String(total + 100) })).not.toThrow();
    await breathe();
    expect(() => synth(undefined, false, {}, { reservedConcurrency: { agentz: 7 } })).toThrow('agentz, which is not a Parley function');
    await breathe();
    expect(() => synth(undefined, false, {}, { reservedConcurrency: { 'webhook-delivery': 5 } })).toThrow(
      'is below webhookMaxConcurrency',
    );
  });

  it('caps the webhook queue event source below the worker’s reservation', () => {
    const worker = parley.stack.backgroundFunctions['webhook-delivery'];
    parley.template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
      FunctionName: aliasFunctionName(parley, worker),
      ScalingConfig: { MaximumConcurrency: WEBHOOK_MAX_CONCURRENCY },
    });
    expect(functionResource(parley, worker).Properties.ReservedConcurrentExecutions).toBeGreaterThanOrEqual(
      WEBHOOK_MAX_CONCURRENCY,
    );
  });
});

describe('scheduled jobs', () => {
  it('deploys every job of shared/jobs.ts but schedules only those whose feature exists', () => {
    const deployed = synth(undefined, false);
    const live = JOBS.filter((job) => job.live && job.trigger.kind === 'schedule');
    const queueMessages = JOBS.filter((job) => job.live).flatMap((job) => job.scheduledMessages ?? []);
    // A job whose firings split into inputs has a rule per five of them (EventBridge's targets per rule).
    const scheduleRules = live.reduce((sum, job) => sum + (job.trigger.kind === 'schedule' && job.trigger.inputs ? Math.ceil(job.trigger.inputs.length / 5) : 1), 0);
    expect(Object.keys(deployed.template.findResources('AWS::Events::Rule'))).toHaveLength(scheduleRules + queueMessages.length);
    expect(Object.keys(deployed.template.findResources('AWS::Lambda::EventInvokeConfig'))).toHaveLength(live.length);
    for (const job of JOBS) expect(deployed.stack.backgroundFunctions[job.name], job.name).toBeDefined();
    // Batch calls, OAuth connections, billing and alerts exist, so their schedules run.
    expect(live.map((job) => job.name)).toEqual(['batch-tick', 'oauth-refresh', 'billing-hourly', 'alert-tick']);
  });

  it('sends the concurrency sweep to the call-steps queue every minute, dropped rather than sent late', () => {
    const rules = Object.values(parley.template.findResources('AWS::Events::Rule')).filter(
      (rule) => rule.Properties.ScheduleExpression === 'rate(1 minute)' && rule.Properties.Targets[0].Arn['Fn::GetAtt'],
    );
    expect(rules).toHaveLength(1);
    const target = rules[0]!.Properties.Targets[0];
    expect(target.Arn['Fn::GetAtt'][0]).toBe(logicalId(parley, parley.stack.callStepsQueue));
    expect(target.RetryPolicy).toEqual({ MaximumEventAgeInSeconds: 60, MaximumRetryAttempts: 0 });
    expect(target.InputTransformer.InputTemplate).toContain('"kind":"concurrency-sweep"');
  });

  it.each(['listing-backfill', 'rollup-backfill'])('sends the %s to the export-jobs queue every hour, retried for up to its hour', (kind) => {
    const rules = Object.values(parley.template.findResources('AWS::Events::Rule')).filter((rule) =>
      String(rule.Properties.Targets[0].InputTransformer?.InputTemplate ?? '').includes(`"kind":"${kind}"`),
    );
    expect(rules).toHaveLength(1);
    expect(rules[0]!.Properties.ScheduleExpression).toBe('rate(1 hour)');
    const target = rules[0]!.Properties.Targets[0];
    expect(target.Arn['Fn::GetAtt'][0]).toBe(logicalId(parley, parley.stack.exportJobsQueue));
    expect(target.RetryPolicy).toEqual({ MaximumEventAgeInSeconds: 3600, MaximumRetryAttempts: 3 });
  });

  const invokeConfigOf = (name: BackgroundName) => {
    const fnId = logicalId(parley, parley.stack.backgroundFunctions[name]);
    const configs = Object.values(parley.template.findResources('AWS::Lambda::EventInvokeConfig')).filter(
      (config) => config.Properties.FunctionName.Ref === fnId,
    );
    expect(configs, name).toHaveLength(1);
    return configs[0]!.Properties;
  };

  it('does not let Lambda retry the minute jobs, and drops an invocation older than its minute', () => {
    for (const name of ['batch-tick', 'oauth-refresh', 'alert-tick'] as const) {
      expect(invokeConfigOf(name)).toEqual({
        FunctionName: { Ref: logicalId(parley, parley.stack.backgroundFunctions[name]) },
        // The alias's name, from its ARN: schedules invoke the live alias.
        Qualifier: { 'Fn::Select': [7, { 'Fn::Split': [':', { Ref: aliasId(parley, parley.stack.backgroundFunctions[name]) }] }] },
        MaximumRetryAttempts: 0,
        MaximumEventAgeInSeconds: 60,
      });
    }
  });

  it('sends a billing run that failed its retries to a queue with an alarm', () => {
    const failures = logicalId(parley, parley.stack.billingFailures);
    expect(invokeConfigOf('billing-hourly')).toMatchObject({
      MaximumRetryAttempts: 2,
      DestinationConfig: { OnFailure: { Destination: { 'Fn::GetAtt': [failures, 'Arn'] } } },
    });
    parley.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [failures, 'QueueName'] } }],
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
    });
    expect(invokeConfigOf('batch-tick').DestinationConfig).toBeUndefined();
    // No Lambda function is invoked asynchronously without settings (API routes and SQS are synchronous).
    expect(Object.keys(parley.template.findResources('AWS::Lambda::EventInvokeConfig'))).toHaveLength(4);
  });

  it('gives every schedule target a dead-letter queue, with an alarm, and the minute jobs no EventBridge retries', () => {
    const deadLetters = logicalId(parley, parley.stack.scheduleDeadLetters);
    const rules = Object.values(parley.template.findResources('AWS::Events::Rule'));
    // Four functions' schedules (batch-tick's in two rules), the daily retention sweep, the hourly
    // listing and rollup backfills, the kb-jobs queue's daily refresh sweep and the call-steps
    // queue's concurrency sweep every minute.
    expect(rules).toHaveLength(10);
    for (const rule of rules) {
      const minute = rule.Properties.ScheduleExpression === 'rate(1 minute)';
      for (const target of rule.Properties.Targets) {
        expect(target.DeadLetterConfig).toEqual({ Arn: { 'Fn::GetAtt': [deadLetters, 'Arn'] } });
        // A queue message (an input template) that is not a minute's is retried by EventBridge.
        const queueMessage = target.InputTransformer !== undefined;
        expect(target.RetryPolicy).toEqual(
          minute
            ? { MaximumRetryAttempts: 0, MaximumEventAgeInSeconds: 60 }
            : queueMessage
              ? { MaximumRetryAttempts: 3, MaximumEventAgeInSeconds: 3600 }
              : { MaximumRetryAttempts: 2, MaximumEventAgeInSeconds: 3600 },
        );
      }
    }
    parley.template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [deadLetters, 'QueueName'] } }],
      Threshold: 1,
    });
    // EventBridge may send to the dead-letter queue.
    parley.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: deadLetters }],
      PolicyDocument: Match.objectLike({
        Statement: Match.arrayWith([
          Match.objectLike({ Action: 'sqs:SendMessage', Principal: { Service: 'events.amazonaws.com' } }),
        ]),
      }),
    });
  });

  it('puts the daily knowledge-base refresh sweep on the kb-jobs queue (no function of its own)', () => {
    const queue = logicalId(parley, parley.stack.kbJobsQueue);
    parley.template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'cron(0 4 * * ? *)',
      Targets: [
        Match.objectLike({
          Arn: { 'Fn::GetAtt': [queue, 'Arn'] },
          InputTransformer: { InputPathsMap: { time: '$.time' }, InputTemplate: '{"kind":"refresh-sweep","scheduled_at":<time>}' },
        }),
      ],
    });
    parley.template.hasResourceProperties('AWS::SQS::QueuePolicy', {
      Queues: [{ Ref: queue }],
      PolicyDocument: Match.objectLike({
        Statement: Match.arrayWith([Match.objectLike({ Action: Match.arrayWith(['sqs:SendMessage']), Principal: { Service: 'events.amazonaws.com' } })]),
      }),
    });
  });

  // Alarm notifications (the stack's topic, and a given one): test/cdk/operations.test.ts.
});

describe('deploy settings', () => {
  const bare = (context: Record<string, unknown> = {}) => {
    const app = new App({ context: { ...PROJECT_CONTEXT, 'aws:cdk:bundling-stacks': [], ...context } });
    const stack = new ParleyStack(app, 'Parley');
    return { app, stack, template: Template.fromStack(stack) };
  };
  const environmentOf = (template: Template) =>
    Object.values(template.findResources('AWS::Lambda::Function')).map((fn) => fn.Properties.Environment.Variables);

  it('passes the SIP settings and the public URL to every function', () => {
    for (const variables of environmentOf(parley.template)) {
      expect(variables).toMatchObject({
        PARLEY_ENV: 'production',
        SIP_HOST: 'sip.parley.ai',
        SIP_IP_RANGES: '34.1.2.0/24,2600:1f18::/36',
        PUBLIC_BASE_URL: { 'Fn::GetAtt': [logicalId(parley, parley.stack.api), 'ApiEndpoint'] },
      });
    }
    // Without uploadOrigins no bucket has a CORS rule (browsers cannot PUT to them).
    for (const bucket of Object.values(parley.template.findResources('AWS::S3::Bucket'))) expect(bucket.Properties.CorsConfiguration).toBeUndefined();
  });

  it('fails the synth without them, saying what to pass', () => {
    expect(() => bare()).toThrow(/Parley needs sipHost and sipIpRanges to deploy .* -c sipHost=/);
    expect(() => bare({ sipHost: 'sip.acme.com' })).toThrow('Parley needs sipIpRanges to deploy');
  });

  it('takes them from context', () => {
    const { template, stack } = bare({
      sipHost: 'sip.acme.com',
      sipIpRanges: '34.1.2.0/24, 35.0.0.0/16',
      publicBaseUrl: 'https://api.acme.com',
      uploadOrigins: 'https://app.acme.com, http://localhost:3000,https://app.acme.com',
    });
    // Browser PUTs to presigned uploads (assets, voice samples, knowledge-base files: all in the
    // recordings bucket), from the named origins only; no other bucket takes browser PUTs.
    const buckets = template.findResources('AWS::S3::Bucket');
    const recordings = stack.getLogicalId(stack.recordingsBucket.node.defaultChild as CfnResource);
    for (const [id, bucket] of Object.entries(buckets)) if (id !== recordings) expect(bucket.Properties.CorsConfiguration, id).toBeUndefined();
    expect(buckets[recordings]!.Properties.CorsConfiguration).toEqual({
      CorsRules: [
        {
          Id: 'presigned-uploads',
          AllowedMethods: ['PUT'],
          AllowedOrigins: ['https://app.acme.com', 'http://localhost:3000'],
          AllowedHeaders: ['content-type', 'content-length', 'x-amz-tagging', 'x-amz-checksum-sha256'],
          ExposedHeaders: ['etag'],
          MaxAge: 3000,
        },
      ],
    });
    for (const variables of environmentOf(template)) {
      expect(variables).toMatchObject({
        SIP_HOST: 'sip.acme.com',
        SIP_IP_RANGES: '34.1.2.0/24,35.0.0.0/16',
        PUBLIC_BASE_URL: 'https://api.acme.com',
      });
    }
  });

  it('refuses upload origins that are not exact origins', () => {
    const given = { sipHost: 'sip.acme.com', sipIpRanges: '34.1.2.0/24' };
    for (const origin of ['*', 'https://app.acme.com/', 'https://*.acme.com', 'http://app.acme.com', 'app.acme.com', 'https://app.acme.com/upload']) {
      expect(() => bare({ ...given, uploadOrigins: origin }), origin).toThrow(`uploadOrigins: ${JSON.stringify(origin)} is not an origin`);
    }
  });

  it('refuses local or example values at synth, as the functions would at start', () => {
    expect(() => bare({ sipHost: 'sip.parley.local', sipIpRanges: '34.1.2.0/24' })).toThrow(
      /would stop every function at start: .*SIP_HOST: sip\.parley\.local is a local or example name/,
    );
    expect(() => bare({ sipHost: 'sip.acme.com', sipIpRanges: '127.0.0.1/32' })).toThrow('SIP_IP_RANGES: 127.0.0.1/32 are loopback');
    expect(() => bare({ sipHost: 'sip.acme.com', sipIpRanges: '10.0.0.0/33' })).toThrow('SIP_IP_RANGES');
    expect(() => bare({ sipHost: 'sip.acme.com', sipIpRanges: '34.1.2.0/24', publicBaseUrl: 'http://x' })).toThrow(
      'PUBLIC_BASE_URL: must be the https:// URL',
    );
  });

  it('synthesizes with example values only when told to (CI), values the functions refuse to start with', () => {
    const { template } = bare({ allowExampleSettings: 'true' });
    for (const variables of environmentOf(template)) {
      expect(variables).toMatchObject({ SIP_HOST: 'sip.example.invalid', SIP_IP_RANGES: '192.0.2.0/24' });
      expect(() =>
        loadConfig({
          ...PRODUCTION_TEST_SETTINGS,
          SIP_HOST: variables.SIP_HOST,
          SIP_IP_RANGES: variables.SIP_IP_RANGES,
        }),
      ).toThrow(/SIP_HOST: .* is a local or example name.*; SIP_IP_RANGES: .* are loopback or example addresses/);
    }
  });

  it('runs npm run synth with allowExampleSettings, and cdk.json supplies no settings', () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
    expect(pkg.scripts.synth).toMatch(/cdk synth .*-c allowExampleSettings=true/);
    const cdkJson = JSON.parse(readFileSync(join(root, 'cdk.json'), 'utf8'));
    for (const name of ['sipHost', 'sipIpRanges', 'publicBaseUrl', 'allowExampleSettings']) {
      expect(cdkJson.context[name], name).toBeUndefined();
    }
  });
});

describe('route quota', () => {
  it('fails the synth past routesPerApiQuota (300 by default), saying how to proceed', async () => {
    // Without cdk.json's raised value: API Gateway's default quota.
    const bare = { routesPerApiQuota: undefined };
    expect(() => synth(syntheticRoutes(300), false, {}, bare)).toThrow(
      /would have 302 routes \(300 from the route table plus \$default and OPTIONS \/\{proxy\+\}\), more than routesPerApiQuota \(300\).*Service Quotas.*-c routesPerApiQuota=/,
    );
    await breathe();
    expect(() => synth(syntheticRoutes(298), false, {}, bare)).not.toThrow();
    await breathe();
    expect(() => synth(syntheticRoutes(300), false, {}, { routesPerApiQuota: '302' })).not.toThrow();
    await breathe();
    expect(() => synth(syntheticRoutes(350), false, { routesPerApiQuota: 320 })).toThrow('more than routesPerApiQuota (320)');
  });

  it('leaves room for today’s route table within the quota cdk.json states (raised past 300: README, Routes per API)', () => {
    expect(PROJECT_CONTEXT.routesPerApiQuota).toBe(500);
    expect(servedRoutes().length + 2).toBeLessThanOrEqual(500);
  });
});

describe('ParleyStack at the product size', () => {
  const big = synth(syntheticRoutes(370), true, { routesPerApiQuota: 400 });

  it('spreads ~370 routes over nested stacks that each stay under the limit', () => {
    expect(routeTargets(big).size).toBe(372);
    expect(resourceCount(big.template)).toBeLessThan(RESOURCE_LIMIT);
    for (const { template } of big.nested) {
      expect(resourceCount(template)).toBeLessThan(RESOURCE_LIMIT);
      expect(resourceCount(template)).toBeGreaterThan(0);
    }
    const errors = Annotations.fromStack(big.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'));
    expect(errors).toEqual([]);
  });

  it('never moves an existing route to another stack or logical ID when routes are added', async () => {
    // API Gateway refuses a second route with the same key, and CloudFormation deletes the old
    // copy only after creating the new one, so a moved route would fail the deploy.
    const placement = (synthed: Synth) => {
      const where = new Map<string, string>();
      for (const { routeStack, template } of synthed.nested) {
        for (const [id, route] of Object.entries(template.findResources('AWS::ApiGatewayV2::Route'))) {
          where.set(route.Properties.RouteKey, `${routeStack.node.id}/${id}`);
        }
      }
      return where;
    };
    const before = placement(synth(syntheticRoutes(200), false));
    await breathe();
    const after = placement(synth(syntheticRoutes(370), false, {}, { routesPerApiQuota: '400' }));
    for (const [key, where] of before) expect(after.get(key), key).toBe(where);
  });
});

describe('the WebSocket monitor (live calls)', () => {
  it('is a WebSocket API whose $connect runs a Lambda authorizer on the key and the call, with a stage, routes and push grants', () => {
    const template = parley.live;
    template.hasResourceProperties('AWS::ApiGatewayV2::Api', { Name: 'parley-dev-live', ProtocolType: 'WEBSOCKET' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Authorizer', {
      AuthorizerType: 'REQUEST',
      IdentitySource: ['route.request.header.Authorization', 'route.request.querystring.call_id'],
    });
    const routes = Object.values(template.findResources('AWS::ApiGatewayV2::Route')) as any[];
    expect(routes.map((route) => route.Properties.RouteKey).sort()).toEqual(['$connect', '$default', '$disconnect']);
    expect(routes.find((route) => route.Properties.RouteKey === '$connect')!.Properties).toMatchObject({ AuthorizationType: 'CUSTOM' });
    template.hasResourceProperties('AWS::ApiGatewayV2::Stage', { StageName: 'live', AutoDeploy: true });
    template.resourceCountIs('AWS::Lambda::Permission', 1);
    const calls = functionResource(parley, parley.stack.domainFunctions.calls).Properties.Environment.Variables;
    expect(calls.LIVE_WS_MANAGEMENT_URL).toBeDefined();
    expect(calls.LIVE_WS_URL).toBeDefined();
    expect(JSON.stringify(parley.template.findResources('AWS::IAM::Policy'))).toContain('execute-api:ManageConnections');
  });
});
