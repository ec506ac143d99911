import { domainHandler } from '../shared/platform/http/handler.ts';
import { parseMultipart } from '../shared/platform/http/multipart.ts';
import { knowledgeBaseRoutes } from '../shared/knowledge-bases/routes.ts';
import * as kb from '../shared/knowledge-bases/knowledge-bases.ts';
import { getKbRetrievals } from '../shared/knowledge-bases/retrieval.ts';
import * as syncs from '../shared/knowledge-bases/syncs.ts';

export const handler = domainHandler(knowledgeBaseRoutes, {
  createKnowledgeBase: ({ principal, body }) => kb.createKnowledgeBase(principal.workspaceId, body),
  getKnowledgeBase: ({ principal, params }) => kb.getKnowledgeBase(principal.workspaceId, params.knowledge_base_id),
  listKnowledgeBases: ({ principal }) => kb.listKnowledgeBases(principal.workspaceId),
  updateKnowledgeBase: ({ principal, params, body }) => kb.updateKnowledgeBase(principal.workspaceId, params.knowledge_base_id, body),
  deleteKnowledgeBase: ({ principal, params, query }) => kb.deleteKnowledgeBase(principal.workspaceId, params.knowledge_base_id, query.force === 'true'),
  addKnowledgeBaseSources: ({ principal, params, body }) => kb.addKnowledgeBaseSources(principal.workspaceId, params.knowledge_base_id, body),
  deleteKnowledgeBaseSource: ({ principal, params }) =>
    kb.deleteKnowledgeBaseSource(principal.workspaceId, params.knowledge_base_id, params.source_id),
  getKnowledgeBaseSourceContent: ({ principal, params }) => kb.getSourceContent(principal.workspaceId, params.knowledge_base_id, params.source_id),
  knowledgeBaseCrawlPreview: ({ body }) => kb.crawlPreview(body),
  refreshKnowledgeBase: ({ principal, params }) => kb.refreshKnowledgeBase(principal.workspaceId, params.knowledge_base_id),
  getKbRetrievals: ({ principal, params }) => getKbRetrievals(principal.workspaceId, params.call_id),
  addKnowledgeBaseSyncedSource: ({ principal, params, body }) => syncs.addSyncedSource(principal.workspaceId, params.knowledge_base_id, body),
  listKnowledgeBaseSyncs: ({ principal, params }) => syncs.listSyncs(principal.workspaceId, params.knowledge_base_id),
  syncKnowledgeBaseSource: ({ principal, params }) => syncs.syncNow(principal.workspaceId, params.sync_id),
  deleteKnowledgeBaseSync: ({ principal, params }) => syncs.deleteSync(principal.workspaceId, params.sync_id),
  createKnowledgeBaseUpload: ({ principal, body }) => kb.createUpload(principal.workspaceId, body),
}, { multipart: parseMultipart });
