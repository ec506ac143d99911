import type { CredentialItem } from '../platform/auth/credentials.ts';
import { ConditionFailed, table, type TransactOp } from '../platform/store/table.ts';
import { apiKeyRefs, credentialKey, publicKeyRefs, workspaces, type WorkspaceItem } from './store.ts';
import { queryAll } from '../platform/store/query.ts';
import { extraShardKeys } from '../platform/auth/key-shards.ts';
import type { ItemKey } from '../platform/store/keys.ts';

/*
 * Each credential keeps a copy of its workspace's name (`org_name`) so that the gate's one
 * conditional write, which returns the key's record, already holds what
 * `get-api-key-info` answers: no second round trip on every identity call.
 *
 * The copy stays right without a lock:
 * - the workspace counts its renames in `name_rev`;
 * - a new credential is written with the name and `name_rev` it read, in a transaction
 *   that checks the workspace still has that `name_rev` (a rename in between fails it,
 *   and the create reads again);
 * - a rename commits the workspace first, then lists the workspace's credentials (a
 *   strongly consistent query, so every credential committed before the rename is seen)
 *   and updates each whose `org_name_rev` is older. Two renames racing: the newer `name_rev`
 *   wins on every credential.
 * If the process dies between the rename's commit and the end of the copy, some keys show
 * the old name until the next rename (which copies again); the workspace's own name is
 * always right.
 */

export const nameRev = (workspace: WorkspaceItem): number => workspace.name_rev ?? 0;

/** The fields a new credential carries from the workspace as read. */
export function orgNameFields(workspace: WorkspaceItem): Pick<CredentialItem, 'org_name' | 'org_name_rev'> {
  return { org_name: workspace.name, org_name_rev: nameRev(workspace) };
}

/** The condition that the workspace has not been renamed since it was read. */
export function unrenamedCondition(workspace: WorkspaceItem): { expression: string; values: Record<string, unknown> } {
  // Nor deleted since: a key written after POST /workspace/delete marked the workspace would outlive it.
  return workspace.name_rev === undefined
    ? { expression: 'attribute_exists(pk) AND attribute_not_exists(name_rev) AND attribute_not_exists(deleted_timestamp)', values: {} }
    : { expression: 'name_rev = :nameRev AND attribute_not_exists(deleted_timestamp)', values: { ':nameRev': workspace.name_rev } };
}

/**
 * Adds the unrenamed condition to a transaction that writes a credential: onto the
 * transaction's own Update of the workspace when it has one (one item may appear only
 * once in a transaction), else as a ConditionCheck.
 */
export function withUnrenamedWorkspace(ops: TransactOp[], workspace: WorkspaceItem): TransactOp[] {
  const key = workspaces.key(workspace.workspace_id);
  const { expression, values } = unrenamedCondition(workspace);
  const sameItem = (candidate: { pk: string; sk: string }) => candidate.pk === key.pk && candidate.sk === key.sk;
  let merged = false;
  const result = ops.map((op) => {
    if (!('Update' in op) || !op.Update || !sameItem(op.Update.Key as { pk: string; sk: string })) return op;
    merged = true;
    const update = op.Update;
    return {
      Update: {
        ...update,
        ConditionExpression: update.ConditionExpression ? `(${update.ConditionExpression}) AND (${expression})` : expression,
        ExpressionAttributeValues: { ...update.ExpressionAttributeValues, ...values },
      },
    } as TransactOp;
  });
  if (merged) return result;
  return [
    ...result,
    {
      ConditionCheck: {
        Key: key,
        ConditionExpression: expression,
        ...(Object.keys(values).length > 0 ? { ExpressionAttributeValues: values } : {}),
      },
    },
  ];
}

const COPY_CONCURRENCY = 8;

/** Copies a committed rename onto every credential of the workspace that holds an older one. */
export async function copyOrgName(workspaceId: string, name: string, rev: number): Promise<void> {
  const refs = [
    ...(await queryAll<{ credential_hash: string }>(apiKeyRefs(workspaceId))),
    ...(await queryAll<{ credential_hash: string }>(publicKeyRefs(workspaceId))),
  ];
  let next = 0;
  const worker = async () => {
    while (next < refs.length) {
      const hash = refs[next++]!.credential_hash;
      const copy = async (key: ItemKey) => {
        try {
          return await table.update({
            Key: key,
            UpdateExpression: 'SET org_name = :name, org_name_rev = :rev ADD #changes :one',
            ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(org_name_rev) OR org_name_rev < :rev)',
            ExpressionAttributeNames: { '#changes': 'rev' },
            ExpressionAttributeValues: { ':name': name, ':rev': rev, ':one': 1 },
            ReturnValues: 'ALL_NEW',
          });
        } catch (error) {
          // Deleted meanwhile, or a newer rename already copied: nothing to do for this key.
          if (!(error instanceof ConditionFailed)) throw error;
          return undefined;
        }
      };
      // The record first: its shard count names the copies (the gate reads whichever it counts on).
      const record = (await copy(credentialKey(hash))) as Pick<CredentialItem, 'rate_shards'> | undefined;
      if (record) await Promise.all(extraShardKeys(hash, record.rate_shards ?? 1).map(copy));
    }
  };
  await Promise.all(Array.from({ length: Math.min(COPY_CONCURRENCY, refs.length) }, worker));
}
