import type MiniSearch from 'minisearch';
import { stemmer } from 'stemmer';
import { loadOnce } from '../platform/lazy.ts';

/*
 * A knowledge base's index: every chunk of its complete sources, a lexical index (BM25+,
 * MiniSearch's scoring: k1 1.2, b 0.7, d 0.5, over lower-cased Porter stems without stop
 * words; a query stem of 4+ letters also matches the stems it starts) and one embedding per
 * chunk. Serialised to
 * one JSON object in the bucket; functions that retrieve keep the parsed index warm in
 * memory, keyed by its object key (a new index is a new key).
 *
 * Hybrid score of a chunk for a query, in [0, 1]:
 *   lexical = its BM25+ score / the best BM25+ score of this query (0 without a match)
 *   vector  = max(0, cosine(query embedding, chunk embedding))
 *   score   = 0.5 × lexical + 0.5 × vector
 * When the index's embedder is not the one configured now (settings changed since it was
 * built), vector is 0 and score = lexical until the next ingestion rebuilds the index.
 *
 * MiniSearch is loaded on first use (a literal `import('minisearch')`: its own chunk when
 * the bundle is split), so building or loading an index is async.
 */

const loadMiniSearch = loadOnce((): Promise<typeof MiniSearch> => import('minisearch').then((module) => module.default));

export interface IndexedChunk {
  chunk_id: string;
  source_id: string;
  content: string;
}

export interface SerializedIndex {
  v: 1;
  embedder: string;
  dimensions: number;
  chunks: IndexedChunk[];
  lexical: unknown;
  /** Every chunk's embedding, concatenated little-endian float32, base64. */
  vectors: string;
}

export interface ScoredChunk extends IndexedChunk {
  score: number;
  lexical_score: number;
  vector_score: number;
}

const LEXICAL_WEIGHT = 0.5;
const VECTOR_WEIGHT = 0.5;

const STOP_WORDS = new Set(
  'a an and are as at be but by can do does for from has have how i if in is it its me my of on or our so that the their there this to was we what when where which who why will with you your'.split(' '),
);

const searchOptions = {
  fields: ['content'],
  idField: 'id',
  processTerm: (term: string) => {
    const lower = term.toLowerCase();
    return STOP_WORDS.has(lower) ? null : stemmer(lower);
  },
  // A query term of 4+ letters also matches longer words it starts (weighted down by MiniSearch).
  searchOptions: { combineWith: 'OR' as const, prefix: (term: string) => term.length >= 4 },
};

export async function buildIndex(chunks: IndexedChunk[], vectors: Float32Array[], embedderId: string): Promise<SerializedIndex> {
  const MiniSearchIndex = await loadMiniSearch();
  const lexical = new MiniSearchIndex<{ id: number; content: string }>(searchOptions);
  lexical.addAll(chunks.map((chunk, id) => ({ id, content: chunk.content })));
  const dimensions = vectors[0]?.length ?? 0;
  const flat = new Float32Array(dimensions * vectors.length);
  vectors.forEach((vector, i) => flat.set(vector, i * dimensions));
  return {
    v: 1,
    embedder: embedderId,
    dimensions,
    chunks,
    lexical: lexical.toJSON(),
    vectors: Buffer.from(flat.buffer, flat.byteOffset, flat.byteLength).toString('base64'),
  };
}

/** A parsed index, ready to search (`LoadedIndex.load`). */
export class LoadedIndex {
  private readonly lexical: MiniSearch;
  private readonly vectors: Float32Array;
  readonly chunks: IndexedChunk[];
  readonly embedder: string;
  readonly dimensions: number;

  /** Parses a serialised index (MiniSearch is loaded on the first). */
  static async load(serialized: SerializedIndex): Promise<LoadedIndex> {
    return new LoadedIndex(serialized, await loadMiniSearch());
  }

  private constructor(serialized: SerializedIndex, MiniSearchIndex: typeof MiniSearch) {
    this.chunks = serialized.chunks;
    this.embedder = serialized.embedder;
    this.dimensions = serialized.dimensions;
    this.lexical = MiniSearchIndex.loadJS(serialized.lexical as Parameters<typeof MiniSearch.loadJS>[0], searchOptions);
    const bytes = Buffer.from(serialized.vectors, 'base64');
    // Copied into an aligned buffer: Float32Array needs a multiple-of-4 offset.
    this.vectors = new Float32Array(new Uint8Array(bytes).buffer, 0, bytes.byteLength / 4);
  }

  /** The top `k` chunks for a query; `queryVector` from the index's own embedder, or undefined. */
  search(query: string, queryVector: Float32Array | undefined, k: number): ScoredChunk[] {
    const lexicalScores = new Map<number, number>();
    let best = 0;
    for (const hit of this.lexical.search(query)) {
      lexicalScores.set(hit.id as number, hit.score);
      if (hit.score > best) best = hit.score;
    }
    const useVectors = queryVector !== undefined && queryVector.length === this.dimensions && this.dimensions > 0;
    const count = this.chunks.length;
    const dims = this.dimensions;
    // The best k so far, kept sorted (k is small): one pass over the chunks, no sort of them all.
    const top: { index: number; score: number; lexical: number; vector: number }[] = [];
    for (let i = 0; i < count; i++) {
      const lexical = best > 0 ? (lexicalScores.get(i) ?? 0) / best : 0;
      let vector = 0;
      if (useVectors) {
        let dot = 0;
        const base = i * dims;
        for (let d = 0; d < dims; d++) dot += queryVector[d]! * this.vectors[base + d]!;
        vector = dot > 0 ? dot : 0;
      }
      const score = useVectors ? LEXICAL_WEIGHT * lexical + VECTOR_WEIGHT * vector : lexical;
      if (score <= 0 || (top.length === k && score <= top[k - 1]!.score)) continue;
      let at = top.length;
      while (at > 0 && top[at - 1]!.score < score) at--;
      top.splice(at, 0, { index: i, score, lexical, vector });
      if (top.length > k) top.pop();
    }
    return top.map(({ index, score, lexical, vector }) => ({
      ...this.chunks[index]!,
      score: round(score),
      lexical_score: round(lexical),
      vector_score: round(vector),
    }));
  }
}

const round = (n: number) => Math.round(n * 10_000) / 10_000;
