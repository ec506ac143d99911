/**
 * The knowledge-bases domain's narrow entry for what deletes calls and chats (the calls
 * domain's deleteCall, the chats domain's deleteChat: delete-call, delete-chat, privacy
 * erases, retention): a conversation's retrieval records go with it. It reaches only the
 * domain's store (items and the bucket adapter's types), not retrieval with its embedder,
 * search index and LLM vendor, which index.ts reaches (docs/architecture.md, Narrow entries).
 */
export { deleteRetrievals } from './store.ts';
