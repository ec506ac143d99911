import { callExportPage, parseCallFilter } from '../calls/records/index.ts';
import { getChat, listChats } from '../chats/records/index.ts';
import { listContactsPage } from '../contacts/index.ts';
import { randomBytes } from 'node:crypto';
import { objectStore, type ObjectUpload } from '../platform/aws/object-store.ts';
import { csvLine } from '../platform/text/csv-write.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { conflict, NotFound } from '../platform/errors.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { objectKeys } from '../platform/store/keys.ts';
import type { AccountDataJobMessage } from './messages.ts';
import { EXPORT_COLUMNS, exportRow } from './export-rows.ts';
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
  putExport,
  queryExports,
  recordExportProgress,
  takeExportLease,
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

/**
 * One export. A running export whose lease expired lost its run and its message (SQS
 * redelivers a dead run's message by itself; this covers one that went to the dead letters):
 * reading it queues it again, and the next run goes on from its checkpoint (only one run
 * takes the lease, however many reads queued it).
 */
export async function getExport(workspaceId: string, exportId: string, nowMs = Date.now()): Promise<ExportRequest> {
  const item = await exportsEntity.mustGet(workspaceId, exportId);
  if (item.status === 'running' && item.lease_until !== undefined && item.lease_until < nowMs) {
    await queueNamed('export-jobs').send({ kind: 'export', workspace_id: workspaceId, export_id: exportId } satisfies AccountDataJobMessage);
  }
  return toExportRequest(item);
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
function pageReader(item: ExportItem, pageSize: number): (after: string | undefined) => Promise<Page> {
  const within = (time: unknown) =>
    (item.start_timestamp === undefined && item.end_timestamp === undefined) ||
    (typeof time === 'number' &&
      (item.start_timestamp === undefined || time >= item.start_timestamp) &&
      (item.end_timestamp === undefined || time < item.end_timestamp));
  const ws = item.workspace_id;
  const readers: Record<ExportType, (after: string | undefined) => Promise<Page>> = {
    calls: async (after) => {
      const filter = item.filter_criteria !== undefined ? parseCallFilter(item.filter_criteria, 'filter_criteria') : undefined;
      const page = await callExportPage(ws, { after, limit: pageSize, ...(filter ? { filter } : {}) });
      return { rows: page.calls.filter((call) => within(call.start_timestamp)) as Record<string, unknown>[], next: page.next };
    },
    // Each chat of the page with its messages (transcript, message_with_tool_calls), a few reads at once.
    chats: async (after) => {
      const page = (await listChats(ws, { limit: pageSize, sort_order: 'ascending', ...(after ? { pagination_key: after } : {}) }, { page: true })) as {
        items: Record<string, unknown>[];
        pagination_key?: string;
      };
      const chats = await withMessages(ws, page.items.filter((chat) => within(chat.start_timestamp)));
      return { rows: chats, next: page.pagination_key };
    },
    contacts: async (after) => {
      const page = await listContactsPage(ws, { limit: pageSize, sort_order: 'asc', ...(after ? { pagination_key: after } : {}) });
      return { rows: (page.items as Record<string, unknown>[]).filter((contact) => within(contact.created_timestamp)), next: page.pagination_key };
    },
    // One row per SMS message (shared/chats SMS), chat by chat, oldest first; the time range is the message's.
    sms: async (after) => {
      const page = (await listChats(ws, { limit: pageSize, sort_order: 'ascending', ...(after ? { pagination_key: after } : {}) }, { page: true, smsOnly: true })) as {
        items: Record<string, unknown>[];
        pagination_key?: string;
      };
      const rows = (await withMessages(ws, page.items)).flatMap((chat) => smsRows(chat).filter((row) => within(row.created_timestamp)));
      return { rows, next: page.pagination_key };
    },
  };
  return readers[item.export_type];
}

/** A run's lease: longer than the job's 900 s, so a live run is never taken over. */
const EXPORT_LEASE_MS = 960_000;

export interface ExportRunOptions {
  /** The clock (leases, timestamps); tests pass a fake one. */
  nowMs?: () => number;
  pageSize?: number;
  /** Called after each page is written, before its progress is recorded (tests stop a run here). */
  afterWrite?: () => Promise<void> | void;
}

const MESSAGE_READS_AT_ONCE = 10;

/** The chats as GET /get-chat answers them (with their messages), in order; a chat deleted meanwhile is left out. */
async function withMessages(workspaceId: string, chats: Record<string, unknown>[]): Promise<Record<string, unknown>[]> {
  const full: (Record<string, unknown> | undefined)[] = [];
  for (let start = 0; start < chats.length; start += MESSAGE_READS_AT_ONCE) {
    full.push(
      ...(await Promise.all(
        chats.slice(start, start + MESSAGE_READS_AT_ONCE).map((chat) =>
          getChat(workspaceId, chat.chat_id as string).then(
            (view) => view as unknown as Record<string, unknown>,
            (error: unknown) => {
              if (error instanceof NotFound) return undefined;
              throw error;
            },
          ),
        ),
      )),
    );
  }
  return full.filter((chat): chat is Record<string, unknown> => chat !== undefined);
}

/** An SMS chat's messages as export rows: the agent's are sent by the workspace number, the other party's received. */
function smsRows(chat: Record<string, unknown>): Record<string, unknown>[] {
  const inbound = chat.direction === 'inbound';
  const ours = (inbound ? chat.to_number : chat.from_number) as string | undefined;
  const party = (inbound ? chat.from_number : chat.to_number) as string | undefined;
  const messages = (chat.message_with_tool_calls ?? []) as { message_id?: string; role: string; content?: string; created_timestamp?: number }[];
  return messages
    .filter((message) => message.role === 'agent' || message.role === 'user')
    .map((message) => {
      const sent = message.role === 'agent';
      return {
        message_id: message.message_id,
        chat_id: chat.chat_id,
        direction: sent ? 'outbound' : 'inbound',
        from_number: sent ? ours : party,
        to_number: sent ? party : ours,
        body: message.content,
        created_timestamp: message.created_timestamp,
      };
    });
}

/**
 * Runs one export (an export-jobs message). Takes the export's lease: a pending export
 * starts; a running one whose lease expired (its run died: the message SQS redelivers, or one
 * GET /exports/{id} queued again) goes on from its checkpoint, with the same upload cut back
 * to the checkpoint's bytes, so no row is written twice; a live run's export or an ended one
 * is left alone. Each page is appended and its progress recorded (the checkpoint when the
 * bytes are durable: every page locally, every 5 MiB part in S3); then the export completes,
 * or records its failure and aborts the upload. A run that lost its lease stops quietly.
 */
export async function runExport(workspaceId: string, exportId: string, options: ExportRunOptions = {}): Promise<void> {
  const now = options.nowMs ?? (() => Date.now());
  const token = randomBytes(12).toString('hex');
  const leasedAt = now();
  const item = await takeExportLease(workspaceId, exportId, token, leasedAt, leasedAt + EXPORT_LEASE_MS);
  if (!item) return;
  const contentType = item.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/x-ndjson';
  const store = objectStore();
  let resumed = item.checkpoint;
  let upload: ObjectUpload | undefined;
  if (resumed) {
    upload = await store.upload(item.object_key, contentType, { retentionDays: EXPORT_RETENTION_DAYS }, resumed.upload).catch((error: unknown) => {
      logger.warn('export upload cannot be resumed; starting over', { exportId, error: error instanceof Error ? error.message : String(error) });
      return undefined;
    });
    if (!upload) resumed = undefined;
    else logger.info('export resumed', { exportId, rows: resumed.rows });
  }
  try {
    upload ??= await store.upload(item.object_key, contentType, { retentionDays: EXPORT_RETENTION_DAYS });
  } catch (error) {
    await fail(workspaceId, exportId, error, now(), token);
    return;
  }
  let rowCount = resumed?.rows ?? 0;
  let after = resumed?.next;
  let finished = resumed?.finished ?? false;
  try {
    if (!resumed && item.format === 'csv') await upload.write(Buffer.from(csvLine(EXPORT_COLUMNS[item.export_type]), 'utf8'));
    const read = pageReader(item, options.pageSize ?? PAGE_SIZE);
    while (!finished) {
      const page = await read(after);
      if (page.rows.length) {
        const text = page.rows
          .map((row) => (item.format === 'csv' ? csvLine(exportRow(item.export_type, row)) : `${JSON.stringify(row)}\n`))
          .join('');
        await upload.write(Buffer.from(text, 'utf8'));
        rowCount += page.rows.length;
      }
      after = page.next;
      finished = !after;
      await options.afterWrite?.();
      const durable = upload.checkpoint();
      const checkpoint = durable ? { upload: durable, rows: rowCount, ...(after ? { next: after } : {}), finished } : undefined;
      if (!(await recordExportProgress(workspaceId, exportId, token, rowCount, checkpoint))) {
        logger.warn('export lease lost; another run goes on', { exportId });
        return;
      }
    }
    const size = await upload.complete();
    await finishExport(workspaceId, exportId, { status: 'complete', rowCount, sizeBytes: size }, now(), token);
  } catch (error) {
    // Only the run holding the lease ends the export and aborts its upload: a run that lost
    // it (another run goes on with the same upload) must not pull the parts from under it.
    if (await fail(workspaceId, exportId, error, now(), token)) await upload.abort().catch(() => undefined);
  }
}

/** Ends the export `failed` when this run still holds its lease; answers whether it did. */
async function fail(workspaceId: string, exportId: string, error: unknown, nowMs: number, token: string): Promise<boolean> {
  const reason = error instanceof Error ? error.message : String(error);
  logger.error('export failed', { exportId, error: reason });
  return finishExport(workspaceId, exportId, { status: 'failed', reason: `Export failed: ${reason.slice(0, 300)}` }, nowMs, token);
}
