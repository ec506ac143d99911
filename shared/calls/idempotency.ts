import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { conflict, unprocessable } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { keys } from '../platform/store/keys.ts';
import { ConditionFailed, table } from '../platform/store/table.ts';

/*
 * `idempotency_key` on the create routes (spec Limits: up to 200 characters, window 1 hour).
 *
 * One claim item per workspace and key (keys.idempotencyClaim, the key's SHA-256 in the
 * partition key). A request claims the key with a single conditional PutItem whose condition
 * carries the expiries: the item is absent, or its 1-hour window has passed, or it is still
 * in progress and its holder's lease has ended (the holder died). DynamoDB applies
 * conditional writes to an item one at a time, so of any number of concurrent requests
 * exactly one claims the key and runs; the others fail the condition and get the item as it
 * was (ReturnValuesOnConditionCheckFailure ALL_OLD), so they decide without a second read:
 * another request body → 422, finished → the stored response, still running → 409.
 *
 * The holder writes its response with a write conditional on its own token (a fence): a
 * holder so slow that its lease ended and another request took the key over can neither
 * overwrite nor delete the newer claim. A run that throws deletes the claim (same fence),
 * so the caller's retry runs again instead of waiting for the lease.
 *
 * Why not @aws-lambda-powertools/idempotency (docs/calls.md, Idempotency): its update and
 * delete are unconditional (no fence), its in-progress expiry is the Lambda context's
 * remaining time (none on the local runtime, so a dead holder would block the key for the
 * whole hour), its clock is not injectable, and it brings a second DynamoDB client around
 * shared/platform/store/table.ts.
 */

/** The request field: 1 to 200 printable characters (no control characters). */
export const IdempotencyKey = lazySchema(() =>
  z
    .string()
    .min(1, 'idempotency_key must be 1 to 200 printable characters')
    .max(200, 'idempotency_key must be 1 to 200 printable characters')
    // Control characters (C0, DEL, C1) and lone surrogates are not printable.
    .regex(/^[^\p{Cc}\p{Cs}]*$/u, 'idempotency_key must be 1 to 200 printable characters'),
);

/** The idempotency key of a batch task's dial (shared/calls/batch-dial.ts): one dial per task, ever. */
export const batchDialKey = (batchCallId: string, taskIndex: number) => `batch_call:${batchCallId}:task:${taskIndex}`;

/** How long a finished request's response is answered to repeats (spec Limits: 1 hour). */
export const IDEMPOTENCY_WINDOW_MS = 60 * 60 * 1000;
/**
 * How long a claim outlives its holder. Longer than any run may take (API functions time out
 * at 29 s, so a live holder never loses its claim), short enough that a retry after a crash
 * succeeds within a minute.
 */
export const IDEMPOTENCY_LEASE_MS = 60_000;

export interface IdempotencyOptions {
  /** The clock, epoch ms (tests). */
  now?: () => number;
  /** How long a claim outlives a holder that died (default IDEMPOTENCY_LEASE_MS). */
  leaseMs?: number;
  /** How long a finished response is kept for repeats (default IDEMPOTENCY_WINDOW_MS). */
  windowMs?: number;
}

export interface IdempotentRequest<T> {
  workspaceId: string;
  /** The request's `idempotency_key` (validated by IdempotencyKey); undefined runs `run` as is. */
  key: string | undefined;
  /** The request as parsed (its body): a repeat must send the same one (key order does not matter). */
  request: unknown;
  /** Does the work once; its result must be JSON (it is stored and answered to repeats). */
  run: () => Promise<T>;
}

type ClaimItem = {
  pk: string;
  sk: string;
  workspace_id: string;
  status: 'in_progress' | 'completed';
  /** SHA-256 of the request's canonical JSON. */
  request_hash: string;
  /** The holder's random token: the fence of its completion and release. */
  holder: string;
  /** Epoch ms: an in-progress claim is free for the taking from then on. */
  lease_until: number;
  /** Epoch ms: from then on the key is free again, whatever the status. */
  window_until: number;
  /** The finished response, as JSON text (kept exactly: nulls, empty strings, numbers). */
  response?: string;
  expires_at: number;
};

const stillProcessing = (key: string) => conflict(`A request with idempotency_key ${key} is still being processed`);
const keyReused = (key: string) =>
  unprocessable(`idempotency_key ${key} was already used with a different request`);

/**
 * Runs `run` once per workspace and idempotency key within the window: a repeat answers the
 * first response (JSON round-tripped, so the first caller gets exactly what repeats get),
 * 409 while the first still runs, 422 when its request differs. Without a key, just runs.
 */
export async function withIdempotency<T>(input: IdempotentRequest<T>, options: IdempotencyOptions = {}): Promise<T> {
  if (input.key === undefined) return input.run();
  const now = options.now ?? Date.now;
  const leaseMs = options.leaseMs ?? IDEMPOTENCY_LEASE_MS;
  const windowMs = options.windowMs ?? IDEMPOTENCY_WINDOW_MS;
  const claimKey = keys.idempotencyClaim(input.workspaceId, sha256(input.key));
  const requestHash = sha256(canonicalJson(input.request));
  const holder = randomBytes(12).toString('base64url');

  const at = now();
  const claim: ClaimItem = {
    ...claimKey,
    workspace_id: input.workspaceId,
    status: 'in_progress',
    request_hash: requestHash,
    holder,
    lease_until: at + leaseMs,
    window_until: at + windowMs,
    expires_at: ttlSeconds(at + windowMs),
  };
  try {
    await table.put({
      Item: claim,
      ConditionExpression: 'attribute_not_exists(pk) OR window_until <= :now OR (#status = :in_progress AND lease_until <= :now)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':now': at, ':in_progress': 'in_progress' },
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    const existing = error.item as ClaimItem | undefined;
    // The condition fails only on an item that exists, and the failure returns it.
    if (!existing) throw error;
    if (existing.request_hash !== requestHash) throw keyReused(input.key);
    if (existing.status === 'completed' && existing.response !== undefined) return JSON.parse(existing.response) as T;
    throw stillProcessing(input.key);
  }

  let result: T;
  try {
    result = await input.run();
  } catch (error) {
    await release(claimKey, holder, input.workspaceId);
    throw error;
  }

  // Undefined (no JSON text) is kept as null.
  const response = JSON.stringify(result) ?? 'null';
  await complete(claimKey, holder, response, now(), windowMs, input.workspaceId);
  return JSON.parse(response) as T;
}

const COMPLETE_ATTEMPTS = 3;

/**
 * Stores the response on the holder's claim. The work is done by now, so this never throws:
 * answering an error would make the client retry and do the work twice. A write that keeps
 * failing leaves the claim in progress, and a repeat after its lease would run again: the
 * one gap, logged as an error.
 */
async function complete(key: { pk: string; sk: string }, holder: string, response: string, done: number, windowMs: number, workspaceId: string) {
  for (let attempt = 1; ; attempt++) {
    try {
      await table.update({
        Key: key,
        UpdateExpression: 'SET #status = :completed, #response = :response, window_until = :window, expires_at = :expires REMOVE lease_until',
        ConditionExpression: 'holder = :holder AND #status = :in_progress',
        ExpressionAttributeNames: { '#status': 'status', '#response': 'response' },
        ExpressionAttributeValues: {
          ':completed': 'completed',
          ':in_progress': 'in_progress',
          ':response': response,
          ':holder': holder,
          // The window runs from the response, so every repeat within the hour after it gets it.
          ':window': done + windowMs,
          ':expires': ttlSeconds(done + windowMs),
        },
      });
      return;
    } catch (error) {
      if (error instanceof ConditionFailed) {
        // Our lease ended and another request took the key over: the work is done and answered
        // here, but the key now belongs to the newer claim, which must not be overwritten.
        logger.warn('idempotency claim was taken over before its holder finished', { workspace_id: workspaceId });
        return;
      }
      if (attempt >= COMPLETE_ATTEMPTS) {
        logger.error('could not store an idempotent response', { workspace_id: workspaceId, error });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}

/** Deletes the holder's claim, so a retry runs at once; someone else's claim is left alone. */
async function release(key: { pk: string; sk: string }, holder: string, workspaceId: string): Promise<void> {
  try {
    await table.delete({
      Key: key,
      ConditionExpression: 'holder = :holder AND #status = :in_progress',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':holder': holder, ':in_progress': 'in_progress' },
    });
  } catch (error) {
    // Taken over already, or the delete failed: the lease frees the key in any case.
    if (!(error instanceof ConditionFailed)) logger.warn('could not release an idempotency claim', { workspace_id: workspaceId, error });
  }
}

/**
 * TTL (epoch seconds), a minute after the window. It only cleans up: DynamoDB deletes expired
 * items up to days late, so every decision reads `window_until` and `lease_until` instead.
 */
const ttlSeconds = (windowUntilMs: number) => Math.ceil(windowUntilMs / 1000) + 60;

/** JSON with object keys sorted at every level, so two bodies that differ only in key order match. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
    return Object.fromEntries(Object.entries(item as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }) ?? 'undefined';
}

/**
 * The fields of a call a stored response keeps once the call is deleted (delete-call, a
 * privacy erase, retention): nothing that names or quotes the other party.
 */
const KEPT_CALL_FIELDS = ['call_id', 'call_type', 'call_status', 'agent_id', 'agent_version', 'agent_name', 'direction', 'batch_call_id', 'sip_uri'] as const;

/** A stored response with its call (a create answer, or a batch dial's `{outcome, call}`) cut to KEPT_CALL_FIELDS. */
function scrubbedResponse(value: unknown, callId: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const record = value as Record<string, unknown>;
  if (record.call_id === callId) return Object.fromEntries(KEPT_CALL_FIELDS.filter((name) => name in record).map((name) => [name, record[name]]));
  if ('call' in record) return { ...record, call: scrubbedResponse(record.call, callId) };
  return value;
}

/**
 * A deleted call's idempotency claim (`keySha256`: the SHA-256 of the key it was created
 * with) keeps answering repeats within its window, so a retry never dials the person again,
 * but its stored response no longer holds the call's numbers, variables or metadata: it is
 * cut to the call's ID, type, status and agent. Only a claim whose response is that call's
 * is changed (a claim the key took over later for another call is left alone), and only
 * when it still holds what was read (a conditional write). Answers whether it changed one.
 */
export async function scrubIdempotencyClaim(workspaceId: string, keySha256: string, callId: string): Promise<boolean> {
  const key = keys.idempotencyClaim(workspaceId, keySha256);
  const claim = await table.get<ClaimItem>(key);
  if (!claim || claim.workspace_id !== workspaceId || claim.response === undefined) return false;
  let parsed: unknown;
  try {
    parsed = JSON.parse(claim.response);
  } catch {
    return false;
  }
  const scrubbed = JSON.stringify(scrubbedResponse(parsed, callId));
  if (scrubbed === claim.response) return false;
  try {
    await table.update({
      Key: key,
      UpdateExpression: 'SET #response = :scrubbed',
      ConditionExpression: '#response = :read',
      ExpressionAttributeNames: { '#response': 'response' },
      ExpressionAttributeValues: { ':scrubbed': scrubbed, ':read': claim.response },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}
