import { objectStore } from '../platform/aws/object-store.ts';
import { config } from '../platform/config.ts';
import { badRequest, notFound, unsupportedMediaType } from '../platform/errors.ts';
import type { UploadedFile } from '../platform/http/multipart.ts';
import { newId } from '../platform/ids.ts';
import { objectKeys } from '../platform/store/keys.ts';
import { TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import { ASSET_MAX_AUDIO_MS, type Asset } from './schemas.ts';
import { measuredAudioMs } from './audio-length.ts';
import { sniffAsset } from './sniff.ts';
import { assetsEntity, deleteAssetItems, getAssetPointer, putAsset, queryAssets, type AssetItem } from './store.ts';

/*
 * Assets (docs/account-data.md): images and audio a workspace shows in widgets and share
 * pages. The type is read from the bytes (sniff.ts); the object is written first, then the
 * record and its public pointer in one transaction (a failed write deletes the object again).
 * `GET /public/assets/{id}` serves the bytes without a key: the ID (96 random bits) is the
 * capability, as a share link's token is.
 */

function publicBase(): string {
  let base = config.PUBLIC_BASE_URL ?? `http://127.0.0.1:${config.PORT}`;
  while (base.endsWith('/')) base = base.slice(0, -1);
  return base;
}
const assetUrl = (assetId: string) => `${publicBase()}/public/assets/${assetId}`;

function toAsset(item: AssetItem): Asset {
  return {
    asset_id: item.asset_id,
    content_type: item.content_type,
    kind: item.kind,
    file_name: item.file_name,
    file_size: item.file_size,
    ...(item.duration_ms !== undefined ? { duration_ms: item.duration_ms } : {}),
    created_timestamp: item.created_timestamp,
    url: assetUrl(item.asset_id),
  };
}

/** A safe stored name: the client's base name (letters, digits, `.-_` only), with the extension of the real type. */
function storedName(given: string, extension: string): string {
  const base = given.replace(/\.[^.]*$/, '').replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 100) || 'asset';
  return `${base}.${extension}`;
}

/**
 * Stores one file as an asset after the checks below (the multipart `file`, or a presigned
 * upload read back by asset-uploads.ts, which passes the op consuming the upload so the
 * record and that consumption are one transaction).
 */
export async function createAsset(workspaceId: string, file: UploadedFile, nowMs = Date.now(), transactOps: readonly TransactOp[] = []): Promise<Asset> {
  if (file.size === 0) throw badRequest('file: The file is empty');
  const sniffed = sniffAsset(file.data);
  if ('refused' in sniffed) {
    // An SVG with scripts is a bad file (400); bytes of no supported type are a 415.
    throw sniffed.unsafe ? badRequest(sniffed.refused) : unsupportedMediaType(sniffed.refused);
  }
  const ok = { ...sniffed.ok };
  if (ok.kind === 'audio') {
    // Every audio type's length is checked: WAV and FLAC from their headers, the others measured.
    ok.durationMs ??= await measuredAudioMs(file.data, ok);
    if (ok.durationMs === undefined) {
      throw badRequest(`file: The length of this ${ok.extension.toUpperCase()} audio could not be read; audio assets must tell their length and last at most ${ASSET_MAX_AUDIO_MS / 1000} s`);
    }
    if (ok.durationMs > ASSET_MAX_AUDIO_MS) {
      throw badRequest(`file: Audio is ${Math.round(ok.durationMs / 100) / 10} s long; at most ${ASSET_MAX_AUDIO_MS / 1000} s`);
    }
  }
  const assetId = newId('asset');
  const item: AssetItem = {
    type: 'asset',
    asset_id: assetId,
    workspace_id: workspaceId,
    content_type: ok.contentType,
    kind: ok.kind,
    file_name: storedName(file.filename, ok.extension),
    file_size: file.size,
    ...(ok.durationMs !== undefined ? { duration_ms: ok.durationMs } : {}),
    object_key: objectKeys.asset(workspaceId, assetId),
    created_timestamp: nowMs,
  };
  await objectStore().put(item.object_key, file.data, item.content_type);
  try {
    await putAsset(item, transactOps);
  } catch (error) {
    await objectStore().delete(item.object_key).catch(() => undefined);
    throw error;
  }
  return toAsset(item);
}

export async function listAssets(workspaceId: string): Promise<Asset[]> {
  const items = await queryAssets(workspaceId);
  return items.sort((a, b) => b.created_timestamp - a.created_timestamp).map(toAsset);
}

export async function getAsset(workspaceId: string, assetId: string): Promise<Asset> {
  return toAsset(await assetsEntity.mustGet(workspaceId, assetId));
}

/** Deletes the record and pointer (the public URL stops at once), then the object. */
export async function deleteAsset(workspaceId: string, assetId: string): Promise<void> {
  const item = await assetsEntity.mustGet(workspaceId, assetId);
  try {
    await deleteAssetItems(workspaceId, assetId);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw notFound(`Asset ${assetId} not found`);
    throw error;
  }
  await objectStore().delete(item.object_key);
}

/** The public fetch: the bytes and their type, or 404 (an unknown, deleted or malformed ID alike). */
export async function publicAsset(assetId: string): Promise<{ body: Buffer; contentType: string }> {
  const pointer = await getAssetPointer(assetId);
  const object = pointer ? await objectStore().get(pointer.object_key) : undefined;
  if (!pointer || !object) throw notFound(`Asset ${assetId} not found`);
  return { body: object.body, contentType: pointer.content_type };
}
