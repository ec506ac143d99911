import { encryptSecret, recordContext } from '../../platform/crypto/envelope.ts';
import { badRequest, conflict } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { assertNotMasked, unlessMasked } from '../../platform/text/masking.ts';
import { MASKED_PASSWORD, type CreateSipTrunkInput, type SipTrunk, type UpdateSipTrunkInput } from './schemas.ts';
import { ConditionFailed, table } from '../../platform/store/table.ts';
import { listSipTrunkItems, sipTrunks, type SipTrunkItem } from '../store.ts';

/*
 * SIP trunks: a workspace's own carrier trunks (termination URI, digest credentials,
 * the addresses it accepts INVITEs from, transport). One item per trunk in the workspace
 * partition (`SIPTRUNK#<id>`). The password is sealed with envelope encryption (context:
 * the workspace and `sip_trunk:<id>`, so a sealed value copied to another trunk or
 * workspace does not open) and answered only as `********`; the plaintext never leaves
 * the request that set it. Another workspace's trunk is a plain 404.
 */

/** Most trunks per workspace: a listing stays one small query. */
export const MAX_SIP_TRUNKS = 100;

const passwordContext = (workspaceId: string, sipTrunkId: string) => recordContext(workspaceId, `sip_trunk:${sipTrunkId}`);

const toSipTrunk = (item: SipTrunkItem): SipTrunk => ({
  sip_trunk_id: item.sip_trunk_id,
  name: item.name,
  termination_uri: item.termination_uri,
  auth_username: item.auth_username ?? null,
  auth_password: item.auth_password_sealed ? MASKED_PASSWORD : null,
  allowed_addresses: item.allowed_addresses,
  transport: item.transport,
  created_timestamp: item.created_timestamp,
  last_modification_timestamp: item.last_modification_timestamp,
});

export async function createSipTrunk(workspaceId: string, input: CreateSipTrunkInput, nowMs = Date.now()): Promise<SipTrunk> {
  const existing = await listSipTrunkItems<{ sk: string }>(workspaceId, 'sk');
  if (existing.length >= MAX_SIP_TRUNKS) throw badRequest(`A workspace can have at most ${MAX_SIP_TRUNKS} SIP trunks`);
  assertNotMasked('auth_password', input.auth_password);
  const sipTrunkId = newId('sipTrunk');
  const item: SipTrunkItem = {
    ...sipTrunks.key(workspaceId, sipTrunkId),
    sip_trunk_id: sipTrunkId,
    name: input.name,
    termination_uri: input.termination_uri,
    auth_username: input.auth_username ?? null,
    allowed_addresses: input.allowed_addresses,
    transport: input.transport,
    created_timestamp: nowMs,
    last_modification_timestamp: nowMs,
    revision: 1,
  };
  if (input.auth_password) {
    item.auth_password_sealed = await encryptSecret(input.auth_password, passwordContext(workspaceId, sipTrunkId));
  }
  await sipTrunks.create(item, workspaceId, sipTrunkId);
  return toSipTrunk(item);
}

export async function listSipTrunks(workspaceId: string): Promise<SipTrunk[]> {
  return (await listSipTrunkItems(workspaceId))
    .sort((a, b) => a.created_timestamp - b.created_timestamp || (a.sip_trunk_id < b.sip_trunk_id ? -1 : 1))
    .map(toSipTrunk);
}

export async function getSipTrunk(workspaceId: string, sipTrunkId: string): Promise<SipTrunk> {
  return toSipTrunk(await sipTrunks.mustGet(workspaceId, sipTrunkId));
}

export async function updateSipTrunk(
  workspaceId: string,
  sipTrunkId: string,
  input: UpdateSipTrunkInput,
  nowMs = Date.now(),
): Promise<SipTrunk> {
  const previous = await sipTrunks.mustGet(workspaceId, sipTrunkId);
  // The mask this trunk was answered with, written back, keeps the stored password.
  input = { ...input, auth_password: unlessMasked(input.auth_password) };
  const next: SipTrunkItem = { ...previous, revision: previous.revision + 1, last_modification_timestamp: nowMs };
  for (const field of ['name', 'termination_uri', 'allowed_addresses', 'transport', 'auth_username'] as const) {
    if (input[field] !== undefined) (next as unknown as Record<string, unknown>)[field] = input[field];
  }
  if (input.auth_password === null) delete next.auth_password_sealed;
  else if (input.auth_password !== undefined) {
    next.auth_password_sealed = await encryptSecret(input.auth_password, passwordContext(workspaceId, sipTrunkId));
  }
  // Credentials come in pairs, judged on the trunk as it will be.
  const hasUser = typeof next.auth_username === 'string';
  const hasPassword = next.auth_password_sealed !== undefined;
  if (hasUser !== hasPassword) {
    throw badRequest(
      hasUser
        ? 'auth_password: Required when auth_username is set'
        : 'auth_username: Required when auth_password is set',
    );
  }
  try {
    await table.put({
      Item: next,
      ConditionExpression: 'revision = :revision',
      ExpressionAttributeValues: { ':revision': previous.revision },
    });
  } catch (error) {
    if (error instanceof ConditionFailed) throw conflict(`SIP trunk ${sipTrunkId} changed or was deleted meanwhile; try again`);
    throw error;
  }
  return toSipTrunk(next);
}

export async function deleteSipTrunk(workspaceId: string, sipTrunkId: string): Promise<void> {
  await sipTrunks.remove(workspaceId, sipTrunkId);
}
