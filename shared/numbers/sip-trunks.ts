import { DeleteCommand, GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { encryptSecret, recordContext } from '../platform/crypto/envelope.ts';
import { badRequest, conflict, notFound } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { assertNotMasked, unlessMasked } from '../platform/masking.ts';
import {
  MASKED_PASSWORD,
  type CreateSipTrunkInput,
  type SipTrunk,
  type UpdateSipTrunkInput,
} from './telephony-routes.ts';
import { db, isConditionFailure, tableName } from '../platform/store/db.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query.ts';

/*
 * SIP trunks: a workspace's own carrier trunks (termination URI, digest credentials,
 * the addresses it accepts INVITEs from, transport). One item per trunk in the workspace
 * partition (`SIPTRUNK#<id>`). The password is sealed with envelope encryption (context:
 * the workspace and `sip_trunk:<id>`, so a sealed value copied to another trunk or
 * workspace does not open) and answered only as `********`; the plaintext never leaves
 * the request that set it. Another workspace's trunk is a plain 404.
 */

interface SipTrunkItem extends Omit<SipTrunk, 'auth_password'> {
  pk: string;
  sk: string;
  /** The sealed password (`env1.…`), absent without credentials. */
  auth_password_sealed?: string;
  /** Bumped by every write; updates are conditional on the revision they read. */
  revision: number;
}

/** Most trunks per workspace: a listing stays one small query. */
export const MAX_SIP_TRUNKS = 100;

const trunkNotFound = (id: string) => notFound(`SIP trunk ${id} not found`);

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

async function readItem(workspaceId: string, sipTrunkId: string): Promise<SipTrunkItem> {
  const out = await db.send(
    new GetCommand({ TableName: tableName, Key: keys.sipTrunk(workspaceId, sipTrunkId), ConsistentRead: true }),
  );
  if (!out.Item) throw trunkNotFound(sipTrunkId);
  return out.Item as SipTrunkItem;
}

export async function createSipTrunk(workspaceId: string, input: CreateSipTrunkInput, nowMs = Date.now()): Promise<SipTrunk> {
  const existing = await queryAll(keys.sipTrunks(workspaceId), 'sk');
  if (existing.length >= MAX_SIP_TRUNKS) throw badRequest(`A workspace can have at most ${MAX_SIP_TRUNKS} SIP trunks`);
  assertNotMasked('auth_password', input.auth_password);
  const sipTrunkId = newId('sipTrunk');
  const item: SipTrunkItem = {
    ...keys.sipTrunk(workspaceId, sipTrunkId),
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
  await db.send(new PutCommand({ TableName: tableName, Item: item, ConditionExpression: 'attribute_not_exists(pk)' }));
  return toSipTrunk(item);
}

export async function listSipTrunks(workspaceId: string): Promise<SipTrunk[]> {
  return (await queryAll<SipTrunkItem>(keys.sipTrunks(workspaceId)))
    .sort((a, b) => a.created_timestamp - b.created_timestamp || (a.sip_trunk_id < b.sip_trunk_id ? -1 : 1))
    .map(toSipTrunk);
}

export async function getSipTrunk(workspaceId: string, sipTrunkId: string): Promise<SipTrunk> {
  return toSipTrunk(await readItem(workspaceId, sipTrunkId));
}

export async function updateSipTrunk(
  workspaceId: string,
  sipTrunkId: string,
  input: UpdateSipTrunkInput,
  nowMs = Date.now(),
): Promise<SipTrunk> {
  const previous = await readItem(workspaceId, sipTrunkId);
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
    await db.send(
      new PutCommand({
        TableName: tableName,
        Item: next,
        ConditionExpression: 'revision = :revision',
        ExpressionAttributeValues: { ':revision': previous.revision },
      }),
    );
  } catch (error) {
    if (isConditionFailure(error)) throw conflict(`SIP trunk ${sipTrunkId} changed or was deleted meanwhile; try again`);
    throw error;
  }
  return toSipTrunk(next);
}

export async function deleteSipTrunk(workspaceId: string, sipTrunkId: string): Promise<void> {
  try {
    await db.send(
      new DeleteCommand({
        TableName: tableName,
        Key: keys.sipTrunk(workspaceId, sipTrunkId),
        ConditionExpression: 'attribute_exists(pk)',
      }),
    );
  } catch (error) {
    if (isConditionFailure(error)) throw trunkNotFound(sipTrunkId);
    throw error;
  }
}
