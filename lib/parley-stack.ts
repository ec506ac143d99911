import { JOBS, jobNamed, type JobName, type JobSpec } from '../shared/jobs.ts';
import { fileURLToPath } from 'node:url';
import { CfnOutput, Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import * as acm from 'aws-cdk-lib/aws-certificatemanager';
import * as codedeploy from 'aws-cdk-lib/aws-codedeploy';
import * as route53 from 'aws-cdk-lib/aws-route53';
import * as route53Targets from 'aws-cdk-lib/aws-route53-targets';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import * as apigwv2 from 'aws-cdk-lib/aws-apigatewayv2';
import { LiveMonitorStack } from './live-monitor-stack.ts';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import { SqsDestination } from 'aws-cdk-lib/aws-lambda-destinations';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import type { Construct } from 'constructs';
import { DOMAINS, THROTTLE_CLASSES, type Domain, type ThrottleClass } from '../shared/platform/http/route.ts';
import { servedRoutes, type ServedRoute } from '../shared/route-table.ts';
import { tableDefinition } from '../shared/platform/store/keys.ts';
import { RETENTION_RULE_DAYS } from '../shared/platform/aws/object-store.ts';
import { EXTRACT_WORKER_NAME } from '../shared/knowledge-bases/extract.ts';
import { contextValue, functionSettings, settingsEnvironment, type FunctionSettings } from './deploy-settings.ts';
import type { WorkerEntries } from './bundling.ts';
import { ParleyFunction, type ParleyAccess, type ParleyResources } from './parley-function.ts';
import { FixedEgress } from './fixed-egress.ts';
import { DOMAIN_SIZES, JOB_MEMORY_MB, LIVE_MONITOR_SIZE } from './function-sizes.ts';
import { Monitoring, pascal } from './monitoring.ts';
import { PRODUCTION_STAGE, scopedName, stageSettings, type DeploymentStrategy, type StageProps, type StageSettings } from './stage.ts';
import { ROUTE_STACK_COUNT, RouteStack, routeStackIndex, type RouteTarget } from './route-stack.ts';
import { VoiceWorker, voiceWorkerSettings } from './voice-worker.ts';

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
  // Cloning and community voices read the voice vendor's API key; voice samples past the
  // request limit are presigned uploads (uploads/* in the recordings bucket).
  voices: { table: 'readWrite', vendorSecret: 'read', uploads: 'readWrite' },
  // Twilio credentials (buying, releasing, provisioning numbers) and sealed SIP trunk passwords;
  // test/cdk/grants-match-code holds it to the code.
  numbers: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'] },
  // Calls queue their webhooks, read media (LiveKit) and language-model credentials, and
  // open the webhook key to sign custom function requests during a call's turns.
  // Call artifacts: recordings in the bucket, and the sealed unscrubbed copy (generateDataKey).
  // Knowledge bases: conversations retrieve from their indexes (shared/knowledge-bases, read only in practice).
  calls: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], webhookQueue: ['send'], callStepsQueue: ['send'], recordings: 'readWrite', knowledgeBases: 'readWrite' },
  // save-call summarises through the language model (its credentials) after reading the call
  // from the table (getCall only: no call is placed here); a backfill is queued.
  // It reads calls through the calls domain's narrow entry (shared/calls/records/index.ts: no engine,
  // recordings or conversation runtime), so it holds neither bucket (test/cdk/grants-match-code).
  contacts: { table: 'readWrite', vendorSecret: 'read', contactJobsQueue: ['send'] },
  // Deleting a batch unlinks its calls; creating one reads numbers and agents. It reaches the
  // calls domain through its narrow entry (shared/calls/records/index.ts): batches are dialled by
  // batch-tick, not here, so no call-steps queue and neither bucket.
  batches: { table: 'readWrite', vendorSecret: 'read', key: ['decrypt'], webhookQueue: ['send'] },
  // Chats run the agent's engine (language-model credentials), sign custom function requests
  // with the webhook key, and queue chat events.
  // Chats retrieve from their agents' knowledge bases (the indexes in the knowledge-base bucket).
  // App tools run through the integrations domain, whose refresh before use seals new tokens (generateDataKey).
  chats: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], webhookQueue: ['send'], knowledgeBases: 'readWrite' },
  // Stripe's credentials (vendor secret); a charge may queue a budget event. The spend check
  // reads the KYC status through the numbers index (phone metadata, below).
  billing: { table: 'readWrite', vendorSecret: 'read', webhookQueue: ['send'] },
  // Exports, assets, privacy, reliability, account status (docs/account-data.md): starts jobs
  // on the export-jobs queue, writes assets and reads exports in the bucket; the privacy call
  // view bundles the calls index (hence the recordings and vendor-secret grants, which
  // test/cdk/grants-match-code holds to the bundle; nothing here calls a vendor; the calls index
  // carries the knowledge-base store through the conversation's retrieval, hence that grant too).
  // Assets past the request limit are presigned uploads (uploads/*).
  'account-data': { table: 'readWrite', vendorSecret: 'read', exportJobsQueue: ['send'], recordings: 'readWrite', accountObjects: 'readWrite', uploads: 'readWrite' },
  // OAuth clients and pasted credentials (vendor settings), tokens sealed and opened (the
  // envelope's data keys), CRM sync jobs queued.
  // A kb_sync connection's callback starts its first sync on the kb-jobs queue.
  integrations: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], integrationJobsQueue: ['send'], kbJobsQueue: ['send'] },
  // Members sign sessions (the sealed signing key, created on first use), seal the SSO
  // client secret and open it for the identity provider's token request.
  // Deleting a workspace queues its purge on the export-jobs queue.
  members: { table: 'readWrite', key: ['generateDataKey', 'decrypt'], exportJobsQueue: ['send'] },
  // Knowledge bases: originals, text, chunks and indexes in their bucket; embeddings through the
  // language-model vendor (its credentials); ingestion queued on kb-jobs.
  // Synced sources read their kb_sync connection (the integrations index: its refresh seals new
  // tokens, hence the key) and start runs on kb-jobs; presigned uploads are PUT to the bucket.
  'knowledge-bases': { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], kbJobsQueue: ['send'], knowledgeBases: 'readWrite' },
  // Public routes (docs/browser.md): share links start web calls (the calls index: its
  // grants, as batches have them) and public chats run the chat runtime (chats' grants).
  public: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], webhookQueue: ['send'], callStepsQueue: ['send'], recordings: 'readWrite', knowledgeBases: 'readWrite' },
};

/**
 * libphonenumber's metadata, read on first use by shared/platform/telephony/phone.ts (a JSON file
 * rather than 150 KB of bundled JavaScript parsed at every cold start). Every function
 * whose bundle holds phone.ts ships it: test/cdk/grants-match-code checks.
 */
export const PHONE_METADATA_FILE = 'node_modules/libphonenumber-js/metadata.max.json';

/**
 * The OpenAPI document (over 1 MB) and the API reference page's Swagger UI files (about
 * 1.9 MB) ship beside the meta bundle and are read when asked for.
 */
export const DOMAIN_FILES: Partial<Record<Domain, readonly string[]>> = {
  meta: ['openapi.json', 'node_modules/swagger-ui-dist/swagger-ui.css', 'node_modules/swagger-ui-dist/swagger-ui-bundle.js'],
  numbers: [PHONE_METADATA_FILE],
  calls: [PHONE_METADATA_FILE],
  contacts: [PHONE_METADATA_FILE],
  batches: [PHONE_METADATA_FILE],
  // SMS chats check their numbers (shared/chats/sms.ts, phone.ts).
  chats: [PHONE_METADATA_FILE],
  billing: [PHONE_METADATA_FILE],
  'account-data': [PHONE_METADATA_FILE],
  // The extraction worker's CSV parser (shared/platform/text/csv.ts) carries the phone module.
  'knowledge-bases': [PHONE_METADATA_FILE],
  // The chat widget's script (GET /widget.js, read when asked for) and the calls index's phone module.
  public: [PHONE_METADATA_FILE, 'web/widget/dist/widget.js'],
};

/**
 * Folders shipped beside a bundle (source → name): the meta function serves the built
 * browser files (`npm run build:web`: the web SDK, the Voice Orb page's script and styles)
 * from `web/` beside it (shared/meta/web-assets.ts; docs/browser.md says why not S3 and
 * CloudFront).
 */
export const DOMAIN_DIRECTORIES: Partial<Record<Domain, Readonly<Record<string, string>>>> = {
  meta: { 'web/dist': 'web' },
};

/** Files a background job ships beside its bundle: the batch passes check numbers (phone.ts). */
export const JOB_FILES: Partial<Record<JobName, readonly string[]>> = {
  'batch-tick': [PHONE_METADATA_FILE],
  // Erases and exports go through the calls and contacts indexes, which check numbers (phone.ts).
  'export-jobs': [PHONE_METADATA_FILE],
  // As for the knowledge-bases domain: the extraction worker's CSV parser.
  'kb-jobs': [PHONE_METADATA_FILE],
  // Inbound admission and dials check numbers (phone.ts), as do the contacts and CRM steps.
  'call-steps': [PHONE_METADATA_FILE],
  'contact-jobs': [PHONE_METADATA_FILE],
  'integration-jobs': [PHONE_METADATA_FILE],
};

/**
 * The knowledge-base extraction worker (shared/knowledge-bases/extract.ts starts it), built
 * beside the bundle of every function that bundles its starter: the ingestion job, and the
 * knowledge-bases domain, whose bundle holds the ingestion module (test/cdk/grants-match-code checks).
 */
export const EXTRACT_WORKER: WorkerEntries = { [EXTRACT_WORKER_NAME]: 'shared/knowledge-bases/extract-worker.ts' };
export const DOMAIN_WORKERS: Partial<Record<Domain, WorkerEntries>> = { 'knowledge-bases': EXTRACT_WORKER };
export const JOB_WORKERS: Partial<Record<JobName, WorkerEntries>> = { 'kb-jobs': EXTRACT_WORKER };

export type BackgroundName = JobName;

/**
 * What each background job may touch: grants follow what its code does today; every
 * scheduled job gets the table for its job lease. A job that starts placing calls, reading
 * vendor credentials or enqueueing webhooks must add the grant here. (A job whose failures
 * go to an alarmed queue also gets to send there: see ParleyStack.schedule.) The jobs
 * themselves (triggers, timeouts, retries) are listed once in shared/jobs.ts.
 */
export const JOB_ACCESS: Record<JobName, ParleyAccess> = {
  // Failed attempts are re-sent to the queue with a delay, hence send as well as consume.
  'webhook-delivery': { table: 'readWrite', key: ['decrypt'], webhookQueue: ['consume', 'send'] },
  // A step not yet due is re-sent for its next hop (shared/platform/aws/due-time.ts), hence
  // send as well as consume; the table for the call's state. The call engine adds what its
  // steps need (the webhook queue for call events, vendor credentials for the model).
  // A step runs a turn of the call: the agent's engine (language-model and LiveKit
  // credentials), custom functions signed with the webhook key, and the call's webhooks.
  // The sandbox's recording is written when a step ends the call (finishCall).
  // App tools run through the integrations domain, whose refresh before use seals new tokens (generateDataKey).
  'call-steps': { table: 'readWrite', callStepsQueue: ['consume', 'send'], webhookQueue: ['send'], integrationJobsQueue: ['send'], key: ['generateDataKey', 'decrypt'], vendorSecret: 'read', recordings: 'readWrite', knowledgeBases: 'readWrite' },
  // A step reads a page of calls (or an import chunk) and writes contacts; the next is re-queued.
  // It reads the history pages through the calls domain's narrow entry (shared/calls/records/index.ts),
  // so it holds neither bucket (test/cdk/grants-match-code holds grants to the bundle).
  'contact-jobs': { table: 'readWrite', contactJobsQueue: ['consume', 'send'], vendorSecret: 'read' },
  // An export streams table pages into its object (multipart); an erase or retention run deletes
  // calls (their recordings too), contacts and exports.
  // The calls index it erases through carries the conversation runtime (vendor settings, knowledge-base store).
  // The purge of a deleted workspace (shared/members/purge.ts) runs here too: it scans the table,
  // empties the workspace's prefixes in both buckets, releases its numbers at the carrier (the
  // vendor credentials) and queues its own next step.
  // It bundles the account-data index (presigned asset uploads) and the purge empties uploads/<ws>/ too.
  'export-jobs': { table: 'readWrite', tableScan: true, exportJobsQueue: ['consume', 'send'], recordings: 'readWrite', accountObjects: 'readWrite', knowledgeBases: 'readWrite', vendorSecret: 'read', uploads: 'readWrite' },
  // A CRM sync step reads contacts and ended calls (the calls domain's narrow entry, so neither
  // bucket), opens and refreshes the connection's tokens (seals the new ones), and queues its
  // next step.
  'integration-jobs': { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], integrationJobsQueue: ['consume', 'send'] },
  // Extracts, crawls (through the egress guard), embeds (language-model credentials) and writes the index.
  // Synced sources: a fresh access token of the kb_sync connection (refreshing seals new tokens),
  // the vendors' APIs through the egress guard, and the run's next step (and the sweep's next page) queued.
  'kb-jobs': { table: 'readWrite', kbJobsQueue: ['consume', 'send'], vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], knowledgeBases: 'readWrite' },
  // Passes place calls (create-phone-call's path: the first step on the call-steps queue; a
  // refused spend ends a call at once, sending call_ended) with LiveKit media when configured.
  // It bundles the calls domain (dials), hence recordings and knowledge bases as for the batches domain.
  'batch-tick': { table: 'readWrite', callStepsQueue: ['send'], webhookQueue: ['send'], key: ['decrypt'], vendorSecret: 'read', recordings: 'readWrite', knowledgeBases: 'readWrite' },
  // Refreshes open the refresh token and seal the new tokens; OAuth clients come from the vendor settings
  // (or an app's own client, sealed in the table). Scheduled CRM syncs that come due are queued on integration-jobs.
  'oauth-refresh': { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], integrationJobsQueue: ['send'] },
  // Concurrency charges go through the ledger: a budget event may be queued, an auto-recharge reads Stripe's key.
  'billing-hourly': { table: 'readWrite', webhookQueue: ['send'], vendorSecret: 'read' },
};

/** The WebSocket monitor's function (functions/live-ws.ts): the WebSocket API's authorizer and routes. */
export const LIVE_MONITOR_FUNCTION = 'live-ws';
/**
 * What the WebSocket monitor's function may touch: connections and the calls they watch, in
 * the table. It bundles the calls index (a call's view for sync), which carries the
 * recordings module, the conversation runtime (vendor settings, knowledge-base store) and
 * the phone module; test/cdk/grants-match-code holds grants to bundles, so it gets them too.
 * Slimming its imports would drop them (docs/operations.md, Not done yet).
 */
export const LIVE_MONITOR_ACCESS: ParleyAccess = { table: 'readWrite', vendorSecret: 'read', recordings: 'readWrite', knowledgeBases: 'readWrite' };
export const LIVE_MONITOR_FILES: readonly string[] = [PHONE_METADATA_FILE];
export type FunctionName = Domain | BackgroundName | typeof LIVE_MONITOR_FUNCTION;

/**
 * Reserved concurrency per function (context `reservedConcurrency`: a JSON object of
 * overrides, or false for none). It guarantees each function its share and caps it, so a
 * flood of one kind of request (404s on meta, slow outbound tests on agent-tools) cannot
 * take the concurrency every other function needs. The sum (450) leaves more than half of
 * a default account's 1,000 for other workloads; AWS requires 100 to stay unreserved.
 * Sized for ~100 ms requests: 40 executions serve ~400 requests a second.
 */
export const DEFAULT_RESERVED_CONCURRENCY: Record<FunctionName, number> = {
  account: 40,
  // The $default route's 404s (each after a per-IP rate-limit write) land here.
  meta: 30,
  // 58 (from 100) leaves room for contacts, the live monitor, billing (5), account-data
  // (5, with export-jobs 2), integrations (3, with integration-jobs 2), members (5) and
  // knowledge bases (5, with kb-jobs 2) within the 450 the stack's tests allow; 53 (from
  // 58): the public function's 5.
  agents: 53,
  // Outbound tests and language-model calls hold an execution for seconds.
  'agent-tools': 40,
  flows: 40,
  // 20 (from 40): chat agents are configuration, written at human speed; the 20 went to chats.
  'chat-agents': 20,
  voices: 20,
  numbers: 40,
  // A dial may wait up to CPS_MAX_WAIT_MS (5 s) for a calls-per-second token.
  calls: 40,
  // Each completion holds an execution for a model turn (seconds with a real model).
  chats: 20,
  // Contacts are written at human speed or by imports and the backfill (queued, below).
  contacts: 8,
  // Batch CRUD at human speed (creating a 10,000-task batch writes for seconds); 3 keeps the total at 450.
  batches: 3,
  // Billing is read and set at human speed, plus Stripe's webhooks; 5 taken from agents keeps the total at 450.
  billing: 5,
  // OAuth and app configuration at human speed, vendor tests and tool runs (seconds); 3 + 2 for
  // its job were taken from agents.
  integrations: 3,
  // At least WEBHOOK_MAX_CONCURRENCY, or the event source's own polling would be throttled.
  'webhook-delivery': 25,
  // At least CALL_STEPS_MAX_CONCURRENCY: each step is one turn of a call, seconds at most.
  'call-steps': 25,
  // At least CONTACT_JOBS_MAX_CONCURRENCY.
  'contact-jobs': 2,
  // Exports, erases and retention runs, one whole job per message (at least EXPORT_JOBS_MAX_CONCURRENCY).
  'export-jobs': 2,
  // Exports, assets, privacy requests and settings at human speed; public asset fetches are cached by browsers.
  'account-data': 5,
  // At least INTEGRATION_JOBS_MAX_CONCURRENCY.
  'integration-jobs': 2,
  // Knowledge bases are configuration, written at human speed; uploads and crawl previews hold an execution for seconds.
  'knowledge-bases': 5,
  // At least KB_JOBS_MAX_CONCURRENCY.
  'kb-jobs': 2,
  // One invocation a minute that runs ~70 s, so at most two overlap; the lease does the rest.
  'batch-tick': 3,
  'oauth-refresh': 2,
  'billing-hourly': 2,
  // Members, invites, sign-in and SCIM provisioning: human speed.
  members: 5,
  // Anonymous browser traffic (widget chats, share links, CORS preflights) in its own pool,
  // so it can never take the executions of keyed API calls; 5 taken from agents.
  public: 5,
  // WebSocket monitors connecting and asking to sync (pushes run in the functions that write calls).
  'live-ws': 3,
};

/** The one route of CORS preflights (the public function answers them; docs/browser.md). */
export const PREFLIGHT_ROUTE_KEY = 'OPTIONS /{proxy+}';
/**
 * The functions that call customers' and vendors' servers, which fixed egress (context
 * `fixedEgress: true`, lib/fixed-egress.ts) puts behind its NAT gateways' Elastic IPs:
 * webhooks, custom functions, MCP tools and custom LLMs during calls and chats (calls,
 * call-steps, chats, batch-tick's dials), workflows and outbound tests (agent-tools), crawls
 * and embeddings (knowledge-bases, kb-jobs), OAuth and CRM sync (integrations,
 * integration-jobs, oauth-refresh), and save-call's summaries (contacts). The others reach
 * only AWS (and Twilio, Stripe, ElevenLabs, which allowlist nothing of ours).
 */
export const EGRESS_FUNCTIONS: readonly FunctionName[] = [
  'webhook-delivery', 'calls', 'call-steps', 'chats', 'batch-tick', 'agent-tools', 'knowledge-bases', 'kb-jobs',
  'integrations', 'integration-jobs', 'oauth-refresh', 'contacts',
];

/** NAT gateways (each with its address) fixed egress creates by default (context `fixedEgressNatGateways`): one per zone. */
export const DEFAULT_EGRESS_NAT_GATEWAYS = 2;

/** What a default AWS account may run at once, and what AWS keeps unreserved of it. */
export const DEFAULT_ACCOUNT_CONCURRENCY = 1000;
export const UNRESERVED_CONCURRENCY_MINIMUM = 100;

/**
 * Concurrent webhook-delivery executions the SQS event source may use (context
 * `webhookMaxConcurrency`): a backlog (say, a dead endpoint on a busy workspace) drains at
 * this pace instead of scaling the worker up to its reservation and beyond.
 */
export const WEBHOOK_MAX_CONCURRENCY = 20;

/**
 * Concurrent call-steps executions the SQS event source may use: below the job's
 * reservation, so the event source's own polling is never throttled (a throttled batch
 * would come back only after the visibility timeout, minutes late for a live call).
 */
export const CALL_STEPS_MAX_CONCURRENCY = 20;

/** Concurrent contact-jobs executions its event source may use (below its reservation; a backfill is one chain of messages). */
export const CONTACT_JOBS_MAX_CONCURRENCY = 2;

/** Concurrent export-jobs executions its event source may use (its reservation). */
export const EXPORT_JOBS_MAX_CONCURRENCY = 2;
/** Concurrent integration-jobs executions its event source may use (a CRM sync is one chain of messages). */
export const INTEGRATION_JOBS_MAX_CONCURRENCY = 2;
/** Concurrent kb-jobs executions its event source may use (its reservation). */
export const KB_JOBS_MAX_CONCURRENCY = 2;

export interface Throttle {
  /** Steady requests per second. */
  rateLimit: number;
  /** Requests API Gateway admits at once above the steady rate. */
  burstLimit: number;
}

/**
 * The stage's default throttle for every route (context `apiThrottle`). API Gateway counts
 * it per route across all callers; per key and per IP limits are the gate's (shared/auth).
 */
export const DEFAULT_API_THROTTLE: Throttle = { rateLimit: 500, burstLimit: 1000 };

/**
 * Per-route throttles by the route's `throttle` class (context `routeThrottle`, e.g.
 * `{"outbound":{"rateLimit":5,"burstLimit":10}}`). Each route key gets its own bucket of
 * this size, shared by all workspaces; the per-workspace cap on concurrent outbound tests
 * keeps one workspace from taking it all.
 */
export const DEFAULT_ROUTE_THROTTLES: Record<ThrottleClass, Throttle> = {
  // Can wait up to 10 s on an address the caller chose: 2/s holds ~20 executions at worst.
  outbound: { rateLimit: 2, burstLimit: 5 },
  // Paid vendor calls (language model, voices, carrier): seconds each, and money.
  vendor: { rateLimit: 5, burstLimit: 10 },
};

/**
 * API Gateway's "Routes per API" quota (context `routesPerApiQuota`). Synth fails above it
 * rather than the deploy failing halfway; README, Deploy with CDK, says how to raise it.
 */
export const DEFAULT_ROUTES_PER_API_QUOTA = 300;

export interface ParleyStackProps extends StackProps, StageProps {
  /** The routes to serve; the route table's by default (tests pass more to check growth). */
  routes?: readonly ServedRoute[];
  /** SIP_HOST, SIP_IP_RANGES, PUBLIC_BASE_URL of the functions; from context when not given. */
  settings?: Partial<FunctionSettings>;
  /** Overrides of DEFAULT_RESERVED_CONCURRENCY, or false for no reservations at all. */
  reservedConcurrency?: Partial<Record<FunctionName, number>> | false;
  apiThrottle?: Throttle;
  routeThrottles?: Partial<Record<ThrottleClass, Throttle>>;
  routesPerApiQuota?: number;
  /** The background jobs (shared/jobs.ts by default; tests pass them all live to check scheduling). */
  jobs?: readonly JobSpec[];
}

const DEAD_LETTERS_HAVE_NO_REDRIVE = {
  id: 'Serverless-SQSRedrivePolicy',
  reason: 'This is a dead-letter queue: nothing consumes it, so there is nothing to redrive to; its depth and age are alarmed and an operator redrives it (docs/operations.md).',
};

/** CodeDeploy's traffic shifting for each strategy (lib/stage.ts). */
const DEPLOYMENT_CONFIGS: Record<DeploymentStrategy, codedeploy.ILambdaDeploymentConfig> = {
  canary: codedeploy.LambdaDeploymentConfig.CANARY_10PERCENT_5MINUTES,
  linear: codedeploy.LambdaDeploymentConfig.LINEAR_10PERCENT_EVERY_1MINUTE,
  allAtOnce: codedeploy.LambdaDeploymentConfig.ALL_AT_ONCE,
};

/** How long each work queue's oldest message may wait before its age alarm fires (docs/operations.md). */
export const QUEUE_MAX_AGE: Record<'webhooks' | 'callSteps' | 'contactJobs' | 'exportJobs' | 'integrationJobs' | 'kbJobs', Duration> = {
  // Deliveries are seconds each; a retry is a new message, so age is a backlog, not a retry.
  webhooks: Duration.minutes(15),
  // Steps of live calls: a step waits at most a second past its due time, and a hop is a new message.
  callSteps: Duration.minutes(5),
  contactJobs: Duration.minutes(30),
  // One whole job a message (up to 15 minutes), two at a time.
  exportJobs: Duration.hours(1),
  integrationJobs: Duration.minutes(30),
  // One knowledge base's ingestion a message (up to 5 minutes), two at a time.
  kbJobs: Duration.hours(1),
};

export class ParleyStack extends Stack {
  readonly table: dynamodb.Table;
  readonly key: kms.Key;
  readonly webhookQueue: sqs.Queue;
  readonly webhookDeadLetters: sqs.Queue;
  readonly callStepsQueue: sqs.Queue;
  readonly callStepsDeadLetters: sqs.Queue;
  readonly contactJobsQueue: sqs.Queue;
  readonly contactJobsDeadLetters: sqs.Queue;
  readonly exportJobsQueue: sqs.Queue;
  readonly exportJobsDeadLetters: sqs.Queue;
  readonly integrationJobsQueue: sqs.Queue;
  readonly integrationJobsDeadLetters: sqs.Queue;
  readonly kbJobsQueue: sqs.Queue;
  readonly kbJobsDeadLetters: sqs.Queue;
  readonly knowledgeBaseBucket: s3.Bucket;
  /** Scheduled invocations EventBridge could not deliver to their function. */
  readonly scheduleDeadLetters: sqs.Queue;
  /** Hourly billing invocations that failed after Lambda's retries (on-failure destination). */
  readonly billingFailures: sqs.Queue;
  readonly alarms: cloudwatch.Alarm[] = [];
  readonly settings: StageSettings;
  readonly monitoring: Monitoring;
  readonly deploymentGroups = {} as Record<FunctionName, codedeploy.LambdaDeploymentGroup>;
  readonly scheduleRules: events.Rule[] = [];
  /** The custom domain's API Gateway name, when context domainName is set. */
  readonly domainName?: apigwv2.DomainName;
  readonly vendorSecret: secretsmanager.Secret;
  readonly recordingsBucket: s3.Bucket;
  readonly api: apigwv2.HttpApi;
  readonly liveMonitor: LiveMonitorStack;
  readonly liveMonitorFunction: ParleyFunction;
  readonly stage: apigwv2.HttpStage;
  readonly domainFunctions = {} as Record<Domain, ParleyFunction>;
  readonly backgroundFunctions = {} as Record<BackgroundName, ParleyFunction>;
  readonly integrations = {} as Record<Domain, apigwv2.HttpIntegration>;
  readonly defaultRoute: apigwv2.CfnRoute;
  readonly routeStacks: RouteStack[] = [];
  /** The VPC, NAT gateways and addresses of fixed egress; undefined unless context `fixedEgress` is true. */
  readonly egress?: FixedEgress;
  /** The voice agent worker on ECS Fargate; undefined without `livekitUrl` (or with `voiceWorker: false`). */
  readonly voiceWorker?: VoiceWorker;

  constructor(scope: Construct, id: string, props: ParleyStackProps = {}) {
    const settingsOfStage = stageSettings(scope, props);
    super(scope, id, { terminationProtection: settingsOfStage.stage === PRODUCTION_STAGE, ...props });
    this.settings = settingsOfStage;
    const { stage } = settingsOfStage;

    // Checked first: a missing setting or an over-quota route table fails before any work.
    const settings = functionSettings(this, props.settings);
    const routes = props.routes ?? servedRoutes();
    this.checkRouteQuota(routes, props.routesPerApiQuota);
    const reserved = this.reservedConcurrency(props.reservedConcurrency);

    this.key = new kms.Key(this, 'Key', {
      alias: `alias/${scopedName(stage)}`,
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

    // Each queue job's queue and its dead letters (jobQueue, below). A message that failed its
    // receives goes to the dead letters, with an alarm (except webhooks: a delivery that failed
    // is recorded on the webhook log, and its dead letters are for an operator's look).
    // - webhooks: deliveries, five receives.
    // - call-steps: the call engine's timed steps; a step that failed five receives belongs to
    //   a call that is now stuck.
    // - contact-jobs: steps of contacts jobs (the backfill, imports); its job stopped there.
    // - export-jobs: account-data jobs (exports, privacy erases, retention runs); a job that
    //   failed records itself as failed, so three receives.
    // - integration-jobs: steps of integrations jobs (CRM syncs); its job stopped there.
    // - kb-jobs: knowledge-base ingestions (its knowledge base was marked `error`).
    ({ queue: this.webhookQueue, deadLetters: this.webhookDeadLetters } = this.jobQueue('Webhook', 'webhook-delivery', 5));
    ({ queue: this.callStepsQueue, deadLetters: this.callStepsDeadLetters } = this.jobQueue('CallSteps', 'call-steps', 5));
    ({ queue: this.contactJobsQueue, deadLetters: this.contactJobsDeadLetters } = this.jobQueue('ContactJobs', 'contact-jobs', 5));
    ({ queue: this.exportJobsQueue, deadLetters: this.exportJobsDeadLetters } = this.jobQueue('ExportJobs', 'export-jobs', 3));
    ({ queue: this.integrationJobsQueue, deadLetters: this.integrationJobsDeadLetters } = this.jobQueue('IntegrationJobs', 'integration-jobs', 5));
    ({ queue: this.kbJobsQueue, deadLetters: this.kbJobsDeadLetters } = this.jobQueue('KbJobs', 'kb-jobs', 5));

    // Dead letters of the schedules (EventBridge could not invoke the function) and billing's
    // failed invocations; both alarm on their first message. SQS-managed encryption, as above.
    this.scheduleDeadLetters = new sqs.Queue(this, 'ScheduleDeadLetters', {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    this.billingFailures = new sqs.Queue(this, 'BillingFailures', {
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

    // Call recordings (docs/calls.md, Call artifacts): private, KMS-encrypted with the stack's
    // key, TLS only; deleted by tag (`retention_days`, one lifecycle rule per value in
    // RETENTION_RULE_DAYS), kept otherwise.
    // Browsers PUT files to presigned upload URLs (knowledge-base files to the knowledge-base
    // bucket; assets and voice samples, with their signed retention tag and optional checksum,
    // to the recordings bucket's uploads/) from the dashboards named by context uploadOrigins;
    // the signature still decides what is accepted (key, content type, exact length, expiry).
    // No origins, no rule.
    const uploadCors = settingsOfStage.uploadOrigins.length
      ? {
          cors: [
            {
              id: 'presigned-uploads',
              allowedMethods: [s3.HttpMethods.PUT],
              allowedOrigins: [...settingsOfStage.uploadOrigins],
              allowedHeaders: ['content-type', 'content-length', 'x-amz-tagging', 'x-amz-checksum-sha256'],
              exposedHeaders: ['etag'],
              maxAge: 3000,
            },
          ],
        }
      : {};
    this.recordingsBucket = new s3.Bucket(this, 'RecordingsBucket', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [
        { id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) },
        ...RETENTION_RULE_DAYS.map((days) => ({ id: `retention-${days}d`, tagFilters: { retention_days: String(days) }, expiration: Duration.days(days) })),
      ],
      ...uploadCors,
    });
    NagSuppressions.addResourceSuppressions(this.recordingsBucket, [
      {
        id: 'AwsSolutions-S1',
        reason:
          'Recordings are fetched through presigned URLs the API hands out (each issue is in the API access log); a server-access-log bucket is listed under Not done yet in docs/calls.md.',
      },
    ]);

    // Knowledge bases (docs/knowledge-bases.md): originals, extracted text, chunks and indexes;
    // private, KMS-encrypted, TLS only. Objects of deleted sources and knowledge bases are
    // deleted by the API; noncurrent versions are not kept (no versioning) and incomplete
    // uploads are aborted after a day.
    this.knowledgeBaseBucket = new s3.Bucket(this, 'KnowledgeBaseBucket', {
      encryption: s3.BucketEncryption.KMS,
      encryptionKey: this.key,
      bucketKeyEnabled: true,
      blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
      enforceSSL: true,
      objectOwnership: s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
      removalPolicy: RemovalPolicy.RETAIN,
      lifecycleRules: [{ id: 'abort-incomplete-uploads', abortIncompleteMultipartUploadAfter: Duration.days(1) }],
      // Browsers PUT knowledge-base files to presigned upload URLs (create-knowledge-base-upload).
      ...uploadCors,
    });
    NagSuppressions.addResourceSuppressions(this.knowledgeBaseBucket, [
      {
        id: 'AwsSolutions-S1',
        reason: 'Knowledge-base files are fetched through presigned URLs the API hands out (each in the API access log); a server-access-log bucket is listed under Not done yet in docs/knowledge-bases.md.',
      },
    ]);

    const resources: ParleyResources = {
      table: this.table,
      key: this.key,
      webhookQueue: this.webhookQueue,
      callStepsQueue: this.callStepsQueue,
      contactJobsQueue: this.contactJobsQueue,
      exportJobsQueue: this.exportJobsQueue,
      integrationJobsQueue: this.integrationJobsQueue,
      kbJobsQueue: this.kbJobsQueue,
      vendorSecret: this.vendorSecret,
      recordingsBucket: this.recordingsBucket,
      knowledgeBaseBucket: this.knowledgeBaseBucket,
    };

    // The API first: its endpoint is the functions' PUBLIC_BASE_URL unless one is given.
    const { api, stage: apiStage } = this.httpApi(props.apiThrottle);
    this.api = api;
    this.stage = apiStage;
    const publicUrl = this.customDomain(apiStage);
    // The WebSocket monitor (docs/calls.md, Live calls): its function first, then its API in a
    // nested stack; every other function learns where to push from the API's stage.
    const baseEnvironment = settingsEnvironment(settings, publicUrl ?? api.apiEndpoint);
    this.liveMonitorFunction = new ParleyFunction(this, 'LiveWsFunction', {
      entry: `${FUNCTIONS_DIR}${LIVE_MONITOR_FUNCTION}.ts`,
      description: 'Parley WebSocket monitors: authorizer, connect, disconnect, sync',
      resources,
      access: LIVE_MONITOR_ACCESS,
      files: LIVE_MONITOR_FILES,
      memorySize: LIVE_MONITOR_SIZE.memoryMb,
      timeout: Duration.seconds(LIVE_MONITOR_SIZE.timeoutSeconds!),
      logGroupName: this.logGroupName(LIVE_MONITOR_FUNCTION),
      // No LIVE_WS_*: the function is the API's target, and finds its management endpoint in each event.
      environment: baseEnvironment,
      reservedConcurrency: reserved?.[LIVE_MONITOR_FUNCTION],
    });
    this.liveMonitor = new LiveMonitorStack(this, 'LiveMonitor', { handler: this.liveMonitorFunction.live, apiName: scopedName(stage, 'live') });
    // Fixed egress (opt-in): the addresses are every function's EGRESS_IP_ADDRESSES (GET /workspace/egress).
    if (contextValue(this, 'fixedEgress') === true) {
      const natGateways = Number(contextValue(this, 'fixedEgressNatGateways') ?? DEFAULT_EGRESS_NAT_GATEWAYS);
      this.egress = new FixedEgress(this, 'Egress', { natGateways });
      new CfnOutput(this, 'EgressAddresses', { value: this.egress.addressList(), description: 'Fixed egress addresses customers allowlist (EGRESS_IP_ADDRESSES)' });
    }
    const network = (name: FunctionName) =>
      this.egress && EGRESS_FUNCTIONS.includes(name) ? { vpc: this.egress.vpc, securityGroup: this.egress.securityGroup } : undefined;
    const environment = {
      ...baseEnvironment,
      LIVE_WS_MANAGEMENT_URL: this.liveMonitor.managementUrl,
      LIVE_WS_URL: this.liveMonitor.url,
      ...(this.egress ? { EGRESS_IP_ADDRESSES: this.egress.addressList() } : {}),
    };

    for (const domain of DOMAINS) {
      this.domainFunctions[domain] = new ParleyFunction(this, `${pascal(domain)}Function`, {
        entry: `${FUNCTIONS_DIR}${domain}.ts`,
        description: `Parley ${domain} routes`,
        resources,
        access: DOMAIN_ACCESS[domain],
        memorySize: DOMAIN_SIZES[domain].memoryMb,
        timeout: Duration.seconds(DOMAIN_SIZES[domain].timeoutSeconds!),
        logGroupName: this.logGroupName(domain),
        files: DOMAIN_FILES[domain],
        directories: DOMAIN_DIRECTORIES[domain],
        workers: DOMAIN_WORKERS[domain],
        environment,
        reservedConcurrency: reserved?.[domain],
        network: network(domain),
      });
    }
    const jobs = props.jobs ?? JOBS;
    for (const job of jobs) {
      this.backgroundFunctions[job.name] = new ParleyFunction(this, `${pascal(job.name)}Function`, {
        entry: `${FUNCTIONS_DIR}${job.name}.ts`,
        description: job.description,
        timeout: Duration.seconds(job.timeoutSeconds),
        memorySize: JOB_MEMORY_MB[job.name],
        logGroupName: this.logGroupName(job.name),
        resources,
        access: JOB_ACCESS[job.name],
        files: JOB_FILES[job.name],
        workers: JOB_WORKERS[job.name],
        environment,
        reservedConcurrency: reserved?.[job.name],
        network: network(job.name),
      });
    }

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
        network: this.egress ? { vpc: this.egress.vpc, securityGroup: this.egress.securityGroup } : undefined,
        logGroupName: `/parley/${stage}/voice-worker`,
      });
    }

    for (const pusher of [this.domainFunctions.calls, ...Object.values(this.backgroundFunctions)]) {
      this.liveMonitor.grantManageConnections(pusher);
    }
    // The API's own function cannot name the API (the API names it: a cycle), so its grant names the stage.
    this.liveMonitorFunction.addToRolePolicy(
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

    const webhookMaxConcurrency = Number(contextValue(this, 'webhookMaxConcurrency') ?? WEBHOOK_MAX_CONCURRENCY);
    const callStepsReserved = reserved?.['call-steps'];
    if (callStepsReserved !== undefined && callStepsReserved < CALL_STEPS_MAX_CONCURRENCY) {
      throw new Error(
        `The call-steps function's reserved concurrency (${callStepsReserved}) is below its event source's maximum concurrency (${CALL_STEPS_MAX_CONCURRENCY}): the event source would be throttled.`,
      );
    }
    const webhookReserved = reserved?.['webhook-delivery'];
    if (!Number.isInteger(webhookMaxConcurrency) || webhookMaxConcurrency < 2 || webhookMaxConcurrency > 1000) {
      throw new Error(`webhookMaxConcurrency must be a whole number from 2 to 1000, not ${webhookMaxConcurrency}`);
    }
    if (webhookReserved !== undefined && webhookReserved < webhookMaxConcurrency) {
      throw new Error(
        `The webhook-delivery function's reserved concurrency (${webhookReserved}) is below webhookMaxConcurrency (${webhookMaxConcurrency}): the event source would be throttled. Raise the one or lower the other.`,
      );
    }
    // Batches of 10 for the short steps, 5 for contacts steps, 1 for the long whole-job messages.
    this.consume('webhook-delivery', this.webhookQueue, 10, webhookMaxConcurrency);
    this.consume('call-steps', this.callStepsQueue, 10, CALL_STEPS_MAX_CONCURRENCY);
    this.consume('contact-jobs', this.contactJobsQueue, 5, CONTACT_JOBS_MAX_CONCURRENCY);
    this.consume('export-jobs', this.exportJobsQueue, 1, EXPORT_JOBS_MAX_CONCURRENCY);
    this.consume('integration-jobs', this.integrationJobsQueue, 1, INTEGRATION_JOBS_MAX_CONCURRENCY);
    this.consume('kb-jobs', this.kbJobsQueue, 1, KB_JOBS_MAX_CONCURRENCY);
    // Messages a schedule sends to a queue job (shared/jobs.ts scheduledMessages): the daily
    // retention sweep and the knowledge bases' daily auto refresh; the concurrency sweep every minute.
    this.scheduleMessages(jobs, { 'export-jobs': this.exportJobsQueue, 'kb-jobs': this.kbJobsQueue, 'call-steps': this.callStepsQueue });

    // Lambda retries a failed asynchronous invocation twice by itself. The minute jobs are
    // not retried (the next minute's run does the same work, under the same lease), and an
    // invocation older than its minute is dropped. A missed billing hour is not made up by
    // the next run, so billing keeps Lambda's two retries, and what still fails goes to an
    // alarmed queue for an operator to re-run.
    for (const job of jobs) {
      if (job.trigger.kind !== 'schedule' || !job.live) continue;
      const { retries } = job.trigger;
      this.schedule(`${pascal(job.name)}Schedule`, job.name, job.trigger.every === 'minute' ? Duration.minutes(1) : Duration.hours(1), {
        retryAttempts: retries.attempts,
        maxEventAge: Duration.seconds(retries.maxEventAgeSeconds),
        onFailure: retries.onFailure === 'alarmed-queue' ? this.billingFailures : undefined,
      });
    }

    // HttpLambdaIntegration would add a Lambda permission per route (hundreds of
    // resources); one integration per function plus one permission for the whole API.
    // Both name the function's `live` alias, which CodeDeploy moves between versions.
    const apiSourceArn = this.formatArn({ service: 'execute-api', resource: api.apiId, resourceName: '*/*' });
    for (const domain of DOMAINS) {
      const fn = this.domainFunctions[domain].live;
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

    // CORS preflights for every path, answered by the public function (docs/browser.md).
    const preflightRoute = new apigwv2.CfnRoute(this, 'PreflightRoute', {
      apiId: api.apiId,
      routeKey: PREFLIGHT_ROUTE_KEY,
      target: `integrations/${this.integrations.public.integrationId}`,
      authorizationType: 'NONE',
    });
    NagSuppressions.addResourceSuppressions(preflightRoute, [
      {
        id: 'AwsSolutions-APIG4',
        reason: 'CORS preflights carry no credentials by design (Fetch standard); the function only answers which origins public keys allow.',
      },
    ]);

    this.addRoutes(routes);
    this.throttleRoutes(routes, props.routeThrottles);

    this.monitoring = new Monitoring(this, 'Monitoring', {
      stage,
      functions: [
        ...DOMAINS.map((domain) => [domain, this.domainFunctions[domain]] as const),
        ...jobs.map((job) => [job.name, this.backgroundFunctions[job.name]] as const),
        [LIVE_MONITOR_FUNCTION, this.liveMonitorFunction] as const,
      ],
      workQueues: [
        { queue: this.webhookQueue, label: 'webhooks', maxAge: QUEUE_MAX_AGE.webhooks },
        { queue: this.callStepsQueue, label: 'call steps', maxAge: QUEUE_MAX_AGE.callSteps },
        { queue: this.contactJobsQueue, label: 'contact jobs', maxAge: QUEUE_MAX_AGE.contactJobs },
        { queue: this.exportJobsQueue, label: 'export jobs', maxAge: QUEUE_MAX_AGE.exportJobs },
        { queue: this.integrationJobsQueue, label: 'integration jobs', maxAge: QUEUE_MAX_AGE.integrationJobs },
        { queue: this.kbJobsQueue, label: 'kb jobs', maxAge: QUEUE_MAX_AGE.kbJobs },
      ],
      deadLetterQueues: [
        { queue: this.scheduleDeadLetters, label: 'schedule', onFirstMessage: 'EventBridge could not invoke a scheduled Parley job' },
        { queue: this.billingFailures, label: 'billing failures', onFirstMessage: 'An hourly billing run failed after its retries' },
        { queue: this.callStepsDeadLetters, label: 'call steps', onFirstMessage: 'A call step failed five times; its call is stuck' },
        { queue: this.contactJobsDeadLetters, label: 'contact jobs', onFirstMessage: 'A contacts job step failed five times; its job stopped' },
        { queue: this.exportJobsDeadLetters, label: 'export jobs', onFirstMessage: 'An account-data job (export, erase, retention) failed three times' },
        { queue: this.integrationJobsDeadLetters, label: 'integration jobs', onFirstMessage: 'A CRM sync step failed five times; its job stopped' },
        { queue: this.kbJobsDeadLetters, label: 'kb jobs', onFirstMessage: 'A knowledge-base ingestion failed five times; its knowledge base is in error' },
        // A failed delivery is recorded on the webhook log; its dead letters are for a look, watched by age only.
        { queue: this.webhookDeadLetters, label: 'webhooks' },
      ],
      api,
      table: this.table,
      indexNames: tableDefinition.globalSecondaryIndexes.map((index) => index.indexName),
      scheduleRules: this.scheduleRules,
      accountConcurrency: Number(contextValue(this, 'accountConcurrency') ?? DEFAULT_ACCOUNT_CONCURRENCY),
      alarmTopicArn: this.settings.alarmTopicArn,
      alarmEmails: this.settings.alarmEmails,
      voiceWorker: this.voiceWorker,
    });
    this.alarms.push(...this.monitoring.alarms);
    this.safeDeploys();

    new CfnOutput(this, 'KnowledgeBaseBucketName', { value: this.knowledgeBaseBucket.bucketName, description: 'Knowledge bases (KNOWLEDGE_BASE_BUCKET)' });
    new CfnOutput(this, 'RecordingsBucketName', { value: this.recordingsBucket.bucketName, description: 'Call recordings (RECORDINGS_BUCKET)' });
    new CfnOutput(this, 'ApiUrl', { value: publicUrl ?? apiStage.url, description: 'Parley API base URL' });
    new CfnOutput(this, 'ApiId', { value: api.apiId, description: 'The HTTP API\'s ID (for a "Routes per API" quota raise)' });
    new CfnOutput(this, 'TableName', { value: this.table.tableName, description: 'The table (TABLE_NAME for the CLI)' });
    new CfnOutput(this, 'KeyArn', { value: this.key.keyArn, description: 'The KMS key (KMS_KEY_ID for the CLI)' });
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn, description: 'Subscribe to get the alarms (docs/operations.md)' });
    new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName, description: 'The CloudWatch dashboard' });
    if (this.voiceWorker) {
      new CfnOutput(this, 'VoiceWorkerCluster', { value: this.voiceWorker.cluster.clusterName, description: 'The voice worker\'s ECS cluster (docs/operations.md, The voice worker)' });
      new CfnOutput(this, 'VoiceWorkerService', { value: this.voiceWorker.service.serviceName, description: 'The voice worker\'s ECS service' });
    }
    if (this.domainName) {
      new CfnOutput(this, 'ApiDomainTarget', { value: this.domainName.regionalDomainName, description: 'Where the custom domain\'s DNS record points (done for you with hostedZoneId)' });
    }
  }

  /** Log groups are named by stage, so two stages in one account never collide and operators find them. */
  private logGroupName(name: FunctionName): string {
    return `/parley/${this.settings.stage}/${name}`;
  }

  /**
   * Every function deploys through CodeDeploy: a change publishes a version, and the `live`
   * alias moves to it by the stage's strategy (canary in prod, all at once in dev), rolling
   * back when the function's error alarm fires meanwhile. One application and one service
   * role for all groups; the role gets an inline policy on these functions only, rather than
   * AWSCodeDeployRoleForLambdaLimited's `*` (the group is handed an immutable reference, so
   * CDK cannot attach the managed policy).
   */
  private safeDeploys(): void {
    const application = new codedeploy.LambdaApplication(this, 'DeployApplication');
    const role = new iam.Role(this, 'DeployRole', {
      assumedBy: new iam.ServicePrincipal('codedeploy.amazonaws.com'),
      description: 'CodeDeploy shifting Parley functions\' live aliases',
    });
    const functions: [FunctionName, ParleyFunction][] = [
      ...(Object.entries(this.domainFunctions) as [FunctionName, ParleyFunction][]),
      ...(Object.entries(this.backgroundFunctions) as [FunctionName, ParleyFunction][]),
      [LIVE_MONITOR_FUNCTION, this.liveMonitorFunction],
    ];
    role.addToPolicy(
      new iam.PolicyStatement({
        actions: ['lambda:GetAlias', 'lambda:UpdateAlias', 'lambda:GetProvisionedConcurrencyConfig'],
        resources: functions.map(([, fn]) => `${fn.functionArn}:${fn.live.aliasName}`),
      }),
    );
    role.addToPolicy(new iam.PolicyStatement({ actions: ['cloudwatch:DescribeAlarms'], resources: ['*'] }));
    NagSuppressions.addResourceSuppressions(
      role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason: 'cloudwatch:DescribeAlarms takes no resource: CodeDeploy reads the rollback alarms\' states during a deployment.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
    const deployRole = iam.Role.fromRoleArn(this, 'DeployRoleReference', role.roleArn, { mutable: false });
    const config = DEPLOYMENT_CONFIGS[this.settings.deployment];
    for (const [name, fn] of functions) {
      this.deploymentGroups[name] = new codedeploy.LambdaDeploymentGroup(this, `${pascal(name)}Deployment`, {
        application,
        alias: fn.live,
        deploymentConfig: config,
        role: deployRole,
        alarms: [this.monitoring.errorAlarms.get(name)!],
        autoRollback: { failedDeployment: true, stoppedDeployment: true, deploymentInAlarm: true },
      });
      this.deploymentGroups[name].node.addDependency(role);
    }
  }

  /**
   * The API on a custom domain (context domainName and certificateArn; hostedZoneId and
   * zoneName for the Route 53 alias record): an API mapping of the $default stage, and the
   * execute-api endpoint switched off so the domain is the only way in. Returns its URL.
   */
  private customDomain(apiStage: apigwv2.HttpStage): string | undefined {
    const domain = this.settings.customDomain;
    if (!domain) return undefined;
    const domainName = new apigwv2.DomainName(this, 'ApiDomain', {
      domainName: domain.domainName,
      certificate: acm.Certificate.fromCertificateArn(this, 'ApiCertificate', domain.certificateArn),
      securityPolicy: apigwv2.SecurityPolicy.TLS_1_2,
    });
    (this as { domainName?: apigwv2.DomainName }).domainName = domainName;
    new apigwv2.ApiMapping(this, 'ApiMapping', { api: this.api, domainName, stage: apiStage });
    (this.api.node.defaultChild as apigwv2.CfnApi).disableExecuteApiEndpoint = true;
    if (domain.hostedZoneId && domain.zoneName) {
      const zone = route53.HostedZone.fromHostedZoneAttributes(this, 'ApiZone', { hostedZoneId: domain.hostedZoneId, zoneName: domain.zoneName });
      const target = route53.RecordTarget.fromAlias(new route53Targets.ApiGatewayv2DomainProperties(domainName.regionalDomainName, domainName.regionalHostedZoneId));
      new route53.ARecord(this, 'ApiAliasRecord', { zone, recordName: domain.domainName, target });
      new route53.AaaaRecord(this, 'ApiAliasRecordIpv6', { zone, recordName: domain.domainName, target });
    }
    return `https://${domain.domainName}`;
  }

  /**
   * An EventBridge rule invoking a background function, with the function's asynchronous
   * invocation settings. The rule's own retries and dead-letter queue cover only failing to
   * hand the event to Lambda; once handed over, `retries` decides.
   */
  private schedule(
    id: string,
    name: BackgroundName,
    every: Duration,
    retries: { retryAttempts: number; maxEventAge: Duration; onFailure?: sqs.IQueue },
  ): void {
    const fn = this.backgroundFunctions[name].live;
    fn.configureAsyncInvoke({
      retryAttempts: retries.retryAttempts,
      maxEventAge: retries.maxEventAge,
      onFailure: retries.onFailure ? new SqsDestination(retries.onFailure) : undefined,
    });
    if (!retries.onFailure) {
      NagSuppressions.addResourceSuppressions(
        fn,
        [
          {
            id: 'Serverless-LambdaAsyncFailureDestination',
            reason: 'A minute job is neither retried nor kept: the next minute\'s run does the same work under the same lease, and a failure shows on the function\'s error alarm.',
          },
        ],
        true,
      );
    }
    const rule = new events.Rule(this, id, {
      schedule: events.Schedule.rate(every),
      targets: [
        new targets.LambdaFunction(fn, {
          retryAttempts: retries.retryAttempts,
          maxEventAge: retries.maxEventAge,
          deadLetterQueue: this.scheduleDeadLetters,
        }),
      ],
    });
    this.scheduleRules.push(rule);
  }

  /**
   * An EventBridge rule per scheduled message of a live queue job, sending it (with the
   * firing's time as `scheduled_at`) to the job's queue; EventBridge's own retries, then the
   * schedules' alarmed dead letters. The queue's consumer does the rest as for any message.
   */
  private scheduleMessages(jobs: readonly JobSpec[], queues: Partial<Record<JobName, sqs.IQueue>>): void {
    for (const job of jobs) {
      if (!job.live) continue;
      for (const scheduled of job.scheduledMessages ?? []) {
        const queue = queues[job.name];
        if (!queue) throw new Error(`${job.name} has a scheduled message (${scheduled.name}) but no queue to send it to`);
        new events.Rule(this, `${pascal(job.name)}${pascal(scheduled.name)}Schedule`, {
          description: scheduled.description,
          schedule:
            scheduled.every === 'minute'
              ? events.Schedule.rate(Duration.minutes(1))
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

  /**
   * A queue job's queue and its dead letters, `<id>Queue` and `<id>DeadLetters`. SQS-managed
   * encryption: a KMS key here would need kms:GenerateDataKey/Decrypt on the envelope key for
   * every producer and consumer. The visibility timeout is six function timeouts (AWS's
   * guidance for Lambda consumers), so retries of a throttled batch do not make messages
   * visible again mid-processing.
   */
  private jobQueue(id: string, job: JobName, maxReceiveCount: number): { queue: sqs.Queue; deadLetters: sqs.Queue } {
    const deadLetters = new sqs.Queue(this, `${id}DeadLetters`, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(14),
    });
    NagSuppressions.addResourceSuppressions(deadLetters, [DEAD_LETTERS_HAVE_NO_REDRIVE]);
    const queue = new sqs.Queue(this, `${id}Queue`, {
      encryption: sqs.QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      visibilityTimeout: Duration.seconds(jobNamed(job).timeoutSeconds * 6),
      deadLetterQueue: { queue: deadLetters, maxReceiveCount },
    });
    return { queue, deadLetters };
  }

  /** The job's function consumes its queue, reporting the messages of a batch that failed. */
  private consume(job: JobName, queue: sqs.Queue, batchSize: number, maxConcurrency: number): void {
    const alias = this.backgroundFunctions[job].live;
    alias.addEventSource(new SqsEventSource(queue, { batchSize, reportBatchItemFailures: true, maxConcurrency }));
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

  /** Reservations by function (props, else context `reservedConcurrency`, over the defaults), checked against the account. */
  private reservedConcurrency(
    given: ParleyStackProps['reservedConcurrency'],
  ): Record<FunctionName, number> | undefined {
    const overrides = given ?? contextValue(this, 'reservedConcurrency') ?? {};
    if (overrides === false) return undefined;
    if (typeof overrides !== 'object' || Array.isArray(overrides)) {
      throw new Error('reservedConcurrency must be false or an object of function name → executions, e.g. {"agents":200}');
    }
    const reserved = { ...DEFAULT_RESERVED_CONCURRENCY };
    for (const [name, value] of Object.entries(overrides as Record<string, unknown>)) {
      if (!(name in reserved)) {
        throw new Error(`reservedConcurrency names ${name}, which is not a Parley function (${Object.keys(reserved).join(', ')})`);
      }
      if (!Number.isInteger(value) || (value as number) < 1) {
        throw new Error(`reservedConcurrency.${name} must be a whole number of executions, at least 1`);
      }
      reserved[name as FunctionName] = value as number;
    }
    const account = Number(contextValue(this, 'accountConcurrency') ?? DEFAULT_ACCOUNT_CONCURRENCY);
    const total = Object.values(reserved).reduce((sum, value) => sum + value, 0);
    if (total > account - UNRESERVED_CONCURRENCY_MINIMUM) {
      throw new Error(
        `Parley's functions would reserve ${total} concurrent executions, but an account with ${account} (context accountConcurrency) ` +
          `must keep ${UNRESERVED_CONCURRENCY_MINIMUM} unreserved, so the deploy would fail. Lower reservedConcurrency, ` +
          'raise the account\'s "Concurrent executions" quota and pass -c accountConcurrency=<new>, or pass -c reservedConcurrency=false.',
      );
    }
    return reserved;
  }

  /** Fails the synth when the API would exceed API Gateway's "Routes per API" quota. */
  private checkRouteQuota(routes: readonly ServedRoute[], given: number | undefined): void {
    const quota = Number(given ?? contextValue(this, 'routesPerApiQuota') ?? DEFAULT_ROUTES_PER_API_QUOTA);
    if (!Number.isInteger(quota) || quota < 1) throw new Error(`routesPerApiQuota must be a whole number, not ${quota}`);
    // The route table's keys plus $default and the preflight route.
    const count = routes.length + 2;
    if (count > quota) {
      throw new Error(
        `The HTTP API would have ${count} routes (${routes.length} from the route table plus $default and ${PREFLIGHT_ROUTE_KEY}), more than ` +
          `routesPerApiQuota (${quota}), API Gateway's "Routes per API" quota, so the deploy would fail. ` +
          `Ask for a higher "Routes per API" quota for this API in Service Quotas (API Gateway, in the stack's region; ` +
          `the raise applies to an API that already exists), and once it is granted deploy with ` +
          `-c routesPerApiQuota=<the new quota> (or set it in cdk.json's "context"). See README, Deploy with CDK.`,
      );
    }
  }

  /**
   * Per-route throttles for routes with a `throttle` class. The stage names the routes by
   * key, so it is updated after the nested stacks that create them.
   */
  private throttleRoutes(routes: readonly ServedRoute[], given: ParleyStackProps['routeThrottles']): void {
    const fromContext = (contextValue(this, 'routeThrottle') ?? {}) as Partial<Record<ThrottleClass, Throttle>>;
    const limits = {} as Record<ThrottleClass, Throttle>;
    for (const throttleClass of THROTTLE_CLASSES) {
      limits[throttleClass] = checkedThrottle(
        `routeThrottle.${throttleClass}`,
        given?.[throttleClass] ?? fromContext[throttleClass] ?? DEFAULT_ROUTE_THROTTLES[throttleClass],
      );
    }
    // RouteSettings is free-form JSON in the L1, so its keys are CloudFormation's own names.
    const routeSettings: Record<string, { ThrottlingRateLimit: number; ThrottlingBurstLimit: number }> = {};
    for (const route of routes) {
      if (!route.route.throttle) continue;
      const limit = limits[route.route.throttle];
      routeSettings[route.key] = { ThrottlingRateLimit: limit.rateLimit, ThrottlingBurstLimit: limit.burstLimit };
    }
    if (Object.keys(routeSettings).length === 0) return;
    (this.stage.node.defaultChild as apigwv2.CfnStage).routeSettings = routeSettings;
    for (const routeStack of this.routeStacks) this.stage.node.addDependency(routeStack);
  }

  private httpApi(given: Throttle | undefined): { api: apigwv2.HttpApi; stage: apigwv2.HttpStage } {
    const api = new apigwv2.HttpApi(this, 'Api', {
      apiName: scopedName(this.settings.stage),
      description: 'Parley: Retell-compatible REST API',
      createDefaultStage: false,
      // No corsPreflight: API Gateway's CORS would replace every function's CORS headers with
      // one list, and the browser routes answer only the origins public keys allow. The
      // functions set CORS headers themselves, and `OPTIONS /{proxy+}` (below) goes to the
      // public function (shared/platform/http/cors.ts, docs/browser.md).
    });
    const accessLogs = new logs.LogGroup(this, 'ApiAccessLogs', { retention: logs.RetentionDays.ONE_MONTH, logGroupName: `/parley/${this.settings.stage}/api-access` });
    const stage = new apigwv2.HttpStage(this, 'DefaultStage', {
      httpApi: api,
      stageName: '$default',
      autoDeploy: true,
      throttle: checkedThrottle('apiThrottle', given ?? (contextValue(this, 'apiThrottle') as Throttle | undefined) ?? DEFAULT_API_THROTTLE),
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
            // The integration's own answer: the function's status, the Lambda
            // service's error, and the time Lambda took, beside API Gateway's view above.
            integrationStatus: '$context.integration.status',
            integrationServiceError: '$context.integration.error',
            integrationServiceLatencyMs: '$context.integration.latency',
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

function checkedThrottle(name: string, throttle: Throttle): Throttle {
  const { rateLimit, burstLimit } = throttle ?? {};
  if (!(typeof rateLimit === 'number' && rateLimit > 0) || !(Number.isInteger(burstLimit) && burstLimit >= 1)) {
    throw new Error(`${name} must be {"rateLimit": <requests a second, above 0>, "burstLimit": <whole number, at least 1>}`);
  }
  return { rateLimit, burstLimit };
}
