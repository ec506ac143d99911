/**
 * The one language-model interface. Every feature that needs a model (agent generation,
 * copilot, workflow tests, playground, post-call analysis) calls `languageModel()` from
 * `shared/vendors/llm/index.ts` and talks to this interface, never to a provider directly.
 */

export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/** A function call the model asked for (OpenAI's `tool_calls[]` entry, flattened). */
export interface ToolCall {
  /** The provider's ID, echoed back on the result (`tool_call_id`). */
  id: string;
  name: string;
  /** The arguments as the model wrote them: JSON text (which may not parse: models err). */
  arguments: string;
}

export interface ChatMessage {
  role: ChatRole;
  content: string;
  /** On an assistant message: the calls it made (its content may then be ''). */
  toolCalls?: ToolCall[];
  /** On a `tool` message: which call this is the result of. */
  toolCallId?: string;
}

/** A function the model may call (sent as OpenAI's `tools: [{type: 'function', function}]`). */
export interface ToolDefinition {
  /** `^[a-zA-Z0-9_-]{1,64}$`, as providers require. */
  name: string;
  description?: string;
  /** A JSON Schema object; absent means no parameters. */
  parameters?: Record<string, unknown>;
  /**
   * For the offline model only (real providers never see it): the words that make it call
   * this tool. Without them it derives words from the name (shared/vendors/llm/offline.ts).
   */
  offlineKeywords?: readonly string[];
}

export interface CompletionRequest {
  /** A Parley model id (`gpt-4.1`, `claude-4.5-sonnet`, …); `LLM_MODEL_MAP` turns it into the provider's name. */
  model: string;
  messages: ChatMessage[];
  temperature?: number;
  maxTokens?: number;
  /** `json` asks the provider for one JSON object (`response_format: {type: 'json_object'}`); the content is checked to parse. */
  responseFormat?: 'text' | 'json';
  /**
   * For the offline model only (real providers never see it): names the JSON shape the caller
   * expects, so the offline model can build one from the request. See `shared/vendors/llm/offline.ts`.
   */
  offlineHint?: string;
  /** Cancels the call, retries and back-off waits included; the signal's reason is thrown. */
  signal?: AbortSignal;
  /** Per-attempt limit (for a stream: until the headers and between chunks); defaults to the model's, 30 s. */
  timeoutMs?: number;
  /** Functions the model may call; its answer then carries `toolCalls` instead of (or beside) text. */
  tools?: readonly ToolDefinition[];
  /** `auto` (the default) lets the model choose; `{name}` makes it call that tool (OpenAI `tool_choice`). */
  toolChoice?: 'auto' | { name: string };
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export type ProviderName = 'openai-compatible' | 'offline';

export interface Completion {
  content: string;
  usage: TokenUsage;
  /** The model that answered, as the provider names it (the offline model echoes the requested id). */
  model: string;
  provider: ProviderName;
  /** The provider's `finish_reason` (`stop`, `length`, `tool_calls`, …) when it gave one. */
  finishReason?: string;
  /** The calls the model made (only when the request offered `tools`); absent when it made none. */
  toolCalls?: ToolCall[];
}

/** What `stream()` yields: text deltas in order, then exactly one `done` with the totals. */
export type StreamEvent =
  | { type: 'delta'; content: string }
  | ({ type: 'done' } & Completion);

export interface LanguageModel {
  /** Failures are `ApiError` 502 `Language model provider failed: <reason>`. */
  complete(request: CompletionRequest): Promise<Completion>;
  /**
   * The same call, streamed. Errors before the first delta are retried like `complete`'s;
   * after that, a failure ends the iteration with the 502. In JSON mode the joined text is
   * checked before `done`, whose `content` is the checked text.
   */
  stream(request: CompletionRequest): AsyncIterable<StreamEvent>;
}

/** ~4 characters a token: the estimate used where a provider gives no counts (and by the offline model). */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** A message's estimated tokens: its text, and the names and arguments of the calls it carries. */
export function estimateMessageTokens(message: ChatMessage): number {
  const calls = message.toolCalls ?? [];
  return estimateTokens(message.content) + calls.reduce((sum, call) => sum + estimateTokens(call.name + call.arguments), 0);
}

export function estimatePromptTokens(messages: readonly ChatMessage[]): number {
  return messages.reduce((sum, message) => sum + estimateMessageTokens(message), 0);
}
