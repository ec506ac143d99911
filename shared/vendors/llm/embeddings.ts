import { createHash } from 'node:crypto';
import { vendorSetting } from '../../platform/aws/secrets.ts';
import { trimTrailing } from '../../platform/text/text.ts';
import { traced } from '../../platform/observability/tracing.ts';
import { providerFailed } from './openai-compatible.ts';

/*
 * Text embeddings, for knowledge-base retrieval. With the vendor settings `LLM_BASE_URL`
 * and `LLM_EMBEDDING_MODEL` both set, `POST {LLM_BASE_URL}/embeddings` (OpenAI's API, with
 * `LLM_API_KEY`); otherwise the offline embedder: deterministic feature hashing of words
 * and character trigrams into 256 dimensions, L2-normalised, so runs and tests are
 * repeatable with no network. `id` names the embedder: an index built by one is never
 * compared with vectors of another.
 */

export interface Embedder {
  /** `offline-hash-256` or `openai:<model>`. */
  id: string;
  embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]>;
}

const OFFLINE_DIMENSIONS = 256;
const BATCH = 64;

const words = (text: string) => text.toLowerCase().normalize('NFKD').replace(/[\u0300-\u036f]/g, '').match(/[\p{L}\p{N}]+/gu) ?? [];

function bucket(feature: string): { index: number; sign: number } {
  const digest = createHash('sha1').update(feature).digest();
  return { index: digest.readUInt16BE(0) % OFFLINE_DIMENSIONS, sign: digest[2]! & 1 ? 1 : -1 };
}

const featureCache = new Map<string, { index: number; sign: number }>();
function cachedBucket(feature: string) {
  let found = featureCache.get(feature);
  if (!found) {
    found = bucket(feature);
    if (featureCache.size < 200_000) featureCache.set(feature, found);
  }
  return found;
}

/** The offline embedding of one text (exported for the benchmark and tests). */
export function offlineEmbedding(text: string): Float32Array {
  const vector = new Float32Array(OFFLINE_DIMENSIONS);
  for (const word of words(text)) {
    const w = cachedBucket(`w:${word}`);
    vector[w.index]! += w.sign * 2;
    const padded = `^${word}$`;
    for (let i = 0; i + 3 <= padded.length; i++) {
      const t = cachedBucket(`t:${padded.slice(i, i + 3)}`);
      vector[t.index]! += t.sign;
    }
  }
  return normalise(vector);
}

function normalise(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const value of vector) sum += value * value;
  const norm = Math.sqrt(sum);
  if (norm > 0) for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

export const offlineEmbedder: Embedder = {
  id: `offline-hash-${OFFLINE_DIMENSIONS}`,
  embed: async (texts) => texts.map(offlineEmbedding),
};

export class OpenAiEmbedder implements Embedder {
  readonly id: string;
  constructor(
    private readonly baseUrl: string,
    private readonly model: string,
    private readonly apiKey: () => Promise<string | undefined>,
    private readonly fetchImpl: typeof fetch = globalThis.fetch,
  ) {
    this.id = `openai:${model}`;
  }

  async embed(texts: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let i = 0; i < texts.length; i += BATCH) out.push(...(await this.batch(texts.slice(i, i + BATCH), signal)));
    return out;
  }

  private async batch(input: readonly string[], signal?: AbortSignal): Promise<Float32Array[]> {
    const key = await this.apiKey();
    let response: Response;
    try {
      response = await traced('llm', () => this.fetchImpl(`${trimTrailing(this.baseUrl, '/')}/embeddings`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) },
        body: JSON.stringify({ model: this.model, input }),
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(30_000)]) : AbortSignal.timeout(30_000),
      }));
    } catch (error) {
      throw providerFailed(`embeddings request failed (${(error as Error).name})`);
    }
    if (!response.ok) throw providerFailed(`embeddings answered ${response.status}`);
    const body = (await response.json().catch(() => undefined)) as { data?: { index?: number; embedding?: unknown }[] } | undefined;
    const data = body?.data;
    if (!Array.isArray(data) || data.length !== input.length) throw providerFailed('embeddings response had the wrong number of vectors');
    const sorted = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    return sorted.map((entry) => {
      if (!Array.isArray(entry.embedding) || !entry.embedding.every((n) => typeof n === 'number')) {
        throw providerFailed('embeddings response carried a vector that is not numbers');
      }
      return normalise(Float32Array.from(entry.embedding as number[]));
    });
  }
}

let selected: Promise<Embedder> | undefined;

/** The embedder the vendor settings name, chosen once per process (tests reset with useEmbedder). */
export function embedder(): Promise<Embedder> {
  if (!selected) {
    const pending = (async (): Promise<Embedder> => {
      const [baseUrl, model] = await Promise.all([vendorSetting('LLM_BASE_URL'), vendorSetting('LLM_EMBEDDING_MODEL')]);
      if (baseUrl?.trim() && model?.trim()) return new OpenAiEmbedder(baseUrl.trim(), model.trim(), () => vendorSetting('LLM_API_KEY'));
      return offlineEmbedder;
    })();
    selected = pending;
    pending.catch(() => {
      if (selected === pending) selected = undefined;
    });
  }
  return selected;
}

/** Replaces the process's embedder; `undefined` re-reads the settings on next use. */
export function useEmbedder(value: Embedder | undefined): void {
  selected = value ? Promise.resolve(value) : undefined;
}
