import { trimTrailing } from '../../platform/text/text.ts';
import { ApiError, badGateway, VendorFailed } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { traced } from '../../platform/observability/tracing.ts';
import {
  estimatePromptTokens,
  estimateTokens,
  type Completion,
  type CompletionRequest,
  type LanguageModel,
  type StreamEvent,
  type ChatMessage,
  type TokenUsage,
  type ToolCall,
} from './types.ts';

/**
 * A client for the OpenAI-compatible `POST {base}/chat/completions` API (OpenAI, and the
 * gateways and servers that speak it: OpenRouter, LiteLLM, vLLM, Ollama, …), over fetch.
 */
export interface OpenAiCompatibleOptions {
  /** e.g. `https://api.openai.com/v1`; `/chat/completions` is appended. */
  baseUrl: string;
  /** Read before every call (vendor settings cache it), so a rotated key is picked up. Absent: no Authorization header. */
  apiKey?: () => Promise<string | undefined>;
  /** Parley model id → provider model name; `*` maps every id not listed. Unmapped ids are sent as they are. */
  modelMap?: Readonly<Record<string, string>>;
  /** Per attempt (a stream: until the headers, then between chunks). */
  timeoutMs?: number;
  /** Retries after a 429, a 5xx or a failed connection. */
  maxRetries?: number;
  /** Back-off without `retry-after`: this, doubled per retry, less up to 25 % jitter. */
  retryBaseMs?: number;
  /** A `retry-after` longer than this is not waited out: the call fails at once. */
  maxRetryAfterMs?: number;
  fetch?: typeof fetch;
}

const LLM_DEFAULT_TIMEOUT_MS = 30_000;
const LLM_MAX_RETRIES = 2;
const DEFAULT_RETRY_BASE_MS = 500;
const DEFAULT_MAX_RETRY_AFTER_MS = 20_000;
/** Error details from the provider that reach the logs are cut to this. */
const MAX_LOGGED_DETAIL = 300;

export function providerFailed(reason: string): ApiError {
  return badGateway(`Language model provider failed: ${reason}`);
}

/**
 * The provider could not answer at all (a 5xx or 429 after the retries, no answer in time,
 * no connection): a 502 like any provider failure, of its own kind so the conversation
 * runtime can try the workspace's fallback model (reliability settings). A provider that
 * answered and refused the request (a 4xx, an unusable body) is not this: another model
 * behind the same provider would most likely be refused too.
 */
export class LlmUnavailable extends VendorFailed {
  constructor(reason: string) {
    super(`Language model provider failed: ${reason}`);
  }
}

export class OpenAiCompatibleModel implements LanguageModel {
  readonly provider = 'openai-compatible' as const;
  private readonly endpoint: string;
  private readonly timeoutMs: number;
  private readonly maxRetries: number;
  private readonly retryBaseMs: number;
  private readonly maxRetryAfterMs: number;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: OpenAiCompatibleOptions) {
    this.endpoint = `${trimTrailing(options.baseUrl, '/')}/chat/completions`;
    this.timeoutMs = options.timeoutMs ?? LLM_DEFAULT_TIMEOUT_MS;
    this.maxRetries = options.maxRetries ?? LLM_MAX_RETRIES;
    this.retryBaseMs = options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** The provider's name for a Parley model id. */
  providerModel(model: string): string {
    return this.options.modelMap?.[model] ?? this.options.modelMap?.['*'] ?? model;
  }

  async complete(request: CompletionRequest): Promise<Completion> {
    const started = Date.now();
    const { response, timer, attempts, key } = await this.send(request, false);
    let text: string;
    try {
      text = await response.text();
    } catch (error) {
      throw this.readFailure(error, request, timer, key);
    } finally {
      timer.dispose();
    }
    const body = parseJson(text);
    if (body === undefined) throw this.failure('response was not valid JSON', key);
    const choice = firstChoice(body);
    const toolCalls = request.tools?.length ? toolCallsOf(choice?.message?.tool_calls) : undefined;
    // A message that only calls tools has `content: null`.
    const content = choice?.message?.content ?? (toolCalls ? '' : undefined);
    if (typeof content !== 'string') throw this.failure('response had no message content', key);
    const completion = this.finish(request, content, str(choice?.finish_reason), body, key, toolCalls);
    logger.debug('Language model call', {
      provider: this.provider,
      model: completion.model,
      attempts,
      duration_ms: Date.now() - started,
      usage: completion.usage,
    });
    return completion;
  }

  async *stream(request: CompletionRequest): AsyncGenerator<StreamEvent> {
    const { response, timer, key } = await this.send(request, true);
    let content = '';
    let finishReason: string | undefined;
    let last: unknown;
    // Streamed tool calls arrive in pieces keyed by `index`: the ID and name first, the arguments in fragments.
    const calls: { id: string; name: string; arguments: string }[] = [];
    try {
      if (!response.body) throw this.failure('response had no body', key);
      for await (const data of serverSentEvents(response.body, timer)) {
        if (data === '[DONE]') break;
        const chunk = parseJson(data);
        if (chunk === undefined) throw this.failure('stream carried an event that is not valid JSON', key);
        const error = errorOf(chunk);
        if (error) {
          this.logProviderError('stream error event', undefined, error, key);
          throw this.failure(`stream error${error.code ? ` ${error.code}` : ''}`, key);
        }
        last = chunk;
        const choice = firstChoice(chunk);
        const delta = choice?.delta?.content;
        finishReason = str(choice?.finish_reason) ?? finishReason;
        if (request.tools?.length) collectToolCallDeltas(calls, choice?.delta?.tool_calls);
        if (typeof delta === 'string' && delta !== '') {
          content += delta;
          yield { type: 'delta', content: delta };
        }
      }
    } catch (error) {
      throw this.readFailure(error, request, timer, key);
    } finally {
      // Also runs when the consumer stops early: aborting releases the connection.
      timer.dispose(true);
    }
    const toolCalls = calls.filter((call) => call.name !== '');
    yield { type: 'done', ...this.finish(request, content, finishReason, last, key, toolCalls.length ? toolCalls : undefined) };
  }

  /** Posts the request, retrying 429s, 5xx and failed connections; returns the first 2xx. */
  private async send(request: CompletionRequest, stream: boolean) {
    const key = (await this.options.apiKey?.())?.trim() || undefined;
    const body = JSON.stringify({
      model: this.providerModel(request.model),
      messages: request.messages.map(wireMessage),
      ...(request.tools?.length
        ? {
            tools: request.tools.map((tool) => ({
              type: 'function',
              function: {
                name: tool.name,
                ...(tool.description ? { description: tool.description } : {}),
                parameters: tool.parameters ?? { type: 'object', properties: {} },
              },
            })),
          }
        : {}),
      ...(request.tools?.length && typeof request.toolChoice === 'object'
        ? { tool_choice: { type: 'function', function: { name: request.toolChoice.name } } }
        : {}),
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      ...(request.maxTokens !== undefined ? { max_tokens: request.maxTokens } : {}),
      ...(request.responseFormat === 'json' ? { response_format: { type: 'json_object' } } : {}),
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    });
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
    };
    const timeoutMs = request.timeoutMs ?? this.timeoutMs;

    for (let attempt = 1; ; attempt++) {
      request.signal?.throwIfAborted();
      const timer = new AttemptTimer(timeoutMs, request.signal);
      let response: Response;
      try {
        response = await traced('llm', () => this.fetch(this.endpoint, { method: 'POST', headers, body, signal: timer.signal }));
      } catch (error) {
        timer.dispose();
        if (request.signal?.aborted) throw request.signal.reason;
        if (timer.fired) throw this.failure(`no response within ${duration(timeoutMs)}`, key, true);
        // undici rejects with a bare TypeError (no cause) when it cannot build the request,
        // e.g. a key holding a control character; retrying would not help.
        if (!(error instanceof Error) || error.cause === undefined) {
          throw this.failure('could not send the request (check LLM_BASE_URL and LLM_API_KEY)', key);
        }
        const reason = `could not reach the provider (${networkCode(error)})`;
        if (attempt > this.maxRetries) throw this.failure(withAttempts(reason, attempt), key, true);
        const wait = this.backoff(attempt);
        logger.warn('Language model call failed, retrying', { reason, attempt, retry_in_ms: wait });
        await sleep(wait, request.signal);
        continue;
      }
      if (response.ok) return { response, timer, attempts: attempt, key };

      const status = response.status;
      if ((status === 429 || status >= 500) && attempt <= this.maxRetries) {
        const asked = retryAfterMs(response.headers);
        timer.dispose(true); // the error body is not needed
        if (asked !== undefined && asked > this.maxRetryAfterMs) {
          throw this.failure(`HTTP ${status}, asked to retry after ${duration(asked)}`, key, true);
        }
        const wait = asked ?? this.backoff(attempt);
        logger.warn('Language model call failed, retrying', { status, attempt, retry_in_ms: wait });
        await sleep(wait, request.signal);
        continue;
      }

      const detail = await response.text().then(parseJson, () => undefined);
      timer.dispose();
      const error = errorOf(detail);
      this.logProviderError('error response', status, error, key);
      throw this.failure(withAttempts(`HTTP ${status}${error?.code ? ` ${error.code}` : ''}`, attempt), key, status === 429 || status >= 500);
    }
  }

  private finish(
    request: CompletionRequest,
    raw: string,
    finishReason: string | undefined,
    body: unknown,
    key: string | undefined,
    toolCalls?: ToolCall[],
  ): Completion {
    let content = raw;
    if (request.responseFormat === 'json') {
      content = unfence(raw);
      if (parseJson(content) === undefined) {
        const cut = finishReason === 'length' ? ' (cut off at the token limit)' : '';
        throw this.failure(`the model did not return valid JSON${cut}`, key);
      }
    }
    return {
      content,
      usage: usageOf(body) ?? {
        prompt_tokens: estimatePromptTokens(request.messages),
        completion_tokens: estimateTokens(raw),
      },
      model: str(record(body)?.model) ?? this.providerModel(request.model),
      provider: this.provider,
      ...(finishReason ? { finishReason } : {}),
      ...(toolCalls ? { toolCalls } : {}),
    };
  }

  /** A failure while reading a 2xx body: the caller's abort, the attempt's timeout, or the connection. */
  private readFailure(error: unknown, request: CompletionRequest, timer: AttemptTimer, key: string | undefined): unknown {
    if (isApiError(error)) return error;
    if (request.signal?.aborted) return request.signal.reason;
    if (timer.fired) return this.failure(`no data within ${duration(timer.timeoutMs)}`, key, true);
    return this.failure(`connection failed while reading the response (${networkCode(error)})`, key, true);
  }

  private failure(reason: string, key: string | undefined, unavailable = false): ApiError {
    const error = unavailable ? new LlmUnavailable(scrub(reason, key)) : providerFailed(scrub(reason, key));
    logger.warn('Language model call failed', { reason: error.message });
    return error;
  }

  /** The provider's own words go to the logs only (they can name organisations or quote key fragments). */
  private logProviderError(what: string, status: number | undefined, error: ProviderError | undefined, key: string | undefined) {
    logger.warn(`Language model provider ${what}`, {
      status,
      provider_error_type: error?.type,
      provider_error_code: error?.code,
      provider_message: error?.message ? scrub(error.message, key).slice(0, MAX_LOGGED_DETAIL) : undefined,
    });
  }

  private backoff(attempt: number): number {
    const base = this.retryBaseMs * 2 ** (attempt - 1);
    return Math.round(base * (0.75 + Math.random() * 0.25));
  }
}

/** One attempt's time limit, re-armed by a stream between chunks, tied to the caller's signal. */
class AttemptTimer {
  private readonly controller = new AbortController();
  private handle?: NodeJS.Timeout;
  readonly signal: AbortSignal;
  fired = false;

  constructor(
    readonly timeoutMs: number,
    callerSignal?: AbortSignal,
  ) {
    this.signal = callerSignal ? AbortSignal.any([this.controller.signal, callerSignal]) : this.controller.signal;
    this.arm();
  }

  arm(): void {
    clearTimeout(this.handle);
    this.handle = setTimeout(() => {
      this.fired = true;
      this.controller.abort(new Error('timed out'));
    }, this.timeoutMs);
  }

  /** Stops the clock; with `abort`, also drops the connection (a body left unread). */
  dispose(abort = false): void {
    clearTimeout(this.handle);
    if (abort && !this.controller.signal.aborted) this.controller.abort(new Error('released'));
  }
}

/** The `data` of each server-sent event, re-arming the timer whenever bytes arrive. */
async function* serverSentEvents(body: ReadableStream<Uint8Array>, timer: AttemptTimer): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = '';
  let data: string[] = [];
  const reader = body.getReader();
  try {
    for (;;) {
      timer.arm();
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() + '\n\n' : decoder.decode(value, { stream: true });
      let newline: number;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        // A CR ending the chunk may be the first half of a CRLF split across chunks.
        if (!done && newline === buffer.length - 1 && buffer.endsWith('\r')) break;
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1));
        if (line === '') {
          if (data.length > 0) yield data.join('\n');
          data = [];
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
        // Comments (`: keep-alive`), `event:`, `id:` and `retry:` lines carry nothing we use.
      }
      if (done) return;
    }
  } finally {
    reader.releaseLock();
  }
}

interface ProviderError {
  message?: string;
  type?: string;
  code?: string;
}

type Json = Record<string, unknown>;

function record(value: unknown): Json | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function firstChoice(body: unknown) {
  const choices = record(body)?.choices;
  const choice = Array.isArray(choices) ? record(choices[0]) : undefined;
  return choice as
    | { message?: { content?: unknown; tool_calls?: unknown }; delta?: { content?: unknown; tool_calls?: unknown }; finish_reason?: unknown }
    | undefined;
}

/** A message in OpenAI's shape: assistant tool calls as `tool_calls`, results as `role: tool` with `tool_call_id`. */
function wireMessage(message: ChatMessage): Record<string, unknown> {
  if (message.role === 'tool') return { role: 'tool', tool_call_id: message.toolCallId ?? '', content: message.content };
  if (message.role === 'assistant' && message.toolCalls?.length) {
    return {
      role: 'assistant',
      content: message.content === '' ? null : message.content,
      tool_calls: message.toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      })),
    };
  }
  return { role: message.role, content: message.content };
}

/** `message.tool_calls` of a completion; entries without a function name are dropped. */
function toolCallsOf(raw: unknown): ToolCall[] | undefined {
  if (!Array.isArray(raw)) return undefined;
  const calls: ToolCall[] = [];
  for (const entry of raw) {
    const fn = record(record(entry)?.function);
    const name = str(fn?.name);
    if (!name) continue;
    const args = fn?.arguments;
    calls.push({
      id: str(record(entry)?.id) ?? `call_${calls.length}`,
      name,
      arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}),
    });
  }
  return calls.length ? calls : undefined;
}

function collectToolCallDeltas(calls: { id: string; name: string; arguments: string }[], raw: unknown): void {
  if (!Array.isArray(raw)) return;
  for (const entry of raw) {
    const part = record(entry);
    const index = typeof part?.index === 'number' ? part.index : calls.length;
    const call = (calls[index] ??= { id: `call_${index}`, name: '', arguments: '' });
    const fn = record(part?.function);
    if (str(part?.id)) call.id = part!.id as string;
    if (str(fn?.name)) call.name += fn!.name as string;
    if (typeof fn?.arguments === 'string') call.arguments += fn.arguments;
  }
}

function usageOf(body: unknown): TokenUsage | undefined {
  const usage = record(record(body)?.usage);
  const prompt = usage?.prompt_tokens;
  const completion = usage?.completion_tokens;
  return typeof prompt === 'number' && typeof completion === 'number'
    ? { prompt_tokens: prompt, completion_tokens: completion }
    : undefined;
}

/** `{error: {message, type, code}}`, the shape OpenAI-compatible servers use; codes are cut to a safe token. */
function errorOf(body: unknown): ProviderError | undefined {
  const raw = record(body)?.error;
  if (raw === undefined || raw === null) return undefined;
  const error = record(raw);
  const token = (value: unknown) =>
    typeof value === 'string' && /^[\w.-]{1,64}$/.test(value) ? value : undefined;
  return {
    message: typeof raw === 'string' ? raw : str(error?.message),
    type: token(error?.type),
    code: token(error?.code),
  };
}

/** Models reached through compatibility layers sometimes wrap JSON in a Markdown fence. */
function unfence(content: string): string {
  // By hand rather than one pattern: the fence's optional spaces and the lazy body traded
  // characters, which backtracks polynomially on a long answer.
  const text = content.trim();
  const firstLineEnd = text.indexOf('\n');
  if (!text.startsWith('```') || !text.endsWith('```') || firstLineEnd < 0 || firstLineEnd > text.length - 3) return text;
  const info = text.slice(3, firstLineEnd).trim().toLowerCase();
  if (info !== '' && info !== 'json') return text;
  return text.slice(firstLineEnd + 1, -3).trim();
}

/** `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an HTTP date. */
function retryAfterMs(headers: Headers): number | undefined {
  const ms = Number(headers.get('retry-after-ms') ?? NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers.get('retry-after');
  if (value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(handle);
      reject(signal?.reason as Error);
    };
    const handle = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The error code of a failed fetch (`ECONNREFUSED`, …), never its message (undici quotes header values). */
function networkCode(error: unknown): string {
  const cause = record(record(error)?.cause);
  const code = cause?.code ?? record(error)?.code;
  return typeof code === 'string' && /^[\w.-]{1,64}$/.test(code) ? code : 'network error';
}

function withAttempts(reason: string, attempt: number): string {
  return attempt > 1 ? `${reason} after ${attempt} attempts` : reason;
}

function duration(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

/** The key, and anything shaped like one, never leaves in a message. */
function scrub(text: string, key: string | undefined): string {
  let out = key ? text.split(key).join('[redacted]') : text;
  out = out.replace(/\b(?:sk|rk|pk|key)[-_][\w*.-]{6,}/gi, '[redacted]');
  return out;
}

function isApiError(error: unknown): error is ApiError {
  return error instanceof ApiError;
}
