import { execSync } from 'node:child_process';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AssetHashType, Duration, Stack } from 'aws-cdk-lib';
import { bundleFunctionSync, FUNCTION_BUNDLING, type WorkerEntries } from './bundling.ts';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { NagSuppressions } from 'cdk-nag';
import * as logs from 'aws-cdk-lib/aws-logs';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';
import { tableDefinition } from '../shared/platform/store/keys.ts';
import { TRACER_SIDECAR } from '../shared/platform/observability/tracing.ts';
import { ENCRYPTION_CONTEXT_KEYS } from '../shared/platform/crypto/kms.ts';

/** cdk-nag AwsSolutions-L1 wants the newest Node.js runtime this aws-cdk-lib knows. */
export const PARLEY_RUNTIME = lambda.Runtime.NODEJS_24_X;

/** esbuild's target for a Node.js runtime: `nodejs24.x` → `node24`, so the bundle never outgrows or lags the runtime. */
export function esbuildTarget(runtime: lambda.Runtime): string {
  const match = /^nodejs(\d+)\.x$/.exec(runtime.name);
  if (!match) throw new Error(`${runtime.name} is not a Node.js runtime`);
  return `node${match[1]}`;
}

/** The alias the API, the queues' event sources and the schedules invoke; CodeDeploy shifts it between versions. */
const LIVE_ALIAS = 'live';

/**
 * The conditions on direct use of the key (envelope encryption, shared/platform/crypto): the
 * request's encryption context has only the envelope's keys, and names the record. Every
 * seal and open in the code passes such a context (EncryptionContext's type requires
 * `record`), so this refuses only a use of the key outside the envelope (a bare Encrypt or
 * Decrypt of table or bucket data, which go through their services' own grants).
 */
export const KEY_CONTEXT_CONDITIONS = {
  'ForAllValues:StringEquals': { 'kms:EncryptionContextKeys': [...ENCRYPTION_CONTEXT_KEYS] },
  Null: { 'kms:EncryptionContext:record': 'false' },
};

/** The shared resources every function is told about; what it may do with them is in `access`. */
export interface ParleyResources {
  table: dynamodb.ITable;
  key: kms.IKey;
  webhookQueue: sqs.IQueue;
  /** The call engine's timed steps (shared/platform/aws/due-time.ts). */
  callStepsQueue: sqs.IQueue;
  /** Steps of contacts jobs (the backfill). */
  contactJobsQueue: sqs.IQueue;
  /** Account-data jobs (exports, privacy erases, retention runs). */
  exportJobsQueue: sqs.IQueue;
  /** Steps of integrations jobs (CRM syncs). */
  integrationJobsQueue: sqs.IQueue;
  /** Knowledge-base ingestion (shared/knowledge-bases/ingest.ts). */
  kbJobsQueue: sqs.IQueue;
  /** Knowledge-base originals, extracted text, chunks and indexes. */
  knowledgeBaseBucket: s3.IBucket;
  vendorSecret: secretsmanager.ISecret;
  /** Call recordings and their unscrubbed originals (shared/platform/aws/object-store.ts). */
  recordingsBucket: s3.IBucket;
}

type QueueUse = 'send' | 'consume';

/** The work queues among the shared resources; `access` grants on them by the same names. */
export type QueueResource = 'webhookQueue' | 'callStepsQueue' | 'contactJobsQueue' | 'exportJobsQueue' | 'integrationJobsQueue' | 'kbJobsQueue';

/** Envelope encryption uses GenerateDataKey to seal and Decrypt to open; nothing calls Encrypt directly. */
export type KeyUse = 'generateDataKey' | 'decrypt' | 'encrypt';

export interface ParleyAccess {
  table?: 'read' | 'readWrite';
  /** Direct use of the KMS key (envelope encryption of stored secrets). */
  key?: readonly KeyUse[];
  webhookQueue?: readonly QueueUse[];
  /** `send` for whoever schedules a call's steps (the calls domain), `consume` for the call-steps job. */
  callStepsQueue?: readonly QueueUse[];
  /** `send` for the contacts domain (starting a job), `consume` and `send` for the contact-jobs job. */
  contactJobsQueue?: readonly QueueUse[];
  /** `send` for the account-data domain (starting a job), `consume` for the export-jobs job. */
  exportJobsQueue?: readonly QueueUse[];
  /** `send` for the integrations domain (starting a sync), `consume` and `send` for the integration-jobs job. */
  integrationJobsQueue?: readonly QueueUse[];
  /** `send` for the knowledge-bases domain (queueing an ingestion), `consume` and `send` for the kb-jobs job. */
  kbJobsQueue?: readonly QueueUse[];
  vendorSecret?: 'read';
  /** Objects under `knowledge-bases/` in the knowledge-base bucket: read, write, delete. */
  knowledgeBases?: 'readWrite';
  /** Objects under `recordings/` in the recordings bucket: read, write (with tags), delete. */
  recordings?: 'readWrite';
  /** Objects under `exports/` and `assets/` in the same bucket (account data): read, write (multipart), delete. */
  accountObjects?: 'readWrite';
  /**
   * Presigned uploads under `uploads/` in the same bucket (shared/platform/uploads.ts): sign
   * PUTs (the URL acts with the signer's rights: put, with the retention tag), read them back,
   * delete them; list for the workspace purge.
   */
  uploads?: 'readWrite';
}

export interface ParleyFunctionProps {
  /** Absolute path of the handler module (functions/<name>.ts). */
  entry: string;
  description?: string;
  resources: ParleyResources;
  /** Least privilege: each function is granted only what is listed here. */
  access: ParleyAccess;
  /** API Gateway gives up on an integration after 30 s, so HTTP functions stop just before. */
  timeout?: Duration;
  /** Memory in MB (lib/functions.ts); CPU comes in proportion. */
  memorySize?: number;
  /** Log group name, unique per account and region (the stage is in it); generated when absent. */
  logGroupName?: string;
  /**
   * Files of the project (paths from its root) shipped beside the bundle rather than inside
   * it: data a function reads rarely should not weigh on every cold start.
   */
  files?: readonly string[];
  /**
   * Folders of the project shipped beside the bundle, source → name beside it (the meta
   * function's built browser files, web/dist → web). The bundling fails, naming the command
   * to run, when a folder has no manifest.json (it was not built).
   */
  directories?: Readonly<Record<string, string>>;
  /**
   * Worker scripts the function starts (shared/knowledge-bases/capped-worker.ts): name → source,
   * each built as `<name>.mjs` beside index.mjs (lib/bundling.ts).
   */
  workers?: WorkerEntries;
  /** Further environment: the deploy settings every function needs (lib/deploy-settings.ts). */
  environment?: Record<string, string>;
  /**
   * Executions reserved for (and capping) this function, so one busy or flooded function
   * cannot take the account's concurrency from the others; undefined: the unreserved pool.
   */
  reservedConcurrency?: number;
  /**
   * Fixed egress (lib/fixed-egress.ts): the function runs in the VPC's private subnets and
   * reaches the internet through its NAT gateways' Elastic IPs; undefined: Lambda's own network.
   */
  network?: { vpc: ec2.IVpc; securityGroup: ec2.ISecurityGroup };
}

const TABLE_READ_ACTIONS = [
  'dynamodb:GetItem',
  'dynamodb:BatchGetItem',
  'dynamodb:Query',
  'dynamodb:ConditionCheckItem',
];
const TABLE_WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
];
const TABLE_KEY_READ_ACTIONS = ['kms:Decrypt', 'kms:DescribeKey'];
const TABLE_KEY_WRITE_ACTIONS = ['kms:Encrypt', 'kms:GenerateDataKey', 'kms:ReEncryptFrom', 'kms:ReEncryptTo'];
const KEY_USE_ACTIONS: Record<KeyUse, string> = {
  generateDataKey: 'kms:GenerateDataKey',
  decrypt: 'kms:Decrypt',
  encrypt: 'kms:Encrypt',
};

/** The project's root, where the bundling runs (as CDK's NodejsFunction ran it). */
const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * A function's code: its entry bundled by lib/bundling.ts (esbuild in this process, with code
 * splitting: index.mjs, its worker scripts and their chunks), then what ships beside the
 * bundle. CDK's NodejsFunction cannot split (it writes one --outfile), hence a plain asset
 * with local bundling; like NodejsFunction's, its hash is the output's, and a stack excluded from
 * bundling (`aws:cdk:bundling-stacks`, the CDK tests) is not bundled at all.
 */
function functionCode(props: Pick<ParleyFunctionProps, 'entry' | 'files' | 'directories' | 'workers'>): lambda.Code {
  return lambda.Code.fromAsset(PROJECT_ROOT, {
    assetHashType: AssetHashType.OUTPUT,
    bundling: {
      // Required by the type; never used: bundling is local, and a failure stops the synth
      // rather than falling back to Docker.
      image: PARLEY_RUNTIME.bundlingImage,
      // CDK reuses a bundling whose options it has already seen in this app, and the entry
      // lives in the closure below, which CDK cannot see: named here (the options are the
      // cache key), or every function would get the first function's bundle.
      environment: {
        PARLEY_BUNDLE: JSON.stringify({ entry: relative(PROJECT_ROOT, props.entry), workers: props.workers ?? {}, files: props.files ?? [], directories: props.directories ?? {} }),
      },
      local: {
        tryBundle(outputDir: string) {
          const workers = Object.fromEntries(Object.entries(props.workers ?? {}).map(([name, source]) => [name, resolve(PROJECT_ROOT, source)]));
          bundleFunctionSync(props.entry, outputDir, workers);
          for (const command of besideBundleCommands(PROJECT_ROOT, outputDir, props)) execSync(command, { cwd: PROJECT_ROOT, stdio: 'inherit' });
          return true;
        },
      },
    },
  });
}

export class ParleyFunction extends lambda.Function {
  /**
   * The `live` alias on the function's current version: what every trigger invokes. Each
   * deploy that changes the function publishes a version; CodeDeploy moves this alias to it
   * (lib/parley-functions.ts). Reserved concurrency stays on the function, shared by its versions.
   */
  readonly live: lambda.Alias;

  constructor(scope: Construct, id: string, props: ParleyFunctionProps) {
    // Own role and log group (siblings, since `this` does not exist before super): the role
    // may write to this function's log group only, instead of AWSLambdaBasicExecutionRole's
    // logs:* on every log group in the account.
    const role = new iam.Role(scope, `${id}Role`, {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `Parley ${id} function`,
    });
    const logGroup = new logs.LogGroup(scope, `${id}Logs`, { retention: logs.RetentionDays.ONE_MONTH, logGroupName: props.logGroupName });
    logGroup.grantWrite(role);

    super(scope, id, {
      code: functionCode(props),
      handler: 'index.handler',
      description: props.description,
      runtime: PARLEY_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: props.memorySize ?? 1024,
      timeout: props.timeout ?? Duration.seconds(29),
      role,
      logGroup,
      reservedConcurrentExecutions: props.reservedConcurrency,
      ...(props.network
        ? { vpc: props.network.vpc, vpcSubnets: { subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS }, securityGroups: [props.network.securityGroup] }
        : {}),
      // X-Ray: Lambda opens a segment per invocation; Powertools Tracer adds the handler,
      // AWS SDK and vendor subsegments (shared/platform/observability/tracing.ts). CDK grants the role
      // xray:PutTraceSegments and xray:PutTelemetryRecords (suppressed for nag below).
      tracing: lambda.Tracing.ACTIVE,
      environment: {
        // The `stage` dimension of the business metrics (shared/platform/observability/metrics.ts).
        PARLEY_STAGE: parleyStage(scope),
        ...props.environment,
        ...resourceEnvironment(props.resources),
        POWERTOOLS_SERVICE_NAME: 'parley',
        NODE_OPTIONS: '--enable-source-maps',
      },
    });

    if (props.network) {
      // What AWSLambdaVPCAccessExecutionRole grants (the function's network interfaces), inline:
      // the role is our own, so Lambda adds nothing to it. EC2 takes no resource ARNs here.
      this.addToRolePolicy(
        new iam.PolicyStatement({
          actions: ['ec2:CreateNetworkInterface', 'ec2:DescribeNetworkInterfaces', 'ec2:DescribeSubnets', 'ec2:DeleteNetworkInterface', 'ec2:AssignPrivateIpAddresses', 'ec2:UnassignPrivateIpAddresses'],
          resources: ['*'],
        }),
      );
      NagSuppressions.addResourceSuppressions(
        role,
        [{ id: 'AwsSolutions-IAM5', reason: 'A function in a VPC manages its network interfaces; EC2 has no resource-level permissions for these actions.', appliesTo: ['Resource::*'] }],
        true,
      );
    }

    NagSuppressions.addResourceSuppressions(
      role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'Active tracing: xray:PutTraceSegments and xray:PutTelemetryRecords support no resource-level permissions (the X-Ray service authorization reference), so Lambda\'s tracing grant names "*".',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );

    this.live = new lambda.Alias(this, 'Live', { aliasName: LIVE_ALIAS, version: this.currentVersion });
    NagSuppressions.addResourceSuppressions(this, [
      {
        id: 'Serverless-LambdaDLQ',
        reason:
          'A function-level DLQ catches failed asynchronous invocations only. The API and the WebSocket API invoke synchronously (the caller gets the error); queue consumers fail back to their queue, whose redrive policy has a dead-letter queue; scheduled jobs are asynchronous and configured on their alias (EventInvokeConfig: billing has an alarmed on-failure destination, the minute jobs are not retried by design).',
      },
    ]);

    grantParleyAccess(role, props.resources, props.access);
  }
}

/**
 * The settings that name the shared resources, with PARLEY_ENV: what every function (and the
 * voice worker's task, lib/voice-worker.ts) is told, whatever it may do with them.
 */
export function resourceEnvironment(resources: ParleyResources): Record<string, string> {
  return {
    TABLE_NAME: resources.table.tableName,
    // Always set, even where the role may not use the key: without it the code would fall
    // back to the local master key instead of failing loudly.
    KMS_KEY_ID: resources.key.keyArn,
    WEBHOOK_QUEUE_URL: resources.webhookQueue.queueUrl,
    CALL_STEPS_QUEUE_URL: resources.callStepsQueue.queueUrl,
    CONTACT_JOBS_QUEUE_URL: resources.contactJobsQueue.queueUrl,
    EXPORT_JOBS_QUEUE_URL: resources.exportJobsQueue.queueUrl,
    INTEGRATION_JOBS_QUEUE_URL: resources.integrationJobsQueue.queueUrl,
    KB_JOBS_QUEUE_URL: resources.kbJobsQueue.queueUrl,
    KNOWLEDGE_BASE_BUCKET: resources.knowledgeBaseBucket.bucketName,
    VENDOR_SECRET_ID: resources.vendorSecret.secretArn,
    RECORDINGS_BUCKET: resources.recordingsBucket.bucketName,
    PARLEY_ENV: 'production',
  };
}

/**
 * Grants a role exactly what `access` lists on the shared resources: a function's role
 * (ParleyFunction) and the voice worker's task role (lib/voice-worker.ts) get the same
 * statements for the same access. Each wildcard's cdk-nag finding is suppressed on the role
 * with its reason.
 */
export function grantParleyAccess(role: iam.Role, resources: ParleyResources, access: ParleyAccess): void {
  const { table, key, webhookQueue, callStepsQueue, contactJobsQueue, exportJobsQueue, integrationJobsQueue, kbJobsQueue, vendorSecret, recordingsBucket, knowledgeBaseBucket } = resources;
  if (access.table) {
    const write = access.table === 'readWrite';
    // Each index by name (from tableDefinition) rather than index/*.
    const tableArns = [
      table.tableArn,
      ...tableDefinition.globalSecondaryIndexes.map((index) => `${table.tableArn}/index/${index.indexName}`),
    ];
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: [...TABLE_READ_ACTIONS, ...(write ? TABLE_WRITE_ACTIONS : [])],
        resources: tableArns,
      }),
    );
    // The table is encrypted with the same key that seals stored secrets; going through
    // DynamoDB must not also let the function call KMS with it directly.
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: [...TABLE_KEY_READ_ACTIONS, ...(write ? TABLE_KEY_WRITE_ACTIONS : [])],
        resources: [key.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(role).region}.amazonaws.com` } },
      }),
    );
  }

  if (access.key?.length) {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: [...new Set(access.key.map((use) => KEY_USE_ACTIONS[use]))],
        resources: [key.keyArn],
        conditions: KEY_CONTEXT_CONDITIONS,
      }),
    );
  }

  for (const [queue, uses] of [
    [webhookQueue, access.webhookQueue],
    [callStepsQueue, access.callStepsQueue],
    [contactJobsQueue, access.contactJobsQueue],
    [exportJobsQueue, access.exportJobsQueue],
    [integrationJobsQueue, access.integrationJobsQueue],
    [kbJobsQueue, access.kbJobsQueue],
  ] as const) {
    if (uses?.includes('send')) queue.grantSendMessages(role);
    if (uses?.includes('consume')) queue.grantConsumeMessages(role);
  }

  if (access.vendorSecret === 'read') vendorSecret.grantRead(role);

  if (access.accountObjects === 'readWrite') {
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging', 's3:DeleteObject', 's3:AbortMultipartUpload'],
        resources: [recordingsBucket.arnForObjects('exports/*'), recordingsBucket.arnForObjects('assets/*')],
      }),
    );
    // Listing under those prefixes: the workspace purge empties a workspace's (shared/members/purge.ts).
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['s3:ListBucket'],
        resources: [recordingsBucket.bucketArn],
        conditions: { StringLike: { 's3:prefix': ['exports/*', 'assets/*'] } },
      }),
    );
    NagSuppressions.addResourceSuppressions(
      role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'Exports and assets are one object each under exports/<workspace>/ and assets/<workspace>/: the function writes any workspace\'s, and only under those prefixes.',
          appliesTo: [{ regex: '/^Resource::<RecordingsBucket[A-Za-z0-9]*\\.Arn>\\/(exports|assets)\\/\\*$/' }],
        },
      ],
      true,
    );
  }

  if (access.knowledgeBases === 'readWrite') {
    grantObjectsUnder(role, key, knowledgeBaseBucket, 'KnowledgeBaseBucket', 'knowledge-bases', ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'],
      'Knowledge-base objects are many per knowledge base under knowledge-bases/<workspace>/<kb>/: the function reads and writes any knowledge base\'s, and only under that prefix.');
  }
  if (access.uploads === 'readWrite') {
    grantObjectsUnder(role, key, recordingsBucket, 'RecordingsBucket', 'uploads', ['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging', 's3:DeleteObject'],
      'Presigned uploads are one object each under uploads/<workspace>/<upload_id>: the function signs, reads and deletes any workspace\'s, and only under that prefix.');
  }
  if (access.recordings === 'readWrite') {
    grantObjectsUnder(role, key, recordingsBucket, 'RecordingsBucket', 'recordings', ['s3:GetObject', 's3:PutObject', 's3:PutObjectTagging', 's3:DeleteObject'],
      'Recordings are one object per call under recordings/<workspace>/<call_id>/: the function reads and writes any call\'s, and only under that prefix.');
  }
}

/**
 * Object access under one prefix of a bucket: the object actions, ListBucket under the
 * prefix (without it S3 answers 403 rather than 404 for a missing object), and the stack's
 * key through S3 only (the buckets are encrypted with it), with the nag finding the prefix's
 * wildcard raises suppressed with its reason.
 */
function grantObjectsUnder(role: iam.Role, key: kms.IKey, bucket: s3.IBucket, bucketLogicalName: string, prefix: string, actions: string[], reason: string): void {
  role.addToPrincipalPolicy(new iam.PolicyStatement({ actions, resources: [bucket.arnForObjects(`${prefix}/*`)] }));
  NagSuppressions.addResourceSuppressions(
    role,
    [{ id: 'AwsSolutions-IAM5', reason, appliesTo: [{ regex: `/^Resource::<${bucketLogicalName}[A-Za-z0-9]*\\.Arn>\\/${prefix}\\/\\*$/` }] }],
    true,
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: ['s3:ListBucket'], resources: [bucket.bucketArn], conditions: { StringLike: { 's3:prefix': [`${prefix}/*`] } } }),
  );
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['kms:Decrypt', 'kms:GenerateDataKey'],
      resources: [key.keyArn],
      conditions: { StringEquals: { 'kms:ViaService': `s3.${Stack.of(role).region}.amazonaws.com` } },
    }),
  );
}

/**
 * The deployment's name for the metrics' `stage` dimension: the context value `stage` when
 * given (`cdk deploy -c stage=prod`), else the name of the stack the function is in.
 */
export function parleyStage(scope: Construct): string {
  const given = scope.node.tryGetContext('stage') as unknown;
  return typeof given === 'string' && given !== '' ? given : Stack.of(scope).stackName;
}

/**
 * The shell commands that put beside a function's bundle what it reads from there (CDK's
 * afterBundling hook; scripts/measure-functions.ts runs the same to time the real path):
 * the tracer, the function's files and its built folders.
 */
export function besideBundleCommands(inputDir: string, outputDir: string, props: Pick<ParleyFunctionProps, 'files' | 'directories'>): string[] {
  return [
    // The tracer beside the bundle, loaded on the first invocation (shared/platform/observability/tracing.ts).
    tracerSidecarCommand(inputDir, outputDir),
    ...(props.files ?? []).map((file) => `cp "${inputDir}/${file}" "${outputDir}/${file.split('/').pop()}"`),
    ...Object.entries(props.directories ?? {}).flatMap(([from, to]) => [
      `test -f "${inputDir}/${from}/manifest.json" || { echo "${from} is not built: run npm run build:web" >&2; exit 1; }`,
      `cp -R "${inputDir}/${from}" "${outputDir}/${to}"`,
    ]),
  ];
}

/**
 * The shell command that writes Powertools Tracer (with the X-Ray SDK) as one ES module
 * beside a function's bundle, built like the bundle (esbuild, minified, the same target and
 * `require` banner). The bundle imports it on its first invocation in Lambda, so it adds
 * nothing to the bundle's size or cold import (docs/performance.md).
 */
export function tracerSidecarCommand(inputDir: string, outputDir: string): string {
  const banner = FUNCTION_BUNDLING.banner;
  return [
    `"${inputDir}/node_modules/.bin/esbuild"`,
    `"${inputDir}/node_modules/@aws-lambda-powertools/tracer/lib/esm/index.js"`,
    `--bundle --platform=node --format=esm --target=${FUNCTION_BUNDLING.target} --minify --main-fields=module,main --log-level=warning`,
    `--banner:js="${banner}"`,
    `--outfile="${outputDir}/${TRACER_SIDECAR}"`,
  ].join(' ');
}
