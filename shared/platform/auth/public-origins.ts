import { keys } from '../store/keys.ts';
import { table } from '../store/table.ts';

/*
 * The origin index of public keys (keys.publicOrigin): which origins some public key allows.
 * A CORS preflight carries no key, so it cannot ask the key; it asks this index instead.
 * The index only decides CORS headers; admission is always the key's own record (the gate).
 * It is written around a key's write rather than inside its transaction (50 origins replaced
 * by 50 others would pass DynamoDB's 100 operations): origins are added before the key allows
 * them and removed after it stops, so the index never lacks an origin a key allows.
 */

/** Adds the index entries of origins a key is about to allow. */
export async function indexPublicOrigins(credentialId: string, origins: readonly string[]): Promise<void> {
  await Promise.all(origins.map((origin) => table.put({ Item: { ...keys.publicOrigin(origin, credentialId), credential_id: credentialId } })));
}

/** Removes the index entries of origins a key no longer allows (or of a deleted key). */
export async function unindexPublicOrigins(credentialId: string, origins: readonly string[]): Promise<void> {
  if (origins.length) await table.batchDelete(origins.map((origin) => keys.publicOrigin(origin, credentialId)));
}

/** Whether any public key allows `origin` (one query of at most one item). */
export async function someKeyAllowsOrigin(origin: string): Promise<boolean> {
  const query = keys.publicOrigins(origin.toLowerCase());
  const page = await table.queryPage({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': query.pk, ':prefix': query.skPrefix },
    Limit: 1,
  });
  return page.items.length > 0;
}
