/**
 * What other domains may use of knowledge bases: retrieval for a conversation's turn (the
 * conversation runtime calls it), and the ingestion step the kb-jobs consumer runs. Keep it
 * small: calls and chats bundle what this exposes.
 */
export { retrieveForConversation, retrieve, knowledgeSection, DEFAULT_TOP_K } from './retrieval.ts';
export type { RetrievedChunk, RetrieveInput } from './retrieval.ts';
export { KbJobMessage, runIngestion, ingestionFailed } from './ingest.ts';
