import { loadConfig, PRODUCTION_REQUIRED_SETTINGS, type Config } from './config.ts';

/*
 * What each setting does, in one place: README's "Settings" tables are generated from here
 * (`npm run docs:settings`; test/platform/settings-docs.test.ts fails when README differs).
 * The defaults come from the settings' own schema (shared/platform/config.ts), and the (†)
 * marks from PRODUCTION_REQUIRED_SETTINGS, so neither is written twice. The text lives apart
 * from the schema on purpose: config.ts is in every function's cold start, and these
 * paragraphs would add about 12 KiB to each; nothing deployed imports this module.
 */

export interface SettingDoc {
  /** What the setting does, as a table cell (Markdown, one line). */
  does: string;
  /** The default as words, where the schema's value needs them (a derived or computed default). */
  default?: string;
}

/** Every setting of the functions' schema; the type makes a new setting without a line here a compile error. */
export const SETTING_DOCS: Record<keyof Config, SettingDoc> = {
  PORT: { does: 'Local HTTP port (local runtime only)' },
  DATA_DIR: { does: 'Local data: DynamoDB Local files (queued webhooks and call steps included), the local master key, local objects (local runtime only)' },
  PARLEY_ENV: { does: '`production` hides 500 details (`Internal server error`) and requires every setting marked (†) to be set' },
  PARLEY_STAGE: { does: 'The deployment\'s name, the `stage` dimension of every metric (docs/operations.md, "Metrics and traces"); CDK sets it on every function' },
  AWS_REGION: { does: 'Region of the AWS clients (Lambda sets it)' },
  TABLE_NAME: { does: 'The single DynamoDB table' },
  DYNAMODB_ENDPOINT: { does: 'DynamoDB Local URL; set by the local runtime' },
  KMS_KEY_ID: { does: 'KMS key for envelope encryption; unset locally, where `DATA_DIR/master.key` stands in' },
  VENDOR_SECRET_ID: { does: 'Secrets Manager secret (JSON) with the vendor settings below; unset locally, where they come from the environment' },
  WEBHOOK_QUEUE_URL: { does: 'SQS queue of webhook deliveries; unset locally, where an in-process queue stands in' },
  CALL_STEPS_QUEUE_URL: { does: 'SQS queue of the call engine\'s timed steps; unset locally, where an in-process queue stands in' },
  CONTACT_JOBS_QUEUE_URL: { does: 'SQS queue of contacts jobs (the backfill); unset locally, where an in-process queue stands in' },
  EXPORT_JOBS_QUEUE_URL: { does: 'SQS queue of account-data jobs (exports, privacy erases, retention runs); unset locally, where an in-process queue stands in' },
  INTEGRATION_JOBS_QUEUE_URL: { does: 'SQS queue of integrations jobs (CRM syncs); unset locally, where an in-process queue stands in' },
  KB_JOBS_QUEUE_URL: { does: 'SQS queue of knowledge-base ingestions; unset locally, where an in-process queue stands in' },
  ROUTE_FUNCTION_NAMES: { does: "JSON object from route group to Lambda name: the functions the assistant's tools invoke as the caller (docs/assistant.md); CDK sets it on the conductor function; unset locally, where the handlers run in process" },
  RECORDINGS_BUCKET: { does: 'S3 bucket of call recordings, uploads and exports; unset locally, where `DATA_DIR/objects/` stands in and the local server answers its signed URLs (`/local-objects/…`)' },
  KNOWLEDGE_BASE_BUCKET: { does: 'S3 bucket of knowledge-base originals, text, chunks and indexes; unset locally, where `DATA_DIR/objects/` stands in' },
  RECORDINGS_EGRESS_ROLE_ARN: { does: 'The IAM role LiveKit Egress assumes to write recordings into `RECORDINGS_BUCKET`; unset, LiveKit calls are not recorded (docs/calls.md, Call artifacts)' },
  KB_EXTRACTION_MEMORY_MB: { does: 'Memory reading one knowledge-base document may use (32–8,192): its parser\'s worker thread\'s heap, and the process\'s growth while it reads; past it the source fails (docs/knowledge-bases.md)' },
  KB_EXTRACTION_TIMEOUT_MS: { does: 'How long reading one knowledge-base document may take (1–240,000); past it the worker is terminated and the source fails' },
  RATE_LIMIT_PER_KEY: { does: 'Requests per minute per API key without its own limit (1–100,000)' },
  RATE_LIMIT_PER_IP: { does: "Requests per minute per source IP: public routes, sessions and failed authentications (a key's admitted requests count in the key's window only)" },
  PUBLIC_RATE_LIMIT_PER_TOKEN: { does: 'Requests per minute per share token, public chat and web call log on the public routes (docs/browser.md)' },
  OUTBOUND_TEST_CONCURRENCY: { does: 'Slow outbound test requests (test-webhook, workflow test, MCP tools, custom LLM and SIP connection tests) one workspace may have in flight at once (1–100); one more gets 429 with `retry-after` (docs/security.md)' },
  AWS_REQUEST_TIMEOUT_MS: { does: 'How long one try of a DynamoDB, KMS, SQS or Secrets Manager call may take, waiting for a socket included (1–10,000); each call gets two tries, then the request is a 503 with `retry-after` (see "When AWS does not answer")' },
  AWS_CONNECTION_TIMEOUT_MS: { does: 'How long opening a connection to DynamoDB, KMS, SQS or Secrets Manager may take within a try (1–10,000, never more than `AWS_REQUEST_TIMEOUT_MS`): in-region a connection takes milliseconds, so past a second the endpoint counts as unreachable and the try fails fast' },
  BATCH_TICK_MS: { does: 'Spacing of batch scheduler passes' },
  LOCAL_REQUEST_TIMEOUT_MS: { does: 'The local runtime only (`npm start`): how long one API request may run before its function answers 504, as API Gateway\'s 29 s does when deployed (1–900,000). DynamoDB Local is slower than DynamoDB: a large request (a 10,000-task batch) may need more' },
  CPS_MAX_WAIT_MS: { does: 'How long a dial waits for its number\'s calls-per-second token before 429 (1–60,000)' },
  CUSTOM_FUNCTION_MAX_TIMEOUT_MS: { does: 'The longest a custom function may run during a conversation; a tool\'s `timeout_ms` (default 120,000) is cut to this (1–600,000)' },
  SANDBOX_CALL_MS: { does: 'How long an answered sandbox call lasts unless its `metadata.sandbox_call_ms` says otherwise (docs/calls.md)' },
  CALL_JOIN_TIMEOUT_MS: { does: 'A web call nobody joins ends `error_user_not_joined` after this; a registered phone call `registered_call_timeout`' },
  INBOUND_QUEUE_TIMEOUT_MS: { does: 'How long an inbound call waits for a concurrency slot (at most 60,000)' },
  DEFAULT_CPS_HOSTED: { does: 'Calls per second of bought and Twilio numbers without their own `cps_limit`' },
  DEFAULT_CPS_CUSTOM: { does: 'Calls per second of other imported numbers without their own `cps_limit`' },
  TWILIO_INBOUND_ALLOWED_ADDRESSES: { does: 'Comma list of IPs/CIDR blocks replacing Twilio\'s signalling blocks as where Twilio numbers without `allowed_inbound_addresses` accept INVITEs from' },
  SIP_HOST: { does: 'Host of the platform\'s SIP servers: `GET /sip-origination` answers `sip:<SIP_HOST>;transport=tcp` (in production not a `.local`, `.localhost`, `.invalid`, `.example` or `.test` name)' },
  SIP_IP_RANGES: { does: 'Address blocks the platform\'s SIP servers send from (`GET /sip-origination` `ip_ranges`): a JSON array or comma list of IPs/CIDR blocks (in production no loopback or documentation block)' },
  EGRESS_IP_ADDRESSES: { does: 'The fixed addresses outbound requests leave from, answered by `GET /workspace/egress` (JSON array or comma list of IPs/CIDR blocks); empty: no fixed egress. The stack sets it with `fixedEgress`' },
  PUBLIC_BASE_URL: { does: 'Public URL of the API, for links handed to users (an `https://` URL in production)', default: 'unset (derived from `PORT`)' },
  DASHBOARD_URL: { does: 'The dashboard the browser returns to after an OAuth connection, an SSO sign-in or an SP-initiated SAML sign-in (docs/access.md)', default: 'unset (`PUBLIC_BASE_URL`)' },
  LIVEKIT_URL: { does: 'LiveKit server for calls\' media (rooms, agent dispatch, SIP), e.g. `wss://parley.livekit.cloud`; unset, the sandbox runs calls without audio and web call tokens name `ws://127.0.0.1:7880` (`livekit-server --dev`). docs/calls-media.md' },
  LIVEKIT_SIP_URI: { does: 'SIP URI of LiveKit\'s SIP service (`sip:<host>[:port][;params]`, no user part), where customers\' own SIP stacks send registered calls (`sip:<call_id>@<host>`); with `LIVEKIT_URL` it turns SIP routing on for `register-phone-call`, which is 422 without it' },
  LIVEKIT_AGENT_NAME: { does: 'The agent worker\'s registered name, which each call\'s explicit dispatch addresses' },
  WEB_CALL_ICE_SERVERS: { does: 'JSON array of `{urls: string \\| string[], username?, credential?}` handed to browsers with each web call; invalid JSON or shape stops the start', default: 'one STUN server (`stun:stun.l.google.com:19302`)' },
  LIVE_STREAM_POLL_MS: { does: 'How often a live transcript stream reads its call (docs/calls.md, Live calls)' },
  LIVE_STREAM_CHUNK_MS: { does: 'Behind API Gateway: how long one long-poll chunk of the stream waits for news (at most 28,000)' },
  LIVE_WS_MANAGEMENT_URL: { does: 'The WebSocket monitor API\'s management endpoint (`https://…/live`) pushes post to; set by CDK, unset locally' },
  LIVE_WS_URL: { does: 'The WebSocket monitor API\'s client URL (`wss://…/live`) that `GET /v2/calls/{call_id}/ws` answers; set by CDK, unset locally (the local server serves the ws route itself)' },
  WEB_ASSETS_DIR: { does: 'Where the built browser files are (`npm run build:web`\'s `manifest.json` and hashed files); unset, beside the deployed meta bundle (`web/`), else the project\'s `web/dist`' },
  FREE_CREDIT_USD: { does: 'Credit every new workspace starts with, in USD (docs/billing.md)' },
  QA_FREE_MINUTES_PER_MONTH: { does: 'QA minutes a workspace has scored free each month; each minute beyond is charged (docs/qa.md, "Usage and billing")' },
  CONDUCTOR_FREE_CREDITS_PER_DAY: { does: 'The assistant\'s free credits per workspace each UTC day; beyond them a message needs pay-as-you-go (docs/assistant.md, "Credits")' },
  REQUIRE_VERIFICATION_FOR_OUTBOUND: { does: '`true`: outbound calls and batches need approved business verification (KYC) first, else 402 `verification_needed`' },
  OPERATOR_WORKSPACE_IDS: { does: 'Workspaces whose admin keys are operator keys (`GET /billing/platform-usage`): a JSON array or comma list of workspace IDs; empty, no operator' },
};

/**
 * Vendor settings: read on first use, not at start, from the `VENDOR_SECRET_ID` secret's JSON
 * keys in AWS and from the environment locally (shared/platform/aws/secrets.ts). A vendor
 * without its key gets the built-in offline stand-in.
 */
export const VENDOR_SETTING_DOCS: Record<string, SettingDoc> = {
  LLM_BASE_URL: { does: 'OpenAI-compatible API for language models, e.g. `https://api.openai.com/v1`; unset, a deterministic offline model answers' },
  LLM_API_KEY: { does: 'Bearer key for `LLM_BASE_URL` (none sent when unset)' },
  LLM_EMBEDDING_MODEL: { does: 'With `LLM_BASE_URL`: the embeddings model knowledge bases use (`POST {LLM_BASE_URL}/embeddings`, e.g. `text-embedding-3-small`); unset, deterministic offline embeddings' },
  LLM_MODEL_MAP: { does: 'JSON object from Parley model ids to the provider\'s names, e.g. `{"claude-4.5-sonnet":"anthropic/claude-sonnet-4.5","*":"gpt-4.1"}`; unmapped ids are sent as they are' },
  ELEVENLABS_API_KEY: { does: 'ElevenLabs key for cloning, community voices and previews, and the voice worker\'s ElevenLabs voices; unset, the built-in offline voice provider answers' },
  ELEVENLABS_BASE_URL: { does: 'ElevenLabs API base URL (tests point it at a fake)', default: '`https://api.elevenlabs.io`' },
  DEEPGRAM_API_KEY: { does: 'The voice worker\'s speech-to-text (docs/voice-worker.md); `DEEPGRAM_BASE_URL` points it elsewhere (tests: a fake)' },
  CARTESIA_API_KEY: { does: 'The voice worker\'s Cartesia voices; `CARTESIA_BASE_URL` points it elsewhere' },
  OPENAI_API_KEY: { does: 'The voice worker\'s OpenAI voices (and speech-to-text with `WORKER_STT_VENDOR=openai`); `OPENAI_BASE_URL` points it elsewhere' },
  LIVEKIT_API_KEY: { does: 'LiveKit API key: signs web call tokens and API requests, checks LiveKit webhooks; in production it must be in the vendor secret and not `devkey`', default: '`devkey` locally' },
  LIVEKIT_API_SECRET: { does: 'Its secret; also the root of the agent worker\'s report tokens; in production it must be in the vendor secret and not `secret`', default: '`secret` locally' },
  TWILIO_ACCOUNT_SID: { does: 'Platform Twilio account for buying numbers; unset, an offline mock provider returns fake numbers and logs its trunk requests' },
  TWILIO_AUTH_TOKEN: { does: 'Its auth token (basic auth with the account SID)' },
  TWILIO_SIP_PASSWORD: { does: 'Password of the trunk credential list\'s user' },
  TWILIO_SIP_USERNAME: { does: 'That user\'s name', default: '`parley`' },
  TWILIO_BASE_URL: { does: 'Sends Twilio\'s core and trunking API requests to one base URL (tests point it at a fake)' },
  CALLER_ID_VENDOR_BASE_URL: { does: 'Caller-ID vendor for branded caller IDs and verified numbers (protocol in `shared/vendors/caller-id/caller-id-vendor.ts`); unset, an offline vendor answers' },
  CALLER_ID_VENDOR_API_KEY: { does: 'Bearer token for `CALLER_ID_VENDOR_BASE_URL`' },
  STRIPE_SECRET_KEY: { does: 'Stripe secret key for payments (docs/billing.md); unset, the built-in mock checkout answers' },
  STRIPE_WEBHOOK_SECRET: { does: 'Signing secret of Stripe\'s webhook to `POST /billing/stripe-webhook`' },
  STRIPE_API_BASE_URL: { does: 'Stripe API base URL (tests point it at a fake)' },
  '<PROVIDER>_OAUTH_CLIENT_ID, _OAUTH_CLIENT_SECRET, _OAUTH_AUTHORIZE_URL, _OAUTH_TOKEN_URL, _API_BASE_URL': {
    does: 'An integration provider\'s OAuth app and API (docs/integrations.md names each provider\'s prefix); unset, the provider\'s built-in mock connects',
  },
};

/** The voice worker's own process settings (worker/src/config.ts); it reads the functions' settings too. */
export const WORKER_SETTING_DOCS: Record<string, SettingDoc> = {
  WORKER_STT_VENDOR: { does: 'Which speech-to-text vendor listens to callers: `deepgram` or `openai`', default: '`deepgram`' },
  WORKER_HEALTH_HOST: { does: 'Address of the worker\'s health endpoint (`npm start` binds 127.0.0.1 on a free port unless set)', default: '`0.0.0.0`' },
  WORKER_HEALTH_PORT: { does: 'Its port: `GET /` is 200 once registered with LiveKit, `GET /worker` its state', default: '`8081`' },
  WORKER_DRAIN_TIMEOUT_MS: { does: 'How long SIGTERM waits for calls in progress before the process exits anyway', default: 'an hour' },
  WORKER_IDLE_PROCESSES: { does: 'Job processes kept warm for the next calls', default: 'min(CPUs, 4)' },
  WORKER_LOAD_THRESHOLD: { does: 'CPU load (0 to 1) above which the worker tells LiveKit it is full', default: '`0.7`' },
};

/** Read by a library, not by Parley's schema. */
const LIBRARY_SETTING_DOCS: Record<string, SettingDoc> = {
  POWERTOOLS_LOG_LEVEL: { does: 'Log level of the structured JSON logs', default: '`INFO` (`WARN` for `npm start`)' },
};

/** A schema default as a table cell. */
function shownDefault(value: unknown): string {
  if (value === undefined) return 'unset';
  if (Array.isArray(value)) return value.length ? value.map((item) => `\`${String(item)}\``).join(', ') : 'empty';
  return `\`${String(value)}\``;
}

const cell = (text: string) => text.replace(/\n/g, ' ');

function table(rows: [name: string, fallback: string, does: string][]): string {
  return ['| Setting | Default | What it does |', '|---|---|---|', ...rows.map(([name, fallback, does]) => `| ${name} | ${cell(fallback)} | ${cell(does)} |`)].join('\n');
}

/** README's "Settings" tables and their notes, as `npm run docs:settings` writes them. */
export function settingsReference(): string {
  const defaults = loadConfig({});
  const required = new Set<string>(PRODUCTION_REQUIRED_SETTINGS);
  const functionRows = (Object.entries(SETTING_DOCS) as [keyof Config, SettingDoc][]).map(([name, doc]): [string, string, string] => [
    `\`${name}\`${required.has(name) ? ' (†)' : ''}`,
    doc.default ?? shownDefault(defaults[name]),
    doc.does,
  ]);
  const rowsOf = (docs: Record<string, SettingDoc>) =>
    Object.entries(docs).map(([name, doc]): [string, string, string] => [`\`${name}\``, doc.default ?? 'unset', doc.does]);
  return [
    'Read from the environment once at start; a bad value stops the process naming the setting',
    '(`shared/platform/config.ts`).',
    '',
    table([...functionRows, ...rowsOf(LIBRARY_SETTING_DOCS)]),
    '',
    '(†) Required with `PARLEY_ENV=production`: the default only makes sense on a developer\'s',
    'machine, so a process started without it stops at once naming every one missing',
    '(`PRODUCTION_REQUIRED_SETTINGS`), rather than serving a local table, the local master key or',
    `a \`.local\` SIP host. The CDK stack sets every one of them on every function and on the voice`,
    'worker, the deploy settings below giving `SIP_HOST`, `SIP_IP_RANGES` and `PUBLIC_BASE_URL`, and',
    'a synth runs the same check on them.',
    '',
    '**Vendor settings** are read on first use, not at start: from the `VENDOR_SECRET_ID` secret\'s',
    'JSON keys in AWS, from the environment locally.',
    '',
    table(rowsOf(VENDOR_SETTING_DOCS)),
    '',
    '**The voice worker** (`worker/`) reads the settings above with the same schema, the',
    'production check included, and its own process settings:',
    '',
    table(rowsOf(WORKER_SETTING_DOCS)),
  ].join('\n');
}

const SETTINGS_BEGIN = '<!-- settings: generated by `npm run docs:settings` from shared/platform/settings-docs.ts -->';
const SETTINGS_END = '<!-- settings: end -->';

/** `readme` with its settings section replaced by the generated one. */
export function withSettingsReference(readme: string): string {
  const start = readme.indexOf(SETTINGS_BEGIN);
  const end = readme.indexOf(SETTINGS_END);
  if (start < 0 || end < start) throw new Error(`README.md has no settings section between ${SETTINGS_BEGIN} and ${SETTINGS_END}`);
  return `${readme.slice(0, start + SETTINGS_BEGIN.length)}\n${settingsReference()}\n${readme.slice(end)}`;
}
