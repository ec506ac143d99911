import { Duration } from 'aws-cdk-lib';
import { BATCH_DUE_SHARDS } from '../shared/batches/shards.ts';
import type { JobName } from '../shared/jobs.ts';
import type { Domain } from '../shared/platform/http/route.ts';
import { EXTRACT_WORKER_NAME } from '../shared/knowledge-bases/extract.ts';
import { invokedRouteGroups } from '../shared/conductor/tools/catalog.ts';
import type { WorkerEntries } from './bundling.ts';
import { chatExecutions, SCALE_TARGET } from './scale.ts';
import type { ParleyAccess, QueueResource } from './parley-function.ts';

/**
 * The function manifest: one entry per Lambda function, holding every fact the stack
 * deploys it with. Adding a function is `functions/<name>.ts`, its code under
 * `shared/<domain>/`, and one entry here; nothing else in lib/ names a function
 * (test/cdk/manifest.test.ts holds the three together and the template to the entries).
 *
 * Three names, each meaning one thing:
 * - `name`: the function. Its handler is `functions/<name>.ts`; its construct ID
 *   (`<Name>Function`, hence its logical IDs), log group (`/parley/<stage>/<name>`),
 *   `reservedConcurrency` override key and alarms are all named from it.
 * - `domain`: the `shared/<domain>/` folder whose code the function runs. Several functions
 *   may share one (agents, flows and chat-agents all run shared/agents; the jobs run their
 *   feature's folder).
 * - `routeGroup` (HTTP functions only): the route table's `domain` field
 *   (shared/platform/http/route.ts DOMAINS) whose routes API Gateway sends to the function.
 *   It equals `name`; it need not equal `domain` (the flows routes live in shared/agents).
 *
 * Jobs keep their runtime facts (trigger kind, schedule, timeout, retries, scheduled
 * messages) in shared/jobs.ts, because the local runtime runs the same jobs and cannot
 * import CDK; an entry here names its job and adds what only a deploy needs (memory,
 * grants, the queue's redrive and scaling, the age alarm).
 */

/** API Gateway gives up on an integration after 30 s, so an HTTP function must stop just before. */
export const API_TIMEOUT_CEILING_SECONDS = 29;

/**
 * libphonenumber's metadata, read on first use by shared/platform/telephony/phone.ts (a JSON file
 * rather than 150 KB of bundled JavaScript parsed at every cold start). Every function
 * whose bundle holds phone.ts ships it: test/cdk/grants-match-code checks.
 */
export const PHONE_METADATA_FILE = 'node_modules/libphonenumber-js/metadata.max.json';

/**
 * The knowledge-base extraction worker (shared/knowledge-bases/extract.ts starts it), built
 * beside the bundle of every function that bundles its starter: the ingestion job, and the
 * knowledge-bases function, whose bundle holds the ingestion module (test/cdk/grants-match-code checks).
 */
export const EXTRACT_WORKER: WorkerEntries = { [EXTRACT_WORKER_NAME]: 'shared/knowledge-bases/extract-worker.ts' };

/** The WebSocket monitor's function (functions/live-ws.ts): the WebSocket API's authorizer and routes. */
export const LIVE_MONITOR_FUNCTION = 'live-ws';

export type FunctionName = Domain | JobName | typeof LIVE_MONITOR_FUNCTION;

/**
 * A queue job's queue, with its dead letters (`<id>Queue`, `<id>DeadLetters`). The message
 * format and the producers are the job's; this is how SQS and Lambda are set up around it.
 */
export interface JobQueueSpec {
  /** The queue's name among the shared resources (ParleyResources; the grants in `access` use the same). */
  resource: QueueResource;
  /** The construct ID stem of the queue and its dead letters (their logical IDs: never rename). */
  id: string;
  /** Receives before a message goes to the dead letters. */
  maxReceiveCount: number;
  /** Messages a Lambda invocation gets at once. */
  batchSize: number;
  /**
   * Concurrent executions the event source may use: at most the function's reservation, or
   * its own polling would be throttled (a throttled batch comes back only after the
   * visibility timeout). The synth refuses a reservation below it.
   */
  maxConcurrency: number;
  /** A context key that overrides maxConcurrency (checked from 2 to 1,000). */
  maxConcurrencyContext?: string;
  /** For alarm descriptions and the dashboard: "webhooks", "call steps". */
  label: string;
  /** How long the oldest message may wait before the queue's age alarm fires (docs/operations.md). */
  maxAge: Duration;
  /** Alarm on the dead letters' first message, saying this; without it only their age is watched. */
  deadLetterAlarm?: string;
}

/** What invokes a function. */
type FunctionTrigger =
  /**
   * API Gateway, for every route of the route table whose `domain` is routeGroup; `catchAll`:
   * also the $default route (requests no route matches); `preflight`: also every path's
   * CORS preflight (`OPTIONS /{proxy+}`). One function each.
   */
  | { kind: 'routes'; routeGroup: Domain; catchAll?: true; preflight?: true }
  /** A queue job (shared/jobs.ts, trigger `queue`): its SQS queue's event source. */
  | { kind: 'queue'; queue: JobQueueSpec }
  /** A scheduled job (shared/jobs.ts, trigger `schedule`): an EventBridge rule at its rate. */
  | { kind: 'schedule' }
  /** The WebSocket monitor's API (lib/live-monitor-stack.ts): authorizer and routes. */
  | { kind: 'websocket' };

export interface FunctionSpec {
  /** functions/<name>.ts; see the module comment. */
  name: FunctionName;
  /** The shared/<domain>/ folder whose code it runs; see the module comment. */
  domain: string;
  trigger: FunctionTrigger;
  /** The function's description; HTTP functions default to `Parley <routeGroup> routes`, jobs to shared/jobs.ts's. */
  description?: string;
  /** Memory in MB; CPU comes in proportion (1,769 MB is one vCPU). See FUNCTION SIZES below. */
  memoryMb: number;
  /** HTTP and WebSocket functions only: a job's timeout is its shared/jobs.ts timeoutSeconds. */
  timeoutSeconds?: number;
  /**
   * Executions reserved for (and capping) the function (context `reservedConcurrency`
   * overrides by name, or false for none). It guarantees each function its share and caps
   * it, so a flood of one kind of request cannot take the concurrency every other function
   * needs. Sized for ~100 ms requests (40 executions serve ~400 requests a second); the
   * functions whose load grows with calls and chats (calls, calls-media, webhook-delivery,
   * chats, public) from the platform's target (lib/scale.ts, docs/scale.md), so the sum needs a raised "Concurrent executions" quota:
   * synth checks it against context `accountConcurrency` (AWS keeps 100 unreserved).
   */
  reservedConcurrency: number;
  /** What it may touch (least privilege; test/cdk/grants-match-code holds it to the bundle). */
  access: ParleyAccess;
  /** Project files shipped beside the bundle (read when needed rather than parsed at every cold start). */
  files?: readonly string[];
  /** Project folders shipped beside the bundle, source → name. */
  directories?: Readonly<Record<string, string>>;
  /** Worker scripts built beside the bundle (lib/bundling.ts). */
  workers?: WorkerEntries;
  /**
   * It calls customers' and vendors' servers, so fixed egress (context `fixedEgress: true`,
   * lib/fixed-egress.ts) puts it behind the NAT gateways' Elastic IPs. Functions without it
   * reach only AWS (and Twilio, Stripe, ElevenLabs, which allowlist nothing of ours).
   */
  egress?: true;
  /** It writes calls, so it pushes their updates to WebSocket monitors (execute-api:ManageConnections on the live API). */
  pushesLiveUpdates?: true;
  /**
   * It runs API requests as their caller through these route groups' functions (the
   * assistant's tools, shared/platform/aws/route-invoke.ts): lambda:InvokeFunction on exactly
   * their `live` aliases, and ROUTE_FUNCTION_NAMES naming them (lib/parley-stack.ts).
   */
  invokesRoutes?: readonly Domain[];
}

/*
 * FUNCTION SIZES. Lambda gives CPU in proportion to memory, so memory buys cold-start and
 * parsing speed as well as room. The reasoning for each number is in docs/operations.md,
 * "Function sizes"; in short:
 *
 * - Database-only functions (configuration read and written at human speed): 512 MB, 10 s.
 *   A request is a few DynamoDB calls, each bounded by AWS_REQUEST_TIMEOUT_MS (3 s) and two
 *   tries, so a store outage answers 503 in about 6.5 s; 10 s is never the limit that hits.
 * - Functions that wait on a vendor or on an address the caller chose (language models,
 *   telephony, Stripe, identity providers, outbound tests up to 10 s, a dial's CPS wait up
 *   to 5 s): 29 s, just under API Gateway's 30 s; 512 MB when they only wait, 1,024 MB
 *   when they also parse or hold much (the conversation runtime, CSV and file uploads).
 * - Jobs: the timeout is the job's own (shared/jobs.ts); memory from what one message holds:
 *   the token refresh is small (256 MB); the batch loop runs one shard's passes an
 *   invocation and marshals their dials' writes (1,024 MB); ingestion of up to 50 MB files
 *   (PDF.js) and the index build take 2,048 MB.
 *
 * Checked against one measured run (`npm run measure:functions`, docs/operations.md
 * "Function sizes"): every peak RSS was 63–174 MB, so none is too small; live-ws and
 * integration-jobs were not measured.
 */
const DATABASE_ONLY = { memoryMb: 512, timeoutSeconds: 10 } as const;
const WAITS_ON_VENDORS = { memoryMb: 512, timeoutSeconds: API_TIMEOUT_CEILING_SECONDS } as const;
const HEAVY = { memoryMb: 1024, timeoutSeconds: API_TIMEOUT_CEILING_SECONDS } as const;

const routes = (routeGroup: Domain): FunctionTrigger => ({ kind: 'routes', routeGroup });
const SCHEDULE: FunctionTrigger = { kind: 'schedule' };

/**
 * Every function, HTTP functions first in the route table's domain order, then the jobs in
 * shared/jobs.ts's order, then the WebSocket monitor: the order of the alarms, the
 * dashboard and the deploy role's statement (reordering changes the template, not what it deploys).
 */
export const FUNCTIONS: readonly FunctionSpec[] = [
  {
    name: 'account',
    domain: 'account',
    trigger: routes('account'),
    // Keys, workspace, audit log; test-webhook waits on the customer's endpoint (outbound, up to 10 s).
    ...WAITS_ON_VENDORS,
    reservedConcurrency: 40,
    // Issuing keys seals their values; the test webhook opens the webhook key to sign.
    access: { table: 'readWrite', key: ['generateDataKey', 'decrypt'] },
  },
  {
    name: 'agents',
    domain: 'agents',
    trigger: routes('agents'),
    ...DATABASE_ONLY,
    // Configuration at human speed: 53 leaves room for contacts, the live monitor, billing (5),
    // account-data (5, with export-jobs 2), integrations (3, with integration-jobs 2), members
    // (5) and knowledge bases (5, with kb-jobs 2) within the 450 the functions not sized from
    // the target (all but calls, calls-media, chats, public and webhook-delivery) may share.
    reservedConcurrency: 53,
    // A batch test's runs go to the call-steps queue (shared/testing: the conversation engine's consumer runs them).
    access: { table: 'readWrite', callStepsQueue: ['send'] },
  },
  {
    name: 'agent-tools',
    domain: 'agent-tools',
    trigger: routes('agent-tools'),
    // Agent generation, copilot and workflow tests: language-model turns and outbound tests.
    ...HEAVY,
    // Outbound tests and language-model calls hold an execution for seconds.
    reservedConcurrency: 40,
    // generate-agent, copilot and workflow tests read the language-model credentials.
    access: { table: 'readWrite', vendorSecret: 'read' },
    egress: true,
  },
  {
    name: 'flows',
    // Conversation flows are agents' configuration: their routes live in shared/agents.
    domain: 'agents',
    trigger: routes('flows'),
    ...DATABASE_ONLY,
    reservedConcurrency: 40,
    access: { table: 'readWrite' },
  },
  {
    name: 'chat-agents',
    // Chat agents share the agents' fields and versions (shared/agents).
    domain: 'agents',
    trigger: routes('chat-agents'),
    ...DATABASE_ONLY,
    // Chat agents are configuration, written at human speed.
    reservedConcurrency: 20,
    access: { table: 'readWrite' },
  },
  {
    name: 'voices',
    domain: 'voices',
    trigger: routes('voices'),
    // Cloning parses a multipart upload and waits on the voice vendor.
    ...HEAVY,
    reservedConcurrency: 20,
    // Cloning and community voices read the voice vendor's API key; voice samples past the
    // request limit are presigned uploads (uploads/* in the recordings bucket).
    access: { table: 'readWrite', vendorSecret: 'read', uploads: 'readWrite' },
  },
  {
    name: 'numbers',
    domain: 'numbers',
    trigger: routes('numbers'),
    // Twilio buys and releases, SIP connection tests.
    ...WAITS_ON_VENDORS,
    reservedConcurrency: 40,
    // Twilio credentials (buying, releasing, provisioning numbers) and sealed SIP trunk passwords;
    // test/cdk/grants-match-code holds it to the code.
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'] },
    files: [PHONE_METADATA_FILE],
  },
  {
    name: 'calls',
    domain: 'calls',
    trigger: routes('calls'),
    pushesLiveUpdates: true,
    // The largest bundle (the conversation runtime); a dial may wait 5 s for a CPS token, LiveKit and the model.
    ...HEAVY,
    // Keyed calls traffic (docs/scale.md): the busiest key's 1,667 requests a second at ~100 ms
    // hold 167 executions; 400 leaves as much again for every other tenant, and room for dials
    // waiting up to CPS_MAX_WAIT_MS (5 s) for a calls-per-second token (20 a second hold 100).
    // The media server's and the voice worker's requests run in calls-media, not here.
    reservedConcurrency: 400,
    // Calls queue their webhooks, read media (LiveKit) and language-model credentials, and
    // open the webhook key to sign custom function requests during a call's turns.
    // Call artifacts: recordings in the bucket, and the sealed unscrubbed copy (generateDataKey).
    // Knowledge bases: conversations retrieve from their indexes (shared/knowledge-bases, read only in practice).
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], webhookQueue: ['send'], callStepsQueue: ['send'], recordings: 'readWrite', knowledgeBases: 'readWrite' },
    files: [PHONE_METADATA_FILE],
    egress: true,
  },
  {
    name: 'calls-media',
    // LiveKit's webhooks, the voice worker's reports and retrievals: the calls engine's media paths.
    domain: 'calls',
    trigger: routes('calls-media'),
    pushesLiveUpdates: true,
    // The calls bundle's media paths: the conversation runtime (retrievals), inbound admission.
    ...HEAVY,
    // Sized for the target's 10,000 calls in progress (lib/scale.ts, docs/scale.md): reports
    // 5,000/s at ~100 ms (500), retrievals 2,000/s at ~200 ms (400), LiveKit webhooks 2,000/s
    // at ~100 ms (200). Its own pool: keyed API traffic cannot take it, nor it the API's.
    reservedConcurrency: 1100,
    // As for calls, whose media paths it runs: a worker's call end or a LiveKit event moves the
    // call (webhooks and steps queued, recordings and the sealed unscrubbed copy written),
    // inbound admission reads numbers and LiveKit credentials, retrievals read the indexes.
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], webhookQueue: ['send'], callStepsQueue: ['send'], recordings: 'readWrite', knowledgeBases: 'readWrite' },
    files: [PHONE_METADATA_FILE],
    egress: true,
  },
  {
    name: 'chats',
    domain: 'chats',
    trigger: routes('chats'),
    // A completion is a model turn (seconds), streamed.
    ...HEAVY,
    // Each turn holds an execution for the model's answer (lib/scale.ts, docs/scale.md): the
    // keyed share of the target's chat turns, 450 a second × 3 s = 1,350.
    reservedConcurrency: chatExecutions(SCALE_TARGET.chatTurnsPerSecond - SCALE_TARGET.publicChatTurnsPerSecond),
    // Chats run the agent's engine (language-model credentials), sign custom function requests
    // with the webhook key, and queue chat events.
    // Chats retrieve from their agents' knowledge bases (the indexes in the knowledge-base bucket).
    // App tools run through the integrations domain, whose refresh before use seals new tokens (generateDataKey).
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], webhookQueue: ['send'], knowledgeBases: 'readWrite' },
    // SMS chats check their numbers (shared/chats/sms/sms.ts, phone.ts).
    files: [PHONE_METADATA_FILE],
    egress: true,
  },
  {
    name: 'contacts',
    domain: 'contacts',
    trigger: routes('contacts'),
    // Imports of up to 1,000 rows in the request (CSV parsing), save-call summarises through the model.
    ...HEAVY,
    // Contacts are written at human speed or by imports and the backfill (queued, below).
    reservedConcurrency: 8,
    // save-call summarises through the language model (its credentials) after reading the call
    // from the table (getCall only: no call is placed here); a backfill is queued.
    // It reads calls through the calls domain's narrow entry (shared/calls/records/index.ts: no engine,
    // recordings or conversation runtime), so it holds neither bucket (test/cdk/grants-match-code).
    access: { table: 'readWrite', vendorSecret: 'read', contactJobsQueue: ['send'] },
    files: [PHONE_METADATA_FILE],
    // save-call's summaries go through the customer's language model.
    egress: true,
  },
  {
    name: 'batches',
    domain: 'batches',
    trigger: routes('batches'),
    // Creating a 10,000-task batch (CSV) writes for seconds.
    ...HEAVY,
    // Batch CRUD at human speed (creating a 10,000-task batch writes for seconds); 3 keeps those not sized from the target within 450.
    reservedConcurrency: 3,
    // Deleting a batch unlinks its calls; creating one reads numbers and agents. It reaches the
    // calls domain through its narrow entry (shared/calls/records/index.ts): batches are dialled by
    // batch-tick, not here, so no call-steps queue and neither bucket.
    access: { table: 'readWrite', vendorSecret: 'read', key: ['decrypt'], webhookQueue: ['send'] },
    files: [PHONE_METADATA_FILE],
  },
  {
    name: 'billing',
    domain: 'billing',
    trigger: routes('billing'),
    // Stripe checkout, portal and webhooks.
    ...WAITS_ON_VENDORS,
    // Billing is read and set at human speed, plus Stripe's webhooks; 5 taken from agents keeps those not sized from the target within 450.
    reservedConcurrency: 5,
    // Stripe's credentials (vendor secret); a charge may queue a budget event. The spend check
    // reads the KYC status through the numbers index (phone metadata, below).
    access: { table: 'readWrite', vendorSecret: 'read', webhookQueue: ['send'] },
    files: [PHONE_METADATA_FILE],
  },
  {
    name: 'integrations',
    domain: 'integrations',
    trigger: routes('integrations'),
    // Vendor tests and tool runs (outbound).
    ...WAITS_ON_VENDORS,
    // OAuth and app configuration at human speed, vendor tests and tool runs (seconds); 3 + 2 for
    // its job were taken from agents.
    reservedConcurrency: 3,
    // OAuth clients and pasted credentials (vendor settings), tokens sealed and opened (the
    // envelope's data keys), CRM sync jobs queued.
    // A kb_sync connection's callback starts its first sync on the kb-jobs queue.
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], integrationJobsQueue: ['send'], kbJobsQueue: ['send'] },
    egress: true,
  },
  {
    name: 'meta',
    domain: 'meta',
    // Unmatched requests: it answers `404 Route <METHOD> <path> not found`.
    trigger: { kind: 'routes', routeGroup: 'meta', catchAll: true },
    // Root document, /openapi.json (read from a 1 MB file beside the bundle), /docs, 404s.
    ...DATABASE_ONLY,
    // The $default route's 404s (each after a per-IP rate-limit write) land here.
    reservedConcurrency: 30,
    // The gate's per-IP rate window is a write even for the public routes and the 404.
    access: { table: 'readWrite' },
    // The OpenAPI document (over 1 MB) and the API reference page's Swagger UI files (about
    // 1.9 MB) ship beside the bundle and are read when asked for.
    files: ['openapi.json', 'node_modules/swagger-ui-dist/swagger-ui.css', 'node_modules/swagger-ui-dist/swagger-ui-bundle.js'],
    // The built browser files (`npm run build:web`: the web SDK, the Voice Orb page's script
    // and styles) served from `web/` beside the bundle (shared/meta/web-assets.ts;
    // docs/browser.md says why not S3 and CloudFront).
    directories: { 'web/dist': 'web' },
  },
  {
    name: 'account-data',
    domain: 'account-data',
    trigger: routes('account-data'),
    // Exports and erases run in export-jobs; this starts them, writes assets to S3 and reads settings.
    memoryMb: 1024,
    timeoutSeconds: 15,
    // Exports, assets, privacy requests and settings at human speed; public asset fetches are cached by browsers.
    reservedConcurrency: 5,
    // Exports, assets, privacy, reliability, account status (docs/account-data.md): starts jobs
    // on the export-jobs queue, writes assets and reads exports in the bucket; the privacy call
    // view bundles the calls index (hence the recordings and vendor-secret grants, which
    // test/cdk/grants-match-code holds to the bundle; nothing here calls a vendor; the calls index
    // carries the knowledge-base store through the conversation's retrieval, hence that grant too).
    // Assets past the request limit are presigned uploads (uploads/*).
    access: { table: 'readWrite', vendorSecret: 'read', exportJobsQueue: ['send'], recordings: 'readWrite', accountObjects: 'readWrite', uploads: 'readWrite' },
    files: [PHONE_METADATA_FILE],
  },
  {
    name: 'members',
    domain: 'members',
    trigger: routes('members'),
    // SSO: the identity provider's token and keys requests; SAML responses.
    ...WAITS_ON_VENDORS,
    // Members, invites, sign-in and SCIM provisioning: human speed.
    reservedConcurrency: 5,
    // Members sign sessions (the sealed signing key, created on first use), seal the SSO
    // client secret and open it for the identity provider's token request.
    // Deleting a workspace queues its purge on the export-jobs queue.
    access: { table: 'readWrite', key: ['generateDataKey', 'decrypt'], exportJobsQueue: ['send'] },
  },
  {
    name: 'analytics',
    domain: 'analytics',
    trigger: routes('analytics'),
    // Summaries, queries over the rollups, dashboards and alert rules: reads of pre-aggregated
    // items, at human and dashboard speed. A 90-day query reads and merges about two thousand
    // rollup items: the larger size buys the CPU to merge their sketches.
    ...HEAVY,
    reservedConcurrency: 20,
    // An alert's evaluation or test queues its webhook.
    access: { table: 'readWrite', webhookQueue: ['send'] },
    // The concurrency_used metric reads the calls domain's concurrency through its narrow
    // entry (calls/records), which reaches the phone module.
    files: [PHONE_METADATA_FILE],
    // The dashboard page names the built browser files from their manifest (the files
    // themselves are served by the meta function at /static/).
    directories: { 'web/dist': 'web' },
  },
  {
    name: 'qa',
    domain: 'qa',
    trigger: routes('qa'),
    // Cohorts and results: reads and writes at human and dashboard speed; scoring itself runs
    // on the call-steps queue (a run's start only queues its first page). Top questions embed
    // callers' questions with the workspace's embedder: a vendor call, hence its timeout.
    ...WAITS_ON_VENDORS,
    reservedConcurrency: 5,
    // Runs and cohort deletions queue their steps on call-steps; it reads calls through the
    // calls domain's narrow entry (shared/calls/records/index.ts) to check selections; the
    // embedder's key is a vendor secret.
    access: { table: 'readWrite', callStepsQueue: ['send'], vendorSecret: 'read' },
    // The calls domain's narrow entry (list-calls' filter, which checks numbers) carries the phone module.
    files: [PHONE_METADATA_FILE],
    egress: true,
  },
  {
    name: 'conductor',
    domain: 'conductor',
    trigger: routes('conductor'),
    // A turn waits on the language model and on the tools' own functions (each within its
    // timeout), so the ceiling; it holds little.
    ...WAITS_ON_VENDORS,
    // Conversations with the assistant at human speed (each turn holds an execution for seconds).
    reservedConcurrency: 5,
    // Sessions, messages and credits in the table; the language model's credentials and the
    // payments vendor's (vendor secret: pay-as-you-go credits charged in the billing ledger may
    // start an auto-recharge, and its budget events go to the webhook queue). Everything a tool
    // changes is changed by the tool's own function, invoked as the caller.
    access: { table: 'readWrite', vendorSecret: 'read', webhookQueue: ['send'] },
    invokesRoutes: invokedRouteGroups(),
    egress: true,
  },
  {
    name: 'knowledge-bases',
    domain: 'knowledge-bases',
    trigger: routes('knowledge-bases'),
    // File uploads (extraction is in kb-jobs) and crawl previews through the egress guard.
    ...HEAVY,
    // Knowledge bases are configuration, written at human speed; uploads and crawl previews hold an execution for seconds.
    reservedConcurrency: 5,
    // Knowledge bases: originals, text, chunks and indexes in their bucket; embeddings through the
    // language-model vendor (its credentials); ingestion queued on kb-jobs.
    // Synced sources read their kb_sync connection (the integrations index: its refresh seals new
    // tokens, hence the key) and start runs on kb-jobs. Files past the request limit are
    // presigned uploads (uploads/* in the recordings bucket).
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], kbJobsQueue: ['send'], knowledgeBases: 'readWrite', uploads: 'readWrite' },
    // The extraction worker's CSV parser (shared/platform/text/csv.ts) carries the phone module.
    files: [PHONE_METADATA_FILE],
    workers: EXTRACT_WORKER,
    egress: true,
  },
  {
    name: 'public',
    domain: 'public',
    // CORS preflights of every path (docs/browser.md).
    trigger: { kind: 'routes', routeGroup: 'public', preflight: true },
    // Public chats run a model turn per message (as chats do); share links start web calls.
    ...HEAVY,
    // Anonymous browser traffic (widget chats, share links, CORS preflights) in its own pool,
    // so it can never take the executions of keyed API calls: the widget's share of the
    // target's chat turns, 50 a second × 3 s = 150 (lib/scale.ts, docs/scale.md), and 5 for
    // the short requests (preflights, share links, the widget's script).
    reservedConcurrency: chatExecutions(SCALE_TARGET.publicChatTurnsPerSecond) + 5,
    // Public routes (docs/browser.md): share links start web calls (the calls index: its
    // grants, as batches have them) and public chats run the chat runtime (chats' grants).
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], webhookQueue: ['send'], callStepsQueue: ['send'], recordings: 'readWrite', knowledgeBases: 'readWrite' },
    // The chat widget's script (GET /widget.js, read when asked for) and the calls index's phone module.
    files: [PHONE_METADATA_FILE, 'web/widget/dist/widget.js'],
  },

  // Jobs. Every job pushes live updates to WebSocket monitors (any step may write a call).
  // Grants follow what each job's code does today; every scheduled job gets the table
  // for its job lease. A job that starts placing calls, reading vendor credentials or
  // enqueueing webhooks must add the grant here. (A scheduled job whose failures go to an
  // alarmed queue also gets to send there: lib/parley-jobs.ts.)
  {
    name: 'webhook-delivery',
    pushesLiveUpdates: true,
    domain: 'webhooks',
    trigger: {
      kind: 'queue',
      queue: {
        resource: 'webhookQueue',
        id: 'Webhook',
        maxReceiveCount: 5,
        // A batch's deliveries run in parallel and its execution ends with the slowest, so a
        // larger batch (which needs a batching window, delaying every delivery) would let one
        // slow receiver hold more other deliveries' room. 10 with no window: 10 in flight an execution.
        batchSize: 10,
        // 400 executions × 10 = 4,000 deliveries in flight: 400 a second against 10 s receivers,
        // the largest workspace's 350 (capped at 3,500 in flight) and the rest beside it
        // (docs/scale.md, "Webhook delivery"). Per-workspace slots keep a slow receiver to its share.
        maxConcurrency: 400,
        maxConcurrencyContext: 'webhookMaxConcurrency',
        label: 'webhooks',
        // Deliveries are seconds each; a retry is a new message, so age is a backlog, not a retry.
        maxAge: Duration.minutes(15),
        // No dead-letter alarm: a delivery that failed is recorded on the webhook log, and its
        // dead letters are for an operator's look, watched by age only.
      },
    },
    // One signed POST at a time, waiting on the customer's endpoint.
    memoryMb: 512,
    // The event source's maximum concurrency, or its own polling would be throttled.
    reservedConcurrency: 400,
    // Failed attempts are re-sent to the queue with a delay, hence send as well as consume.
    access: { table: 'readWrite', key: ['decrypt'], webhookQueue: ['consume', 'send'] },
    egress: true,
  },
  {
    name: 'call-steps',
    pushesLiveUpdates: true,
    domain: 'calls',
    trigger: {
      kind: 'queue',
      queue: {
        resource: 'callStepsQueue',
        id: 'CallSteps',
        // A step that failed five receives belongs to a call that is now stuck.
        maxReceiveCount: 5,
        batchSize: 10,
        // Below the reservation: a throttled batch would come back only after the visibility
        // timeout, minutes late for a live call.
        maxConcurrency: 20,
        label: 'call steps',
        // Steps of live calls: a step waits at most a second past its due time, and a hop is a new message.
        maxAge: Duration.minutes(5),
        deadLetterAlarm: 'A call step failed five times; its call is stuck',
      },
    },
    // A turn of a call: the conversation runtime, the model's answer, post-call analysis.
    memoryMb: 1024,
    // At least the event source's maximum concurrency: each step is one turn of a call, seconds at most.
    reservedConcurrency: 25,
    // A step not yet due is re-sent for its next hop (shared/platform/aws/due-time.ts), hence
    // send as well as consume; the table for the call's state. The call engine adds what its
    // steps need (the webhook queue for call events, vendor credentials for the model).
    // A step runs a turn of the call: the agent's engine (language-model and LiveKit
    // credentials), custom functions signed with the webhook key, and the call's webhooks.
    // The sandbox's recording is written when a step ends the call (finishCall).
    // App tools run through the integrations domain, whose refresh before use seals new tokens (generateDataKey).
    access: { table: 'readWrite', callStepsQueue: ['consume', 'send'], webhookQueue: ['send'], integrationJobsQueue: ['send'], key: ['generateDataKey', 'decrypt'], vendorSecret: 'read', recordings: 'readWrite', knowledgeBases: 'readWrite' },
    // Inbound admission and dials check numbers (phone.ts), as do the contacts and CRM steps.
    files: [PHONE_METADATA_FILE],
    egress: true,
  },
  {
    name: 'contact-jobs',
    pushesLiveUpdates: true,
    domain: 'contacts',
    trigger: {
      kind: 'queue',
      queue: {
        resource: 'contactJobsQueue',
        id: 'ContactJobs',
        maxReceiveCount: 5,
        batchSize: 5,
        // Below its reservation; a backfill is one chain of messages.
        maxConcurrency: 2,
        label: 'contact jobs',
        maxAge: Duration.minutes(30),
        deadLetterAlarm: 'A contacts job step failed five times; its job stopped',
      },
    },
    // A page of 200 calls or a chunk of up to 1,000 import rows.
    memoryMb: 512,
    reservedConcurrency: 2,
    // A step reads a page of calls (or an import chunk) and writes contacts; the next is re-queued.
    // It reads the history pages through the calls domain's narrow entry (shared/calls/records/index.ts),
    // so it holds neither bucket (test/cdk/grants-match-code holds grants to the bundle).
    access: { table: 'readWrite', contactJobsQueue: ['consume', 'send'], vendorSecret: 'read' },
    files: [PHONE_METADATA_FILE],
  },
  {
    name: 'export-jobs',
    pushesLiveUpdates: true,
    domain: 'account-data',
    trigger: {
      kind: 'queue',
      queue: {
        resource: 'exportJobsQueue',
        id: 'ExportJobs',
        // A job that failed records itself as failed, so three receives.
        maxReceiveCount: 3,
        // One whole job a message.
        batchSize: 1,
        maxConcurrency: 2,
        label: 'export jobs',
        // One whole job a message (up to 15 minutes), two at a time.
        maxAge: Duration.hours(1),
        deadLetterAlarm: 'An account-data job (export, erase, retention) failed three times',
      },
    },
    // Streams table pages into a multipart upload (5 MB parts held in memory).
    memoryMb: 1024,
    // Exports, erases and retention runs, one whole job per message.
    reservedConcurrency: 2,
    // An export streams table pages into its object (multipart); an erase or retention run deletes
    // calls (their recordings too), contacts and exports.
    // The calls index it erases through carries the conversation runtime (vendor settings, knowledge-base store).
    // The purge of a deleted workspace (shared/members/purge.ts) runs here too: it scans the table,
    // empties the workspace's prefixes in both buckets, releases its numbers at the carrier (the
    // vendor credentials) and queues its own next step.
    // It bundles the account-data index (presigned asset uploads) and the purge empties uploads/<ws>/ too.
    access: { table: 'readWrite', exportJobsQueue: ['consume', 'send'], recordings: 'readWrite', accountObjects: 'readWrite', knowledgeBases: 'readWrite', vendorSecret: 'read', uploads: 'readWrite' },
    // Erases and exports go through the calls and contacts indexes, which check numbers (phone.ts).
    files: [PHONE_METADATA_FILE],
  },
  {
    name: 'integration-jobs',
    pushesLiveUpdates: true,
    domain: 'integrations',
    trigger: {
      kind: 'queue',
      queue: {
        resource: 'integrationJobsQueue',
        id: 'IntegrationJobs',
        maxReceiveCount: 5,
        batchSize: 1,
        // A CRM sync is one chain of messages.
        maxConcurrency: 2,
        label: 'integration jobs',
        maxAge: Duration.minutes(30),
        deadLetterAlarm: 'A CRM sync step failed five times; its job stopped',
      },
    },
    // A page of 50 objects pushed to a CRM.
    memoryMb: 512,
    reservedConcurrency: 2,
    // A CRM sync step reads contacts and ended calls (the calls domain's narrow entry, so neither
    // bucket), opens and refreshes the connection's tokens (seals the new ones), and queues its
    // next step.
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], integrationJobsQueue: ['consume', 'send'] },
    files: [PHONE_METADATA_FILE],
    egress: true,
  },
  {
    name: 'kb-jobs',
    pushesLiveUpdates: true,
    domain: 'knowledge-bases',
    trigger: {
      kind: 'queue',
      queue: {
        resource: 'kbJobsQueue',
        id: 'KbJobs',
        // Its knowledge base was marked `error`.
        maxReceiveCount: 5,
        batchSize: 1,
        maxConcurrency: 2,
        label: 'kb jobs',
        // One knowledge base's ingestion a message (up to 5 minutes), two at a time.
        maxAge: Duration.hours(1),
        deadLetterAlarm: 'A knowledge-base ingestion failed five times; its knowledge base is in error',
      },
    },
    // Files up to 50 MB through PDF.js or mammoth in the extraction worker (KB_EXTRACTION_MEMORY_MB,
    // 1,024 MB, one document at a time), embeddings in batches, the BM25 and vector index.
    memoryMb: 2048,
    reservedConcurrency: 2,
    // Extracts, crawls (through the egress guard), embeds (language-model credentials) and writes the index.
    // Synced sources: a fresh access token of the kb_sync connection (refreshing seals new tokens),
    // the vendors' APIs through the egress guard, and the run's next step (and the sweep's next page) queued.
    access: { table: 'readWrite', kbJobsQueue: ['consume', 'send'], vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], knowledgeBases: 'readWrite' },
    // As for the knowledge-bases function: the extraction worker's CSV parser.
    files: [PHONE_METADATA_FILE],
    workers: EXTRACT_WORKER,
    egress: true,
  },
  {
    name: 'batch-tick',
    pushesLiveUpdates: true,
    domain: 'batches',
    trigger: SCHEDULE,
    // One shard's one-second pass loop an invocation, up to a few hundred dials a second
    // (docs/scale.md, Batch calls): CPU-bound marshalling of the dials' writes, so 1,024 MB
    // (about 0.6 vCPU) rather than the 256 MB of an idle loop; the largest workspace (100
    // dials a second at its numbers' CPS) sits in one shard.
    memoryMb: 1024,
    // One invocation a minute per shard, each running ~70 s, so at most two per shard overlap;
    // each shard's lease does the rest.
    reservedConcurrency: 2 * BATCH_DUE_SHARDS,
    // Passes place calls (create-phone-call's path: the first step on the call-steps queue; a
    // refused spend ends a call at once, sending call_ended) with LiveKit media when configured.
    // It bundles the calls domain (dials), hence recordings and knowledge bases as for the batches function.
    access: { table: 'readWrite', callStepsQueue: ['send'], webhookQueue: ['send'], key: ['decrypt'], vendorSecret: 'read', recordings: 'readWrite', knowledgeBases: 'readWrite' },
    // The batch passes check numbers (phone.ts).
    files: [PHONE_METADATA_FILE],
    egress: true,
  },
  {
    name: 'oauth-refresh',
    pushesLiveUpdates: true,
    domain: 'integrations',
    trigger: SCHEDULE,
    // Tokens about to expire, a few at a time.
    memoryMb: 256,
    reservedConcurrency: 2,
    // Refreshes open the refresh token and seal the new tokens; OAuth clients come from the vendor settings
    // (or an app's own client, sealed in the table). Scheduled CRM syncs that come due are queued on integration-jobs.
    access: { table: 'readWrite', vendorSecret: 'read', key: ['generateDataKey', 'decrypt'], integrationJobsQueue: ['send'] },
    egress: true,
  },
  {
    name: 'billing-hourly',
    pushesLiveUpdates: true,
    domain: 'billing',
    trigger: SCHEDULE,
    // Concurrency charges and invoices per workspace, one after another.
    memoryMb: 512,
    reservedConcurrency: 2,
    // Concurrency charges go through the ledger: a budget event may be queued, an auto-recharge reads Stripe's key.
    access: { table: 'readWrite', webhookQueue: ['send'], vendorSecret: 'read' },
  },
  {
    name: 'alert-tick',
    domain: 'analytics',
    trigger: SCHEDULE,
    // Rules due this minute, 32 evaluations at a time, each a few small reads of rollup cells
    // (percentiles merge sketch bins: some CPU), so 512 MB.
    memoryMb: 512,
    reservedConcurrency: 2,
    // Reads rules and rollups, writes states and events; a change queues its webhook.
    access: { table: 'readWrite', webhookQueue: ['send'] },
    // concurrency_used reads calls/records, which reaches the phone module (as the analytics function).
    files: [PHONE_METADATA_FILE],
  },
  {
    name: LIVE_MONITOR_FUNCTION,
    // It serves the calls' live view (shared/calls).
    domain: 'calls',
    trigger: { kind: 'websocket' },
    description: 'Parley WebSocket monitors: authorizer, connect, disconnect, sync',
    // The authorizer and routes: a key lookup and a connection item.
    ...DATABASE_ONLY,
    // WebSocket monitors connecting and asking to sync (pushes run in the functions that write calls).
    reservedConcurrency: 3,
    // Connections and the calls they watch, in the table. It bundles the calls index (a call's
    // view for sync), which carries the recordings module, the conversation runtime (vendor
    // settings, knowledge-base store) and the phone module; test/cdk/grants-match-code holds
    // grants to bundles, so it gets them too. Slimming its imports would drop them
    // (docs/operations.md, Not done yet).
    access: { table: 'readWrite', vendorSecret: 'read', recordings: 'readWrite', knowledgeBases: 'readWrite' },
    files: [PHONE_METADATA_FILE],
  },
];

export function functionNamed(name: FunctionName): FunctionSpec {
  const spec = FUNCTIONS.find((entry) => entry.name === name);
  if (!spec) throw new Error(`${name} has no entry in lib/functions.ts`);
  return spec;
}

/** Each function's default reservation, by name (context `reservedConcurrency` overrides these). */
export const DEFAULT_RESERVED_CONCURRENCY = Object.fromEntries(FUNCTIONS.map((spec) => [spec.name, spec.reservedConcurrency])) as Record<FunctionName, number>;

/** The functions fixed egress puts behind its addresses (`egress: true`). */
export const EGRESS_FUNCTIONS: readonly FunctionName[] = FUNCTIONS.filter((spec) => spec.egress).map((spec) => spec.name);
