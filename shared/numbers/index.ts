import { getKyc } from './telephony/index.ts';
import { NotFound } from '../platform/errors.ts';
import type * as PhoneNumbers from './phone-numbers/index.ts';
// TWILIO_INBOUND_ALLOWED_ADDRESSES is checked with the settings wherever numbers are reached (checkWithSettings).
import './inbound-addresses.ts';
import { listNumberItems, phoneNumberClaims, phoneNumbers, type NumberItem } from './store.ts';
import { loadOnce } from '../platform/lazy.ts';

/**
 * What other domains may use of numbers: a workspace's number as stored (calls dial from
 * it and read its agents, bindings and country lists), who holds a number (inbound calls),
 * and the number's calls-per-second limiter.
 */
export type { NumberItem } from './store.ts';
export { AHEAD_TOKEN_USE_MS, cpsLimitFor, takeAvailableDialTokens, takeDialToken, type DialToken } from './cps-limiter.ts';
/** The workspace's verification status, for account-status (shared/account-data). */
export { getKyc } from './telephony/index.ts';

/**
 * The phone numbers' operations (phone-numbers/index.ts: the carriers, SIP origination, the binding
 * checks), loaded by the first dial with a trunk password or the workspace purge: the calls
 * and batch functions reach this entry on every dial and need none of it otherwise
 * (docs/performance.md, "Sizes: cold and lazy").
 */
const phoneNumbersModule = loadOnce((): Promise<typeof PhoneNumbers> => import('./phone-numbers/index.ts'));

/** The workspace's number, or undefined (another workspace's number is as absent). */
export async function workspaceNumber(workspaceId: string, phoneNumber: string): Promise<NumberItem | undefined> {
  return phoneNumbers.get(workspaceId, phoneNumber);
}

/** The number and its workspace, whoever holds it (an inbound call names only the number). */
export async function numberHolder(phoneNumber: string): Promise<NumberItem | undefined> {
  const claim = await phoneNumberClaims.get(phoneNumber);
  return claim ? phoneNumbers.get(claim.workspace_id, phoneNumber) : undefined;
}

/** An imported number's SIP trunk password, opened for a dial (undefined when it has none). */
export async function trunkPassword(number: NumberItem): Promise<string | undefined> {
  if (!number.auth_password_encrypted) return undefined;
  const [{ decryptSecret }, { passwordContext }] = await Promise.all([import('../platform/crypto/envelope.ts'), phoneNumbersModule()]);
  return decryptSecret(number.auth_password_encrypted, passwordContext(number.workspace_id, number.phone_number));
}

/** The workspace's business verification status (`approved`, `pending`, …): billing's verification_needed check asks it. */
export async function verificationStatus(workspaceId: string): Promise<string> {
  return (await getKyc(workspaceId)).status;
}

/**
 * Releases up to `limit` of a workspace's numbers at their carriers and deletes them (the
 * workspace purge after `POST /workspace/delete`: a held number costs money every month).
 * `more` when numbers remain. A number already gone is skipped; a carrier that refuses is
 * thrown, so the purge step is retried rather than dropping a number still being paid for.
 */
export async function releaseWorkspaceNumbers(workspaceId: string, limit = 20): Promise<{ released: number; more: boolean }> {
  const items = await listNumberItems(workspaceId);
  const { deletePhoneNumber } = await phoneNumbersModule();
  let released = 0;
  for (const item of items.slice(0, limit)) {
    try {
      await deletePhoneNumber(workspaceId, item.phone_number);
      released++;
    } catch (error) {
      if (!(error instanceof NotFound)) throw error;
    }
  }
  return { released, more: items.length > limit };
}
