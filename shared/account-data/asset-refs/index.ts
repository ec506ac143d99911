import { assetsEntity } from '../store.ts';

/*
 * The account-data domain's narrow entry for configuration that names an asset (a
 * transfer's `custom_on_hold_music_asset_id`): the agents domain checks it when an LLM, a
 * flow or a component is saved. It reads asset items only (store.ts: no S3 client,
 * music-metadata or exports), so the agents, flows and chat-agents functions bundle it
 * without the rest of the domain (the lint rule allows `./index.ts`
 * beside every index.ts, as it allows calls/records/index.ts).
 */

/**
 * Why `assetId` cannot be played as audio in this workspace: `Asset <id> not found` (none,
 * or another workspace's), `Asset <id> is an image, not audio`; undefined when it can.
 */
export async function audioAssetProblem(workspaceId: string, assetId: string): Promise<string | undefined> {
  const asset = await assetsEntity.get(workspaceId, assetId);
  if (!asset) return `Asset ${assetId} not found`;
  if (asset.kind !== 'audio') return `Asset ${assetId} is an ${asset.kind}, not audio`;
  return undefined;
}
