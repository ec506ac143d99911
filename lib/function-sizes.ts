import type { Domain } from '../shared/platform/http/route.ts';
import type { JobName } from '../shared/jobs.ts';

/**
 * Memory (MB) and, for the HTTP functions, timeout (s) of every function. Lambda gives CPU
 * in proportion to memory (1,769 MB is one vCPU), so memory buys cold-start and parsing
 * speed as well as room. The reasoning for each number is in docs/operations.md, "Function
 * sizes"; in short:
 *
 * - Database-only domains (configuration read and written at human speed): 512 MB, 10 s.
 *   A request is a few DynamoDB calls, each bounded by AWS_REQUEST_TIMEOUT_MS (3 s) and two
 *   tries, so a store outage answers 503 in about 6.5 s; 10 s is never the limit that hits.
 * - Domains that wait on a vendor or on an address the caller chose (language models,
 *   telephony, Stripe, identity providers, outbound tests up to 10 s, a dial's CPS wait up
 *   to 5 s): 29 s, just under API Gateway's 30 s; 512 MB when they only wait, 1,024 MB
 *   when they also parse or hold much (the conversation runtime, CSV and file uploads).
 * - Jobs: the timeout is the job's own (shared/jobs.ts); memory from what one message holds:
 *   the 5-second batch loop and the token refresh are small (256 MB), ingestion of up to
 *   50 MB files (PDF.js) and the index build take 2,048 MB.
 *
 * Checked against one measured run (`npm run measure:functions`, docs/operations.md
 * "Function sizes"): every peak RSS was 63–174 MB, so none is too small; live-ws and
 * integration-jobs were not measured.
 */
export interface FunctionSize {
  memoryMb: number;
  /** HTTP functions only; a job's timeout is shared/jobs.ts's timeoutSeconds. */
  timeoutSeconds?: number;
}

/** API Gateway gives up on an integration after 30 s, so an HTTP function must stop just before. */
export const API_TIMEOUT_CEILING_SECONDS = 29;

const DATABASE_ONLY: FunctionSize = { memoryMb: 512, timeoutSeconds: 10 };
const WAITS_ON_VENDORS: FunctionSize = { memoryMb: 512, timeoutSeconds: 29 };
const HEAVY: FunctionSize = { memoryMb: 1024, timeoutSeconds: 29 };

export const DOMAIN_SIZES: Record<Domain, FunctionSize> = {
  // Keys, workspace, audit log; test-webhook waits on the customer's endpoint (outbound, up to 10 s).
  account: WAITS_ON_VENDORS,
  // Root document, /openapi.json (read from a 1 MB file beside the bundle), /docs, 404s.
  meta: DATABASE_ONLY,
  agents: DATABASE_ONLY,
  // Agent generation, copilot and workflow tests: language-model turns and outbound tests.
  'agent-tools': HEAVY,
  flows: DATABASE_ONLY,
  'chat-agents': DATABASE_ONLY,
  // Cloning parses a multipart upload and waits on the voice vendor.
  voices: HEAVY,
  // Twilio buys and releases, SIP connection tests.
  numbers: WAITS_ON_VENDORS,
  // The largest bundle (the conversation runtime); a dial may wait 5 s for a CPS token, LiveKit and the model.
  calls: HEAVY,
  // A completion is a model turn (seconds), streamed.
  chats: HEAVY,
  // Imports of up to 1,000 rows in the request (CSV parsing), save-call summarises through the model.
  contacts: HEAVY,
  // Creating a 10,000-task batch (CSV) writes for seconds.
  batches: HEAVY,
  // Stripe checkout, portal and webhooks.
  billing: WAITS_ON_VENDORS,
  // Exports and erases run in export-jobs; this starts them, writes assets to S3 and reads settings.
  'account-data': { memoryMb: 1024, timeoutSeconds: 15 },
  // Vendor tests and tool runs (outbound).
  integrations: WAITS_ON_VENDORS,
  // SSO: the identity provider's token and keys requests; SAML responses.
  members: WAITS_ON_VENDORS,
  // File uploads (extraction is in kb-jobs) and crawl previews through the egress guard.
  'knowledge-bases': HEAVY,
  // Public chats run a model turn per message (as chats do); share links start web calls.
  public: HEAVY,
};

export const JOB_MEMORY_MB: Record<JobName, number> = {
  // One signed POST at a time, waiting on the customer's endpoint.
  'webhook-delivery': 512,
  // A turn of a call: the conversation runtime, the model's answer, post-call analysis.
  'call-steps': 1024,
  // A page of 200 calls or a chunk of up to 1,000 import rows.
  'contact-jobs': 512,
  // Streams table pages into a multipart upload (5 MB parts held in memory).
  'export-jobs': 1024,
  // A page of 50 objects pushed to a CRM.
  'integration-jobs': 512,
  // Files up to 50 MB through PDF.js or mammoth in the extraction worker (KB_EXTRACTION_MEMORY_MB,
  // 1,024 MB, one document at a time), embeddings in batches, the BM25 and vector index.
  'kb-jobs': 2048,
  // The 5-second pass loop: a few queries and a handful of dials a pass.
  'batch-tick': 256,
  // Tokens about to expire, a few at a time.
  'oauth-refresh': 256,
  // Concurrency charges and invoices per workspace, one after another.
  'billing-hourly': 512,
};

/** The WebSocket monitor's authorizer and routes: a key lookup and a connection item. */
export const LIVE_MONITOR_SIZE: FunctionSize = DATABASE_ONLY;
