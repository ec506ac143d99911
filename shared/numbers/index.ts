import { getKyc } from './kyc.ts';
import { phoneNumberClaims, phoneNumbers, type NumberItem } from './store.ts';

/**
 * What other domains may use of numbers: a workspace's number as stored (calls dial from
 * it and read its agents, bindings and country lists), who holds a number (inbound calls),
 * and the number's calls-per-second limiter.
 */
export type { NumberItem } from './store.ts';
export { cpsLimitFor } from './phone-numbers.ts';
export { AHEAD_TOKEN_USE_MS, takeDialToken, takeDialTokens, type DialToken } from './cps-limiter.ts';
/** The workspace's verification status, for account-status (shared/account-data). */
export { getKyc } from './kyc.ts';

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
  const [{ decryptSecret }, { passwordContext }] = await Promise.all([import('../platform/crypto/envelope.ts'), import('./phone-numbers.ts')]);
  return decryptSecret(number.auth_password_encrypted, passwordContext(number.workspace_id, number.phone_number));
}

/** The workspace's business verification status (`approved`, `pending`, …): billing's verification_needed check asks it. */
export async function verificationStatus(workspaceId: string): Promise<string> {
  return (await getKyc(workspaceId)).status;
}
