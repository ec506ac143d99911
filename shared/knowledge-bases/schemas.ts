import * as z from 'zod';
import { isUploadedFile, type UploadedFile } from '../platform/http/multipart.ts';
import { idOf, importedFrom, lazySchema } from '../platform/http/schemas.ts';
import { createUploadBody, PresignedUploadView } from '../platform/http/upload-schemas.ts';

/*
 * The knowledge bases API contract (spec: the Knowledge bases group, Limits, Errors 413;
 * shapes it does not show follow retell-sdk's `knowledgeBase` types). Create and
 * add-sources take JSON or multipart: retell-sdk sends multipart with
 * `knowledge_base_texts` and `knowledge_base_urls` as JSON text fields and every file as a
 * `knowledge_base_files` part.
 */

/** Spec Limits: 50 MB per file, 25 files per request. */
export const MAX_FILE_BYTES = 50 * 1024 * 1024;
export const MAX_FILES = 25;
export const KB_UPLOAD_LIMITS = { maxFileBytes: MAX_FILE_BYTES, maxFiles: MAX_FILES };
/**
 * The whole multipart body, locally (the local server reads up to this for these routes):
 * room for two 50 MB files. In AWS API Gateway and Lambda cap a request near 6 MB first
 * (docs/knowledge-bases.md, Uploads).
 */
export const KB_MAX_BODY_BYTES = 110 * 1024 * 1024;
const MAX_TEXTS = 100;
export const MAX_TEXT_CHARS = 1_000_000;
const MAX_URLS = 100;
const MAX_NAME_CHARS = 39;
export const DEFAULT_MAX_CHUNK = 2000;
export const DEFAULT_MIN_CHUNK = 400;
/** Sources (texts, files, URLs) a knowledge base may hold, besides synced documents (syncs.ts, MAX_SYNCED_SOURCES). */
export const MAX_SOURCES = 500;

/** A multipart text field holding JSON (retell-sdk's arrays of objects), or the value itself from a JSON body. */
const jsonField = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => {
    if (typeof value !== 'string') return value;
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }, schema);

/** `"true"`/`"false"` from a form, a boolean from JSON. */
const formBoolean = () => z.preprocess((value) => (value === 'true' ? true : value === 'false' ? false : value), z.boolean());
const formInt = (min: number, max: number) =>
  z.preprocess((value) => (typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value), z.number().int().min(min).max(max));

const KnowledgeBaseText = lazySchema(() =>
  z.object({
    title: z.string().trim().min(1).max(200),
    text: z.string().min(1).max(MAX_TEXT_CHARS),
  }),
);

const knowledgeBaseUrl = () =>
  z
    .string()
    .max(2048)
    .refine((value) => {
      try {
        return ['http:', 'https:'].includes(new URL(value).protocol);
      } catch {
        return false;
      }
    }, 'Must be an http:// or https:// URL');

const files = () =>
  z
    .array(z.custom<UploadedFile>(isUploadedFile, { message: 'Must be a file sent as multipart/form-data' }))
    .max(MAX_FILES, `Too many files: at most ${MAX_FILES} per request`);

const sourceFields = () => ({
  knowledge_base_texts: jsonField(z.array(KnowledgeBaseText).max(MAX_TEXTS)).optional(),
  knowledge_base_urls: jsonField(z.array(knowledgeBaseUrl()).max(MAX_URLS)).optional(),
  // retell-sdk sends an empty list of files as the text field "[]" (it sends arrays without files as JSON).
  knowledge_base_files: jsonField(files()).optional(),
  /** Files uploaded to presigned URLs (POST /create-knowledge-base-upload): past API Gateway's ~6 MB request limit. */
  knowledge_base_upload_ids: jsonField(
    z.array(lazySchema(() => idOf('kbUpload', 'an upload ID from POST /create-knowledge-base-upload'))).max(MAX_FILES, `Too many files: at most ${MAX_FILES} per request`),
  ).optional(),
});

export const CreateKnowledgeBaseBody = lazySchema(() =>
z
  .object({
    knowledge_base_name: z.string().trim().min(1).max(MAX_NAME_CHARS, `Must be less than ${MAX_NAME_CHARS + 1} characters`),
    enable_auto_refresh: formBoolean().optional(),
    max_chunk_size: formInt(200, 8000).optional(),
    min_chunk_size: formInt(1, 8000).optional(),
    imported_from: importedFrom().optional(),
    ...sourceFields(),
  })
  .refine((body) => (body.min_chunk_size ?? DEFAULT_MIN_CHUNK) < (body.max_chunk_size ?? DEFAULT_MAX_CHUNK), {
    message: 'Must be less than max_chunk_size',
    path: ['min_chunk_size'],
  }),
);
export type CreateKnowledgeBaseInput = z.output<typeof CreateKnowledgeBaseBody>;

export const AddSourcesBody = lazySchema(() => z.object(sourceFields()));
export type AddSourcesInput = z.output<typeof AddSourcesBody>;

export const UpdateKnowledgeBaseBody = lazySchema(() =>
z.object({
  knowledge_base_name: z.string().trim().min(1).max(MAX_NAME_CHARS, `Must be less than ${MAX_NAME_CHARS + 1} characters`).optional(),
  enable_auto_refresh: z.boolean().optional(),
}),
);

export const CrawlPreviewBody = lazySchema(() =>
  z.object({
    url: knowledgeBaseUrl(),
    max_pages: z.number().int().min(1).max(100).optional(),
    max_depth: z.number().int().min(0).max(3).optional(),
  }),
);

export const kbParams = lazySchema(() => z.object({ knowledge_base_id: idOf('knowledgeBase', 'a knowledge base ID') }));
export const sourceParams = lazySchema(() =>
  z.object({ knowledge_base_id: idOf('knowledgeBase', 'a knowledge base ID'), source_id: idOf('knowledgeBaseSource', 'a source ID') }),
);
export const callParams = lazySchema(() => z.object({ call_id: z.string().min(1).max(100) }));
export const deleteQuery = lazySchema(() => z.object({ force: z.enum(['true', 'false']).optional() }));

const SourceStatus = lazySchema(() => z.enum(['in_progress', 'complete', 'error']));

/** POST /create-knowledge-base-upload: a presigned PUT for one file (a supported document up to 50 MB). */
export const CreateUploadBody = lazySchema(() => createUploadBody({ example: 'application/pdf', default: 'the type its filename implies' }));
export const Upload = lazySchema(PresignedUploadView);

/** A vendor's folder, drive or page ID: the characters they use, nothing that escapes a path or a query. */
const vendorId = () => z.string().regex(/^[A-Za-z0-9_!.-]{1,200}$/, 'Must be an ID of the provider (letters, digits, _ ! . -)');

export const AddSyncedSourceBody = lazySchema(() =>
  z.object({
    connection_id: z.string().trim().min(1).max(100),
    folder_id: vendorId().optional(),
    drive_id: vendorId().optional(),
    page_id: vendorId().optional(),
    database_id: vendorId().optional(),
  }),
);
export type AddSyncedSourceInput = z.output<typeof AddSyncedSourceBody>;

export const syncParams = lazySchema(() => z.object({ sync_id: idOf('syncedSource', 'a sync ID') }));

const SyncRun = lazySchema(() =>
  z.object({
    run_id: z.string(),
    trigger: z.enum(['created', 'connected', 'manual', 'auto_refresh']),
    status: z.enum(['in_progress', 'complete', 'error']),
    started_timestamp: z.number(),
    finished_timestamp: z.number().optional(),
    listed: z.number(),
    added: z.number(),
    updated: z.number(),
    removed: z.number(),
    unchanged: z.number(),
    skipped: z.number(),
    failed: z.number(),
    errors: z.array(z.string()),
    error_message: z.string().optional(),
  }),
);

export const KnowledgeBaseSync = lazySchema(() =>
  z.object({
    sync_id: z.string(),
    knowledge_base_id: z.string(),
    provider: z.enum(['google_drive', 'sharepoint', 'notion']),
    connection_id: z.string(),
    folder_id: z.string().optional(),
    drive_id: z.string().optional(),
    page_id: z.string().optional(),
    database_id: z.string().optional(),
    status: z.enum(['in_progress', 'complete', 'error']),
    last_sync_timestamp: z.number().optional(),
    error_message: z.string().optional(),
    document_count: z.number(),
    created_timestamp: z.number(),
    recent_runs: z.array(SyncRun),
  }),
);
export type KnowledgeBaseSyncView = z.input<typeof KnowledgeBaseSync>;

const KnowledgeBaseSource = lazySchema(() =>
  z.object({
    source_id: z.string(),
    type: z.enum(['document', 'text', 'url']),
    title: z.string().optional(),
    content_url: z.string().optional(),
    filename: z.string().optional(),
    file_size: z.number().optional(),
    file_url: z.string().optional(),
    url: z.string().optional(),
    status: SourceStatus,
    error_message: z.string().optional(),
    chunk_count: z.number().optional(),
    pages: z.array(z.string()).optional(),
    /** A synced source's document: the sync it came from. */
    sync_id: z.string().optional(),
  }),
);

export const KnowledgeBase = lazySchema(() =>
  z.object({
    knowledge_base_id: z.string(),
    knowledge_base_name: z.string(),
    status: z.enum(['in_progress', 'complete', 'error', 'refreshing_in_progress']),
    enable_auto_refresh: z.boolean(),
    knowledge_base_sources: z.array(KnowledgeBaseSource),
    max_chunk_size: z.number(),
    min_chunk_size: z.number(),
    imported_from: z.string().optional(),
    last_refreshed_timestamp: z.number().optional(),
    error_messages: z.array(z.string()),
    chunk_count: z.number(),
    created_timestamp: z.number(),
    user_modified_timestamp: z.number(),
  }),
);
export type KnowledgeBaseView = z.input<typeof KnowledgeBase>;

export const SourceContent = lazySchema(() =>
  z.object({
    knowledge_base_id: z.string(),
    source_id: z.string(),
    type: z.enum(['document', 'text', 'url']),
    status: SourceStatus,
    content: z.string(),
    chunks: z.array(z.object({ chunk_id: z.string(), content: z.string() })),
  }),
);

export const CrawlPreview = lazySchema(() =>
  z.object({
    url: z.string(),
    pages: z.array(z.object({ url: z.string(), depth: z.number(), title: z.string().optional() })),
    skipped: z.array(z.object({ url: z.string(), reason: z.string() })),
  }),
);

const Retrieval = lazySchema(() =>
  z.object({
    retrieval_id: z.string(),
    timestamp: z.number(),
    /** The user's words as the data storage setting keeps them: redacted under everything_except_pii, null under basic_attributes_only. */
    query: z.string().nullable(),
    knowledge_base_ids: z.array(z.string()),
    chunks: z.array(
      z.object({
        knowledge_base_id: z.string(),
        source_id: z.string(),
        chunk_id: z.string(),
        /** Null under basic_attributes_only (the IDs find the text in the knowledge base). */
        content: z.string().nullable(),
        score: z.number(),
        lexical_score: z.number(),
        vector_score: z.number(),
      }),
    ),
  }),
);
export const Retrievals = lazySchema(() => z.object({ call_id: z.string(), retrievals: z.array(Retrieval) }));
