import { notFound } from '../errors.ts';
import { keys } from './keys.ts';
import { defineEntity, table, TransactionCancelled, type TransactOp } from './table.ts';

/*
 * Presigned uploads of assets, voice samples and knowledge-base files
 * (shared/platform/uploads.ts): one item per upload in the workspace's partition
 * (`WS#<ws>` / `UPLOAD#<id>`), from the moment its URL is handed out until a route uses it
 * (or a day later, by TTL).
 */

/** What an upload is for: an upload made for one use cannot be spent on another. */
export type UploadPurpose = 'asset' | 'voice_sample' | 'knowledge_base_file';

export interface UploadItem {
  type: 'upload';
  upload_id: string;
  workspace_id: string;
  purpose: UploadPurpose;
  filename: string;
  content_type: string;
  content_length: number;
  checksum_sha256?: string;
  /** When the PUT URL stops working (epoch ms). */
  upload_expires_at: number;
  created_timestamp: number;
  /** Set while a request uses the upload (epoch ms it may be taken over after). */
  claimed_until?: number;
  /** TTL (epoch seconds): an upload never used is forgotten. */
  expires_at: number;
}

export const uploadItems = defineEntity<UploadItem, [workspaceId: string, uploadId: string]>({
  key: keys.upload,
  notFound: (_workspaceId, uploadId) => notFound(`Upload ${uploadId} not found`),
});

/** Removes an upload in the transaction that writes what it became: a second use (a replay, a race) fails that transaction. */
export const consumeUploadOp = (workspaceId: string, uploadId: string): TransactOp => uploadItems.removeOp(workspaceId, uploadId);

/**
 * Claims uploads for one request, all or none: each must exist and be unclaimed (or its
 * claim lapsed), so two requests never spend the same upload on a vendor call. Answers the
 * indexes of the uploads that could not be claimed (empty when all were).
 */
export async function claimUploads(workspaceId: string, uploadIds: readonly string[], nowMs: number, leaseMs: number): Promise<number[]> {
  try {
    await table.transact(
      uploadIds.map((uploadId) => ({
        Update: {
          Key: keys.upload(workspaceId, uploadId),
          UpdateExpression: 'SET claimed_until = :until',
          ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(claimed_until) OR claimed_until < :now)',
          ExpressionAttributeValues: { ':until': nowMs + leaseMs, ':now': nowMs },
        },
      })),
    );
    return [];
  } catch (error) {
    if (error instanceof TransactionCancelled) return error.conflicted && error.failedAt.length === 0 ? uploadIds.map((_, index) => index) : error.failedAt;
    throw error;
  }
}

/** Gives claimed uploads back (the vendor failed: the client may try again with the same uploads). */
export async function releaseUploads(workspaceId: string, uploadIds: readonly string[]): Promise<void> {
  await Promise.all(
    uploadIds.map((uploadId) =>
      table
        .update({ Key: keys.upload(workspaceId, uploadId), UpdateExpression: 'REMOVE claimed_until', ConditionExpression: 'attribute_exists(pk)' })
        .catch(() => undefined),
    ),
  );
}

/** Forgets uploads (used, or refused for their content); an absent one is fine. */
export async function deleteUploadItems(workspaceId: string, uploadIds: readonly string[]): Promise<void> {
  await Promise.all(uploadIds.map((uploadId) => table.delete({ Key: keys.upload(workspaceId, uploadId) })));
}
