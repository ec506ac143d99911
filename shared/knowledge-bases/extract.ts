import { besideBundle } from '../platform/bundle/bundle-files.ts';
import { config } from '../platform/config.ts';
import { badRequest } from '../platform/errors.ts';
import { loadOnce } from '../platform/lazy.ts';
import type { WorkSchedule } from './capped-worker.ts';

/*
 * Text out of an uploaded document, by its kind: PDF (unpdf, PDF.js built for servers),
 * DOCX (mammoth's raw text, after the container's limits), HTML (node-html-parser, without
 * scripts, styles and navigation), Markdown, TXT and CSV (as UTF-8 text). Markdown and TXT
 * are read here; the parsers of the others (document-text.ts) run in the extraction worker
 * (extract-worker.ts), a worker thread with a memory and a time cap
 * (shared/knowledge-bases/capped-worker.ts, loaded on the first such document), so a file that
 * would take the process down fails alone.
 */

export type FileKind = 'pdf' | 'docx' | 'html' | 'markdown' | 'text' | 'csv';

const BY_EXTENSION: Record<string, FileKind> = {
  pdf: 'pdf',
  docx: 'docx',
  html: 'html',
  htm: 'html',
  md: 'markdown',
  markdown: 'markdown',
  txt: 'text',
  text: 'text',
  csv: 'csv',
};

const BY_TYPE: Record<string, FileKind> = {
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/html': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
  'text/csv': 'csv',
};

/** The file's kind from its name's extension, else its declared type; undefined when unsupported. */
export function fileKind(filename: string, contentType: string): FileKind | undefined {
  const extension = /\.([A-Za-z0-9]+)$/.exec(filename)?.[1]?.toLowerCase();
  return (extension ? BY_EXTENSION[extension] : undefined) ?? BY_TYPE[contentType.split(';')[0]!.trim().toLowerCase()];
}

/** Refuses a file Parley cannot read before anything is stored. */
export function assertSupportedFile(filename: string, contentType: string): FileKind {
  const kind = fileKind(filename, contentType);
  if (!kind) {
    throw badRequest(
      `knowledge_base_files: "${filename.slice(0, 200) || 'unnamed file'}" is not a supported document (PDF, DOCX, HTML, Markdown, TXT or CSV)`,
    );
  }
  return kind;
}

export const CONTENT_TYPE: Record<FileKind, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  html: 'text/html',
  markdown: 'text/markdown',
  text: 'text/plain',
  csv: 'text/csv',
};

/** The kinds read by a parser, in the extraction worker. */
export type ParsedKind = Exclude<FileKind, 'markdown' | 'text'>;

/** The file cannot be read, for a reason of its own (broken, too large once expanded, too slow): the message says why, for the user. */
export class ExtractionFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ExtractionFailed';
  }
}

/** The file was not read: its turn in the extraction worker came after the caller's deadline to start it. */
export class ExtractionDeferred extends Error {
  constructor() {
    super('The file was not read before the step\'s deadline');
    this.name = 'ExtractionDeferred';
  }
}

/** The extraction worker's script: `extract-worker.mjs` beside a deployed bundle (its functions' entries in lib/functions.ts name it). */
export const EXTRACT_WORKER_NAME = 'extract-worker';

const cappedWorker = loadOnce(() => import('./capped-worker.ts'));

/**
 * The document's text, in the extraction worker within KB_EXTRACTION_MEMORY_MB and
 * KB_EXTRACTION_TIMEOUT_MS (Markdown and TXT here). Throws ExtractionFailed when the file
 * cannot be read, for its own reasons; ExtractionDeferred when its turn (one document at a
 * time) came after `schedule.startBy`; any other error is the machine's (the worker could
 * not start) and worth another try.
 */
export async function extractText(kind: FileKind, data: Buffer, schedule?: WorkSchedule): Promise<string> {
  if (kind === 'markdown' || kind === 'text') return data.toString('utf8').replace(/^\uFEFF/, '').trim();
  const { runCapped, WorkFailed, WorkLimitExceeded, WorkNotStarted } = await cappedWorker();
  // The worker gets its own copy of the bytes, moved to it rather than copied again.
  const bytes = new Uint8Array(data);
  try {
    return await runCapped<string>(
      { bundled: besideBundle(`${EXTRACT_WORKER_NAME}.mjs`), source: new URL('./extract-worker.ts', import.meta.url) },
      { kind, data: bytes },
      { memoryMb: config.KB_EXTRACTION_MEMORY_MB, timeoutMs: config.KB_EXTRACTION_TIMEOUT_MS },
      [bytes.buffer],
      schedule,
    );
  } catch (error) {
    if (error instanceof WorkNotStarted) throw new ExtractionDeferred();
    if (error instanceof WorkLimitExceeded) throw new ExtractionFailed(`reading it ${error.message}`);
    if (error instanceof WorkFailed) throw new ExtractionFailed(error.message);
    throw error;
  }
}
