import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  AddSourcesBody,
  AddSyncedSourceBody,
  CreateUploadBody,
  KnowledgeBaseSync,
  syncParams,
  Upload,
  callParams,
  CrawlPreview,
  CrawlPreviewBody,
  CreateKnowledgeBaseBody,
  deleteQuery,
  KB_MAX_BODY_BYTES,
  KB_UPLOAD_LIMITS,
  kbParams,
  KnowledgeBase,
  MAX_TEXT_CHARS,
  Retrievals,
  SourceContent,
  sourceParams,
  UpdateKnowledgeBaseBody,
} from './schemas.ts';

/** Create and add-sources: JSON, or multipart as retell-sdk sends it (files up to 50 MB, 25 a request). */
const sourcesBody = {
  bodyType: 'json-or-multipart',
  uploadLimits: KB_UPLOAD_LIMITS,
  maxBodyBytes: KB_MAX_BODY_BYTES,
  maxJsonString: MAX_TEXT_CHARS,
} as const;

/** Knowledge bases (spec: the Knowledge bases group; scope `kb`), their synced sources and presigned uploads. */
export const knowledgeBaseRoutes = defineRoutes({ domain: 'knowledge-bases', access: 'kb' }, {
  createKnowledgeBase: {
    method: 'POST', path: '/create-knowledge-base', status: 201,
    summary: 'Create a knowledge base with texts, URLs and files (JSON or multipart); sources are indexed in the background',
    ...sourcesBody, body: CreateKnowledgeBaseBody, response: KnowledgeBase,
  },
  getKnowledgeBase: {
    method: 'GET', path: '/get-knowledge-base/{knowledge_base_id}', status: 200,
    summary: 'Get a knowledge base with its sources and status',
    params: kbParams, response: KnowledgeBase,
  },
  listKnowledgeBases: {
    method: 'GET', path: '/list-knowledge-bases', status: 200,
    summary: 'List knowledge bases, newest first',
    response: lazySchema(() => z.array(KnowledgeBase)),
  },
  updateKnowledgeBase: {
    method: 'PATCH', path: '/update-knowledge-base/{knowledge_base_id}', status: 200,
    summary: 'Rename a knowledge base or turn its daily auto refresh on or off',
    params: kbParams, body: UpdateKnowledgeBaseBody, response: KnowledgeBase,
  },
  deleteKnowledgeBase: {
    method: 'DELETE', path: '/delete-knowledge-base/{knowledge_base_id}', status: 204,
    summary: 'Delete a knowledge base, its sources and index (409 naming the LLMs and flows using it, unless ?force=true)',
    params: kbParams, query: deleteQuery,
  },
  addKnowledgeBaseSources: {
    method: 'POST', path: '/add-knowledge-base-sources/{knowledge_base_id}', status: 200,
    summary: 'Add texts, URLs and files to a knowledge base (JSON or multipart); indexed in the background',
    params: kbParams, ...sourcesBody, body: AddSourcesBody, response: KnowledgeBase,
  },
  deleteKnowledgeBaseSource: {
    method: 'DELETE', path: '/delete-knowledge-base-source/{knowledge_base_id}/source/{source_id}', status: 200,
    summary: 'Delete one source of a knowledge base (its chunks leave the index)',
    params: sourceParams, response: KnowledgeBase,
  },
  getKnowledgeBaseSourceContent: {
    method: 'GET', path: '/get-knowledge-base-source-content/{knowledge_base_id}/{source_id}', status: 200,
    summary: 'The extracted text of a source and its chunks',
    params: sourceParams, response: SourceContent,
  },
  knowledgeBaseCrawlPreview: {
    method: 'POST', path: '/knowledge-base-crawl-preview', status: 200,
    summary: 'The pages a crawl of a URL would fetch (same site, robots.txt, depth and page limits), without indexing them',
    throttle: 'outbound',
    body: CrawlPreviewBody, response: CrawlPreview,
  },
  refreshKnowledgeBase: {
    method: 'POST', path: '/refresh-knowledge-base/{knowledge_base_id}', status: 202,
    summary: 'Re-crawl the URL sources now; changed ones are re-indexed in the background',
    params: kbParams, response: KnowledgeBase,
  },
  addKnowledgeBaseSyncedSource: {
    method: 'POST', path: '/add-knowledge-base-synced-source/{knowledge_base_id}', status: 201,
    summary: 'Sync a Google Drive folder, SharePoint drive or folder, or Notion page into a knowledge base through a kb_sync OAuth connection; the first run starts at once',
    params: kbParams, body: AddSyncedSourceBody, response: KnowledgeBaseSync,
  },
  listKnowledgeBaseSyncs: {
    method: 'GET', path: '/list-knowledge-base-syncs/{knowledge_base_id}', status: 200,
    summary: 'The synced sources of a knowledge base with their status and recent runs (counts and errors)',
    params: kbParams, response: lazySchema(() => z.array(KnowledgeBaseSync)),
  },
  syncKnowledgeBaseSource: {
    method: 'POST', path: '/sync-knowledge-base-source/{sync_id}', status: 202,
    summary: 'Sync a synced source now: changed documents are fetched and re-indexed, removed ones leave the knowledge base',
    params: syncParams, response: KnowledgeBaseSync,
  },
  deleteKnowledgeBaseSync: {
    method: 'DELETE', path: '/delete-knowledge-base-sync/{sync_id}', status: 204,
    summary: 'Delete a synced source and the documents it brought into its knowledge base',
    params: syncParams,
  },
  createKnowledgeBaseUpload: {
    method: 'POST', path: '/create-knowledge-base-upload', status: 201,
    summary: 'A presigned URL to PUT one file (up to 50 MB) to, for files past the ~6 MB request limit; then name it in knowledge_base_upload_ids',
    body: CreateUploadBody, response: Upload,
  },
  getKbRetrievals: {
    method: 'GET', path: '/kb-retrievals/{call_id}', status: 200,
    summary: 'What a call or chat retrieved from its knowledge bases: each query, its chunks and their scores',
    params: callParams, response: Retrievals,
  },
});
