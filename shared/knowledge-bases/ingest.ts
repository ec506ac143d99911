import { createHash, randomBytes } from 'node:crypto';
import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { logger } from '../platform/logger.ts';
import { embedder, type Embedder } from '../vendors/llm/index.ts';
import { chunkText, type Chunk } from './chunking.ts';
import { crawl, CrawlFailed } from './crawl.ts';
import { ExtractionDeferred, ExtractionFailed, extractText, fileKind } from './extract.ts';
import type { WorkSchedule } from './capped-worker.ts';
import { buildIndex, type IndexedChunk } from './search-index.ts';
import {
  installIndex,
  kbObjects,
  knowledgeBases,
  listSourceItems,
  recordSource,
  settleStatus,
  type KnowledgeBaseItem,
  type SourceItem,
} from './store.ts';

/*
 * Ingestion, on the kb-jobs queue. A message names a knowledge base and the generation it
 * was queued for; every change of the sources bumps the generation and queues one. A step
 * whose generation is no longer the latest does nothing (the latest message's step does
 * everything pending), so a burst of changes is ingested once. A step:
 * 1. processes every source still `in_progress`: text as given, files through their
 *    extractor, URLs crawled (crawl.ts); the text is chunked (chunking.ts) and embedded,
 *    and the text and chunks (with their vectors) are stored beside the original. A URL
 *    whose text did not change (same SHA-256) keeps its chunks: a refresh replaces only
 *    changed sources. A failure is the source's `error_message`;
 * 2. rebuilds the index from every complete source's stored chunks (re-embedding only a
 *    source embedded by another embedder) and installs it, conditional on no newer index;
 * 3. settles the status: `complete`, or `error` when a knowledge base's first ingestion
 *    indexed nothing because every source failed.
 */

export const IngestJobMessage = lazySchema(() =>
  z.object({
    kind: z.literal('ingest'),
    workspace_id: z.string(),
    knowledge_base_id: z.string(),
    generation: z.number().int(),
  }),
);
export type IngestJobMessage = z.output<typeof IngestJobMessage>;

/** Sources one message extracts, chunks and embeds at most (then the same generation is queued again), and at once. */
const SOURCES_PER_MESSAGE = 200;
const SOURCE_CONCURRENCY = 4;
/**
 * How long after a step begins a source may still start (a file's extraction, which waits
 * its turn behind the others', included); what has not started by then waits for the same
 * generation's next message. The step then ends within kb-jobs' 300 s: 120 s, plus what
 * had started (an extraction of at most KB_EXTRACTION_TIMEOUT_MS, 60 s by default, or a
 * crawl of 10 pages, and the embedding of up to four sources).
 */
export const SOURCE_START_BUDGET_MS = 120_000;

/** A URL source: its page and the pages it links to under the same path. */
const URL_SOURCE_LIMITS = { maxPages: 10, maxDepth: 1, keepText: true } as const;

export async function queueIngestion(workspaceId: string, knowledgeBaseId: string, generation: number): Promise<void> {
  const message: IngestJobMessage = { kind: 'ingest', workspace_id: workspaceId, knowledge_base_id: knowledgeBaseId, generation };
  await queueNamed('kb-jobs').send(message);
}

interface StoredChunks {
  embedder: string;
  chunks: Chunk[];
  /** Little-endian float32 vectors, concatenated, base64. */
  vectors: string;
  dimensions: number;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function packVectors(vectors: Float32Array[]): { vectors: string; dimensions: number } {
  const dimensions = vectors[0]?.length ?? 0;
  const flat = new Float32Array(dimensions * vectors.length);
  vectors.forEach((vector, i) => flat.set(vector, i * dimensions));
  return { vectors: Buffer.from(flat.buffer, flat.byteOffset, flat.byteLength).toString('base64'), dimensions };
}

function unpackVectors(stored: StoredChunks): Float32Array[] {
  const bytes = Buffer.from(stored.vectors, 'base64');
  const flat = new Float32Array(new Uint8Array(bytes).buffer, 0, bytes.byteLength / 4);
  return stored.chunks.map((_, i) => flat.slice(i * stored.dimensions, (i + 1) * stored.dimensions));
}

const label = (source: SourceItem) => source.filename ?? source.title ?? source.url ?? source.source_id;

/** The source's text, an error message for the source, or `deferred` when its turn to be read came after `schedule.startBy`. */
async function sourceText(
  kb: KnowledgeBaseItem,
  source: SourceItem,
  schedule: WorkSchedule,
): Promise<{ text: string; pages?: string[] } | { error: string } | { deferred: true }> {
  if (source.type === 'url') {
    try {
      const result = await crawl(source.url!, URL_SOURCE_LIMITS);
      if (result.pages.length === 0) return { error: `No page could be read (${result.skipped[0]?.reason ?? 'nothing found'})` };
      const text = result.pages.map((page) => [page.title ? `# ${page.title}` : '', page.text ?? ''].filter(Boolean).join('\n\n')).join('\n\n');
      return { text, pages: result.pages.map((page) => page.url) };
    } catch (error) {
      if (error instanceof CrawlFailed) return { error: error.message };
      return { error: `Crawl failed: ${(error as Error).message}` };
    }
  }
  const original = await kbObjects.getSource(kb.workspace_id, kb.knowledge_base_id, source.source_id, 'original');
  if (!original) return { error: 'The uploaded content is missing' };
  if (source.type === 'text') return { text: original.body.toString('utf8') };
  const kind = fileKind(source.filename ?? '', source.content_type ?? '');
  if (!kind) return { error: 'Unsupported document type' };
  try {
    return { text: await extractText(kind, original.body, schedule) };
  } catch (error) {
    if (error instanceof ExtractionDeferred) return { deferred: true };
    // The file's own fault fails the source; anything else (the worker could not start) fails the message, which the queue retries.
    if (error instanceof ExtractionFailed) return { error: `Could not read ${source.filename}: ${error.message}` };
    throw error;
  }
}

/** Reads, chunks, embeds and records one source; false when it was deferred (left `in_progress` for the next message). */
async function processSource(kb: KnowledgeBaseItem, source: SourceItem, embed: Embedder, schedule: WorkSchedule): Promise<boolean> {
  const ws = kb.workspace_id;
  const nowMs = schedule.now;
  const got = await sourceText(kb, source, schedule);
  if ('deferred' in got) return false;
  if ('error' in got) {
    // A refreshed URL that cannot be read now keeps what it had.
    if (source.content_hash) {
      await recordSource(ws, kb.knowledge_base_id, source.source_id, { status: 'complete', error_message: `Refresh failed: ${got.error}` }, nowMs());
    } else {
      await recordSource(ws, kb.knowledge_base_id, source.source_id, { status: 'error', error_message: got.error }, nowMs());
    }
    return true;
  }
  const text = got.text.trim();
  if (!text) {
    await recordSource(ws, kb.knowledge_base_id, source.source_id, { status: 'error', error_message: `No text found in ${label(source)}` }, nowMs());
    return true;
  }
  const hash = sha256(text);
  if (hash === source.content_hash) {
    await recordSource(ws, kb.knowledge_base_id, source.source_id, { status: 'complete', error_message: undefined, pages: got.pages }, nowMs());
    return true;
  }
  const chunks = chunkText(text, { max: kb.max_chunk_size, min: kb.min_chunk_size, idPrefix: source.source_id });
  const vectors = await embed.embed(chunks.map((chunk) => chunk.content));
  const stored: StoredChunks = { embedder: embed.id, chunks, ...packVectors(vectors) };
  await kbObjects.putSource(ws, kb.knowledge_base_id, source.source_id, 'content.txt', Buffer.from(text, 'utf8'), 'text/plain; charset=utf-8');
  await kbObjects.putSource(ws, kb.knowledge_base_id, source.source_id, 'chunks.json', Buffer.from(JSON.stringify(stored)), 'application/json');
  await recordSource(
    ws,
    kb.knowledge_base_id,
    source.source_id,
    { status: 'complete', content_hash: hash, chunk_count: chunks.length, pages: got.pages, error_message: undefined },
    nowMs(),
  );
  return true;
}

/** Runs one ingestion message (the kb-jobs consumer). Throws on a store failure, so the queue retries. */
export async function runIngestion(message: IngestJobMessage, nowMs: () => number = Date.now): Promise<void> {
  const { workspace_id: ws, knowledge_base_id: kbId } = message;
  const kb = await knowledgeBases.get(ws, kbId);
  if (!kb || kb.generation > message.generation) return;
  const embed = await embedder();
  const pending = (await listSourceItems(ws, kbId)).filter((source) => source.status === 'in_progress');
  // A large batch (a sync of many documents, slow files) is read in parts, each message well
  // within the function's timeout: at most SOURCES_PER_MESSAGE sources, each started within
  // SOURCE_START_BUDGET_MS; the same generation is queued again and the index waits for the last part.
  const part = pending.slice(0, SOURCES_PER_MESSAGE);
  const schedule: WorkSchedule = { startBy: nowMs() + SOURCE_START_BUDGET_MS, now: nowMs };
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(SOURCE_CONCURRENCY, part.length) }, async () => {
      while (next < part.length && nowMs() < schedule.startBy) {
        if (await processSource(kb, part[next++]!, embed, schedule)) done += 1;
      }
    }),
  );
  if (done < pending.length) {
    await queueIngestion(ws, kbId, message.generation);
    return;
  }

  const all = await listSourceItems(ws, kbId);
  const complete = all.filter((source) => source.status === 'complete');
  const chunks: IndexedChunk[] = [];
  const vectors: Float32Array[] = [];
  // Read SOURCE_CONCURRENCY at once, kept in the sources' order (the index is the same whatever the timing).
  const storedOf = new Array<StoredChunks | undefined>(complete.length);
  let reading = 0;
  await Promise.all(
    Array.from({ length: Math.min(SOURCE_CONCURRENCY, complete.length) }, async () => {
      while (reading < complete.length) {
        const i = reading++;
        const source = complete[i]!;
        const object = await kbObjects.getSource(ws, kbId, source.source_id, 'chunks.json');
        if (!object) continue;
        let stored = JSON.parse(object.body.toString('utf8')) as StoredChunks;
        if (stored.embedder !== embed.id) {
          stored = { ...stored, embedder: embed.id, ...packVectors(await embed.embed(stored.chunks.map((chunk) => chunk.content))) };
          await kbObjects.putSource(ws, kbId, source.source_id, 'chunks.json', Buffer.from(JSON.stringify(stored)), 'application/json');
        }
        storedOf[i] = stored;
      }
    }),
  );
  complete.forEach((source, i) => {
    const stored = storedOf[i];
    if (!stored) return;
    const sourceVectors = unpackVectors(stored);
    stored.chunks.forEach((chunk, j) => {
      chunks.push({ chunk_id: chunk.chunk_id, source_id: source.source_id, content: chunk.content });
      vectors.push(sourceVectors[j]!);
    });
  });
  const errors = all.filter((source) => source.error_message).map((source) => `${label(source)}: ${source.error_message}`);
  const firstIngestion = kb.index_generation === undefined;
  const status = firstIngestion && complete.length === 0 && all.some((source) => source.status === 'error') ? 'error' : 'complete';
  const indexKey = kbObjects.indexKey(ws, kbId, `${String(message.generation).padStart(9, '0')}-${randomBytes(6).toString('hex')}`);
  await kbObjects.putIndex(indexKey, Buffer.from(JSON.stringify(await buildIndex(chunks, vectors, embed.id))));
  const installed = await installIndex(ws, kbId, {
    generation: message.generation,
    indexKey,
    chunkCount: chunks.length,
    errors,
    status,
    refreshed: pending.some((source) => source.type === 'url') ? nowMs() : undefined,
  });
  if (!installed) {
    await kbObjects.delete(indexKey);
    return;
  }
  if (installed.replaced) await kbObjects.delete(installed.replaced).catch(() => undefined);
  // The knowledge base may have been deleted between the read and the install: its objects go.
  if (!(await knowledgeBases.get(ws, kbId))) await kbObjects.delete(indexKey).catch(() => undefined);
  logger.info('kb-jobs: knowledge base indexed', { knowledge_base_id: kbId, generation: message.generation, chunks: chunks.length, status });
}

/** After the last receive of a failing message: the knowledge base stops as `error` (if nothing newer is pending). */
export async function ingestionFailed(message: IngestJobMessage, error: unknown, receiveCount: number): Promise<void> {
  if (receiveCount < 5) return;
  logger.error('kb-jobs: ingestion failed for good', { knowledge_base_id: message.knowledge_base_id, error: error instanceof Error ? error.message : String(error) });
  await settleStatus(message.workspace_id, message.knowledge_base_id, message.generation, 'error');
}
