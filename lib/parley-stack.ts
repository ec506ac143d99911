import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { DOMAINS, METHODS, type Domain } from '../shared/http/route.ts';
import { servedRoutes, type ServedRoute } from '../shared/routes/index.ts';
import { tableDefinition } from '../shared/store/keys.ts';
import { ParleyFunction, type ParleyAccess, type ParleyResources } from './parley-function.ts';
import { ROUTE_STACK_COUNT, RouteStack, routeStackIndex, type RouteTarget } from './route-stack.ts';

const FUNCTIONS_DIR = fileURLToPath(new URL('../functions/', import.meta.url));

/**
 * What each HTTP domain's function may touch. Typed by Domain so that a new domain cannot
 * deploy until someone decides its grants.
 */
export const DOMAIN_ACCESS: Record<Domain, ParleyAccess> = {
  // Issuing keys seals their values; the test webhook opens the webhook key to sign.
  account: { table: 'readWrite', key: ['generateDataKey', 'decrypt'] },
  // The gate's per-IP rate window is a write even for the public routes and the 404.
  meta: { table: 'readWrite' },
  agents: { table: 'readWrite' },
  // generate-agent, copilot and workflow tests read the language-model credentials.
  'agent-tools': { table: 'readWrite', vendorSecret: 'read' },
  flows: { table: 'readWrite' },
  'chat-agents': { table: 'readWrite' },
  // Cloning and community voices read the voice vendor's API key.
  voices: { table: 'readWrite', vendorSecret: 'read' },
  // Twilio credentials (buying, releasing, provisioning numbers) and sealed SIP trunk passwords;
  // test/cdk/grants-match-code holds it to the code.
  numbers: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'] },
};

/** The OpenAPI document (over 1 MB) ships beside the meta bundle and is read when asked for. */
const DOMAIN_FILES: Partial<Record<Domain, readonly string[]>> = { meta: ['openapi.json'] };

export type BackgroundName = 'webhook-delivery' | 'batch-tick' | 'oauth-refresh' | 'billing-hourly';

// A webhook attempt may wait up to 60 s (the largest webhook_timeout_ms), plus signing and recording.
const WEBHOOK_WORKER_TIMEOUT = Duration.seconds(90);

interface BackgroundSpec {
  description: string;
  timeout: Duration;
  access: ParleyAccess;
}

/**
 * Grants follow what each job's code does today; every scheduled job gets the table for its
 * job lease. A job that starts placing calls, reading vendor credentials or enqueueing
 * webhooks must add the grant here.
 */
export const BACKGROUND_FUNCTIONS: Record<BackgroundName, BackgroundSpec> = {
  'webhook-delivery': {
    description: 'Delivers queued webhooks, signing them with the workspace webhook key',
    timeout: WEBHOOK_WORKER_TIMEOUT,
    // Failed attempts are re-sent to the queue with a delay, hence send as well as consume.
    access: { table: 'readWrite', key: ['decrypt'], webhookQueue: ['consume', 'send'] },
  },
  'batch-tick': {
    description: 'Runs the 5-second batch-call passes for one minute per invocation',
    // EventBridge cannot fire more often than once a minute, so each invocation loops through
    // the 5-second passes (BATCH_TICK_MS) for about a minute; 70 s leaves room to finish the
    // last pass. No reserved concurrency: the next minute's invocation may start while this
    // one drains, and the job lease in the table (keys.jobLease) keeps passes from running
    // twice, whereas reserved concurrency of 1 would only turn that overlap into throttled,
    // retried invocations.
    timeout: Duration.seconds(70),
    access: { table: 'readWrite' },
  },
  'oauth-refresh': {
    description: 'Refreshes OAuth tokens that are about to expire',
    timeout: Duration.seconds(60),
    access: { table: 'readWrite' },
  },
  'billing-hourly': {
    description: 'Hourly billing roll-up',
    timeout: Duration.minutes(5),
    access: { table: 'readWrite' },
  },
};

export interface ParleyStackProps extends StackProps {
  /** The routes to serve; the route table's by default (tests pass more to check growth). */
  routes?: readonly ServedRoute[];
}

const pascal = (name: string) =>
  name
    .split(/[^A-Za-z0-9]+/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');

export class ParleyStack extends Stack {
  readonly table: dynamodb.Table;
  readonly key: kms.Key;
  readonly webhookQueue: sqs.Queue;
  readonly webhookDeadLetters: sqs.Queue;
  readonly vendorSecret: secretsmanager.Secret;
  readonly api: apigwv2.HttpApi;
  readonly stage: apigwv2.HttpStage;
  readonly domainFunctions = {} as Record<Domain, ParleyFunction>;
  readonly backgroundFunctions = {} as Record<BackgroundName, ParleyFunction>;
  readonly integrations = {} as Record<Domain, apigwv2.HttpIntegration>;
  readonly defaultRoute: apigwv2.CfnRoute;
  readonly routeStacks: RouteStack[] = [];

  constructor(scope: Construct, id: string, props: ParleyStackProps = {}) {
    super(scope, id, props);

    this.key = new kms.Key(this, 'Key', {
      alias: 'alias/parley',
      description: 'Parley: table encryption and envelope encryption of stored secrets',
      enableKeyRotation: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });

    this.table = new dynamodb.Table(this, 'Table', {
      partitionKey: { name: tableDefinition.partitionKey, type: dynamodb.AttributeType.STRING },
      sortKey: { name: tableDefinition.sortKey, type: dynamodb.AttributeType.STRING },
      billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      timeToLiveAttribute: tableDefinition.timeToLiveAttribute,
      encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED,
      encryptionKey: this.key,
      deletionProtection: true,
      removalPolicy: RemovalPolicy.RETAIN,
    });
    for (const index of tableDefinition.globalSecondaryIndexes) {
      this.table.addGlobalSecondaryIndex({
        indexName: index.indexName,
        partitionKey: { name: index.partitionKey, type: dynamodb.AttributeType.STRING },
        sortKey: { name: index.sortKey, type: dynamodb.AttributeType.STRING },
        projectionType: dynamodb.ProjectionType[index.projection.type],
        nonKeyAttributes: [...index.projection.nonKeyAttributes],
      });
    }

    // SQS-managed encryption: a KMS key here would need kms:GenerateDataKey/Decrypt on the
    // envelope key for every producer and consumer.
    this.webhookDeadLetters = new sqs.Queue(this, 'WebhookDeadLetters', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.webhookQueue = new sqs.Queue(this, 'WebhookQueue', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      // AWS's guidance for Lambda consumers: at least six times the function timeout, so
      // retries of a throttled batch do not make messages visible again mid-processing.
      visibilityTimeout: Duration.seconds(WEBHOOK_WORKER_TIMEOUT.toSeconds() * 6),
      deadLetterQueue: { queue: this.webhookDeadLetters, maxReceiveCount: 5 },
    });

    // Starts as `{}`; operators fill it with `aws secretsmanager put-secret-value`.
    // CloudFormation rewrites it only if this template value changes.
    this.vendorSecret = new secretsmanager.Secret(this, 'VendorSecret', {
      description: 'Parley vendor credentials (JSON)',
      encryptionKey: this.key,
      secretObjectValue: {},
      removalPolicy: RemovalPolicy.RETAIN,
    });
    NagSuppressions.addResourceSuppressions(this.vendorSecret, [
      {
        id: 'AwsSolutions-SMG4',
        reason:
          'Vendor credentials are issued by third parties (telephony, LLM, speech); they are rotated by hand when the vendor issues new ones, so there is no rotation Lambda to attach.',
      },
    ]);

    const resources: ParleyResources = {
      table: this.table,
      key: this.key,
      webhookQueue: this.webhookQueue,
      vendorSecret: this.vendorSecret,
    };

    for (const domain of DOMAINS) {
      this.domainFunctions[domain] = new ParleyFunction(this, `${pascal(domain)}Function`, {
        entry: `${FUNCTIONS_DIR}${domain}.ts`,
        description: `Parley ${domain} routes`,
        resources,
        access: DOMAIN_ACCESS[domain],
        files: DOMAIN_FILES[domain],
      });
    }
    for (const [name, spec] of Object.entries(BACKGROUND_FUNCTIONS) as [BackgroundName, BackgroundSpec][]) {
      this.backgroundFunctions[name] = new ParleyFunction(this, `${pascal(name)}Function`, {
        entry: `${FUNCTIONS_DIR}${name}.ts`,
        description: spec.description,
        timeout: spec.timeout,
        resources,
        access: spec.access,
      });
    }

    this.backgroundFunctions['webhook-delivery'].addEventSource(
      new SqsEventSource(this.webhookQueue, { batchSize: 10, reportBatchItemFailures: true }),
    );
    this.schedule('BatchTickSchedule', 'batch-tick', Duration.minutes(1), 0);
    this.schedule('OAuthRefreshSchedule', 'oauth-refresh', Duration.minutes(1), 0);
    // A missed hour is not made up by the next run, so let EventBridge retry this one.
    this.schedule('BillingHourlySchedule', 'billing-hourly', Duration.hours(1), 2);

    const { api, stage } = this.httpApi();
    this.api = api;
    this.stage = stage;

    // HttpLambdaIntegration would add a Lambda permission per route (hundreds of
    // resources); one integration per function plus one permission for the whole API.
    const apiSourceArn = this.formatArn({ service: 'execute-api', resource: api.apiId, resourceName: '*/*' });
    for (const domain of DOMAINS) {
      const fn = this.domainFunctions[domain];
      this.integrations[domain] = new apigwv2.HttpIntegration(this, `${pascal(domain)}Integration`, {
        httpApi: api,
        integrationType: apigwv2.HttpIntegrationType.AWS_PROXY,
        integrationUri: fn.functionArn,
        payloadFormatVersion: apigwv2.PayloadFormatVersion.VERSION_2_0,
      });
      fn.addPermission('ApiInvoke', {
        principal: new iam.ServicePrincipal('apigateway.amazonaws.com'),
        action: 'lambda:InvokeFunction',
        sourceArn: apiSourceArn,
      });
    }

    // Unmatched requests reach the meta function, which answers `404 Route <METHOD> <path> not found`.
    this.defaultRoute = new apigwv2.CfnRoute(this, 'DefaultRoute', {
      apiId: api.apiId,
      routeKey: '$default',
      target: `integrations/${this.integrations.meta.integrationId}`,
      authorizationType: 'NONE',
    });
    NagSuppressions.addResourceSuppressions(this.defaultRoute, [
      {
        id: 'AwsSolutions-APIG4',
        reason:
          'The $default route only answers 404 (after the per-IP rate limit); real routes authenticate in the function with Parley API keys, sharing one DynamoDB round trip with rate limiting.',
      },
    ]);

    this.addRoutes(props.routes ?? servedRoutes());

    new CfnOutput(this, 'ApiUrl', { value: stage.url, description: 'Parley API base URL' });
  }

  private schedule(id: string, name: BackgroundName, every: Duration, retryAttempts: number): void {
    new events.Rule(this, id, {
      schedule: events.Schedule.rate(every),
      targets: [new targets.LambdaFunction(this.backgroundFunctions[name], { retryAttempts })],
    });
  }

  private httpApi(): { api: apigwv2.HttpApi; stage: apigwv2.HttpStage } {
    const api = new apigwv2.HttpApi(this, 'Api', {
      apiName: 'parley',
      description: 'Parley: Retell-compatible REST API',
      createDefaultStage: false,
      corsPreflight: {
        allowOrigins: ['*'],
        allowHeaders: ['authorization', 'content-type'],
        allowMethods: METHODS.map((method) => apigwv2.CorsHttpMethod[method]),
        maxAge: Duration.minutes(10),
      },
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logs.RetentionDays.ONE_MONTH });
    const stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      accessLogSettings: {
        destination: new apigwv2.LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.custom(
          JSON.stringify({
            requestId: '$context.requestId',
            ip: '$context.identity.sourceIp',
            requestTime: '$context.requestTime',
            method: '$context.httpMethod',
            path: '$context.path',
            routeKey: '$context.routeKey',
            status: '$context.status',
            protocol: '$context.protocol',
            responseLength: '$context.responseLength',
            latencyMs: '$context.responseLatency',
            integrationLatencyMs: '$context.integrationLatency',
            integrationError: '$context.integrationErrorMessage',
            userAgent: '$context.identity.userAgent',
          }),
        ),
      },
    });
    return { api, stage };
  }

  private addRoutes(routes: readonly ServedRoute[]): void {
    const buckets = new Map<number, RouteTarget[]>();
    const seen = new Set<string>();
    for (const route of routes) {
      if (seen.has(route.key)) throw new Error(`Route ${route.key} is served twice`);
      seen.add(route.key);
      const index = routeStackIndex(route.key);
      const bucket = buckets.get(index) ?? [];
      bucket.push({ routeKey: route.key, integrationId: this.integrations[route.domain].integrationId });
      buckets.set(index, bucket);
    }
    // A nested stack without resources is an invalid template, so empty buckets get none.
    for (let index = 0; index < ROUTE_STACK_COUNT; index++) {
      const bucket = buckets.get(index);
      if (!bucket) continue;
      this.routeStacks.push(
        new RouteStack(this, `Routes${index}`, {
          apiId: this.api.apiId,
          routes: bucket,
          description: `Parley API routes, part ${index + 1} of ${ROUTE_STACK_COUNT}`,
        }),
      );
    }
  }
}
