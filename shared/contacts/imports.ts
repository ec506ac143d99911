import { parseCsvRecords } from '../platform/text/csv.ts';
import { ApiError, badRequest, notFound } from '../platform/errors.ts';
import type { UploadedFile } from '../platform/http/multipart.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { newId, newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { createContactsTogether, upsertContactByNumber } from './contacts.ts';
import {
  MAX_IMPORT_JOB_ROWS,
  MAX_JOB_ERRORS,
  MAX_SYNC_IMPORT_ROWS,
  type CreateImportFromUploadInput,
  type ImportInput,
  type ImportJob,
  type ImportReport,
  type ImportRowError,
  type RetellImportStatus,
} from './import-schemas.ts';
import { contactImportRows, csvImportRows, type ImportRow } from './import-rows.ts';
import {
  deleteImportChunk,
  failImportJob,
  getImportChunk,
  getImportJob as getImportJobItem,
  getUpload,
  markImportRunning,
  markNextChunkQueued,
  putImportJob,
  putUpload,
  queryImportJobs,
  recordImportChunk,
  type ImportJobItem,
  type ImportSource,
} from './import-store.ts';
import type { ImportJobMessage } from './schemas.ts';
import { claimedNumbers, getMappings } from './store.ts';

/*
 * Contact imports (docs/contacts.md, Imports). Every row is decided first (import-rows.ts:
 * its validated fields or why it is not imported), then applied with upsertContactByNumber:
 * one transaction per row with the number's claim, so a row is applied whole or not at all
 * and an existing contact is updated. Rows are applied IMPORT_ROW_PARALLELISM at a time,
 * but the rows of one number in order, one after the other, so when a file holds a number
 * twice the later row wins, every time.
 *
 * `import-contacts` applies up to 1,000 rows in the request. A job (up to 100,000 rows)
 * answers 202 at once: its rows are stored in chunk items under the job (each under 350 KB:
 * no item or queue message could hold them all), and the contact-jobs queue applies them one
 * chunk per message, each message queueing the next. A step records its chunk with a write
 * conditional on the job's `next_chunk`, so a chunk delivered twice is counted once.
 */

/** Rows per chunk (one queue message's work: about 1,000 small transactions). */
const IMPORT_CHUNK_ROWS = 1000;
/** A chunk item's rows, as JSON text, stay under this many bytes (DynamoDB's item cap is 400 KB). */
const IMPORT_CHUNK_BYTES = 300_000;
/** Rows applied at once. */
const IMPORT_ROW_PARALLELISM = 10;
/** An upload's part (bytes per item). */
const UPLOAD_PART_BYTES = 300_000;
const CHUNK_TTL_SECONDS = 7 * 24 * 3600;
const UPLOAD_TTL_SECONDS = 24 * 3600;
/** A step that failed this many receives stops its job (the queue's redrive moves the message aside then). */
const IMPORT_STEP_MAX_RECEIVES = 5;

const jobNotFound = (jobId: string) => notFound(`Contact import job ${jobId} not found`);

// ---------------------------------------------------------------------------------------
// Rows

interface RowSource {
  rows: ImportRow[];
  source: ImportSource;
  fileName?: string;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

function fileText(file: UploadedFile, field: string): string {
  try {
    return utf8.decode(file.data);
  } catch {
    throw badRequest(`${field}: The file is not UTF-8 text; save the CSV as UTF-8`);
  }
}

async function rowsOf(
  workspaceId: string,
  input: Pick<ImportInput, 'csv' | 'contacts' | 'file' | 'column_mapping' | 'tags' | 'default_country'> & { text?: string },
  maxRows: number,
  tooManyRows: string,
): Promise<Omit<RowSource, 'source'>> {
  const options = { tags: input.tags, defaultCountry: input.default_country };
  if (input.contacts) return { rows: contactImportRows(input.contacts, options) };
  const file = input.file?.[0];
  const text = input.csv ?? input.text ?? fileText(file!, 'file');
  const workspaceMappings = input.column_mapping ? [] : ((await getMappings(workspaceId))?.mappings ?? []);
  const rows = csvImportRows(text, {
    ...options,
    columnMapping: input.column_mapping,
    workspaceMappings,
    maxRows,
    field: input.csv !== undefined ? 'csv' : 'file',
    tooManyRows,
  });
  return { rows, ...(file ? { fileName: file.filename } : {}) };
}

const sourceOf = (input: ImportInput): ImportSource => (input.contacts ? 'contacts' : input.csv !== undefined ? 'csv' : 'file');

// ---------------------------------------------------------------------------------------
// Applying rows

interface Applied {
  created: number;
  updated: number;
  failed: number;
  /** In row order. */
  errors: ImportRowError[];
}

const rowError = (row: ImportRow, reason: string): ImportRowError => ({
  row: row.row,
  ...(row.phone !== undefined ? { phone_number: row.phone.slice(0, 64) } : {}),
  reason: reason.slice(0, 500),
});

/** New contacts written per transaction (two operations each, within DynamoDB's 100 and 4 MB). */
const IMPORT_CONTACTS_PER_TRANSACTION = 25;

/** Runs `tasks` IMPORT_ROW_PARALLELISM at a time. */
async function inPool(tasks: readonly (() => Promise<void>)[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(IMPORT_ROW_PARALLELISM, tasks.length) }, async () => {
      while (next < tasks.length) await tasks[next++]!();
    }),
  );
}

/**
 * Applies rows. Numbers that appear once and have no contact yet (one BatchGetItem per 100
 * numbers tells) are created IMPORT_CONTACTS_PER_TRANSACTION to a transaction, each contact
 * with its claim; a transaction that a number taken meanwhile cancels is written row by row
 * instead. Every other row goes through upsertContactByNumber, the rows of one number in
 * order. A row refused by the domain (an ApiError: a field, a race lost ten times) is
 * reported; anything else (the table unreachable) is thrown, and the caller's retry applies
 * the rows again (upserts: the same fields give the same contacts).
 */
async function applyRows(workspaceId: string, rows: readonly ImportRow[], mergeTags: boolean): Promise<Applied> {
  const applied: Applied = { created: 0, updated: 0, failed: 0, errors: [] };
  const lanes = new Map<string, ImportRow[]>();
  for (const row of rows) {
    if (!row.fields) {
      applied.failed++;
      applied.errors.push(rowError(row, row.error ?? 'Not imported'));
      continue;
    }
    const lane = lanes.get(row.fields.phone_number);
    if (lane) lane.push(row);
    else lanes.set(row.fields.phone_number, [row]);
  }
  const singles = [...lanes.values()].filter((lane) => lane.length === 1).map((lane) => lane[0]!);
  const claimed = await claimedNumbers(workspaceId, singles.map((row) => row.fields!.phone_number));
  const fresh = singles.filter((row) => !claimed.has(row.fields!.phone_number));
  const freshNumbers = new Set(fresh.map((row) => row.fields!.phone_number));

  const applyLane = async (lane: readonly ImportRow[]) => {
    for (const row of lane) {
      try {
        const { created } = await upsertContactByNumber(workspaceId, row.fields!, { mergeTags });
        if (created) applied.created++;
        else applied.updated++;
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        applied.failed++;
        applied.errors.push(rowError(row, error.message));
      }
    }
  };
  const createGroup = async (group: readonly ImportRow[]) => {
    if (await createContactsTogether(workspaceId, group.map((row) => row.fields!))) applied.created += group.length;
    else for (const row of group) await applyLane([row]);
  };
  const tasks: (() => Promise<void>)[] = [];
  for (let at = 0; at < fresh.length; at += IMPORT_CONTACTS_PER_TRANSACTION) {
    const group = fresh.slice(at, at + IMPORT_CONTACTS_PER_TRANSACTION);
    tasks.push(() => createGroup(group));
  }
  for (const [phone, lane] of lanes) if (!freshNumbers.has(phone)) tasks.push(() => applyLane(lane));
  await inPool(tasks);
  applied.errors.sort((a, b) => a.row - b.row);
  return applied;
}

/** POST /import-contacts: up to 1,000 rows, applied now; the report names every row not imported. */
export async function importContacts(workspaceId: string, input: ImportInput): Promise<ImportReport> {
  const { rows } = await rowsOf(
    workspaceId,
    input,
    MAX_SYNC_IMPORT_ROWS,
    `At most ${MAX_SYNC_IMPORT_ROWS} rows (the header not counted); POST /create-contact-import-job takes up to ${MAX_IMPORT_JOB_ROWS}`,
  );
  const applied = await applyRows(workspaceId, rows, (input.tags?.length ?? 0) > 0);
  return {
    status: 'completed',
    total_rows: rows.length,
    processed_rows: rows.length,
    created: applied.created,
    updated: applied.updated,
    failed: applied.failed,
    errors: applied.errors,
  };
}

// ---------------------------------------------------------------------------------------
// Jobs

/** A chunk's rows as stored: `{r, f}` (fields) or `{r, e, p}` (error, number as given). */
interface StoredRow {
  r: number;
  f?: ImportRow['fields'];
  e?: string;
  p?: string;
}

const storedRow = (row: ImportRow): StoredRow =>
  row.fields ? { r: row.row, f: row.fields, ...(row.phone !== undefined ? { p: row.phone } : {}) } : { r: row.row, e: row.error, ...(row.phone !== undefined ? { p: row.phone } : {}) };

const fromStored = (row: StoredRow): ImportRow => ({ row: row.r, ...(row.f ? { fields: row.f } : { error: row.e }), ...(row.p !== undefined ? { phone: row.p } : {}) });

/** Rows as chunks of JSON text: at most IMPORT_CHUNK_ROWS rows and IMPORT_CHUNK_BYTES bytes each. */
function chunkRows(rows: readonly ImportRow[]): string[] {
  const chunks: string[] = [];
  let current: string[] = [];
  let bytes = 2;
  for (const row of rows) {
    const text = JSON.stringify(storedRow(row));
    const size = Buffer.byteLength(text, 'utf8') + 1;
    if (current.length > 0 && (current.length >= IMPORT_CHUNK_ROWS || bytes + size > IMPORT_CHUNK_BYTES)) {
      chunks.push(`[${current.join(',')}]`);
      current = [];
      bytes = 2;
    }
    current.push(text);
    bytes += size;
  }
  if (current.length) chunks.push(`[${current.join(',')}]`);
  return chunks;
}

function toJob(item: ImportJobItem): ImportJob {
  return {
    import_job_id: item.import_job_id,
    status: item.status,
    source: item.source,
    ...(item.file_name !== undefined ? { file_name: item.file_name } : {}),
    total_rows: item.total_rows,
    processed_rows: item.processed_rows,
    created: item.created,
    updated: item.updated,
    failed: item.failed,
    succeeded: item.created + item.updated,
    error_count: item.failed,
    errors_truncated: item.failed > item.errors.length,
    errors: item.errors,
    ...(item.failure_reason !== undefined ? { failure_reason: item.failure_reason } : {}),
    tags: item.tags,
    triggered_by: 'manual',
    created_timestamp: item.created_timestamp,
    start_timestamp: item.start_timestamp,
    end_timestamp: item.end_timestamp ?? null,
  };
}

function toRetellStatus(item: ImportJobItem | undefined): RetellImportStatus {
  if (!item) return { status: 'idle' };
  return {
    status: item.status === 'queued' || item.status === 'running' ? item.status : 'idle',
    succeeded: item.created + item.updated,
    failed: item.failed,
    start_timestamp: item.start_timestamp,
    ...(item.end_timestamp !== undefined ? { end_timestamp: item.end_timestamp } : {}),
    triggered_by: 'manual',
    import_job_id: item.import_job_id,
    job_status: item.status,
    total_rows: item.total_rows,
    processed_rows: item.processed_rows,
    created: item.created,
    updated: item.updated,
  };
}

/** Stores the rows in chunks and the job, and queues its first chunk. */
async function startJob(workspaceId: string, source: RowSource, tags: string[]): Promise<ImportJobItem> {
  const nowMs = Date.now();
  const chunks = chunkRows(source.rows);
  const item: ImportJobItem = {
    type: 'contact_import_job',
    import_job_id: newTimeOrderedId('contactImportJob', nowMs),
    workspace_id: workspaceId,
    status: chunks.length === 0 ? 'completed' : 'queued',
    source: source.source,
    ...(source.fileName !== undefined ? { file_name: source.fileName } : {}),
    tags,
    total_rows: source.rows.length,
    processed_rows: 0,
    created: 0,
    updated: 0,
    failed: 0,
    errors: [],
    chunk_count: chunks.length,
    next_chunk: 0,
    queued_chunk: 0,
    created_timestamp: nowMs,
    start_timestamp: nowMs,
    ...(chunks.length === 0 ? { end_timestamp: nowMs } : {}),
    updated_timestamp: nowMs,
  };
  await putImportJob(item, chunks, Math.floor(nowMs / 1000) + CHUNK_TTL_SECONDS);
  if (chunks.length > 0) {
    await queueNamed('contact-jobs').send({ kind: 'import', workspace_id: workspaceId, job_id: item.import_job_id, chunk: 0 } satisfies ImportJobMessage);
  }
  return item;
}

const JOB_TOO_MANY_ROWS = `At most ${MAX_IMPORT_JOB_ROWS} rows (the header not counted)`;

/** POST /create-contact-import-job (202): the job, queued. */
export async function createImportJob(workspaceId: string, input: ImportInput): Promise<ImportJob> {
  const rows = await rowsOf(workspaceId, input, MAX_IMPORT_JOB_ROWS, JOB_TOO_MANY_ROWS);
  return toJob(await startJob(workspaceId, { ...rows, source: sourceOf(input) }, input.tags ?? []));
}

/** retell-sdk's createImport: a job over an uploaded file, with its column mapping. */
export async function createImportFromUpload(workspaceId: string, input: CreateImportFromUploadInput): Promise<RetellImportStatus> {
  const upload = await getUpload(workspaceId, input.upload_id, Date.now());
  if (!upload) throw notFound(`Upload ${input.upload_id} not found (uploads are kept for a day)`);
  const rows = await rowsOf(workspaceId, { ...input, text: fileText({ data: upload.bytes } as UploadedFile, 'upload_id') }, MAX_IMPORT_JOB_ROWS, JOB_TOO_MANY_ROWS);
  return toRetellStatus(await startJob(workspaceId, { ...rows, source: 'upload', fileName: upload.item.file_name }, input.tags ?? []));
}

/** retell-sdk's uploadImportFile: the file kept (a day) for createImport; it must parse as CSV. */
export async function uploadImportFile(workspaceId: string, file: UploadedFile) {
  const text = fileText(file, 'file');
  // Checked now, so a bad file is refused at upload: the rows are read again at createImport, with its mapping.
  const { records } = parseCsvRecords(text, { maxRows: MAX_IMPORT_JOB_ROWS, field: 'file', tooManyRows: JOB_TOO_MANY_ROWS });
  const nowMs = Date.now();
  const parts: Buffer[] = [];
  for (let at = 0; at < file.data.length; at += UPLOAD_PART_BYTES) parts.push(file.data.subarray(at, at + UPLOAD_PART_BYTES));
  const item = {
    upload_id: newId('contactImportUpload'),
    workspace_id: workspaceId,
    file_name: file.filename,
    size_bytes: file.size,
    total_rows: records.length,
    part_count: parts.length,
    created_timestamp: nowMs,
    expires_at: Math.floor(nowMs / 1000) + UPLOAD_TTL_SECONDS,
  };
  await putUpload(item, parts);
  return { upload_id: item.upload_id, file_name: item.file_name, size_bytes: item.size_bytes, total_rows: item.total_rows };
}

export async function getImportJob(workspaceId: string, jobId: string): Promise<ImportJob> {
  const item = await getImportJobItem(workspaceId, jobId);
  if (!item) throw jobNotFound(jobId);
  return toJob(item);
}

/** GET /list-contact-import-jobs: newest first, without the row errors. */
export async function listImportJobs(workspaceId: string, limit: number) {
  return (await queryImportJobs(workspaceId, limit)).map((item) => {
    const { errors: _errors, ...summary } = toJob(item);
    return summary;
  });
}

/** retell-sdk's getImport: the workspace's latest import (`idle` once it has ended, and before any). */
export async function getLatestImport(workspaceId: string): Promise<RetellImportStatus> {
  return toRetellStatus((await queryImportJobs(workspaceId, 1))[0]);
}

// ---------------------------------------------------------------------------------------
// Steps (contact-jobs messages)

/**
 * Applies one chunk of a job and records it, then queues the next. A message whose chunk is
 * not the job's `next_chunk` (a redelivery of a recorded chunk) applies nothing; if the
 * next chunk's message was never sent (the send failed after the record), it is sent now.
 */
export async function runImportStep(message: ImportJobMessage): Promise<void> {
  const workspaceId = message.workspace_id;
  const job = await getImportJobItem(workspaceId, message.job_id);
  if (!job || (job.status !== 'queued' && job.status !== 'running')) return;
  const nextMessage: ImportJobMessage = { ...message, chunk: message.chunk + 1 };
  if (job.next_chunk !== message.chunk) {
    if (job.next_chunk === message.chunk + 1 && job.queued_chunk < job.next_chunk) await queueNext(job, nextMessage);
    return;
  }
  if (message.chunk === 0) await markImportRunning(workspaceId, job.import_job_id, Date.now());
  const text = await getImportChunk(workspaceId, job.import_job_id, message.chunk);
  if (text === undefined) {
    await failImportJob(workspaceId, job.import_job_id, `Chunk ${message.chunk} of the job's rows is missing (chunks are kept for a week)`, Date.now());
    return;
  }
  const rows = (JSON.parse(text) as StoredRow[]).map(fromStored);
  const applied = await applyRows(workspaceId, rows, job.tags.length > 0);
  const done = message.chunk + 1 >= job.chunk_count;
  const recorded = await recordImportChunk(job, message.chunk, {
    status: done ? 'completed' : 'running',
    processed_rows: job.processed_rows + rows.length,
    created: job.created + applied.created,
    updated: job.updated + applied.updated,
    failed: job.failed + applied.failed,
    errors: [...job.errors, ...applied.errors].slice(0, MAX_JOB_ERRORS),
    nowMs: Date.now(),
  });
  if (!recorded) return;
  await deleteImportChunk(workspaceId, job.import_job_id, message.chunk).catch((error: unknown) =>
    logger.warn('contact import: an applied chunk was not deleted (its TTL will)', { error: error instanceof Error ? error.message : String(error) }),
  );
  if (!done) await queueNext(job, nextMessage);
}

async function queueNext(job: ImportJobItem, message: ImportJobMessage): Promise<void> {
  await queueNamed('contact-jobs').send(message);
  await markNextChunkQueued(job.workspace_id, job.import_job_id, message.chunk);
}

/** A step that threw: on its last receive, its job stops as failed (the rows applied so far stay). */
export async function importStepFailed(message: ImportJobMessage, error: unknown, receiveCount: number): Promise<void> {
  if (receiveCount < IMPORT_STEP_MAX_RECEIVES) return;
  const detail = error instanceof Error ? error.message : String(error);
  await failImportJob(message.workspace_id, message.job_id, `Chunk ${message.chunk} failed ${receiveCount} times: ${detail.slice(0, 300)}`, Date.now());
}
