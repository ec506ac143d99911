import { vendorSetting } from '../../platform/aws/secrets.ts';
import { isProduction } from '../../platform/config.ts';
import { logger } from '../../platform/logger.ts';
import { OfflineModel } from './offline.ts';
import { OpenAiCompatibleModel } from './openai-compatible.ts';
import type { CompletionRequest, LanguageModel } from './types.ts';

export * from './types.ts';
export { OfflineModel, defineOfflineShape, lineHasKeyword, lineWords, offlineToolKeywords, type OfflineInput, type OfflineShape } from './offline.ts';
export { LlmUnavailable, OpenAiCompatibleModel, type OpenAiCompatibleOptions } from './openai-compatible.ts';

/**
 * The language model every feature goes through: `await languageModel().complete({...})`.
 *
 * The provider is picked once per process, on first use, from vendor settings (the
 * `VENDOR_SECRET_ID` secret in AWS, the environment locally):
 * - `LLM_BASE_URL` set: the OpenAI-compatible provider at that URL, with `LLM_API_KEY`
 *   (read before each call, so a rotated key is picked up) and `LLM_MODEL_MAP`;
 * - unset: the deterministic offline model.
 */
export function languageModel(): LanguageModel {
  return selector;
}

export interface LlmSettings {
  baseUrl?: string;
  modelMap?: Record<string, string>;
}

type ReadSetting = (name: string) => Promise<string | undefined>;

/** Reads and checks `LLM_BASE_URL` and `LLM_MODEL_MAP`; a bad value throws naming the setting, never its value. */
export async function readLlmSettings(read: ReadSetting = vendorSetting): Promise<LlmSettings> {
  const [rawUrl, rawMap] = await Promise.all([read('LLM_BASE_URL'), read('LLM_MODEL_MAP')]);
  const baseUrl = rawUrl?.trim() || undefined;
  if (baseUrl !== undefined && !/^https?:$/.test(safeUrl(baseUrl)?.protocol ?? '')) {
    throw new Error('Invalid Parley settings: LLM_BASE_URL: must be an http(s) URL');
  }
  const mapText = rawMap?.trim() || undefined;
  let modelMap: Record<string, string> | undefined;
  if (mapText !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(mapText);
    } catch {
      parsed = undefined;
    }
    const valid =
      typeof parsed === 'object' &&
      parsed !== null &&
      !Array.isArray(parsed) &&
      Object.values(parsed).every((name) => typeof name === 'string' && name.trim() !== '');
    if (!valid) {
      throw new Error(
        'Invalid Parley settings: LLM_MODEL_MAP: must be a JSON object mapping model ids to provider model names',
      );
    }
    modelMap = parsed as Record<string, string>;
  }
  return { baseUrl, modelMap };
}

/** Builds the provider the settings name (what `languageModel()` does once). */
export async function createLanguageModel(read: ReadSetting = vendorSetting): Promise<LanguageModel> {
  const { baseUrl, modelMap } = await readLlmSettings(read);
  if (baseUrl) return new OpenAiCompatibleModel({ baseUrl, modelMap, apiKey: () => read('LLM_API_KEY') });
  if (isProduction) logger.warn('LLM_BASE_URL is not set: the offline model answers every language-model call');
  return new OfflineModel();
}

let selected: Promise<LanguageModel> | undefined;

function selectedModel(): Promise<LanguageModel> {
  if (!selected) {
    const pending = createLanguageModel();
    selected = pending;
    // A failed read (bad setting, secret unreachable) is not kept: the next call tries again.
    pending.catch(() => {
      if (selected === pending) selected = undefined;
    });
  }
  return selected;
}

const selector: LanguageModel = {
  complete: async (request: CompletionRequest) => (await selectedModel()).complete(request),
  async *stream(request: CompletionRequest) {
    yield* (await selectedModel()).stream(request);
  },
};

/** Replaces the process's model (tests: a fake or the offline model); `undefined` re-reads the settings on next use. */
export function useLanguageModel(model: LanguageModel | undefined): void {
  selected = model ? Promise.resolve(model) : undefined;
}

function safeUrl(text: string): URL | undefined {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}
export { embedder, useEmbedder, offlineEmbedder, offlineEmbedding, OpenAiEmbedder, type Embedder } from './embeddings.ts';
