import { objectStore } from './aws/object-store.ts';
import { badRequest, conflict, payloadTooLarge } from './errors.ts';
import type { UploadedFile } from './http/multipart.ts';
import { newId } from './ids.ts';
import { objectKeys } from './store/keys.ts';
import { claimUploads, deleteUploadItems, releaseUploads, uploadItems, type UploadItem, type UploadPurpose } from './store/uploads.ts';

export { consumeUploadOp, type UploadPurpose } from './store/uploads.ts';

/*
 * Presigned uploads past API Gateway's ~6 MB request limit, for assets, voice samples and
 * knowledge-base files: the client asks for an upload (the route checks name, type and size
 * for its purpose), PUTs the bytes straight to the object store (S3's presigned PUT; locally
 * the local server's signed PUT), then names the upload in the route that ingests it, which
 * reads the object back and applies the same checks as a multipart file. The object lives in
 * the recordings bucket under `uploads/<ws>/<upload_id>`: the workspace's own prefix, so a
 * URL reaches nothing else.
 */

/** How long an upload URL works. */
const UPLOAD_URL_TTL_MS = 15 * 60_000;
/** An upload never used is forgotten after this (its item's TTL; its object carries the matching retention tag). */
const UPLOAD_RETENTION_DAYS = 1;
/** How long a request may hold uploads it is spending on a vendor call (voice cloning). */
const CLAIM_MS = 120_000;

/**
 * Per purpose: its upload IDs' prefix (knowledge-base uploads are `kb_upload_…`, the format
 * their API documents, so one purpose's ID never passes another route's schema), what it is in
 * messages, and what using one is called there.
 */
const PURPOSES: Record<UploadPurpose, { id: 'upload' | 'kbUpload'; what: string; used: string }> = {
  asset: { id: 'upload', what: 'an asset', used: 'used' },
  voice_sample: { id: 'upload', what: 'a voice sample', used: 'used' },
  knowledge_base_file: { id: 'kbUpload', what: 'a knowledge-base file', used: 'added' },
};

export interface UploadRequest {
  purpose: UploadPurpose;
  filename: string;
  contentType: string;
  contentLength: number;
  /** The body's SHA-256 in base64: then the store refuses any other body. */
  checksumSha256?: string;
}

export interface PresignedUpload {
  upload_id: string;
  upload_url: string;
  method: 'PUT';
  headers: Record<string, string>;
  expires_at: number;
  max_bytes: number;
}

/** An upload URL for one object of exactly `contentLength` bytes of `contentType` (the caller checked both for its purpose). */
export async function createPresignedUpload(workspaceId: string, request: UploadRequest, maxBytes: number, nowMs = Date.now()): Promise<PresignedUpload> {
  const uploadId = newId(PURPOSES[request.purpose].id);
  const expiresAt = nowMs + UPLOAD_URL_TTL_MS;
  const item: UploadItem = {
    type: 'upload',
    upload_id: uploadId,
    workspace_id: workspaceId,
    purpose: request.purpose,
    filename: request.filename,
    content_type: request.contentType,
    content_length: request.contentLength,
    ...(request.checksumSha256 ? { checksum_sha256: request.checksumSha256 } : {}),
    upload_expires_at: expiresAt,
    created_timestamp: nowMs,
    expires_at: Math.floor(expiresAt / 1000) + UPLOAD_RETENTION_DAYS * 86_400,
  };
  await uploadItems.create(item, workspaceId, uploadId);
  const signed = await objectStore().signedPutUrl(objectKeys.upload(workspaceId, uploadId), {
    contentType: request.contentType,
    contentLength: request.contentLength,
    expiresAt,
    retentionDays: UPLOAD_RETENTION_DAYS,
    ...(request.checksumSha256 ? { checksumSha256: request.checksumSha256 } : {}),
  });
  return { upload_id: uploadId, upload_url: signed.url, method: 'PUT', headers: signed.headers, expires_at: expiresAt, max_bytes: maxBytes };
}

/**
 * The uploaded file of this workspace's upload for `purpose`, as a multipart file would be
 * (its name and declared type as asked for). `field` names it in messages (`upload_id`,
 * `upload_ids.2`). 400 when the upload is unknown (expired, used, another workspace's) or made
 * for another purpose, or nothing was PUT yet; 413 (and the upload deleted) past `maxBytes`.
 */
export async function readUpload(workspaceId: string, uploadId: string, purpose: UploadPurpose, field: string, maxBytes: number): Promise<UploadedFile> {
  const missing = () => badRequest(`${field}: Upload ${uploadId} not found (it expired, was already ${PURPOSES[purpose].used}, or is another workspace's)`);
  const item = await uploadItems.get(workspaceId, uploadId);
  if (!item) throw missing();
  if (item.purpose !== purpose) throw badRequest(`${field}: Upload ${uploadId} was made for ${PURPOSES[item.purpose].what}, not ${PURPOSES[purpose].what}`);
  const object = await objectStore().get(objectKeys.upload(workspaceId, uploadId));
  if (!object) {
    // A concurrent request may have used it meanwhile (its object goes right after its item).
    if (!(await uploadItems.get(workspaceId, uploadId))) throw missing();
    throw badRequest(`${field}: Nothing was uploaded for ${uploadId} yet; PUT the file to its upload_url first`);
  }
  if (object.body.length > maxBytes) {
    await discardUploads(workspaceId, [uploadId]);
    throw payloadTooLarge(`File "${item.filename}" exceeds the ${maxBytes / (1024 * 1024)} MB limit per file`);
  }
  return { filename: item.filename, contentType: item.content_type, size: object.body.length, data: object.body };
}

/** Deletes uploads and their objects (used, or refused for their content: nothing of them is kept). */
export async function discardUploads(workspaceId: string, uploadIds: readonly string[]): Promise<void> {
  await deleteUploadItems(workspaceId, uploadIds);
  await Promise.all(uploadIds.map((uploadId) => objectStore().delete(objectKeys.upload(workspaceId, uploadId)).catch(() => undefined)));
}

/** Deletes only the object of an upload whose item a transaction consumed. */
export async function deleteUploadObject(workspaceId: string, uploadId: string): Promise<void> {
  await objectStore().delete(objectKeys.upload(workspaceId, uploadId)).catch(() => undefined);
}

/**
 * Runs `use` holding the uploads (a vendor call that must not run twice for one upload): a
 * concurrent request naming one of them is a 409. When `use` succeeds the uploads are
 * discarded; when it fails they are given back, so the client may retry with the same IDs,
 * unless `keepOnFailure` says the failure was the content's (then they are discarded too).
 */
export async function withClaimedUploads<T>(
  workspaceId: string,
  uploadIds: readonly string[],
  field: string,
  use: () => Promise<T>,
  keepOnFailure: (error: unknown) => boolean,
  nowMs = Date.now(),
): Promise<T> {
  if (uploadIds.length === 0) return use();
  const refused = await claimUploads(workspaceId, uploadIds, nowMs, CLAIM_MS);
  if (refused.length > 0) {
    const index = refused[0]!;
    throw conflict(`${field}.${index}: Upload ${uploadIds[index]} is being used by another request, or was just used`);
  }
  let result: T;
  try {
    result = await use();
  } catch (error) {
    // The use's own error is the answer; cleaning up is best effort (a claim lapses, an item expires, an object has its retention tag).
    if (keepOnFailure(error)) await releaseUploads(workspaceId, uploadIds);
    else await discardUploads(workspaceId, uploadIds).catch(() => undefined);
    throw error;
  }
  // The vendor call happened: a failed cleanup must not turn it into an error (its result would be lost).
  await discardUploads(workspaceId, uploadIds).catch(() => undefined);
  return result;
}
