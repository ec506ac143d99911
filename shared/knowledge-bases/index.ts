/**
 * What other domains may use of knowledge bases: retrieval for a conversation's turn (the
 * conversation runtime calls it). Keep it small: calls and chats bundle what this exposes
 * (the ingestion, with its extractors and crawler, is the kb-jobs function's own import).
 */
export { retrieveForConversation, retrieveAndRecord, retrieve, knowledgeSection, DEFAULT_TOP_K } from './retrieval.ts';
export type { RecordedRetrieval, RetrievalStorage, RetrievedChunk, RetrieveInput } from './retrieval.ts';
/** GET /kb-retrievals/{call_id}'s answer, for the public call route too (shared/public). */
export { getKbRetrievals } from './retrieval.ts';
