import { knowledgeBaseUsers } from '../agents/index.ts';
import { checkDestination, EgressRefused } from '../platform/egress/egress.ts';
import { badRequest, conflict, notFound, payloadTooLarge } from '../platform/errors.ts';
import type { UploadedFile } from '../platform/http/multipart.ts';
import { newId } from '../platform/ids.ts';
import type { TransactOp } from '../platform/store/table.ts';
import { consumeUploadOp, createPresignedUpload, deleteUploadObject, readUpload, type PresignedUpload } from '../platform/uploads.ts';
import { startUrlRefresh } from './auto-refresh.ts';
import { crawl, CrawlFailed } from './crawl.ts';
import { assertSupportedFile, CONTENT_TYPE } from './extract.ts';
import { queueIngestion } from './ingest.ts';
import { removeSyncsOf } from './syncs.ts';
import {
  DEFAULT_MAX_CHUNK,
  DEFAULT_MIN_CHUNK,
  MAX_FILE_BYTES,
  MAX_FILES,
  MAX_SOURCES,
  type AddSourcesInput,
  type CreateKnowledgeBaseInput,
  type KnowledgeBaseView,
} from './schemas.ts';
import {
  addSourceItems,
  kbObjects,
  knowledgeBases,
  listKnowledgeBaseItems,
  listSourceItems,
  nextGeneration,
  putKnowledgeBase,
  removeKnowledgeBaseItems,
  removeSourceItem,
  sources as sourceEntity,
  updateKnowledgeBaseFields,
  type KnowledgeBaseItem,
  type SourceItem,
} from './store.ts';

/** Sources one request may add: a knowledge base and its sources are one transaction (at most 100 operations). */
const MAX_SOURCES_PER_REQUEST = 99;
/** How long the content and file URLs in a knowledge base's view work. */
const SIGNED_URL_MS = 60 * 60 * 1000;

interface NewSource {
  item: SourceItem;
  /** The original to store before the items are written (texts and files). */
  original?: { body: Buffer; contentType: string };
}

async function checkUrls(urls: readonly string[]): Promise<void> {
  await Promise.all(
    urls.map(async (url, index) => {
      try {
        await checkDestination(url);
      } catch (error) {
        // The production SSRF rules: refused before anything is stored. A host that does not
        // resolve now is the crawl's to report on the source.
        if (error instanceof EgressRefused) throw badRequest(`knowledge_base_urls.${index}: ${error.message}`);
      }
    }),
  );
}

/**
 * The presigned uploads a request names, read back as multipart files would be (each this
 * workspace's knowledge-base file, uploaded, within the per-file limit); their type is checked
 * with the multipart files'.
 */
async function uploadedFiles(workspaceId: string, uploadIds: readonly string[]): Promise<UploadedFile[]> {
  if (new Set(uploadIds).size !== uploadIds.length) throw badRequest('knowledge_base_upload_ids: Each upload may be named once');
  return Promise.all(
    uploadIds.map((uploadId, index) => readUpload(workspaceId, uploadId, 'knowledge_base_file', `knowledge_base_upload_ids.${index}`, MAX_FILE_BYTES)),
  );
}

async function newSources(workspaceId: string, knowledgeBaseId: string, input: AddSourcesInput, nowMs: number): Promise<NewSource[]> {
  const texts = input.knowledge_base_texts ?? [];
  const urls = input.knowledge_base_urls ?? [];
  const uploadIds = input.knowledge_base_upload_ids ?? [];
  if ((input.knowledge_base_files?.length ?? 0) + uploadIds.length > MAX_FILES) throw badRequest(`Too many files: at most ${MAX_FILES} per request`);
  const files: UploadedFile[] = [...(input.knowledge_base_files ?? []), ...(await uploadedFiles(workspaceId, uploadIds))];
  const total = texts.length + urls.length + files.length;
  if (total > MAX_SOURCES_PER_REQUEST) throw badRequest(`At most ${MAX_SOURCES_PER_REQUEST} sources per request (got ${total})`);
  const kinds = files.map((file) => assertSupportedFile(file.filename, file.contentType));
  await checkUrls(urls);
  const base = { knowledge_base_id: knowledgeBaseId, workspace_id: workspaceId, status: 'in_progress' as const, created_timestamp: nowMs, updated_timestamp: nowMs };
  return [
    ...texts.map((text) => ({
      item: { ...base, source_id: newId('knowledgeBaseSource'), type: 'text' as const, title: text.title },
      original: { body: Buffer.from(text.text, 'utf8'), contentType: 'text/plain; charset=utf-8' },
    })),
    ...urls.map((url) => ({ item: { ...base, source_id: newId('knowledgeBaseSource'), type: 'url' as const, url } })),
    ...files.map((file, i) => ({
      item: {
        ...base,
        source_id: newId('knowledgeBaseSource'),
        type: 'document' as const,
        filename: file.filename || `document-${i + 1}`,
        content_type: CONTENT_TYPE[kinds[i]!],
        file_size: file.size,
      },
      original: { body: file.data, contentType: CONTENT_TYPE[kinds[i]!] },
    })),
  ];
}

/** Originals go to the bucket before the items that point at them. */
async function storeOriginals(workspaceId: string, knowledgeBaseId: string, added: NewSource[]): Promise<void> {
  await Promise.all(
    added
      .filter((source) => source.original)
      .map((source) => kbObjects.putSource(workspaceId, knowledgeBaseId, source.item.source_id, 'original', source.original!.body, source.original!.contentType)),
  );
}

async function sourceView(kb: KnowledgeBaseItem, source: SourceItem, expiresAt: number): Promise<KnowledgeBaseView['knowledge_base_sources'][number]> {
  const common = {
    source_id: source.source_id,
    type: source.type,
    status: source.status,
    ...(source.error_message ? { error_message: source.error_message } : {}),
    ...(source.chunk_count !== undefined ? { chunk_count: source.chunk_count } : {}),
    ...(source.sync_id ? { sync_id: source.sync_id } : {}),
  };
  if (source.type === 'text') {
    return { ...common, title: source.title ?? '', content_url: await kbObjects.sourceUrl(kb.workspace_id, kb.knowledge_base_id, source.source_id, 'original', expiresAt) };
  }
  if (source.type === 'document') {
    return {
      ...common,
      filename: source.filename ?? '',
      file_size: source.file_size ?? 0,
      file_url: await kbObjects.sourceUrl(kb.workspace_id, kb.knowledge_base_id, source.source_id, 'original', expiresAt, source.filename),
    };
  }
  return { ...common, url: source.url ?? '', ...(source.pages ? { pages: source.pages } : {}) };
}

async function knowledgeBaseView(kb: KnowledgeBaseItem, sourceItems?: SourceItem[], nowMs = Date.now()): Promise<KnowledgeBaseView> {
  const items = sourceItems ?? (await listSourceItems(kb.workspace_id, kb.knowledge_base_id));
  const expiresAt = nowMs + SIGNED_URL_MS;
  return {
    knowledge_base_id: kb.knowledge_base_id,
    knowledge_base_name: kb.knowledge_base_name,
    status: kb.status,
    enable_auto_refresh: kb.enable_auto_refresh,
    knowledge_base_sources: await Promise.all(items.map((source) => sourceView(kb, source, expiresAt))),
    max_chunk_size: kb.max_chunk_size,
    min_chunk_size: kb.min_chunk_size,
    ...(kb.imported_from !== undefined ? { imported_from: kb.imported_from } : {}),
    ...(kb.last_refreshed_timestamp !== undefined ? { last_refreshed_timestamp: kb.last_refreshed_timestamp } : {}),
    error_messages: kb.error_messages ?? [],
    chunk_count: kb.chunk_count ?? 0,
    created_timestamp: kb.created_timestamp,
    user_modified_timestamp: kb.user_modified_timestamp,
  };
}

export async function createKnowledgeBase(workspaceId: string, input: CreateKnowledgeBaseInput, nowMs = Date.now()): Promise<KnowledgeBaseView> {
  const knowledgeBaseId = newId('knowledgeBase');
  const added = await newSources(workspaceId, knowledgeBaseId, input, nowMs);
  const kb: KnowledgeBaseItem = {
    type: 'knowledge_base',
    knowledge_base_id: knowledgeBaseId,
    workspace_id: workspaceId,
    knowledge_base_name: input.knowledge_base_name,
    enable_auto_refresh: input.enable_auto_refresh ?? false,
    max_chunk_size: input.max_chunk_size ?? DEFAULT_MAX_CHUNK,
    min_chunk_size: input.min_chunk_size ?? DEFAULT_MIN_CHUNK,
    ...(input.imported_from ? { imported_from: input.imported_from } : {}),
    status: 'in_progress',
    generation: 1,
    chunk_count: 0,
    error_messages: [],
    created_timestamp: nowMs,
    user_modified_timestamp: nowMs,
  };
  await storeOriginals(workspaceId, knowledgeBaseId, added);
  await putKnowledgeBase(kb, added.map((source) => source.item), uploadOps(workspaceId, input));
  await dropUploads(workspaceId, input);
  // Even with no source the ingestion runs once: it installs the (empty) index and settles `complete`.
  await queueIngestion(workspaceId, knowledgeBaseId, kb.generation);
  return knowledgeBaseView(kb, added.map((source) => source.item), nowMs);
}

/** The uploads a request used are consumed in the transaction that adds their sources (a replay fails it). */
const uploadOps = (workspaceId: string, input: AddSourcesInput): TransactOp[] =>
  (input.knowledge_base_upload_ids ?? []).map((uploadId) => consumeUploadOp(workspaceId, uploadId));

/** The objects of the uploads the transaction consumed (the originals now hold their bytes). */
async function dropUploads(workspaceId: string, input: AddSourcesInput): Promise<void> {
  await Promise.all((input.knowledge_base_upload_ids ?? []).map((uploadId) => deleteUploadObject(workspaceId, uploadId)));
}

/**
 * POST /create-knowledge-base-upload: a presigned PUT (shared/platform/uploads.ts) for one
 * file past API Gateway's ~6 MB request limit, refused up front as a multipart file of that
 * name, type and size would be. The file becomes a source when create-knowledge-base or
 * add-knowledge-base-sources names the upload in `knowledge_base_upload_ids`.
 */
export async function createUpload(
  workspaceId: string,
  input: { filename: string; content_type?: string; content_length: number; checksum_sha256?: string },
  nowMs = Date.now(),
): Promise<PresignedUpload> {
  if (input.content_length > MAX_FILE_BYTES) throw payloadTooLarge(`File "${input.filename}" exceeds the ${MAX_FILE_BYTES / (1024 * 1024)} MB limit per file`);
  const kind = assertSupportedFile(input.filename, input.content_type ?? '');
  return createPresignedUpload(
    workspaceId,
    {
      purpose: 'knowledge_base_file',
      filename: input.filename,
      // Without a declared type, the one its name implies (the type the source is stored with).
      contentType: input.content_type ?? CONTENT_TYPE[kind],
      contentLength: input.content_length,
      ...(input.checksum_sha256 ? { checksumSha256: input.checksum_sha256 } : {}),
    },
    MAX_FILE_BYTES,
    nowMs,
  );
}

export async function getKnowledgeBase(workspaceId: string, knowledgeBaseId: string, nowMs = Date.now()): Promise<KnowledgeBaseView> {
  return knowledgeBaseView(await knowledgeBases.mustGet(workspaceId, knowledgeBaseId), undefined, nowMs);
}

export async function listKnowledgeBases(workspaceId: string, nowMs = Date.now()): Promise<KnowledgeBaseView[]> {
  const items = await listKnowledgeBaseItems(workspaceId);
  items.sort((a, b) => b.created_timestamp - a.created_timestamp);
  return Promise.all(items.map((kb) => knowledgeBaseView(kb, undefined, nowMs)));
}

export async function updateKnowledgeBase(
  workspaceId: string,
  knowledgeBaseId: string,
  input: { knowledge_base_name?: string; enable_auto_refresh?: boolean },
  nowMs = Date.now(),
): Promise<KnowledgeBaseView> {
  const kb = await updateKnowledgeBaseFields(workspaceId, knowledgeBaseId, input, nowMs);
  return knowledgeBaseView(kb, undefined, nowMs);
}

export async function deleteKnowledgeBase(workspaceId: string, knowledgeBaseId: string, force: boolean): Promise<void> {
  const kb = await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
  if (!force) {
    const users = await knowledgeBaseUsers(workspaceId, knowledgeBaseId);
    const names = [...users.llm_ids, ...users.conversation_flow_ids];
    if (names.length > 0) {
      throw conflict(`Knowledge base ${knowledgeBaseId} is used by ${names.join(', ')}; remove it from them first, or delete with ?force=true`);
    }
  }
  const removed = await removeKnowledgeBaseItems(workspaceId, knowledgeBaseId);
  await removeSyncsOf(workspaceId, knowledgeBaseId);
  await Promise.all([
    ...removed.map((source) => kbObjects.deleteSource(workspaceId, knowledgeBaseId, source.source_id)),
    ...(kb.index_key ? [kbObjects.delete(kb.index_key)] : []),
  ]);
}

export async function addKnowledgeBaseSources(workspaceId: string, knowledgeBaseId: string, input: AddSourcesInput, nowMs = Date.now()): Promise<KnowledgeBaseView> {
  const kb = await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
  const added = await newSources(workspaceId, knowledgeBaseId, input, nowMs);
  if (added.length === 0) throw badRequest('Add at least one of knowledge_base_texts, knowledge_base_urls, knowledge_base_files or knowledge_base_upload_ids');
  // Synced documents have their own allowance (syncs.ts, MAX_SYNCED_SOURCES).
  const existing = (await listSourceItems(workspaceId, knowledgeBaseId)).filter((source) => !source.sync_id);
  if (existing.length + added.length > MAX_SOURCES) {
    throw badRequest(`A knowledge base holds at most ${MAX_SOURCES} sources (it has ${existing.length})`);
  }
  await storeOriginals(workspaceId, knowledgeBaseId, added);
  const status = kb.status === 'in_progress' || kb.index_generation === undefined ? 'in_progress' : 'refreshing_in_progress';
  const generation = await addSourceItems(workspaceId, knowledgeBaseId, added.map((source) => source.item), status, nowMs, uploadOps(workspaceId, input));
  await dropUploads(workspaceId, input);
  await queueIngestion(workspaceId, knowledgeBaseId, generation);
  return knowledgeBaseView({ ...kb, status, generation, user_modified_timestamp: nowMs }, [...existing, ...added.map((source) => source.item)], nowMs);
}

export async function deleteKnowledgeBaseSource(workspaceId: string, knowledgeBaseId: string, sourceId: string, nowMs = Date.now()): Promise<KnowledgeBaseView> {
  await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
  if (!(await removeSourceItem(workspaceId, knowledgeBaseId, sourceId))) throw notFound(`Source ${sourceId} not found`);
  await kbObjects.deleteSource(workspaceId, knowledgeBaseId, sourceId);
  // The index drops the source's chunks when the queued rebuild installs the next one.
  const generation = await nextGeneration(workspaceId, knowledgeBaseId, 'refreshing_in_progress', nowMs);
  await queueIngestion(workspaceId, knowledgeBaseId, generation);
  return knowledgeBaseView(await knowledgeBases.mustGet(workspaceId, knowledgeBaseId), undefined, nowMs);
}

export async function getSourceContent(workspaceId: string, knowledgeBaseId: string, sourceId: string) {
  await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
  const source = await sourceEntity.mustGet(workspaceId, knowledgeBaseId, sourceId);
  const [text, chunks] = await Promise.all([
    kbObjects.getSource(workspaceId, knowledgeBaseId, sourceId, 'content.txt'),
    kbObjects.getSource(workspaceId, knowledgeBaseId, sourceId, 'chunks.json'),
  ]);
  const parsed = chunks ? (JSON.parse(chunks.body.toString('utf8')) as { chunks: { chunk_id: string; content: string }[] }).chunks : [];
  return {
    knowledge_base_id: knowledgeBaseId,
    source_id: sourceId,
    type: source.type,
    status: source.status,
    content: text?.body.toString('utf8') ?? '',
    chunks: parsed.map((chunk) => ({ chunk_id: chunk.chunk_id, content: chunk.content })),
  };
}

export async function crawlPreview(input: { url: string; max_pages?: number; max_depth?: number }) {
  try {
    const result = await crawl(input.url, { maxPages: input.max_pages ?? 20, maxDepth: input.max_depth ?? 1, keepText: false });
    return { url: input.url, pages: result.pages.map(({ url, depth, title }) => ({ url, depth, ...(title ? { title } : {}) })), skipped: result.skipped };
  } catch (error) {
    if (error instanceof CrawlFailed) throw badRequest(`url: ${error.message}`);
    throw error;
  }
}

export async function refreshKnowledgeBase(workspaceId: string, knowledgeBaseId: string, nowMs = Date.now()): Promise<KnowledgeBaseView> {
  const kb = await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
  const urls = (await listSourceItems(workspaceId, knowledgeBaseId)).filter((source) => source.type === 'url');
  if (urls.length === 0) throw badRequest(`Knowledge base ${knowledgeBaseId} has no URL sources to refresh`);
  return knowledgeBaseView(await startUrlRefresh(kb, urls, nowMs), undefined, nowMs);
}

