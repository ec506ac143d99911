import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Aspects, Stack, type CfnResource } from 'aws-cdk-lib';
import { Annotations, Match, Template } from 'aws-cdk-lib/assertions';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { AwsSolutionsChecks } from 'cdk-nag';
import { describe, expect, it } from 'vitest';
import {
  PARLEY_RUNTIME,
  ParleyFunction,
  type KeyUse,
  type ParleyAccess,
} from '../../lib/parley-function.ts';
import {
  BACKGROUND_FUNCTIONS,
  DOMAIN_ACCESS,
  ParleyStack,
  type BackgroundName,
} from '../../lib/parley-stack.ts';
import { DOMAINS, type Domain, type RouteDefinition } from '../../shared/http/route.ts';
import { servedRoutes, type ServedRoute } from '../../shared/routes/index.ts';
import { GSI1_LISTING_ATTRIBUTES, tableDefinition } from '../../shared/store/keys.ts';

const RESOURCE_LIMIT = 500;
const FUNCTION_ENTRY = fileURLToPath(new URL('../../functions/meta.ts', import.meta.url));

function synth(routes?: readonly ServedRoute[], nag = true) {
  // Skipping bundling keeps the tests fast; `npm run synth` bundles for real.
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new ParleyStack(app, 'Parley', { routes });
  if (nag) Aspects.of(app).add(new AwsSolutionsChecks({ verbose: true }));
  const template = Template.fromStack(stack);
  const nested = stack.routeStacks.map((routeStack) => ({
    routeStack,
    template: Template.fromStack(routeStack),
    // The parameters the parent passes in, so a nested Ref can be followed to the parent.
    parameters: template.toJSON().Resources[stack.getLogicalId(routeStack.nestedStackResource as CfnResource)]
      .Properties.Parameters as Record<string, { Ref: string }>,
  }));
  return { app, stack, template, nested };
}

type Synth = ReturnType<typeof synth>;

const logicalId = (synthed: Synth, resource: { node: { defaultChild?: unknown } }) =>
  synthed.stack.getLogicalId(resource.node.defaultChild as CfnResource);

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

/** Checks a function's role against its declared access, in both directions. */
function expectGrantsMatch(statements: Statement[], access: ParleyAccess, label: string) {
  const all = actionsOf(statements);
  const direct = (statement: Statement) => statement.Condition === undefined;
  expect([...all].filter((action) => action.includes('*')), label).toEqual([]);
  expect(all.has('dynamodb:GetItem'), label).toBe(access.table !== undefined);
  expect(all.has('dynamodb:PutItem'), label).toBe(access.table === 'readWrite');
  expect(all.has('dynamodb:Scan'), label).toBe(false);
  expect(actionsOf(statements, (s) => direct(s) && [s.Action].flat().some((a) => a.startsWith('kms:'))), label).toEqual(
    new Set((access.key ?? []).map((use) => KEY_USE_ACTION[use])),
  );
  // Any other use of the key goes through a service on the function's behalf.
  for (const statement of statements.filter((s) => !direct(s))) {
    expect(statement.Condition!.StringEquals!['kms:ViaService'], label).toBeDefined();
  }
  expect(all.has('sqs:SendMessage'), label).toBe(access.webhookQueue?.includes('send') ?? false);
  expect(all.has('sqs:ReceiveMessage'), label).toBe(access.webhookQueue?.includes('consume') ?? false);
  expect(all.has('secretsmanager:GetSecretValue'), label).toBe(access.vendorSecret === 'read');
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

const parley = synth();

describe('ParleyStack', () => {
  it('serves every route key exactly once, plus $default', () => {
    const targets = routeTargets(parley);
    const expected = [...servedRoutes().map((route) => route.key), '$default'];
    expect([...targets.keys()].sort()).toEqual(expected.sort());
    for (const [key, integrations] of targets) expect(integrations, key).toHaveLength(1);
  });

  it("targets each route at its domain's integration, and $default at meta", () => {
    const integrationFor = (domain: Domain) => logicalId(parley, parley.stack.integrations[domain]);
    const targets = routeTargets(parley);
    for (const route of servedRoutes()) expect(targets.get(route.key), route.key).toEqual([integrationFor(route.domain)]);
    expect(targets.get('$default')).toEqual([integrationFor('meta')]);

    const integrations = parley.template.findResources('AWS::ApiGatewayV2::Integration');
    for (const domain of DOMAINS) {
      expect(integrations[integrationFor(domain)]!.Properties).toMatchObject({
        IntegrationType: 'AWS_PROXY',
        PayloadFormatVersion: '2.0',
        IntegrationUri: { 'Fn::GetAtt': [logicalId(parley, parley.stack.domainFunctions[domain]), 'Arn'] },
      });
    }
  });

  it('grants API Gateway one invoke permission per domain function, for the whole API', () => {
    const permissions = Object.values(parley.template.findResources('AWS::Lambda::Permission')).filter(
      (permission) => permission.Properties.Principal === 'apigateway.amazonaws.com',
    );
    expect(permissions).toHaveLength(DOMAINS.length);
    for (const domain of DOMAINS) {
      const fn = logicalId(parley, parley.stack.domainFunctions[domain]);
      const mine = permissions.filter((p) => JSON.stringify(p.Properties.FunctionName).includes(fn));
      expect(mine, domain).toHaveLength(1);
      expect(JSON.stringify(mine[0]!.Properties.SourceArn)).toMatch(/\/\*\/\*"\]\]\}$/);
    }
  });

  it('has one arm64 function per domain plus the four background functions, on the newest Node.js', () => {
    const functions = Object.values(parley.template.findResources('AWS::Lambda::Function'));
    expect(functions).toHaveLength(DOMAINS.length + Object.keys(BACKGROUND_FUNCTIONS).length);
    for (const fn of functions) {
      expect(fn.Properties.Runtime).toBe(PARLEY_RUNTIME.name);
      expect(fn.Properties.Architectures).toEqual(['arm64']);
      expect(fn.Properties.MemorySize).toBe(1024);
      expect(Object.keys(fn.Properties.Environment.Variables).sort()).toEqual(
        [
          'KMS_KEY_ID',
          'NODE_OPTIONS',
          'PARLEY_ENV',
          'POWERTOOLS_SERVICE_NAME',
          'TABLE_NAME',
          'VENDOR_SECRET_ID',
          'WEBHOOK_QUEUE_URL',
        ].sort(),
      );
      expect(fn.Properties.LoggingConfig.LogGroup).toBeDefined();
    }
    expect(PARLEY_RUNTIME.name).toMatch(/^nodejs(2[2-9]|[3-9]\d)\.x$/);
  });

  it('grants each function exactly the access its spec declares', () => {
    for (const domain of DOMAINS) {
      const fn = parley.stack.domainFunctions[domain];
      expectGrantsMatch(statementsOf(parley.stack, parley.template, fn), DOMAIN_ACCESS[domain], domain);
    }
    for (const [name, spec] of Object.entries(BACKGROUND_FUNCTIONS) as [BackgroundName, { access: ParleyAccess }][]) {
      const fn = parley.stack.backgroundFunctions[name];
      expectGrantsMatch(statementsOf(parley.stack, parley.template, fn), spec.access, name);
    }
    parley.template.resourceCountIs('AWS::IAM::ManagedPolicy', 0);
    for (const role of Object.values(parley.template.findResources('AWS::IAM::Role'))) {
      expect(role.Properties.ManagedPolicyArns).toBeUndefined();
    }
  });

  it('grants the options no Parley function uses today the same way', () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new Stack(app, 'Grants');
    const key = new kms.Key(stack, 'Key');
    const resources = {
      key,
      table: new dynamodb.Table(stack, 'Table', {
        partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
        encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
        encryptionKey: key,
      }),
      webhookQueue: new sqs.Queue(stack, 'Queue'),
      vendorSecret: new secretsmanager.Secret(stack, 'Secret', { encryptionKey: key }),
    };
    const access: ParleyAccess = { table: 'read', key: ['encrypt'], webhookQueue: ['send'], vendorSecret: 'read' };
    const fn = new ParleyFunction(stack, 'Fn', { entry: FUNCTION_ENTRY, resources, access });
    expectGrantsMatch(statementsOf(stack, Template.fromStack(stack), fn), access, 'all options');
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
            Projection: { ProjectionType: 'INCLUDE', NonKeyAttributes: [...GSI1_LISTING_ATTRIBUTES] },
          }),
        ),
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: tableDefinition.timeToLiveAttribute, Enabled: true },
        SSESpecification: Match.objectLike({ SSEEnabled: true, SSEType: 'KMS' }),
      }),
    });
    parley.template.hasResourceProperties('AWS::KMS::Key', { EnableKeyRotation: true });
    parley.template.hasResourceProperties('AWS::KMS::Alias', { AliasName: 'alias/parley' });
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
      FunctionName: { Ref: logicalId(parley, worker) },
      BatchSize: 10,
      FunctionResponseTypes: ['ReportBatchItemFailures'],
    });
  });

  it('schedules the three periodic functions', () => {
    const schedules: [BackgroundName, string][] = [
      ['batch-tick', 'rate(1 minute)'],
      ['oauth-refresh', 'rate(1 minute)'],
      ['billing-hourly', 'rate(1 hour)'],
    ];
    expect(Object.keys(parley.template.findResources('AWS::Events::Rule'))).toHaveLength(3);
    for (const [name, rate] of schedules) {
      parley.template.hasResourceProperties('AWS::Events::Rule', {
        ScheduleExpression: rate,
        State: 'ENABLED',
        Targets: [
          Match.objectLike({
            Arn: { 'Fn::GetAtt': [logicalId(parley, parley.stack.backgroundFunctions[name]), 'Arn'] },
          }),
        ],
      });
    }
    const batchTick = parley.template.findResources('AWS::Lambda::Function')[
      logicalId(parley, parley.stack.backgroundFunctions['batch-tick'])
    ]!;
    expect(batchTick.Properties.Timeout).toBe(70);
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
    });
    parley.template.hasResourceProperties('AWS::ApiGatewayV2::Api', {
      CorsConfiguration: {
        AllowOrigins: ['*'],
        AllowHeaders: ['authorization', 'content-type'],
        AllowMethods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
        MaxAge: 600,
      },
    });
    parley.template.hasOutput('ApiUrl', {});
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
    expect(reports).toHaveLength(1 + parley.nested.length);
    const rows = reports.flatMap((file) => readFileSync(join(outdir, file), 'utf8').split('\n').slice(1));
    expect(rows.some((row) => row.startsWith('"AwsSolutions-L1","') && row.includes('"Compliant"'))).toBe(true);
    expect(rows.filter((row) => row.includes('"Non-Compliant"'))).toEqual([]);
  });
});

describe('ParleyStack at the product size', () => {
  const big = synth(syntheticRoutes(370));

  it('spreads ~370 routes over nested stacks that each stay under the limit', () => {
    expect(routeTargets(big).size).toBe(371);
    expect(resourceCount(big.template)).toBeLessThan(RESOURCE_LIMIT);
    for (const { template } of big.nested) {
      expect(resourceCount(template)).toBeLessThan(RESOURCE_LIMIT);
      expect(resourceCount(template)).toBeGreaterThan(0);
    }
    const errors = Annotations.fromStack(big.stack).findError('*', Match.stringLikeRegexp('AwsSolutions-.*'));
    expect(errors).toEqual([]);
  });

  it('never moves an existing route to another stack or logical ID when routes are added', () => {
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
    const after = placement(synth(syntheticRoutes(370), false));
    for (const [key, where] of before) expect(after.get(key), key).toBe(where);
  });
});
