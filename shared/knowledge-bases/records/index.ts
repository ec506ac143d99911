/**
 * The knowledge-bases domain's narrow entry for what deletes calls and chats (the calls
 * domain's deleteCall, the chats domain's deleteChat: delete-call, delete-chat, privacy
 * erases, retention): a conversation's retrieval records go with it; and for what applies a
 * conversation's data storage setting once it has ended, or scrubs it: they keep no more
 * than the setting keeps. It reaches only those items (retrieval-store.ts), not retrieval
 * with its embedder, search index and LLM vendor, which index.ts reaches, nor the knowledge
 * bases' bucket (docs/architecture.md, Narrow entries).
 */
export { deleteRetrievals, restrictRetrievals } from '../retrieval-store.ts';
