import { keys } from '../platform/store/keys.ts';
import { notFound } from '../platform/errors.ts';
import { defineEntity, table } from '../platform/store/table.ts';
import type { ImportRowError } from './import-schemas.ts';

/*
 * The contact imports' items (docs/data-model.md), all in the workspace's imports
 * partition `WS#<ws>#CONTACTIMPORT`:
 * - the job, `JOB#<job id>` (time-ordered IDs: newest first), with its counts, its first row
 *   errors and `next_chunk`, the chunk the next step applies: every step's record is
 *   conditional on it, so a redelivered chunk is never counted twice;
 * - its chunks, `CHUNK#<job id>#<index>`: the parsed rows (JSON text, each item under
 *   350 KB), written before the job, deleted once applied, expiring after a week otherwise;
 * - uploaded files (retell-sdk's upload-contact-import-file), `UPLOAD#<id>` describing one and
 *   `UPLOADPART#<id>#<index>` holding its bytes (each under 350 KB), expiring after a day.
 */

type ImportJobStatus = 'queued' | 'running' | 'completed' | 'failed';
export type ImportSource = 'csv' | 'contacts' | 'file' | 'upload';

export interface ImportJobItem {
  type: 'contact_import_job';
  import_job_id: string;
  workspace_id: string;
  status: ImportJobStatus;
  source: ImportSource;
  file_name?: string;
  tags: string[];
  total_rows: number;
  processed_rows: number;
  created: number;
  updated: number;
  failed: number;
  errors: ImportRowError[];
  chunk_count: number;
  /** The chunk the next step applies (chunk_count once every chunk is applied). */
  next_chunk: number;
  /** The highest chunk whose message was sent (a redelivered step sends the next one again only if it was not). */
  queued_chunk: number;
  failure_reason?: string;
  created_timestamp: number;
  start_timestamp: number;
  end_timestamp?: number;
  updated_timestamp: number;
}

/** How many chunk or part writes run at once. */
const WRITE_PARALLELISM = 4;

async function inParallel<T>(items: readonly T[], limit: number, work: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        await work(items[index]!, index);
      }
    }),
  );
}

/** Writes a job's chunks (JSON text each), then the job itself: the job is never seen without its rows. */
export async function putImportJob(item: ImportJobItem, chunks: readonly string[], expiresAt: number): Promise<void> {
  await inParallel(chunks, WRITE_PARALLELISM, (rows, index) =>
    table.put({ Item: { ...keys.contactImportChunk(item.workspace_id, item.import_job_id, index), rows, expires_at: expiresAt } }),
  );
  await table.put({
    Item: { ...keys.contactImportJob(item.workspace_id, item.import_job_id), ...item },
    ConditionExpression: 'attribute_not_exists(pk)',
  });
}

const importJobs = defineEntity<ImportJobItem & { pk: string; sk: string }, [workspaceId: string, jobId: string]>({
  key: keys.contactImportJob,
  notFound: (_workspaceId, jobId) => notFound(`Import job ${jobId} not found`),
});

export const getImportJob = (workspaceId: string, jobId: string): Promise<ImportJobItem | undefined> => importJobs.get(workspaceId, jobId);

/** The workspace's jobs, newest first. */
export async function queryImportJobs(workspaceId: string, limit: number): Promise<ImportJobItem[]> {
  const partition = keys.contactImportJobs(workspaceId);
  const page = await table.queryPage<ImportJobItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: false,
    Limit: limit,
  });
  return page.items;
}

export async function getImportChunk(workspaceId: string, jobId: string, index: number): Promise<string | undefined> {
  return (await table.get<{ rows: string }>(keys.contactImportChunk(workspaceId, jobId, index)))?.rows;
}

export const deleteImportChunk = (workspaceId: string, jobId: string, index: number) =>
  table.delete({ Key: keys.contactImportChunk(workspaceId, jobId, index) });

/** queued → running, when the first chunk starts (a no-op otherwise). */
export async function markImportRunning(workspaceId: string, jobId: string, nowMs: number): Promise<void> {
  await importJobs.update([workspaceId, jobId], {
    UpdateExpression: 'SET #status = :running, updated_timestamp = :now',
    ConditionExpression: '#status = :queued',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':running': 'running', ':queued': 'queued', ':now': nowMs },
  });
}

/**
 * Records chunk `chunk` as applied: the job's new counts and errors (computed from the job
 * read before the chunk, which no other step can have moved: the write is conditional on
 * `next_chunk` still being this chunk). Answers false when it no longer is (a redelivered
 * chunk, already recorded) or the job has stopped.
 */
export async function recordImportChunk(
  job: ImportJobItem,
  chunk: number,
  next: Pick<ImportJobItem, 'processed_rows' | 'created' | 'updated' | 'failed' | 'errors' | 'status'> & { nowMs: number },
): Promise<boolean> {
  const done = next.status === 'completed';
  const written = await importJobs.update([job.workspace_id, job.import_job_id], {
    UpdateExpression:
      'SET #status = :status, next_chunk = :next, processed_rows = :processed, created = :created, updated = :updated, failed = :failed, #errors = :errors, updated_timestamp = :now' +
      (done ? ', end_timestamp = :now' : ''),
    ConditionExpression: 'next_chunk = :chunk AND #status IN (:queued, :running)',
    ExpressionAttributeNames: { '#status': 'status', '#errors': 'errors' },
    ExpressionAttributeValues: {
      ':status': next.status,
      ':next': chunk + 1,
      ':processed': next.processed_rows,
      ':created': next.created,
      ':updated': next.updated,
      ':failed': next.failed,
      ':errors': next.errors,
      ':now': next.nowMs,
      ':chunk': chunk,
      ':queued': 'queued',
      ':running': 'running',
    },
  });
  return written !== undefined;
}

/** Notes that chunk `chunk`'s message was sent. */
export async function markNextChunkQueued(workspaceId: string, jobId: string, chunk: number): Promise<void> {
  await importJobs.update([workspaceId, jobId], {
    UpdateExpression: 'SET queued_chunk = :chunk',
    ConditionExpression: 'attribute_exists(pk) AND queued_chunk < :chunk',
    ExpressionAttributeValues: { ':chunk': chunk },
  });
}

/** Stops a queued or running job as failed, with the reason. */
export async function failImportJob(workspaceId: string, jobId: string, reason: string, nowMs: number): Promise<void> {
  await importJobs.update([workspaceId, jobId], {
    UpdateExpression: 'SET #status = :failed, failure_reason = :reason, end_timestamp = :now, updated_timestamp = :now',
    ConditionExpression: '#status IN (:queued, :running)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':failed': 'failed', ':reason': reason, ':now': nowMs, ':queued': 'queued', ':running': 'running' },
  });
}

// ---------------------------------------------------------------------------------------
// Uploaded files

export interface UploadItem {
  upload_id: string;
  workspace_id: string;
  file_name: string;
  size_bytes: number;
  total_rows: number;
  part_count: number;
  created_timestamp: number;
  expires_at: number;
}

/** An upload's parts (bytes), then its description. */
export async function putUpload(item: UploadItem, parts: readonly Buffer[]): Promise<void> {
  await inParallel(parts, WRITE_PARALLELISM, (bytes, index) =>
    table.put({ Item: { ...keys.contactImportUploadPart(item.workspace_id, item.upload_id, index), bytes, expires_at: item.expires_at } }),
  );
  await table.put({ Item: { ...keys.contactImportUpload(item.workspace_id, item.upload_id), ...item } });
}

/** An upload of the workspace that has not expired, with its bytes; undefined otherwise. */
export async function getUpload(workspaceId: string, uploadId: string, nowMs: number): Promise<{ item: UploadItem; bytes: Buffer } | undefined> {
  const item = await table.get<UploadItem>(keys.contactImportUpload(workspaceId, uploadId));
  if (!item || item.expires_at * 1000 <= nowMs) return undefined;
  const parts = await table.batchGet<{ sk: string; bytes: Uint8Array }>(
    Array.from({ length: item.part_count }, (_, index) => keys.contactImportUploadPart(workspaceId, uploadId, index)),
  );
  if (parts.length !== item.part_count) return undefined;
  parts.sort((a, b) => (a.sk < b.sk ? -1 : 1));
  return { item, bytes: Buffer.concat(parts.map((part) => Buffer.from(part.bytes))) };
}
