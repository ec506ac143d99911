import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { config } from '../../platform/config.ts';
import { trimTrailing } from '../../platform/text/text.ts';
import { readLiveKitCredentials, type CredentialOptions } from './credentials.ts';

/**
 * The agent worker's access to `POST /internal/calls/{call_id}/events`: a per-call token,
 * `wrt_` + base64url(HMAC-SHA256(K, call_id)), handed to the worker in its dispatch
 * metadata. K is derived from the LiveKit API secret with HKDF, so:
 * - no KMS call and no stored item per call: any function can check a token from the
 *   secret it already reads (the route stays one round trip);
 * - the derived key is not the LiveKit secret itself, so a report token is never a valid
 *   LiveKit signature nor the other way round;
 * - a token opens one call's route only, and rotating the LiveKit secret revokes them all
 *   (calls in flight at a rotation lose their reports; rotate between calls).
 * It carries no expiry: the report route refuses events for calls that have ended.
 */
const TOKEN_PREFIX = 'wrt_';
const HKDF_INFO = 'parley/worker-report-token/v1';

async function reportKey(options: CredentialOptions): Promise<Buffer> {
  const { apiSecret } = await readLiveKitCredentials(options);
  return Buffer.from(hkdfSync('sha256', apiSecret, Buffer.alloc(0), HKDF_INFO, 32));
}

function mac(key: Buffer, callId: string): Buffer {
  return createHmac('sha256', key).update(callId, 'utf8').digest();
}

export async function workerReportToken(callId: string, options: CredentialOptions = {}): Promise<string> {
  return TOKEN_PREFIX + mac(await reportKey(options), callId).toString('base64url');
}

/** Whether `token` is the report token of `callId`; compared in constant time. */
export async function verifyWorkerReportToken(
  callId: string,
  token: string | undefined,
  options: CredentialOptions = {},
): Promise<boolean> {
  if (token === undefined) return false;
  // The whole text is compared, not decoded bytes: base64url decoding skips stray characters,
  // so a padded or decorated token would otherwise pass as the same one.
  const given = Buffer.from(token, 'utf8');
  const expected = Buffer.from(await workerReportToken(callId, options), 'utf8');
  // timingSafeEqual needs equal lengths; a wrong length is refused before comparing.
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Where the worker posts its events for a call: PUBLIC_BASE_URL, locally the local server. */
export function workerReportUrl(callId: string): string {
  const base = trimTrailing(config.PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`, '/');
  return `${base}/internal/calls/${encodeURIComponent(callId)}/events`;
}
