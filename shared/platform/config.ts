import ipaddr from 'ipaddr.js';
import { canonicalCidr } from './auth/ip.ts';
import { onFirstUse } from './lazy.ts';
import { wire } from './naming.ts';
import * as z from 'zod';

/**
 * Every setting Parley reads, validated once. The schema is built and the environment (as it
 * was when this module loaded) parsed on the first read of `config`, not at import, so a
 * Lambda's cold import pays nothing for it (docs/performance.md, "zod at import").
 * A bad value still stops the process at start with the setting's name: local/start.ts reads
 * `config` before it serves anything, every HTTP function calls validateConfig() before a
 * request does any work, and a job's first read of a setting (or table call) validates them.
 */
const positiveInt = (fallback: number, max: number) =>
  z.coerce.number().int().min(1).max(max).default(fallback);

// The settings' shared schemas are built on first use (onFirstUse, as lazySchema in
// http/schemas.ts): built here they were a dozen zod objects at every cold import.
const optionalString = onFirstUse(
  () => z.string().optional().transform((value) => (value === undefined || value.trim() === '' ? undefined : value.trim())),
  { bindMethods: true },
);

/**
 * A list of IPv4/IPv6 CIDR blocks (a bare address is its /32 or /128), as a JSON array or
 * a comma-separated list, canonicalised to `<network address>/<prefix>`.
 */
const cidrList = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((text, ctx) => {
      const trimmed = text.trim();
      let entries: unknown[];
      if (trimmed.startsWith('[')) {
        try {
          const parsed: unknown = JSON.parse(trimmed);
          entries = Array.isArray(parsed) ? parsed : [parsed];
        } catch {
          ctx.addIssue({ code: 'custom', message: 'Must be a JSON array or a comma-separated list of CIDR blocks' });
          return z.NEVER;
        }
      } else {
        entries = trimmed === '' ? [] : trimmed.split(',').map((entry) => entry.trim());
      }
      const blocks: string[] = [];
      for (const entry of entries) {
        const block = typeof entry === 'string' ? canonicalCidr(entry) : undefined;
        if (!block) {
          ctx.addIssue({ code: 'custom', message: `${JSON.stringify(entry)} is not an IP address or CIDR block` });
          return z.NEVER;
        }
        if (!blocks.includes(block)) blocks.push(block);
      }
      return blocks;
    });

/** One ICE server as a WebRTC client takes it (RTCIceServer): what web calls hand to browsers. */
const iceServerSchema = () =>
  z.strictObject({
    urls: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
    username: z.string().optional(),
    credential: z.string().optional(),
  });
export type IceServer = z.infer<ReturnType<typeof iceServerSchema>>;

/** One public STUN server: enough for a browser behind an ordinary NAT to reach the media server. */
export const DEFAULT_ICE_SERVERS: IceServer[] = [{ urls: ['stun:stun.l.google.com:19302'] }];

/**
 * WEB_CALL_ICE_SERVERS: a JSON array of ICE servers. Parsed here so a typo stops the process
 * at start rather than handing every browser a broken list.
 */
const iceServers = onFirstUse(() => z
  .string()
  .optional()
  .transform((text, ctx): IceServer[] => {
    if (text === undefined || text.trim() === '') return DEFAULT_ICE_SERVERS;
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'Must be JSON: an array of {urls, username?, credential?}' });
      return z.NEVER;
    }
    const checked = z.array(iceServerSchema()).safeParse(parsed);
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      ctx.addIssue({
        code: 'custom',
        message: `Must be an array of {urls: string | string[], username?, credential?} (${issue.path.join('.') || 'value'}: ${issue.message})`,
      });
      return z.NEVER;
    }
    return checked.data;
  }), { bindMethods: true });

/** The media server's URL as LiveKit's clients take it: ws(s) for browsers, http(s) also accepted. */
const mediaServerUrl = onFirstUse(() => optionalString.refine(
  (value) => value === undefined || /^(wss?|https?):\/\/[^/]/.test(value),
  'Must be a ws://, wss://, http:// or https:// URL',
), { bindMethods: true });

/**
 * The SIP URI of the media server's SIP service (LiveKit's inbound SIP endpoint):
 * `sip:` or `sips:`, a host, an optional port and `;parameters`, no user part (the call_id
 * becomes the user: `sip:<call_id>@host`). Checked here so a typo stops the start.
 */
const sipServiceUri = onFirstUse(() => optionalString.refine(
  (value) => value === undefined || /^sips?:[A-Za-z0-9.-]+(:[0-9]{1,5})?(;[A-Za-z0-9=._-]+)*$/i.test(value),
  'Must be a SIP URI without a user part, e.g. sip:abc123.sip.livekit.cloud or sip:sip.example.com:5060;transport=tcp',
), { bindMethods: true });

/** Where the platform's SIP servers send from when SIP_IP_RANGES is not set: the local machine. */
export const DEFAULT_SIP_IP_RANGES = '127.0.0.1/32';

// Built on first use (configSchema() in loadConfig), like every route schema.
const configSchema = () => z.object({
  PARLEY_ENV: z.enum(['production', 'development', 'test']).default('development'),
  /** The deployment's name (`prod`, `staging`, …): the `stage` dimension of every metric (shared/platform/observability/metrics.ts). */
  PARLEY_STAGE: z.string().regex(/^[\w-]{1,128}$/, 'Must be 1 to 128 letters, digits, _ or -').default('local'),
  AWS_REGION: z.string().default('us-east-1'),
  TABLE_NAME: z.string().min(3).max(255).default('parley'),
  /** Set to DynamoDB Local's URL locally; absent in AWS. */
  DYNAMODB_ENDPOINT: optionalString,
  /** KMS key for envelope encryption; absent locally, where a master key in DATA_DIR stands in. */
  KMS_KEY_ID: optionalString,
  /** Webhook delivery queue; absent locally, where an in-process queue stands in. */
  WEBHOOK_QUEUE_URL: optionalString,
  /** The call engine's timed steps (shared/platform/aws/due-time.ts); absent locally, as above. */
  CALL_STEPS_QUEUE_URL: optionalString,
  /** Steps of contacts jobs (the backfill: shared/contacts/backfill.ts); absent locally, as above. */
  CONTACT_JOBS_QUEUE_URL: optionalString,
  /** Steps of account-data jobs (exports, privacy erases, retention runs: shared/account-data); absent locally, as above. */
  EXPORT_JOBS_QUEUE_URL: optionalString,
  /**
   * The fixed addresses the functions that call customers and vendors send from
   * (`GET /workspace/egress`): a JSON array or comma list of IPs or CIDR blocks. Empty (the
   * default): no fixed egress. The stack sets it from its NAT gateways' Elastic IPs when
   * `fixedEgress` is on (docs/account-data.md, Egress).
   */
  EGRESS_IP_ADDRESSES: cidrList(''),
  /** Steps of integrations jobs (CRM syncs: shared/integrations/crm.ts); absent locally, as above. */
  INTEGRATION_JOBS_QUEUE_URL: optionalString,
  /** Where the OAuth callback sends the browser back to (the dashboard); default PUBLIC_BASE_URL. */
  DASHBOARD_URL: optionalString,
  /** Steps of knowledge-base ingestion (shared/knowledge-bases/ingest.ts); absent locally, as above. */
  KB_JOBS_QUEUE_URL: optionalString,
  /**
   * The functions the assistant's tools invoke (shared/platform/aws/route-invoke.ts): a JSON
   * object from a route group (shared/platform/http/route.ts DOMAINS) to its Lambda's name,
   * set by CDK on the conductor function only. Absent locally, where the handlers run in process.
   */
  ROUTE_FUNCTION_NAMES: z
    .string()
    .optional()
    .transform((text, ctx) => {
      if (text === undefined || text.trim() === '') return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed) || !Object.values(parsed).every((name) => typeof name === 'string' && name !== '')) {
        ctx.addIssue({ code: 'custom', message: 'Must be a JSON object from route group to function name' });
        return z.NEVER;
      }
      return parsed as Record<string, string>;
    }),
  /**
   * What reading one knowledge-base document may use (shared/knowledge-bases/extract.ts and capped-worker.ts,
   * docs/security.md "Input that costs time"): the parser runs in a worker thread whose JS
   * heap is capped at this many megabytes, and which is terminated when the process's
   * resident memory grows by more than that (decoded PDF streams live outside the heap).
   * The source then fails `Could not read <file>: reading it needs more than <n> MB of
   * memory`. The kb-jobs function has 2,048 MB (lib/functions.ts).
   */
  KB_EXTRACTION_MEMORY_MB: z.coerce.number().int().min(32).max(8192).default(1024),
  /**
   * How long reading one knowledge-base document may take before its worker is terminated
   * (`Could not read <file>: reading it takes longer than <n> s`); well within the kb-jobs
   * function's 300 s, which also embeds and indexes.
   */
  KB_EXTRACTION_TIMEOUT_MS: positiveInt(60_000, 240_000),
  /**
   * The S3 bucket of knowledge-base originals, extracted text and indexes; absent locally,
   * where the same folder under DATA_DIR as recordings stands in (under knowledge-bases/).
   */
  KNOWLEDGE_BASE_BUCKET: optionalString,
  /**
   * The S3 bucket of call recordings (shared/platform/aws/object-store.ts); absent locally,
   * where a folder under DATA_DIR stands in and the local server serves its signed URLs.
   */
  RECORDINGS_BUCKET: optionalString,
  /**
   * An IAM role LiveKit Egress assumes to write recordings into RECORDINGS_BUCKET (its
   * S3Upload `assumeRoleArn`). Unset, LiveKit calls are not recorded (docs/calls.md, Call artifacts).
   */
  RECORDINGS_EGRESS_ROLE_ARN: optionalString,
  /** Secrets Manager secret holding vendor credentials as JSON; absent locally (settings come from env). */
  VENDOR_SECRET_ID: optionalString,
  DATA_DIR: z.string().default('.data'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  RATE_LIMIT_PER_KEY: positiveInt(600, 100_000),
  RATE_LIMIT_PER_IP: positiveInt(3000, 10_000_000),
  /** The batch scheduler's pass spacing: a second, as the numbers' calls-per-second tokens come back (docs/batch-calls.md). */
  BATCH_TICK_MS: positiveInt(1000, 60_000),
  /**
   * How long one try of an AWS call (DynamoDB, KMS, SQS, Secrets Manager) may take, from
   * waiting for a socket to the last byte of the answer; a call gets two tries
   * (shared/platform/aws/client-options.ts). Past it the request is a 503 with retry-after.
   */
  AWS_REQUEST_TIMEOUT_MS: positiveInt(3000, 10_000),
  /**
   * How long opening a connection to an AWS endpoint may take, within a try's
   * AWS_REQUEST_TIMEOUT_MS: milliseconds in-region, so a second means the endpoint is unreachable.
   */
  AWS_CONNECTION_TIMEOUT_MS: positiveInt(1000, 10_000),
  /**
   * The local runtime's deadline for one API request: API Gateway's 29 s by default. DynamoDB
   * Local is slower than DynamoDB, so a large request that fits in production may need more.
   */
  LOCAL_REQUEST_TIMEOUT_MS: positiveInt(29_000, 900_000),
  /** How long a dial waits for a calls-per-second token before 429 (spec Limits; shared/numbers/cps-limiter.ts). */
  CPS_MAX_WAIT_MS: positiveInt(5000, 60_000),
  /** How long an answered sandbox call lasts unless its metadata.sandbox_call_ms says otherwise (docs/calls.md). */
  SANDBOX_CALL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5000),
  /** A web call nobody joins ends `error_user_not_joined` after this; a registered phone call `registered_call_timeout`. */
  CALL_JOIN_TIMEOUT_MS: positiveInt(30_000, 600_000),
  /** How long an inbound call waits for a concurrency slot (spec Limits). */
  // At most a minute: an inbound SIP admission must finish within the call-steps job's 120 s (shared/jobs.ts).
  INBOUND_QUEUE_TIMEOUT_MS: positiveInt(40_000, 60_000),
  /**
   * Slow outbound test requests (test webhook, workflow test, MCP tools, custom LLM and SIP
   * connection tests) one workspace may have in flight at once; one more is 429
   * (shared/platform/egress/outbound-slots.ts).
   */
  OUTBOUND_TEST_CONCURRENCY: positiveInt(5, 100),
  /**
   * The longest a custom function may take during a conversation: a tool's `timeout_ms`
   * (Retell's default 120 s) is cut to this, so one slow endpoint cannot hold a call step
   * (a Lambda invocation) for minutes (shared/conversation/tools/custom-functions.ts).
   */
  CUSTOM_FUNCTION_MAX_TIMEOUT_MS: positiveInt(30_000, 600_000),
  /** Calls per second per number: carrier-hosted and Twilio numbers (spec Limits; cps_limit overrides). */
  DEFAULT_CPS_HOSTED: positiveInt(4, 1000),
  /** Calls per second per number: numbers imported onto the platform's trunk from other carriers. */
  DEFAULT_CPS_CUSTOM: positiveInt(10, 1000),
  /**
   * Comma-separated IPs or CIDR blocks that replace Twilio's signalling blocks as the inbound
   * addresses of Twilio numbers without their own allowed_inbound_addresses (telephony rule 2).
   */
  TWILIO_INBOUND_ALLOWED_ADDRESSES: optionalString,
  /** Host of the platform's SIP service: trunks originate to `sip:<SIP_HOST>;transport=tcp`. */
  SIP_HOST: z.string().min(1).max(253).default('sip.parley.local'),
  /** Public URL of the API, used in links handed to users; derived from PORT locally. */
  PUBLIC_BASE_URL: optionalString,
  /** The address blocks the platform's SIP servers send from (GET /sip-origination `ip_ranges`). */
  SIP_IP_RANGES: cidrList(DEFAULT_SIP_IP_RANGES),
  /**
   * The LiveKit server (shared/vendors/media). Set: calls run on LiveKit (rooms, agent
   * dispatch, SIP). Unset: the sandbox runs calls without media, and web call tokens point
   * at `livekit-server --dev`'s address. Not a secret, so an ordinary setting; the API key
   * and secret are vendor settings (LIVEKIT_API_KEY, LIVEKIT_API_SECRET).
   */
  LIVEKIT_URL: mediaServerUrl,
  /**
   * The media server's SIP URI, where a customer's own SIP stack sends the calls it
   * registers (register-phone-call): with LIVEKIT_URL it turns SIP routing on, and a
   * registered call is dialled at `sip:<call_id>@<its host>` (docs/calls-media.md). Unset,
   * register-phone-call is 422 `SIP routing is not configured`.
   */
  LIVEKIT_SIP_URI: sipServiceUri,
  /** The agent worker's registered name, which LiveKit's explicit dispatch addresses. */
  LIVEKIT_AGENT_NAME: z
    .string()
    .trim()
    .min(1)
    .max(128)
    .default(`${wire.service}-agent`),
  /** ICE servers handed to browsers with every web call (default: one public STUN server). */
  WEB_CALL_ICE_SERVERS: iceServers,
  /**
   * Live transcript streams (GET /v2/calls/{call_id}/stream, docs/calls.md Live calls): how
   * often a stream reads the call, and how long one long-poll chunk waits for news where the
   * response is buffered (Lambda behind the HTTP API; below API Gateway's 30 s).
   */
  LIVE_STREAM_POLL_MS: positiveInt(250, 5000),
  LIVE_STREAM_CHUNK_MS: positiveInt(20_000, 28_000),
  /**
   * The WebSocket monitor in AWS (set by CDK): the WebSocket API's management endpoint
   * (`https://<api>.execute-api.<region>.amazonaws.com/<stage>`, what pushes post to) and
   * its client URL (`wss://…`, answered by `GET /v2/calls/{call_id}/ws`). Unset locally,
   * where the local server holds the sockets at the ws route itself.
   */
  LIVE_WS_MANAGEMENT_URL: optionalString,
  LIVE_WS_URL: optionalString,
  /**
   * Where the built browser files are (`npm run build:web`: the web SDK and the Voice Orb
   * page's script and styles, with their manifest.json). Unset: beside the deployed meta
   * bundle (`web/`), else the project's web/dist. Tests point it at a build of their own.
   */
  WEB_ASSETS_DIR: optionalString,
  /**
   * Requests per minute per token on the public routes (docs/browser.md): per share token,
   * per public chat and per web call's log, on top of the per-IP window (and a public key's
   * own window on the routes it opens).
   */
  PUBLIC_RATE_LIMIT_PER_TOKEN: z.coerce.number().int().min(1).max(100_000).default(60),
  /** Credit every new workspace starts with, in USD (shared/billing: granted on its first billing read or write). */
  FREE_CREDIT_USD: z.coerce.number().min(0).max(1_000_000).default(10),
  /** QA minutes scored free each month before QA_MINUTE_USD a minute is charged (shared/qa/usage, docs/qa.md). */
  QA_FREE_MINUTES_PER_MONTH: z.coerce.number().int().min(0).max(100_000_000).default(100),
  /**
   * The assistant's free credits per workspace and UTC day (shared/conductor/credits, docs/assistant.md):
   * beyond them a message needs pay-as-you-go (charged at CONDUCTOR_CREDIT_USD a credit).
   */
  CONDUCTOR_FREE_CREDITS_PER_DAY: z.coerce.number().int().min(0).max(100_000_000).default(100),
  /** Outbound calls and batches need approved business verification (KYC) first: 402 verification_needed. */
  REQUIRE_VERIFICATION_FOR_OUTBOUND: z
    .enum(['true', 'false', '1', '0', ''])
    .default('false')
    .transform((value) => value === 'true' || value === '1'),
  /**
   * Workspaces whose admin keys are operator keys (GET /billing/platform-usage): a JSON
   * array or a comma list of workspace IDs. Empty: no operator.
   */
  OPERATOR_WORKSPACE_IDS: z
    .string()
    .default('')
    .transform((text) => text.replace(/[[\]"\s]/g, '').split(',').filter((id) => id !== '')),
});

export type Config = z.infer<ReturnType<typeof configSchema>>;

/** The name of every setting the schema reads (its documentation, shared/platform/settings-docs.ts, is checked against it). */
export function settingNames(): string[] {
  return Object.keys(configSchema().shape);
}

/**
 * Settings whose default only makes sense on a developer's machine (a local table name and
 * region, no KMS key, queue or vendor secret, a `.local` SIP host, loopback SIP ranges, a
 * base URL derived from PORT). With PARLEY_ENV=production each must be set, or the process
 * stops at start naming the missing ones; the CDK stack sets all of them on every function
 * (lib/deploy-settings.ts checks its values against this list at synth; test/cdk holds the
 * functions and the voice worker to it).
 */
export const PRODUCTION_REQUIRED_SETTINGS = [
  'TABLE_NAME',
  'AWS_REGION',
  'KMS_KEY_ID',
  'WEBHOOK_QUEUE_URL',
  'CALL_STEPS_QUEUE_URL',
  'CONTACT_JOBS_QUEUE_URL',
  'EXPORT_JOBS_QUEUE_URL',
  'INTEGRATION_JOBS_QUEUE_URL',
  'KB_JOBS_QUEUE_URL',
  'VENDOR_SECRET_ID',
  'RECORDINGS_BUCKET',
  'KNOWLEDGE_BASE_BUCKET',
  'SIP_HOST',
  'SIP_IP_RANGES',
  'PUBLIC_BASE_URL',
] as const;

/** Names that never resolve to a public host (RFC 2606, 6761, 6762): local or example values. */
const NON_PUBLIC_HOST = /(^|\.)(localhost|local|invalid|example|test)$/i;
/** Loopback and the documentation blocks (RFC 5737, 3849): local or example values. */
const NON_PUBLIC_RANGES = ['127.0.0.0/8', '::1/128', '192.0.2.0/24', '198.51.100.0/24', '203.0.113.0/24', '2001:db8::/32'];

/** Whether every address of `block` lies in `range` (both canonical CIDR blocks). */
function cidrWithin(block: string, range: string): boolean {
  const [address, prefix] = ipaddr.parseCIDR(block);
  const [rangeAddress, rangePrefix] = ipaddr.parseCIDR(range);
  return address.kind() === rangeAddress.kind() && prefix >= rangePrefix && address.match(rangeAddress, rangePrefix);
}

function productionProblems(env: NodeJS.ProcessEnv, settings: Config): string[] {
  const missing = PRODUCTION_REQUIRED_SETTINGS.filter((name) => (env[name] ?? '').trim() === '');
  const problems = missing.length
    ? [`${missing.join(', ')}: required with PARLEY_ENV=production (the defaults only make sense locally)`]
    : [];
  if (!missing.includes('SIP_HOST') && NON_PUBLIC_HOST.test(settings.SIP_HOST.replace(/\.$/, ''))) {
    problems.push(`SIP_HOST: ${settings.SIP_HOST} is a local or example name, not the platform's SIP host`);
  }
  const local = settings.SIP_IP_RANGES.filter((block) => NON_PUBLIC_RANGES.some((range) => cidrWithin(block, range)));
  if (!missing.includes('SIP_IP_RANGES') && local.length) {
    problems.push(`SIP_IP_RANGES: ${local.join(', ')} are loopback or example addresses, not the SIP servers' ranges`);
  }
  if (!missing.includes('PUBLIC_BASE_URL') && !/^https:\/\/[^/]/.test(settings.PUBLIC_BASE_URL ?? '')) {
    problems.push('PUBLIC_BASE_URL: must be the https:// URL of the API');
  }
  return problems;
}

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const parsed = configSchema().safeParse(env);
  const problems = parsed.success
    ? parsed.data.PARLEY_ENV === 'production'
      ? productionProblems(env, parsed.data)
      : []
    : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  if (!parsed.success || problems.length) throw new Error(`Invalid Parley settings: ${problems.join('; ')}`);
  return parsed.data;
}

/** The environment as it was when this module loaded: what `config` is read from. */
const environmentAtLoad: NodeJS.ProcessEnv = { ...process.env };
let validated: Config | undefined;

/**
 * The settings, parsed and checked on the first call (then the same object): throws
 * `Invalid Parley settings: …` naming every bad setting. HTTP functions call it before
 * each request (shared/platform/http/handler.ts); local/start.ts reads `config` at start.
 */
export function validateConfig(): Config {
  if (validated) return validated;
  validated = loadConfig(environmentAtLoad);
  try {
    for (const check of settingChecks) check();
  } catch (error) {
    validated = undefined; // every later call throws again, as a failed start would
    throw error;
  }
  return validated;
}

const settingChecks: (() => void)[] = [];

/**
 * A setting a module parses further itself (e.g. a list of addresses): `check` runs with the
 * settings' validation, so a bad value fails like any other setting, before a request does
 * any work, and not at import. Runs at once when the settings are already validated.
 */
export function checkWithSettings(check: () => void): void {
  settingChecks.push(check);
  if (validated) check();
}

/**
 * Every setting, typed as the schema declares it. Reading (or, in tests, assigning) a
 * property validates the settings on first use (validateConfig).
 */
export const config: Config = onFirstUse(validateConfig);

/**
 * A setting as the environment gives it (or its default), read without building the schema,
 * for the one module that needs a setting at load: shared/platform/store/db.ts names the
 * table. Only for settings whose schema neither trims nor transforms (TABLE_NAME), so when
 * the settings are valid this is `config[name]`; when they are not, validateConfig() throws
 * before any request or table call runs (the DynamoDB client is created on first use).
 */
export function settingAsGiven(name: 'TABLE_NAME', fallback: string): string {
  return environmentAtLoad[name] ?? fallback;
}

/**
 * Whether PARLEY_ENV is `production`, read without building the schema: when the settings
 * are valid this is `config.PARLEY_ENV === 'production'`, and when they are not, the first
 * read of `config` throws anyway.
 */
export const isProduction = environmentAtLoad.PARLEY_ENV === 'production';

/**
 * Whether this process is a Lambda function (the runtime sets AWS_LAMBDA_FUNCTION_NAME):
 * metrics go to standard output and traces to X-Ray only there (docs/operations.md,
 * "Metrics and traces"); locally and in tests both stay in the process.
 */
export const runsInLambda = Boolean(environmentAtLoad.AWS_LAMBDA_FUNCTION_NAME);
