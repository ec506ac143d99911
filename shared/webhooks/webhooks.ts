import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { webhookQueue, type MessageQueue } from '../platform/aws/queue.ts';
import { credentialContext, listCredentials, type CredentialItem } from '../platform/auth/credentials.ts';
import { decryptSecret } from '../platform/crypto/envelope.ts';
import { badRequest, NotFound } from '../platform/errors.ts';
import { newId, newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { countMetric } from '../platform/observability/metrics.ts';
import { traced } from '../platform/observability/tracing.ts';
import { eventIdHeader, signatureHeaders, wire } from '../platform/naming.ts';
import { EgressRefused, egressFetch } from '../platform/egress/egress.ts';
import type { TestWebhookResult, WebhookDeliveryAttempt } from './schemas.ts';
import { apiKeyRefs, attemptClaims, credentialByHash, deliveryAttempts, webhookBodies, type AttemptClaimItem, type DeliveryAttemptItem } from './store.ts';
import { DEFAULT_WEBHOOK_TIMEOUT_MS, getWorkspaceItem, type WorkspaceItem } from '../account/index.ts';
import { TtlCache } from './delivery-cache.ts';
import { acquireDeliverySlot, deliveryCap, markReceiverSlow, receiverSlowUntil, SLOW_ATTEMPT_MS, slowReceiverCap } from './delivery-slots.ts';

/** Spec: 3 retries, waiting 1, 2 and 4 seconds. */
const RETRY_DELAYS_SECONDS = [1, 2, 4] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
/** Receivers reject signatures older than this (Retell's SDK uses the same window). */
const SIGNATURE_TOLERANCE_MS = 5 * 60 * 1000;
/** The test send answers inside an API Gateway request, whose integration limit is 30 s. */
const TEST_WEBHOOK_MAX_TIMEOUT_MS = 25_000;
/** Time kept back from the consumer's own deadline to record the attempt and queue the retry. */
const RECORD_RESERVE_MS = 5_000;
/** Delivery log entries expire after 30 days (DynamoDB TTL), so the log cannot grow without bound. */
const DELIVERY_LOG_RETENTION_SECONDS = 30 * 24 * 60 * 60;
/**
 * A body larger than this does not travel in the queue message (SQS takes 256 KiB, envelope
 * included) but beside it, in the table (store.ts webhookBodies): a long call's transcript
 * makes call events of a megabyte and more.
 */
const MAX_INLINE_BODY_BYTES = 200 * 1024;
/** UTF-16 units per stored part: at most 3 bytes each as UTF-8, so a part stays under 300 KB. */
const BODY_PART_UNITS = 100_000;
/** Stored bodies outlive the queue's 14-day retention (a redriven message still finds its body). */
const STORED_BODY_SECONDS = 15 * 24 * 60 * 60;
/**
 * An attempt's claim outlives every copy of its message: SQS keeps a message at most 14 days
 * (a dead letter redriven later is another story: it finds no claim and is delivered).
 */
const CLAIM_RETENTION_SECONDS = 14 * 24 * 60 * 60;
/** Added to a claim's lease for clock differences between consumers. */
const CLAIM_LEASE_MARGIN_MS = 5_000;

/** What travels on the queue: the exact body is fixed at enqueue so every attempt sends the same bytes. */
export const WebhookMessage = lazySchema(() =>
  z.object({
    delivery_id: z.string().min(1),
    workspace_id: z.string().min(1),
    url: z.string().min(1),
    event: z.string().min(1),
    body: z.string(),
    /** The body is stored beside the message in this many parts (`body` is then empty). */
    body_parts: z.number().int().min(1).optional(),
    timeout_ms: z.number().int().min(1).max(600_000).optional(),
    attempt: z.number().int().min(1).max(MAX_ATTEMPTS),
    /** How many times this attempt found its workspace's delivery slots all held and was sent back (delivery-slots.ts). */
    deferred: z.number().int().min(1).optional(),
  }),
);
export type WebhookMessage = z.infer<typeof WebhookMessage>;

export interface EnqueueWebhookInput {
  workspaceId: string;
  url: string;
  event: string;
  payload: Record<string, unknown>;
  /** The agent's webhook timeout; without it the workspace's setting applies at delivery. */
  timeoutMs?: number;
}

/** Queues a webhook for delivery; returns its delivery ID (shared by all its attempts). */
export async function enqueueWebhook(input: EnqueueWebhookInput, queue: MessageQueue = webhookQueue()): Promise<string> {
  const deliveryId = newId('webhookDelivery');
  const body = webhookBody(input.event, input.payload);
  const parts = Buffer.byteLength(body, 'utf8') > MAX_INLINE_BODY_BYTES ? splitBody(body) : undefined;
  if (parts) await webhookBodies.put(input.workspaceId, deliveryId, parts, Math.floor(Date.now() / 1000) + STORED_BODY_SECONDS);
  const message: WebhookMessage = {
    delivery_id: deliveryId,
    workspace_id: input.workspaceId,
    url: input.url,
    event: input.event,
    body: parts ? '' : body,
    ...(parts ? { body_parts: parts.length } : {}),
    timeout_ms: input.timeoutMs,
    attempt: 1,
  };
  await queue.send(message);
  return message.delivery_id;
}

/** A body cut into parts of at most BODY_PART_UNITS, never inside a surrogate pair. */
function splitBody(body: string): string[] {
  const parts: string[] = [];
  for (let start = 0; start < body.length; ) {
    let end = Math.min(body.length, start + BODY_PART_UNITS);
    const last = body.charCodeAt(end - 1);
    if (end < body.length && last >= 0xd800 && last <= 0xdbff) end--;
    parts.push(body.slice(start, end));
    start = end;
  }
  return parts;
}

/** The exact body of a message: its own, or the one stored beside it (undefined when that is gone). */
async function messageBody(message: WebhookMessage): Promise<string | undefined> {
  if (!message.body_parts) return message.body;
  const parts = await webhookBodies.read(message.delivery_id);
  return parts.length === message.body_parts ? parts.join('') : undefined;
}

function webhookBody(event: string, payload: Record<string, unknown>): string {
  const { event: _ignored, ...rest } = payload;
  return JSON.stringify({ event, ...rest });
}

/** `v=<timestamp ms>,d=<hex HMAC-SHA256 of body followed by the timestamp>`. */
export function signWebhook(body: string, secret: string, timestampMs: number): string {
  return `v=${timestampMs},d=${signatureDigest(body, secret, timestampMs).toString('hex')}`;
}

function signatureDigest(body: string, secret: string, timestampMs: number): Buffer {
  return createHmac('sha256', secret).update(body, 'utf8').update(String(timestampMs), 'utf8').digest();
}

/** What a receiver does: recompute the HMAC and reject stale timestamps. */
export function verifyWebhookSignature(
  body: string,
  secret: string,
  signature: string,
  options: { nowMs?: number; toleranceMs?: number } = {},
): boolean {
  const match = /^v=(\d{1,16}),d=([0-9a-f]{64})$/i.exec(signature);
  if (!match) return false;
  const timestampMs = Number(match[1]);
  const nowMs = options.nowMs ?? Date.now();
  if (Math.abs(nowMs - timestampMs) > (options.toleranceMs ?? SIGNATURE_TOLERANCE_MS)) return false;
  return timingSafeEqual(signatureDigest(body, secret, timestampMs), Buffer.from(match[2]!, 'hex'));
}

export class NoSigningKey extends Error {
  constructor() {
    super('The workspace has no API key to sign webhooks with');
    this.name = 'NoSigningKey';
  }
}

/**
 * Key values never change for a given credential hash (the hash is of the value), so a
 * decrypted value can be reused for as long as the credential exists, sparing a KMS call
 * per delivery. Deleted keys drop out because they are looked up before the cache.
 */
const secretCache = new Map<string, string>();
const SECRET_CACHE_LIMIT = 1000;

/** The webhook key's value, or the oldest secret API key's when no key holds the flag. */
export async function webhookSigningSecret(workspaceId: string): Promise<string> {
  return signingSecret(await getWorkspaceItem(workspaceId));
}

type CredentialOf = (workspace: WorkspaceItem) => Promise<CredentialItem | undefined>;

async function signingSecret(workspace: WorkspaceItem, credentialOf: CredentialOf = signingCredential): Promise<string> {
  const credential = await credentialOf(workspace);
  if (!credential) throw new NoSigningKey();
  const cached = secretCache.get(credential.pk);
  if (cached !== undefined) return cached;
  const value = await decryptSecret(
    credential.secret_ciphertext,
    credentialContext(workspace.workspace_id, credential.credential_id),
  );
  if (secretCache.size >= SECRET_CACHE_LIMIT) secretCache.delete(secretCache.keys().next().value!);
  secretCache.set(credential.pk, value);
  return value;
}

async function signingCredential(workspace: WorkspaceItem): Promise<CredentialItem | undefined> {
  if (workspace.webhook_key_credential) {
    const item = await credentialByHash(workspace.webhook_key_credential);
    if (item && item.kind === 'secret' && item.workspace_id === workspace.workspace_id) return item;
  }
  return (await listCredentials(apiKeyRefs(workspace.workspace_id))).at(-1);
}

interface AttemptOutcome {
  success: boolean;
  status: number | null;
  latency_ms: number;
  error: string | null;
}

async function postOnce(
  workspace: WorkspaceItem,
  url: string,
  body: string,
  timeoutMs: number,
  eventId: string,
  credentialOf?: CredentialOf,
): Promise<AttemptOutcome & { started_at: number }> {
  const startedAt = Date.now();
  let secret: string;
  try {
    secret = await signingSecret(workspace, credentialOf);
  } catch (error) {
    if (!(error instanceof NoSigningKey)) throw error;
    return { success: false, status: null, latency_ms: 0, error: error.message, started_at: startedAt };
  }
  const signature = signWebhook(body, secret, Date.now());
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);
  try {
    // Through the egress guard: never an internal address; a redirect is not followed and
    // is not a 2xx, so the signed body is never forwarded to another address.
    const response = await traced('webhook', () =>
      egressFetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': `${wire.service}-webhooks/1`,
          // The same on every attempt of one event, so a receiver can drop a repeat.
          [eventIdHeader]: eventId,
          ...Object.fromEntries(signatureHeaders.map((name) => [name, signature])),
        },
        body,
        timeoutMs,
      }),
    );
    const latencyMs = latency();
    await response.body?.cancel().catch(() => undefined);
    const success = response.status >= 200 && response.status < 300;
    return {
      success,
      status: response.status,
      latency_ms: latencyMs,
      error: success ? null : `Endpoint replied ${response.status}`,
      started_at: startedAt,
    };
  } catch (error) {
    return { success: false, status: null, latency_ms: latency(), error: transportError(error, timeoutMs), started_at: startedAt };
  }
}

/** What an attempt that got no answer failed of, as the delivery log says it. */
export function transportError(error: unknown, timeoutMs: number): string {
  if (error instanceof EgressRefused) return error.message;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return `Timed out after ${timeoutMs} ms`;
  }
  const cause = (error as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  if (cause?.code) return `Request failed: ${cause.code}`;
  return `Request failed: ${error instanceof Error ? error.message : 'unknown error'}`;
}

/** Whether an attempt got no answer within its timeout (transportError's wording). */
function timedOut(outcome: AttemptOutcome, timeoutMs: number): boolean {
  return outcome.status === null && outcome.error === `Timed out after ${timeoutMs} ms`;
}

/** A slow attempt lowers its workspace's cap (delivery-slots.ts) here at once, and everywhere within the cache's 15 s. */
async function noteSlowReceiver(workspaceId: string, nowMs: number): Promise<void> {
  try {
    const until = await markReceiverSlow(workspaceId, nowMs);
    if (until === undefined) return;
    slowReceiverCache.set(workspaceId, until, nowMs);
    logger.info('webhook receiver marked slow: its workspace\'s in-flight cap is lowered', { workspace_id: workspaceId, slow_until: until });
  } catch (error) {
    // The mark only narrows the workspace's share; the attempt itself is recorded regardless.
    logger.warn('could not mark a webhook receiver slow', { workspace_id: workspaceId, error });
  }
}

interface AttemptRecord {
  attempt_id: string;
  delivery_id: string;
  event: string;
  url: string;
  attempt: number;
  will_retry: boolean;
  test: boolean;
}

async function recordAttempt(workspaceId: string, record: AttemptRecord, outcome: AttemptOutcome & { started_at: number }) {
  const item: Omit<DeliveryAttemptItem, 'pk' | 'sk'> = {
    webhook_attempt_id: record.attempt_id,
    webhook_delivery_id: record.delivery_id,
    event: record.event,
    url: record.url,
    attempt: record.attempt,
    success: outcome.success,
    status: outcome.status,
    error: outcome.error,
    latency_ms: outcome.latency_ms,
    will_retry: record.will_retry,
    test: record.test,
    created_timestamp: outcome.started_at,
    expires_at: Math.floor(outcome.started_at / 1000) + DELIVERY_LOG_RETENTION_SECONDS,
  };
  await deliveryAttempts.put(workspaceId, item);
}

/**
 * One attempt of a webhook sent outside the delivery queue, synchronously by its domain (the
 * call_inbound webhook, shared/calls/inbound/inbound.ts), recorded in the workspace's delivery log
 * like the queued ones: every attempt of one webhook shares its delivery ID.
 */
export async function recordDirectAttempt(
  workspaceId: string,
  record: { delivery_id: string; event: string; url: string; attempt: number; will_retry: boolean },
  outcome: AttemptOutcome & { started_at: number },
): Promise<void> {
  await recordAttempt(workspaceId, { ...record, attempt_id: newTimeOrderedId('webhookAttempt', outcome.started_at), test: false }, outcome);
}

/** A new delivery ID for a webhook sent outside the queue (recordDirectAttempt). */
export const newDeliveryId = () => newId('webhookDelivery');

function resolveTimeout(workspace: WorkspaceItem, given?: number): number {
  return given ?? workspace.webhook_timeout_ms ?? DEFAULT_WEBHOOK_TIMEOUT_MS;
}

/**
 * What became of one queue message: `handled` (the attempt was made and recorded, its retry
 * queued; or the workspace is gone), `duplicate` (another copy of the message already made
 * the attempt: nothing done), `in_progress` (another consumer holds the attempt now: nothing
 * done, and the message must come back, in case that consumer dies before its POST),
 * `deferred` (the workspace's in-flight slots were all held: a copy was queued with a delay).
 */
export type DeliveryResult = 'handled' | 'duplicate' | 'in_progress' | 'deferred';

/**
 * How long a queued delivery may use the workspace record and the signing key it read for an
 * earlier one (docs/webhooks.md, "Cached reads"). A workspace's timeout setting or webhook
 * key changed (flag moved, key deleted) reaches deliveries within this; the URL is not read
 * here (it is fixed in the message when the event is queued). Per process: each Lambda
 * instance holds its own.
 */
const DELIVERY_CACHE_TTL_MS = 15_000;
const DELIVERY_CACHE_ENTRIES = 2_000;
const workspaceCache = new TtlCache<WorkspaceItem>(DELIVERY_CACHE_ENTRIES, DELIVERY_CACHE_TTL_MS);
const credentialCache = new TtlCache<CredentialItem | undefined>(DELIVERY_CACHE_ENTRIES, DELIVERY_CACHE_TTL_MS);
/** Until when each workspace's receiver counts as slow (delivery-slots.ts), read as the workspace is. */
const slowReceiverCache = new TtlCache<number>(DELIVERY_CACHE_ENTRIES, DELIVERY_CACHE_TTL_MS);

/**
 * The longest a deferred delivery waits before it tries for a slot again (doubling from 1 s).
 * Each try costs a receive, a send and a refused slot write or two, so a workspace whose
 * backlog outruns its cap for long must not cycle it fast: at 5 minutes a backlog of 100,000
 * costs about 330 tries a second, and a delivery is at most 5 minutes late once slots free.
 */
const MAX_DEFER_SECONDS = 300;

/**
 * One delivery attempt from the queue: take one of the workspace's in-flight slots (or
 * queue a copy with a delay when they are all held: delivery-slots.ts), claim, sign, POST,
 * record. A failed attempt before the last is queued again with the spec's wait; the last
 * failure is recorded as final.
 *
 * SQS delivers a message at least once, so the same attempt can arrive twice, even at the
 * same moment. A conditional claim per attempt (delivery ID + attempt number) lets one copy
 * POST; the others do nothing and queue nothing. The claim is a lease: a consumer that dies
 * before its POST was answered leaves an unfinished claim, and the message SQS brings back
 * after its visibility timeout (longer than any lease) takes it over and delivers. The
 * POST's outcome is saved on the claim before it is recorded, so a message that comes back
 * because the record or the retry could not be written records it without posting again.
 * Throws only when the attempt could not be claimed, made or recorded, or the retry not
 * queued, so the queue redelivers the message.
 */
export async function deliverWebhook(
  message: WebhookMessage,
  options: {
    queue?: MessageQueue;
    remainingMs?: () => number;
    now?: () => number;
    /** The workspace's in-flight cap instead of the one its concurrent-call limit gives (tests). */
    inFlightCap?: number;
  } = {},
): Promise<DeliveryResult> {
  const queue = options.queue ?? webhookQueue();
  const now = options.now ?? Date.now;
  // Read beside the workspace (both cached), so a cold cache costs one round trip, not two.
  const slowUntil = slowReceiverCache.get(message.workspace_id, () => receiverSlowUntil(message.workspace_id), now());
  slowUntil.catch(() => undefined);
  let workspace: WorkspaceItem;
  try {
    workspace = await workspaceCache.get(message.workspace_id, () => getWorkspaceItem(message.workspace_id), now());
  } catch (error) {
    if (error instanceof NotFound) {
      logger.warn('webhook dropped: workspace gone', { workspace_id: message.workspace_id, delivery_id: message.delivery_id });
      return 'handled';
    }
    throw error;
  }
  let timeoutMs = resolveTimeout(workspace, message.timeout_ms);
  // An attempt cut short by the consumer's deadline counts as a timeout and is retried; a
  // consumer killed mid-attempt would instead lose the record and redeliver the whole batch.
  if (options.remainingMs) timeoutMs = Math.max(1, Math.min(timeoutMs, options.remainingMs() - RECORD_RESERVE_MS));

  // The holder works at most until its invocation's deadline (Lambda ends it there).
  const workMs = options.remainingMs ? options.remainingMs() : timeoutMs + RECORD_RESERVE_MS;
  const cap = options.inFlightCap ?? deliveryCap(workspace.concurrency_limit);
  const effectiveCap = (await slowUntil) > now() ? slowReceiverCap(cap) : cap;
  const slot = await acquireDeliverySlot(message.workspace_id, effectiveCap, { leaseMs: workMs + CLAIM_LEASE_MARGIN_MS, now });
  if (!slot) {
    // Back to the queue, not waiting here: the function goes on to other workspaces' deliveries.
    const deferred = (message.deferred ?? 0) + 1;
    await queue.send({ ...message, deferred } satisfies WebhookMessage, { delaySeconds: Math.min(MAX_DEFER_SECONDS, 2 ** (deferred - 1)) });
    countMetric('WebhookAttempt', { result: 'deferred' });
    return 'deferred';
  }
  // Released once the POST is answered (beside saving its outcome), or when the attempt ends without one.
  let released: Promise<void> | undefined;
  const release = () => (released ??= slot.release());
  try {
    return await claimAndDeliver(message, workspace, { queue, now, timeoutMs, workMs, release });
  } finally {
    await release();
  }
}

/** The attempt once its workspace slot is held: claim, POST, record, queue the retry. */
async function claimAndDeliver(
  message: WebhookMessage,
  workspace: WorkspaceItem,
  { queue, now, timeoutMs, workMs, release }: { queue: MessageQueue; now: () => number; timeoutMs: number; workMs: number; release: () => Promise<void> },
): Promise<DeliveryResult> {
  const holder = randomBytes(12).toString('base64url');
  const nowMs = now();
  const taken = await attemptClaims.claim({
    workspaceId: message.workspace_id,
    deliveryId: message.delivery_id,
    attempt: message.attempt,
    holder,
    attemptId: newTimeOrderedId('webhookAttempt', nowMs),
    nowMs,
    leaseUntil: nowMs + workMs + CLAIM_LEASE_MARGIN_MS,
    expiresAt: Math.floor(nowMs / 1000) + CLAIM_RETENTION_SECONDS,
  });
  if (!('claim' in taken)) {
    const result = taken.current?.state === 'done' ? 'duplicate' : 'in_progress';
    logger.info('webhook attempt already taken by another copy of its message', {
      workspace_id: message.workspace_id,
      delivery_id: message.delivery_id,
      attempt: message.attempt,
      result,
    });
    countMetric('WebhookAttempt', { result: 'duplicate' });
    return result;
  }
  const claim: AttemptClaimItem = taken.claim;

  let outcome = claim.outcome;
  if (!outcome) {
    const body = await messageBody(message);
    if (body === undefined) {
      logger.warn('webhook dropped: its stored body is gone', { workspace_id: message.workspace_id, delivery_id: message.delivery_id });
      await attemptClaims.finish(claim, holder);
      return 'handled';
    }
    const credentialOf: CredentialOf = (ws) =>
      credentialCache.get(`${ws.workspace_id}\u0000${ws.webhook_key_credential ?? ''}`, () => signingCredential(ws), now());
    outcome = await postOnce(workspace, message.url, body, timeoutMs, message.delivery_id, credentialOf);
    if (outcome.latency_ms >= SLOW_ATTEMPT_MS || timedOut(outcome, timeoutMs)) await noteSlowReceiver(message.workspace_id, now());
    const [saved] = await Promise.all([attemptClaims.savePosted(claim, holder, outcome), release()]);
    if (!saved) {
      // Only past the lease, which outlasts the invocation: the consumer that took it over records.
      logger.warn('webhook attempt claim lost before its outcome was saved', { delivery_id: message.delivery_id, attempt: message.attempt });
      return 'in_progress';
    }
  }
  const willRetry = !outcome.success && message.attempt < MAX_ATTEMPTS;
  await recordAttempt(
    message.workspace_id,
    {
      attempt_id: claim.webhook_attempt_id,
      delivery_id: message.delivery_id,
      event: message.event,
      url: message.url,
      attempt: message.attempt,
      will_retry: willRetry,
      test: false,
    },
    outcome,
  );
  if (willRetry) {
    const next: WebhookMessage = { ...message, attempt: message.attempt + 1 };
    // Queued twice if this message comes back after the send (the claim not yet done): the
    // next attempt's claim lets one copy through.
    await queue.send(next, { delaySeconds: RETRY_DELAYS_SECONDS[message.attempt - 1] });
  } else if (!outcome.success) {
    logger.warn('webhook delivery gave up', {
      workspace_id: message.workspace_id,
      delivery_id: message.delivery_id,
      event: message.event,
      attempts: message.attempt,
    });
  }
  await attemptClaims.finish(claim, holder);
  // The last attempt's stored body goes (its TTL removes it otherwise).
  if (!willRetry && message.body_parts) {
    await webhookBodies.remove(message.delivery_id, message.body_parts).catch((error: unknown) =>
      logger.warn('deleting a stored webhook body failed; its TTL removes it', { delivery_id: message.delivery_id, error }),
    );
  }
  // Counted once the attempt is recorded and its retry queued; a failure before that is the
  // consumer's `failed` (functions/webhook-delivery.ts), and SQS brings the message back.
  countMetric('WebhookAttempt', { result: outcome.success ? 'delivered' : willRetry ? 'retried' : 'dead' });
  return 'handled';
}

/** Parses a queue message body; undefined when it is not a webhook message. */
export function parseWebhookMessage(body: string): WebhookMessage | undefined {
  try {
    const parsed = WebhookMessage.safeParse(JSON.parse(body));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** One synchronous, signed `test` event to the given URL (or the saved one), recorded in the log. */
export async function sendTestWebhook(workspaceId: string, url?: string): Promise<TestWebhookResult> {
  const workspace = await getWorkspaceItem(workspaceId);
  const target = url ?? workspace.webhook_url;
  if (!target) throw badRequest('Give a url, or set the workspace webhook_url first');
  const startedAt = Date.now();
  const body = JSON.stringify({ event: 'test', workspace_id: workspaceId, timestamp: startedAt });
  const timeoutMs = Math.min(resolveTimeout(workspace), TEST_WEBHOOK_MAX_TIMEOUT_MS);
  const deliveryId = newId('webhookDelivery');
  const outcome = await postOnce(workspace, target, body, timeoutMs, deliveryId);
  await recordAttempt(
    workspaceId,
    {
      attempt_id: newTimeOrderedId('webhookAttempt', outcome.started_at),
      delivery_id: deliveryId,
      event: 'test',
      url: target,
      attempt: 1,
      will_retry: false,
      test: true,
    },
    outcome,
  );
  return { success: outcome.success, status: outcome.status, latency_ms: outcome.latency_ms, error: outcome.error };
}

export async function listWebhookDeliveries(workspaceId: string, options: { limit: number; pagination_key?: string }): Promise<WebhookDeliveryAttempt[]> {
  return (await deliveryAttempts.newest(workspaceId, options.limit, options.pagination_key)).map((item) => ({
    webhook_attempt_id: item.webhook_attempt_id,
    webhook_delivery_id: item.webhook_delivery_id,
    event: item.event,
    url: item.url,
    attempt: item.attempt,
    success: item.success,
    status: item.status,
    error: item.error,
    latency_ms: item.latency_ms,
    will_retry: item.will_retry,
    test: item.test,
    created_timestamp: item.created_timestamp,
  }));
}
