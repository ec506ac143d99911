import { logger } from '../../platform/logger.ts';
import { languageModel, LlmUnavailable, type Completion, type CompletionRequest, type StreamEvent } from '../../vendors/llm/index.ts';
import type { ConversationState, LlmFallbackRecord } from '../types.ts';

/*
 * The workspace's fallback model (PUT /workspace/reliability, `fallback_llm_model`;
 * docs/account-data.md, Reliability): when the provider cannot answer the primary model at
 * all (LlmUnavailable: a 5xx or 429 after the adapter's own retries, no answer in time, no
 * connection), the model call is made once more with the fallback model. A provider that
 * answered and refused (a 4xx, an unusable body) is not retried: the error stands.
 */

export interface FallbackUse {
  primary_model: string;
  fallback_model: string;
  reason: string;
}

/**
 * One model call with the fallback: `request.model` first; on LlmUnavailable, when a
 * fallback other than it is set, the same request with the fallback model (once: its own
 * failure is thrown). `onFallback` hears of the switch before the second call.
 */
export async function completeWithFallback(
  request: CompletionRequest,
  fallbackModel: string | undefined,
  onFallback?: (use: FallbackUse) => void,
): Promise<Completion> {
  try {
    return await languageModel().complete(request);
  } catch (error) {
    return languageModel().complete({ ...request, model: fallbackFor(error, request, fallbackModel, onFallback) });
  }
}

/**
 * The same, streamed: the fallback is asked only when the primary failed before its first
 * delta. Once words of the primary's answer are out (a voice may be speaking them), another
 * model's answer cannot take their place: its failure stands.
 */
export async function* streamWithFallback(
  request: CompletionRequest,
  fallbackModel: string | undefined,
  onFallback?: (use: FallbackUse) => void,
): AsyncGenerator<StreamEvent> {
  let started = false;
  try {
    for await (const event of languageModel().stream(request)) {
      started = true;
      yield event;
    }
    return;
  } catch (error) {
    if (started) throw error;
    request = { ...request, model: fallbackFor(error, request, fallbackModel, onFallback) };
  }
  yield* languageModel().stream(request);
}

/** The fallback model to ask after `error`, told to `onFallback`; else `error` is thrown again. */
function fallbackFor(error: unknown, request: CompletionRequest, fallbackModel: string | undefined, onFallback?: (use: FallbackUse) => void): string {
  if (!(error instanceof LlmUnavailable) || !fallbackModel || fallbackModel === request.model) throw error;
  const use = { primary_model: request.model, fallback_model: fallbackModel, reason: error.message };
  logger.warn('Language model unavailable; retrying with the workspace fallback model', use);
  onFallback?.(use);
  return fallbackModel;
}

/** Notes a fallback on the conversation's state (shown as `llm_fallback` on the call, the chat, the playground's answer). */
export function recordFallback(state: ConversationState, use: FallbackUse, nowMs = Date.now()): void {
  const before = state.llm_fallback;
  const record: LlmFallbackRecord = {
    primary_model: use.primary_model,
    fallback_model: use.fallback_model,
    count: (before?.count ?? 0) + 1,
    last_reason: use.reason,
    last_timestamp: nowMs,
  };
  state.llm_fallback = record;
}
