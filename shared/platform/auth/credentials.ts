import { randomBytes } from 'node:crypto';
import { sha256 } from '../crypto/hash.ts';
import type { Scope } from './scopes.ts';
import { keyRole, keyRoleRank, ROLES, type KeyRole } from './roles.ts';
import { encryptSecret, recordContext } from '../crypto/envelope.ts';
import { newId } from '../ids.ts';
import { TransactionCancelled, table, type TransactOp } from '../store/table.ts';
import { keys, type ItemKey, type PartitionQuery } from '../store/keys.ts';
import { queryAll } from '../store/query.ts';
import { setOrRemove } from '../store/update-expression.ts';
import { config } from '../config.ts';
import { credentialHash, extraShardKeys, shardsFor } from './key-shards.ts';

/**
 * The stored form shared by secret API keys and public (browser) keys. It is addressed
 * by the SHA-256 of the key's value; a workspace-owned pointer maps the key's ID to it.
 * The value itself is kept only as an envelope-encrypted copy. A key whose limit one item
 * cannot count has copies of the record (its rate-window shards, key-shards.ts): every
 * write of the record below writes them too, in the same transaction where the record's
 * rules change, so the gate may read the rules from whichever shard it counts on.
 */
export interface CredentialItem extends ItemKey {
  kind: 'secret' | 'public';
  credential_id: string;
  workspace_id: string;
  name: string;
  masked_key: string;
  secret_ciphertext: string;
  created_timestamp: number;
  last_used_timestamp?: number;
  is_webhook_key?: boolean;
  scopes?: Scope[];
  allowed_ips?: string[];
  rate_limit_per_minute?: number;
  allowed_origins?: string[];
  /** A public key's agents (empty or absent: any agent of the workspace); public-start.ts enforces it. */
  allowed_agent_ids?: string[];
  /**
   * The member the key acts for: whose session made it, or the member of the key that made
   * it (absent: no member stands behind it, such as the workspace's first key).
   */
  created_by_member?: string;
  /** The role the key acts with (roles.ts `keyRole`): its creator's, lowered with the member, never raised. */
  creator_role?: KeyRole;
  /**
   * The workspace's name as of `org_name_rev` (the workspace's `name_rev`), kept here so the
   * gate's one write returns it with the key: `get-api-key-info` needs no second read.
   * Absent on records written before it existed (the reader then reads the workspace).
   */
  org_name?: string;
  org_name_rev?: number;
  /**
   * How many items count the key's rate window (key-shards.ts); absent on records written
   * before shards existed: 1. Shards 1…N-1 are copies of this record, written with it.
   */
  rate_shards?: number;
  /** Bumped by every change of the record, so a new shard copied from a read is known to copy the latest. */
  rev?: number;
  [rateWindow: `rl_${number}`]: number;
}

interface CredentialRef extends ItemKey {
  credential_hash: string;
}

export interface IssuedSecret {
  id: string;
  value: string;
  hash: string;
  masked: string;
  ciphertext: string;
}

/** First 8 characters, eight asterisks, last 4. */
export function maskSecret(value: string): string {
  return `${value.slice(0, 8)}********${value.slice(-4)}`;
}

/** A new key value (`key_` or `public_key_` + 48 hex), its lookup hash and its encrypted copy. */
export async function issueSecret(kind: CredentialItem['kind'], workspaceId: string): Promise<IssuedSecret> {
  const id = newId(kind === 'secret' ? 'apiKey' : 'publicKey');
  const value = `${kind === 'secret' ? 'key_' : 'public_key_'}${randomBytes(24).toString('hex')}`;
  return {
    id,
    value,
    hash: sha256(value),
    masked: maskSecret(value),
    ciphertext: await encryptSecret(value, credentialContext(workspaceId, id)),
  };
}

export function credentialContext(workspaceId: string, credentialId: string) {
  return recordContext(workspaceId, `credential/${credentialId}`);
}

/** Follows a workspace's pointer to the credential; undefined when either is gone. */
export async function findCredential(ref: ItemKey): Promise<CredentialItem | undefined> {
  const hash = (await table.get<CredentialRef>(ref))?.credential_hash;
  if (!hash) return undefined;
  return table.get<CredentialItem>(keys.credential(hash));
}

/** All credentials behind a workspace's pointers of one kind, newest first. */
export async function listCredentials(refs: PartitionQuery): Promise<CredentialItem[]> {
  const hashes = (await queryAll<CredentialRef>(refs)).map((ref) => ref.credential_hash);

  const items = await table.batchGet<CredentialItem>(hashes.map((hash) => keys.credential(hash)));
  return items.sort((a, b) => b.created_timestamp - a.created_timestamp || (a.credential_id < b.credential_id ? 1 : -1));
}

/** The credential's own Put and Delete: callers read or adjust them (the item, its condition). */
export type CredentialPut = { Put: { Item: CredentialItem; ConditionExpression: string } };
export type CredentialDelete = { Delete: { Key: ItemKey; ConditionExpression: string; ExpressionAttributeValues?: Record<string, unknown> } };

type NewCredential = Pick<CredentialItem, 'kind' | 'name' | 'org_name' | 'org_name_rev'> &
  Partial<Pick<CredentialItem, 'is_webhook_key' | 'scopes' | 'allowed_ips' | 'rate_limit_per_minute' | 'allowed_origins' | 'allowed_agent_ids' | 'created_by_member' | 'creator_role'>>;

/** The limit a record counts: its own, else the server's default. */
const limitOf = (fields: { rate_limit_per_minute?: number | null }) => fields.rate_limit_per_minute ?? config.RATE_LIMIT_PER_KEY;

/**
 * The Puts that create a credential: the record itself, the workspace's pointer to it, and
 * the record's shard copies (`shards`, from the limit unless given).
 */
export function credentialPuts(
  workspaceId: string,
  secret: IssuedSecret,
  fields: NewCredential,
  nowMs: number,
  shards = shardsFor(limitOf(fields)),
): [CredentialPut, TransactOp, ...TransactOp[]] {
  const item: CredentialItem = {
    ...keys.credential(secret.hash),
    ...fields,
    credential_id: secret.id,
    workspace_id: workspaceId,
    masked_key: secret.masked,
    secret_ciphertext: secret.ciphertext,
    created_timestamp: nowMs,
    rate_shards: shards,
  };
  const ref: CredentialRef = {
    ...(fields.kind === 'secret' ? keys.apiKeyRef(workspaceId, secret.id) : keys.publicKeyRef(workspaceId, secret.id)),
    credential_hash: secret.hash,
  };
  return [
    { Put: { Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
    { Put: { Item: ref, ConditionExpression: 'attribute_not_exists(pk)' } },
    ...extraShardKeys(secret.hash, shards).map((key) => ({ Put: { Item: { ...item, ...key }, ConditionExpression: 'attribute_not_exists(pk)' } })),
  ];
}

const shardsOf = (credential: CredentialItem) => credential.rate_shards ?? 1;

/**
 * The writes that apply a change to a credential, its shards included: given fields are
 * SET, fields given as null are REMOVEd (restoring a server default). Conditional on the
 * credential existing. A raised limit that needs more shards adds them as copies of the
 * record as read with the change applied, on the condition that the record was not changed
 * since it was read (its `rev`): a copy never carries rules older than the record's.
 * A lowered limit keeps its shards (their shares still add up to the limit).
 */
export function credentialUpdate(credential: CredentialItem, changes: Record<string, unknown>): TransactOp[] {
  const hash = credentialHash(credential);
  const before = shardsOf(credential);
  const limitChanged = 'rate_limit_per_minute' in changes && changes.rate_limit_per_minute !== undefined;
  const after = limitChanged ? Math.max(before, shardsFor(limitOf(changes as { rate_limit_per_minute?: number | null }))) : before;
  const fields = after === before ? changes : { ...changes, rate_shards: after };
  const update = setOrRemove(fields);
  const rev = credential.rev ?? 0;
  const unchanged = after === before ? '' : credential.rev === undefined ? ' AND attribute_not_exists(#rev)' : ' AND #rev = :rev';
  const write = (key: ItemKey, condition: string): TransactOp => ({
    Update: {
      Key: key,
      ConditionExpression: condition,
      UpdateExpression: `${update.UpdateExpression} ADD #rev :one`,
      ExpressionAttributeNames: { ...update.ExpressionAttributeNames, '#rev': 'rev' },
      ExpressionAttributeValues: {
        ...update.ExpressionAttributeValues,
        ':one': 1,
        ...(condition.includes(':rev') ? { ':rev': rev } : {}),
      },
    },
  });
  const copy = () => {
    const item: Record<string, unknown> = { ...credential, ...fields, rev: rev + 1 };
    for (const [field, value] of Object.entries(fields)) if (value === null) delete item[field];
    for (const name of Object.keys(item)) if (/^rl_\d+$/.test(name) || name === 'last_used_timestamp') delete item[name];
    return item;
  };
  return [
    write({ pk: credential.pk, sk: credential.sk }, `attribute_exists(pk)${unchanged}`),
    ...extraShardKeys(hash, before).map((key) => write(key, 'attribute_exists(pk)')),
    ...extraShardKeys(hash, after)
      .slice(before - 1)
      .map((key): TransactOp => ({ Put: { Item: { ...copy(), ...key }, ConditionExpression: 'attribute_not_exists(pk)' } })),
  ];
}

/** The Deletes that remove a credential, its pointer and its shards; the first fails if already gone. */
export function credentialDeletes(credential: CredentialItem, ref: ItemKey): [CredentialDelete, TransactOp, ...TransactOp[]] {
  return [
    { Delete: { Key: { pk: credential.pk, sk: credential.sk }, ConditionExpression: 'attribute_exists(pk)' } },
    { Delete: { Key: ref } },
    ...extraShardKeys(credentialHash(credential), shardsOf(credential)).map((key) => ({ Delete: { Key: key } })),
  ];
}

export async function readCredential(credential: CredentialItem): Promise<CredentialItem | undefined> {
  return table.get<CredentialItem>({ pk: credential.pk, sk: credential.sk });
}

const MAX_LOWERING_PASSES = 10;

/**
 * Lowers every secret key acting for a member to at most `cap` (the member's new role, or
 * `none` once removed or deactivated), after that change committed: a key never acts above
 * its creator's current role. Each update is conditional on the key still acting above the
 * cap, so a concurrent, lower cap is never raised again. A key made meanwhile is either
 * committed before the change (a creation checks the member's role, or its creating key's,
 * in its transaction), and so seen by a strongly consistent listing made after it, or
 * refused; the listing repeats until a pass finds nothing to lower, for keys a key made
 * just before that key was lowered. Idempotent: running it again changes nothing.
 */
export async function lowerMemberKeys(workspaceId: string, memberId: string, cap: KeyRole): Promise<void> {
  const above = ROLES.filter((role) => keyRoleRank(role) > keyRoleRank(cap));
  if (above.length === 0) return;
  for (let pass = 0; pass < MAX_LOWERING_PASSES; pass++) {
    const credentials = (await listCredentials(keys.apiKeyRefs(workspaceId))).filter(
      (credential) => credential.created_by_member === memberId && keyRoleRank(keyRole(credential)) > keyRoleRank(cap),
    );
    if (credentials.length === 0) return;
    const values = Object.fromEntries(above.map((role) => [`:above_${role}`, role]));
    for (const credential of credentials) {
      // The record and its shards in one transaction: no shard admits a role the record lost.
      const lower = (key: ItemKey): TransactOp => ({
        Update: {
          Key: key,
          UpdateExpression: 'SET creator_role = :cap ADD #rev :one',
          // No recorded role with a member: an older record, acting as developer.
          ConditionExpression: `created_by_member = :member AND (attribute_not_exists(creator_role) OR creator_role IN (${Object.keys(values).join(', ')}))`,
          ExpressionAttributeNames: { '#rev': 'rev' },
          ExpressionAttributeValues: { ':cap': cap, ':member': memberId, ':one': 1, ...values },
        },
      });
      try {
        await table.transact([{ pk: credential.pk, sk: credential.sk }, ...extraShardKeys(credentialHash(credential), shardsOf(credential))].map(lower));
      } catch (error) {
        // Deleted meanwhile, or already lowered as far (the next pass reads it again).
        if (!(error instanceof TransactionCancelled)) throw error;
      }
    }
  }
  throw new Error(`The keys of member ${memberId} kept changing while being lowered to ${cap}`);
}
