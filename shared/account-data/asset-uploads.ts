import { conflict, Invalid, payloadTooLarge, TooLarge, UnsupportedMediaType } from '../platform/errors.ts';
import { consumeUploadOp, createPresignedUpload, deleteUploadObject, discardUploads, readUpload, type PresignedUpload } from '../platform/uploads.ts';
import { TransactionCancelled } from '../platform/store/table.ts';
import { createAsset } from './assets.ts';
import { ASSET_MAX_BYTES, type Asset } from './schemas.ts';

/*
 * Assets past API Gateway's ~6 MB request limit (docs/account-data.md):
 * `POST /create-asset-upload` hands out a presigned PUT (shared/platform/uploads.ts), and
 * `POST /create-asset {upload_id}` reads the object back and stores it through the very
 * checks of the multipart path (createAsset: type from the bytes, SVG refusals, audio length).
 */

export async function createAssetUpload(
  workspaceId: string,
  input: { filename: string; content_type?: string; content_length: number; checksum_sha256?: string },
  nowMs = Date.now(),
): Promise<PresignedUpload> {
  // The same refusal as a multipart file over the limit; the type is decided from the bytes later, whatever is declared here.
  if (input.content_length > ASSET_MAX_BYTES) throw payloadTooLarge(`File "${input.filename}" exceeds the ${ASSET_MAX_BYTES / (1024 * 1024)} MB limit per file`);
  return createPresignedUpload(
    workspaceId,
    {
      purpose: 'asset',
      filename: input.filename,
      contentType: input.content_type ?? 'application/octet-stream',
      contentLength: input.content_length,
      ...(input.checksum_sha256 ? { checksumSha256: input.checksum_sha256 } : {}),
    },
    ASSET_MAX_BYTES,
    nowMs,
  );
}

/** A refusal of the file itself (its type, content, length, size): the upload cannot become an asset, so it is deleted. */
const refusesContent = (error: unknown) => error instanceof Invalid || error instanceof UnsupportedMediaType || error instanceof TooLarge;

/**
 * Ingests a presigned upload as an asset: the upload is consumed in the transaction that writes
 * the asset (a replay or a concurrent second ingest fails it: 409, and 400 once it is gone); a
 * file the checks refuse is deleted with its upload.
 */
export async function createAssetFromUpload(workspaceId: string, uploadId: string, nowMs = Date.now()): Promise<Asset> {
  const file = await readUpload(workspaceId, uploadId, 'asset', 'upload_id', ASSET_MAX_BYTES);
  let asset: Asset;
  try {
    asset = await createAsset(workspaceId, file, nowMs, [consumeUploadOp(workspaceId, uploadId)]);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw conflict(`upload_id: Upload ${uploadId} was already used`);
    if (refusesContent(error)) await discardUploads(workspaceId, [uploadId]);
    throw error;
  }
  await deleteUploadObject(workspaceId, uploadId);
  return asset;
}
