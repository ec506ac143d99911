import { notFound } from '../platform/errors.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { piiCategoriesOf, redactPii } from '../platform/text/pii.ts';
import { embedder } from '../vendors/llm/index.ts';
import { LoadedIndex, type ScoredChunk, type SerializedIndex } from './search-index.ts';
import { listRetrievals, putRetrieval, type DataStorageSetting, type RetrievalItem } from './retrieval-store.ts';
import { kbObjects, knowledgeBases, type KnowledgeBaseItem } from './store.ts';

/*
 * Retrieval inside conversations: the top-k chunks of an LLM's or flow's knowledge bases
 * for the user's latest words, added to the model's prompt, and recorded per call (or
 * chat) for `GET /kb-retrievals/{call_id}`, keeping what the conversation's data storage
 * setting allows (recordedFields). Indexes are kept warm in memory by their object key
 * (immutable: a rebuilt index is a new key), at most INDEX_CACHE_SIZE of them.
 */

export const DEFAULT_TOP_K = 3;
const MAX_TOP_K = 10;
const INDEX_CACHE_SIZE = 32;
/** A retrieval not deleted with its call or chat before then expires after 90 days. */
const RETRIEVAL_TTL_SECONDS = 90 * 86_400;
const MAX_RECORDED_CHARS = 4000;

const cache = new Map<string, LoadedIndex>();

async function loadIndex(kb: KnowledgeBaseItem): Promise<LoadedIndex | undefined> {
  const key = kb.index_key;
  if (!key) return undefined;
  const warm = cache.get(key);
  if (warm) {
    cache.delete(key);
    cache.set(key, warm);
    return warm;
  }
  const object = await kbObjects.getIndex(key);
  if (!object) return undefined;
  const loaded = await LoadedIndex.load(JSON.parse(object.body.toString('utf8')) as SerializedIndex);
  cache.set(key, loaded);
  while (cache.size > INDEX_CACHE_SIZE) cache.delete(cache.keys().next().value!);
  return loaded;
}

export interface RetrievedChunk extends ScoredChunk {
  knowledge_base_id: string;
}

export interface RetrieveInput {
  workspaceId: string;
  knowledgeBaseIds: readonly string[];
  query: string;
  topK?: number;
  /** Chunks scoring below this (0–1, the hybrid score) are left out. */
  filterScore?: number;
}

/** The best chunks across the knowledge bases (missing or unindexed ones are skipped). */
export async function retrieve(input: RetrieveInput): Promise<RetrievedChunk[]> {
  const k = Math.min(MAX_TOP_K, Math.max(1, input.topK ?? DEFAULT_TOP_K));
  const items = (await Promise.all([...new Set(input.knowledgeBaseIds)].map((id) => knowledgeBases.get(input.workspaceId, id)))).filter(
    (kb): kb is NonNullable<typeof kb> => kb !== undefined,
  );
  const indexes = (await Promise.all(items.map(async (kb) => ({ kb, index: await loadIndex(kb) })))).filter((entry) => entry.index);
  if (indexes.length === 0) return [];
  const embed = await embedder();
  const needsVector = indexes.some(({ index }) => index!.embedder === embed.id);
  const [queryVector] = needsVector ? await embed.embed([input.query]) : [undefined];
  const found: RetrievedChunk[] = [];
  for (const { kb, index } of indexes) {
    const vector = index!.embedder === embed.id ? queryVector : undefined;
    for (const chunk of index!.search(input.query, vector, k)) found.push({ ...chunk, knowledge_base_id: kb.knowledge_base_id });
  }
  return found
    .filter((chunk) => chunk.score >= (input.filterScore ?? 0))
    .sort((a, b) => b.score - a.score)
    .slice(0, k);
}

/** The prompt section for retrieved chunks ('' for none). */
export function knowledgeSection(chunks: readonly RetrievedChunk[]): string {
  if (chunks.length === 0) return '';
  return [
    '## Knowledge base',
    'Excerpts from the knowledge base that may answer the user. Use them when relevant; do not mention them.',
    ...chunks.map((chunk, i) => `[${i + 1}] ${chunk.content}`),
  ].join('\n\n');
}

export interface RecordedRetrieval {
  /** Null when nothing was recorded (a conversation that stores nothing: the playground). */
  retrieval_id: string | null;
  timestamp: number;
  knowledge_base_ids: string[];
  chunks: RetrievedChunk[];
}

/**
 * How a conversation's retrievals are kept: its data storage setting (the call's or chat's
 * own, else its agent version's) and the agent's `pii_config.categories`; `record: false`
 * keeps nothing (a conversation that is not stored: the playground).
 */
export type RetrievalStorage = { record: false } | { record?: true; setting: DataStorageSetting; piiCategories?: readonly string[] };

/**
 * What a retrieval keeps of the user's words and the chunks, by the data storage setting, as
 * a call keeps its transcript: `everything`, the words as said; `everything_except_pii`, the
 * words with the personal data that remove-call-sensitive-data finds (the agent's
 * `pii_config.categories`, all four when it names none) replaced by `[<category>]`;
 * `basic_attributes_only`, no words and no chunk text, only what identifies and scores the
 * chunks (their text stays in the knowledge base, found by its IDs).
 */
function recordedFields(query: string, chunks: readonly RetrievedChunk[], setting: DataStorageSetting, piiCategories: readonly string[] | undefined) {
  const basic = setting === 'basic_attributes_only';
  const words = query.slice(0, MAX_RECORDED_CHARS);
  return {
    ...(basic ? {} : { query: setting === 'everything_except_pii' ? redactPii(words, piiCategoriesOf(piiCategories)) : words }),
    chunks: chunks.map((chunk) => ({
      knowledge_base_id: chunk.knowledge_base_id,
      source_id: chunk.source_id,
      chunk_id: chunk.chunk_id,
      ...(basic ? {} : { content: chunk.content.slice(0, MAX_RECORDED_CHARS) }),
      score: chunk.score,
      lexical_score: chunk.lexical_score,
      vector_score: chunk.vector_score,
    })),
  };
}

/**
 * Retrieves for one user turn of a call or chat and records it for `kb-retrievals` as its
 * storage allows (undefined, nothing recorded, when there is no knowledge base or no
 * query). Throws when the store or the embedder fails: the LiveKit worker's route answers
 * that as an error.
 */
export async function retrieveAndRecord(
  input: RetrieveInput & { callId: string; storage: RetrievalStorage; nowMs?: number },
): Promise<RecordedRetrieval | undefined> {
  if (input.knowledgeBaseIds.length === 0 || !input.query.trim()) return undefined;
  const chunks = await retrieve(input);
  const nowMs = input.nowMs ?? Date.now();
  const knowledgeBaseIds = [...input.knowledgeBaseIds];
  if (input.storage.record === false) return { retrieval_id: null, timestamp: nowMs, knowledge_base_ids: knowledgeBaseIds, chunks };
  const item: RetrievalItem = {
    retrieval_id: newTimeOrderedId('kbRetrieval', nowMs),
    workspace_id: input.workspaceId,
    call_id: input.callId,
    timestamp: nowMs,
    data_storage_setting: input.storage.setting,
    ...recordedFields(input.query, chunks, input.storage.setting, input.storage.piiCategories),
    knowledge_base_ids: knowledgeBaseIds,
    expires_at: Math.floor(nowMs / 1000) + RETRIEVAL_TTL_SECONDS,
  };
  await putRetrieval(item);
  return { retrieval_id: item.retrieval_id, timestamp: nowMs, knowledge_base_ids: knowledgeBaseIds, chunks };
}

/**
 * Retrieves for one user turn of a call or chat and records it; answers the prompt section.
 * Never throws: a failed retrieval is logged and the turn goes on without knowledge.
 */
export async function retrieveForConversation(input: RetrieveInput & { callId: string; storage: RetrievalStorage; nowMs?: number }): Promise<string> {
  try {
    const recorded = await retrieveAndRecord(input);
    return recorded ? knowledgeSection(recorded.chunks) : '';
  } catch (error) {
    logger.warn('Knowledge base retrieval failed; answering without it', { call_id: input.callId, error: error instanceof Error ? error.message : String(error) });
    return '';
  }
}

/**
 * `GET /kb-retrievals/{call_id}`: 404 when this workspace recorded none for that call (none
 * ever, or the call or chat was deleted with them). `query` and a chunk's `content` are null
 * where the data storage setting kept none.
 */
export async function getKbRetrievals(workspaceId: string, callId: string) {
  const items = await listRetrievals(workspaceId, callId);
  if (items.length === 0) throw notFound(`No knowledge base retrievals for ${callId}`);
  return {
    call_id: callId,
    retrievals: items.map(({ retrieval_id, timestamp, query, knowledge_base_ids, chunks }) => ({
      retrieval_id,
      timestamp,
      query: query ?? null,
      knowledge_base_ids,
      chunks: chunks.map((chunk) => ({ ...chunk, content: chunk.content ?? null })),
    })),
  };
}
