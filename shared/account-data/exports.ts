import { callExportPage, parseCallFilter } from '../calls/index.ts';
import { listChats } from '../chats/index.ts';
import { listContactsPage } from '../contacts/index.ts';
import { objectStore } from '../platform/aws/object-store.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { conflict } from '../platform/errors.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { objectKeys } from '../platform/store/keys.ts';
import type { AccountDataJobMessage } from './messages.ts';
import { csvLine, EXPORT_COLUMNS, exportRow } from './export-rows.ts';
import {
  DOWNLOAD_URL_SECONDS,
  EXPORT_RETENTION_DAYS,
  type CreateExportInput,
  type ExportRequest,
  type ExportType,
} from './schemas.ts';
import {
  exportsEntity,
  finishExport,
  markExportRunning,
  putExport,
  queryExports,
  recordExportProgress,
  type ExportItem,
} from './store.ts';

/*
 * Exports (docs/account-data.md): POST answers 202 at once; the export-jobs queue streams
 * the workspace's records page by page (PAGE_SIZE a query) into one object, written as a
 * multipart upload (shared/platform/aws/object-store.ts), so neither the rows nor the file
 * are ever whole in memory. pending → running → complete | failed, each step conditional.
 */

const PAGE_SIZE = 500;
const DAY_MS = 86_400_000;

function toExportRequest(item: ExportItem): ExportRequest {
  return {
    export_id: item.export_id,
    type: item.export_type,
    format: item.format,
    status: item.status,
    ...(item.start_timestamp !== undefined ? { start_timestamp: item.start_timestamp } : {}),
    ...(item.end_timestamp !== undefined ? { end_timestamp: item.end_timestamp } : {}),
    ...(item.filter_criteria !== undefined ? { filter_criteria: item.filter_criteria } : {}),
    row_count: item.row_count,
    size_bytes: item.size_bytes,
    ...(item.failure_reason !== undefined ? { failure_reason: item.failure_reason } : {}),
    created_timestamp: item.created_timestamp,
    ...(item.started_timestamp !== undefined ? { started_timestamp: item.started_timestamp } : {}),
    ...(item.completed_timestamp !== undefined ? { completed_timestamp: item.completed_timestamp } : {}),
    expiration_timestamp: item.expires_at * 1000,
  };
}

export async function createExport(workspaceId: string, input: CreateExportInput, nowMs = Date.now()) {
  // The filter is checked now, with list-calls' own schema, so a bad one is a 400 and never a failed job.
  if (input.filter_criteria !== undefined) parseCallFilter(input.filter_criteria, 'filter_criteria');
  const exportId = newTimeOrderedId('export', nowMs);
  const item: ExportItem = {
    type: 'export',
    export_id: exportId,
    workspace_id: workspaceId,
    export_type: input.type,
    format: input.format,
    status: 'pending',
    ...(input.start_timestamp !== undefined ? { start_timestamp: input.start_timestamp } : {}),
    ...(input.end_timestamp !== undefined ? { end_timestamp: input.end_timestamp } : {}),
    ...(input.filter_criteria !== undefined ? { filter_criteria: input.filter_criteria } : {}),
    row_count: 0,
    size_bytes: 0,
    object_key: objectKeys.exportFile(workspaceId, exportId, input.format),
    created_timestamp: nowMs,
    expires_at: Math.floor((nowMs + EXPORT_RETENTION_DAYS * DAY_MS) / 1000),
  };
  await putExport(item);
  await queueNamed('export-jobs').send({ kind: 'export', workspace_id: workspaceId, export_id: exportId } satisfies AccountDataJobMessage);
  return { export_id: exportId, status: item.status };
}

export async function getExport(workspaceId: string, exportId: string): Promise<ExportRequest> {
  return toExportRequest(await exportsEntity.mustGet(workspaceId, exportId));
}

/** The spec's list: an array, newest first. */
export async function listExports(workspaceId: string, limit = 100): Promise<ExportRequest[]> {
  const { items } = await queryExports(workspaceId, { limit, descending: true });
  return items.map(toExportRequest);
}

const SDK_STATUS = { pending: 'created', running: 'processing', complete: 'completed', failed: 'error' } as const;

/** retell-sdk's exportRequest.list: a page of `{export_request_id, channel, status, created_timestamp, url?}`. */
export async function listExportRequests(
  workspaceId: string,
  input: { limit?: number; pagination_key?: string; sort_order?: 'ascending' | 'descending' },
) {
  const limit = input.limit ?? 50;
  const { items, more } = await queryExports(workspaceId, { limit, descending: input.sort_order !== 'ascending', after: input.pagination_key });
  const expiresAt = Date.now() + DOWNLOAD_URL_SECONDS * 1000;
  const rows = await Promise.all(
    items.map(async (item) => ({
      export_request_id: item.export_id,
      ...(item.export_type === 'calls' ? { channel: 'call' as const } : item.export_type === 'chats' ? { channel: 'chat' as const } : {}),
      status: SDK_STATUS[item.status],
      created_timestamp: item.created_timestamp,
      ...(item.status === 'complete' ? { url: await objectStore().signedUrl(item.object_key, expiresAt, { downloadName: downloadName(item) }) } : {}),
    })),
  );
  return { has_more: more, items: rows, ...(more && items.length ? { pagination_key: items.at(-1)!.export_id } : {}) };
}

const downloadName = (item: ExportItem) => `${item.export_type}-${item.export_id}.${item.format}`;

/** A short-lived URL of a complete export's file (409 before it is complete). */
export async function downloadExport(workspaceId: string, exportId: string, nowMs = Date.now()) {
  const item = await exportsEntity.mustGet(workspaceId, exportId);
  if (item.status !== 'complete') {
    throw conflict(`Export ${exportId} is ${item.status}: only a complete export can be downloaded`);
  }
  const expiresAt = nowMs + DOWNLOAD_URL_SECONDS * 1000;
  return {
    export_id: exportId,
    url: await objectStore().signedUrl(item.object_key, expiresAt, { downloadName: downloadName(item) }),
    expiration_timestamp: expiresAt,
    size_bytes: item.size_bytes,
    row_count: item.row_count,
  };
}

// ---------------------------------------------------------------------------------------
// The job

type Page = { rows: Record<string, unknown>[]; next?: string };

/** Reads the export's records page by page, oldest first; `after` is the previous page's cursor. */
function pageReader(item: ExportItem): (after: string | undefined) => Promise<Page> {
  const within = (time: unknown) =>
    (item.start_timestamp === undefined && item.end_timestamp === undefined) ||
    (typeof time === 'number' &&
      (item.start_timestamp === undefined || time >= item.start_timestamp) &&
      (item.end_timestamp === undefined || time < item.end_timestamp));
  const ws = item.workspace_id;
  const readers: Record<ExportType, (after: string | undefined) => Promise<Page>> = {
    calls: async (after) => {
      const filter = item.filter_criteria !== undefined ? parseCallFilter(item.filter_criteria, 'filter_criteria') : undefined;
      const page = await callExportPage(ws, { after, limit: PAGE_SIZE, ...(filter ? { filter } : {}) });
      return { rows: page.calls.filter((call) => within(call.start_timestamp)) as Record<string, unknown>[], next: page.next };
    },
    chats: async (after) => {
      const page = (await listChats(ws, { limit: PAGE_SIZE, sort_order: 'ascending', ...(after ? { pagination_key: after } : {}) }, { page: true })) as {
        items: Record<string, unknown>[];
        pagination_key?: string;
      };
      return { rows: page.items.filter((chat) => within(chat.start_timestamp)), next: page.pagination_key };
    },
    contacts: async (after) => {
      const page = await listContactsPage(ws, { limit: PAGE_SIZE, sort_order: 'asc', ...(after ? { pagination_key: after } : {}) });
      return { rows: (page.items as Record<string, unknown>[]).filter((contact) => within(contact.created_timestamp)), next: page.pagination_key };
    },
    // SMS is not stored yet (its issue has not landed): an SMS export is the header alone.
    sms: async () => ({ rows: [] }),
  };
  return readers[item.export_type];
}

/**
 * Runs one export (an export-jobs message): starts it (only a pending one: a redelivered
 * message of a running or ended export does nothing), streams every page into the upload,
 * then completes it, or aborts the upload and records the failure.
 */
export async function runExport(workspaceId: string, exportId: string, nowMs = () => Date.now()): Promise<void> {
  const item = await exportsEntity.get(workspaceId, exportId);
  if (!item || !(await markExportRunning(workspaceId, exportId, nowMs()))) return;
  const contentType = item.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson';
  const upload = await objectStore().upload(item.object_key, contentType, { retentionDays: EXPORT_RETENTION_DAYS });
  let rowCount = 0;
  try {
    if (item.format === 'csv') await upload.write(Buffer.from(csvLine(EXPORT_COLUMNS[item.export_type]), 'utf8'));
    const read = pageReader(item);
    let after: string | undefined;
    do {
      const page = await read(after);
      if (page.rows.length) {
        const text = page.rows
          .map((row) => (item.format === 'csv' ? csvLine(exportRow(item.export_type, row)) : `${JSON.stringify(row)}\n`))
          .join('');
        await upload.write(Buffer.from(text, 'utf8'));
        rowCount += page.rows.length;
        await recordExportProgress(workspaceId, exportId, rowCount);
      }
      after = page.next;
    } while (after);
    const size = await upload.complete();
    await finishExport(workspaceId, exportId, { status: 'complete', rowCount, sizeBytes: size }, nowMs());
  } catch (error) {
    await upload.abort().catch(() => undefined);
    const reason = error instanceof Error ? error.message : String(error);
    logger.error('export failed', { exportId, error: reason });
    await finishExport(workspaceId, exportId, { status: 'failed', reason: `Export failed: ${reason.slice(0, 300)}` }, nowMs());
  }
}
