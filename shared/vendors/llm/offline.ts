import { trimTrailing } from '../../platform/text/text.ts';
import {
  estimatePromptTokens,
  estimateTokens,
  type ChatMessage,
  type Completion,
  type CompletionRequest,
  type LanguageModel,
  type StreamEvent,
  type ToolCall,
  type ToolDefinition,
} from './types.ts';

/**
 * The model used when no provider is configured (`LLM_BASE_URL` unset): everything runs
 * offline and tests are reproducible. No randomness, no clock: the same request always
 * gives the same completion.
 *
 * Text requests get a short reply quoting the last user message (cut to `maxTokens`).
 *
 * JSON requests (`responseFormat: 'json'`) get one JSON object, chosen by the request's
 * `offlineHint`, the convention between callers and this model:
 * - no hint: `{"reply": <the text reply>}`;
 * - a hint names a shape registered with `defineOfflineShape(name, build)`; `build` gets the
 *   request's parts (`OfflineInput`) and returns the object. A feature registers its shape
 *   next to its prompt, so the offline object has the fields its parser expects;
 * - an unregistered hint is a programming error and throws.
 * Built in: `agent_definition` (see `agentDefinition` below).
 *
 * Tools (`request.tools`), so conversations exercise them without a real model:
 * - a `toolChoice` naming a tool is obeyed: that tool is called whatever the line says;
 * - otherwise it calls a tool only when the last message is the user's, and then at most
 *   one: the first tool (in the request's order) one of whose keywords the user's line
 *   contains;
 * - a tool's keywords are its `offlineKeywords` when the caller gives them (the
 *   conversation runtime does for `end_call`, `transfer_call` and flow edges), else the
 *   words of its name split on `_`, `-` and camelCase, lowercased, of 4 letters or more,
 *   less `call`, `tool`, `tools` and `function` (`book_appointment`: `book`,
 *   `appointment`);
 * - a keyword matches a word of the user's line that equals it or starts with it
 *   (`appointment` matches "appointments", `book` matches "booking"); a keyword of several
 *   words matches those words in a row;
 * - the arguments come from the tool's JSON-schema `parameters`, property by property:
 *   `const`, else the first `enum` value, else `default`, else by type: a string is the
 *   user's line (up to 200 characters), a number or integer 1, a boolean true, an array
 *   [], an object built the same way from its own properties;
 * - after a tool's result (the last message is a `tool` message) it answers in text,
 *   quoting the result.
 *
 * Token counts are estimated at ~4 characters a token.
 */
export interface OfflineInput {
  request: CompletionRequest;
  /** The system messages, joined by blank lines. */
  system: string;
  /** The last user message ('' if there is none), whitespace collapsed. */
  user: string;
}

export type OfflineShape = (input: OfflineInput) => Record<string, unknown>;

const shapes = new Map<string, OfflineShape>();

/** Registers (or replaces) the object the offline model returns for `offlineHint: name`. */
export function defineOfflineShape(name: string, build: OfflineShape): void {
  shapes.set(name, build);
}

export class OfflineModel implements LanguageModel {
  readonly provider = 'offline' as const;

  async complete(request: CompletionRequest): Promise<Completion> {
    request.signal?.throwIfAborted();
    const call = offlineToolCall(request);
    if (call) {
      return {
        content: '',
        usage: { prompt_tokens: estimatePromptTokens(request.messages), completion_tokens: estimateTokens(call.name + call.arguments) },
        model: request.model,
        provider: this.provider,
        finishReason: 'tool_calls',
        toolCalls: [call],
      };
    }
    const content = offlineContent(request);
    return {
      content,
      usage: { prompt_tokens: estimatePromptTokens(request.messages), completion_tokens: estimateTokens(content) },
      model: request.model,
      provider: this.provider,
      finishReason: 'stop',
    };
  }

  async *stream(request: CompletionRequest): AsyncGenerator<StreamEvent> {
    const completion = await this.complete(request);
    // Words with the spaces after them (the first with those before it too): concatenated,
    // the deltas are the content.
    const pieces = completion.content.match(/\S+\s*/g) ?? [];
    const leading = completion.content.length - completion.content.trimStart().length;
    if (leading > 0 && pieces.length > 0) pieces[0] = completion.content.slice(0, leading) + pieces[0];
    for (const piece of pieces) {
      request.signal?.throwIfAborted();
      yield { type: 'delta', content: piece };
    }
    yield { type: 'done', ...completion };
  }
}

function offlineContent(request: CompletionRequest): string {
  const input: OfflineInput = {
    request,
    system: request.messages
      .filter((message) => message.role === 'system')
      .map((message) => message.content)
      .join('\n\n'),
    user: collapse(lastUser(request.messages)),
  };
  if (request.responseFormat !== 'json') return textReply(input);
  if (request.offlineHint === undefined) return JSON.stringify({ reply: textReply(input) });
  const build = shapes.get(request.offlineHint);
  if (!build) {
    throw new Error(`The offline model has no shape "${request.offlineHint}"; register one with defineOfflineShape`);
  }
  return JSON.stringify(build(input));
}

function textReply({ request, user }: OfflineInput): string {
  const last = request.messages.at(-1);
  const reply =
    last?.role === 'tool'
      ? `The ${toolNameOf(request.messages, last.toolCallId)} tool answered: "${cut(collapse(last.content), 200)}".`
      : user
        ? `You said: "${cut(user, 200)}". This is Parley's offline model; set LLM_BASE_URL for real answers.`
        : "Hello! This is Parley's offline model; set LLM_BASE_URL for real answers.";
  return request.maxTokens !== undefined ? reply.slice(0, Math.max(1, request.maxTokens) * 4) : reply;
}

function lastUser(messages: readonly ChatMessage[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]!.role === 'user') return messages[i]!.content;
  }
  return '';
}

const collapse = (text: string) => text.replace(/\s+/g, ' ').trim();

function toolNameOf(messages: readonly ChatMessage[], id: string | undefined): string {
  for (const message of messages) {
    const call = message.toolCalls?.find((candidate) => candidate.id === id);
    if (call) return call.name;
  }
  return 'function';
}

const GENERIC_NAME_WORDS = new Set(['call', 'tool', 'tools', 'function']);

/** A tool's keywords for the offline model: its `offlineKeywords`, else its name's words (see the rules above). */
export function offlineToolKeywords(tool: ToolDefinition): string[] {
  if (tool.offlineKeywords) return tool.offlineKeywords.map((word) => collapse(word.toLowerCase())).filter(Boolean);
  return tool.name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z]+/)
    .filter((word) => word.length >= 4 && !GENERIC_NAME_WORDS.has(word));
}

/** The words of a line: lowercase runs of letters (and digits). */
export function lineWords(line: string): string[] {
  return line.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean);
}

/** Does the line contain the keyword: a word equal to it or starting with it, or for several words, those words in a row. */
export function lineHasKeyword(words: readonly string[], keyword: string): boolean {
  const parts = keyword.split(' ');
  if (parts.length === 1) return words.some((word) => word.startsWith(keyword));
  for (let i = 0; i + parts.length <= words.length; i++) {
    if (parts.every((part, j) => words[i + j] === part)) return true;
  }
  return false;
}

function offlineToolCall(request: CompletionRequest): ToolCall | undefined {
  if (!request.tools?.length || request.responseFormat === 'json') return undefined;
  const last = request.messages.at(-1);
  const line = collapse(lastUser(request.messages));
  const forced = typeof request.toolChoice === 'object' ? request.toolChoice.name : undefined;
  if (forced === undefined && last?.role !== 'user') return undefined;
  const words = lineWords(line);
  const tool =
    forced !== undefined
      ? request.tools.find((candidate) => candidate.name === forced)
      : request.tools.find((candidate) => offlineToolKeywords(candidate).some((keyword) => lineHasKeyword(words, keyword)));
  if (!tool) return undefined;
  return {
    // Deterministic and unique within a conversation (the message count only grows).
    id: `call_offline_${request.messages.length}`,
    name: tool.name,
    arguments: JSON.stringify(argumentsFor(tool.parameters, line)),
  };
}

/** Arguments for a JSON-schema object, built from the user's line (see the rules above). */
function argumentsFor(schema: unknown, line: string): Record<string, unknown> {
  const properties = (schema as { properties?: unknown } | undefined)?.properties;
  if (typeof properties !== 'object' || properties === null) return {};
  return Object.fromEntries(Object.entries(properties as Record<string, unknown>).map(([name, property]) => [name, valueFor(property, line)]));
}

function valueFor(schema: unknown, line: string): unknown {
  const property = (typeof schema === 'object' && schema !== null ? schema : {}) as Record<string, unknown>;
  if ('const' in property) return property.const;
  if (Array.isArray(property.enum) && property.enum.length > 0) return property.enum[0];
  if (property.default !== undefined) return property.default;
  const type = Array.isArray(property.type) ? property.type[0] : property.type;
  switch (type) {
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'object':
      return argumentsFor(property, line);
    default:
      return cut(line, 200);
  }
}
const cut = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);

const ROLES = [
  'receptionist',
  'assistant',
  'scheduler',
  'concierge',
  'dispatcher',
  'coordinator',
  'representative',
  'operator',
  'advisor',
  'agent',
] as const;
const STOP_WORDS = new Set(['that', 'who', 'which', 'to', 'for', 'at', 'and', 'with', 'from', 'in', 'on', 'by']);
const title = (word: string) => word.charAt(0).toUpperCase() + word.slice(1);

/**
 * `agent_definition`: an agent built from the description in the last user message:
 * `{agent_name, general_prompt, begin_message, language}`. A business name is taken from
 * "for/at <Capitalised Words>", a role from the first role noun ("receptionist", …).
 */
function agentDefinition({ user }: OfflineInput): Record<string, unknown> {
  const description = user || 'A helpful voice assistant that answers questions politely.';
  const business = /\b(?:for|at)\s+((?:[A-Z0-9][\w'’&.-]*)(?:\s+(?:of\s+|&\s+)?[A-Z0-9][\w'’&.-]*)*)/.exec(description)?.[1];
  const words = description
    .replace(/^(?:please\s+)?(?:(?:create|build|make|design|set up|i need|i want|we need|we want)\s+(?:me\s+|us\s+)?)?/i, '')
    .replace(/^(?:a|an|the)\s+/i, '')
    .split(/[\s,.;:!?]+/)
    .filter(Boolean);
  const stop = words.findIndex((word) => STOP_WORDS.has(word.toLowerCase()));
  const lead = words.slice(0, stop < 0 ? 4 : Math.min(stop, 4));
  const role = ROLES.find((noun) => description.toLowerCase().includes(noun));
  const agentName = trimTrailing(
    cut(business ? `${business} ${title(role ?? 'assistant')}` : lead.map(title).join(' ') || 'Voice Assistant', 60),
    '.,;:',
  );
  return {
    agent_name: agentName,
    general_prompt: [
      '## Identity',
      `You are ${agentName}, a voice agent${business ? ` for ${business}` : ''}.`,
      '',
      '## Task',
      description,
      '',
      '## Style',
      '- Keep replies short and conversational: one or two sentences.',
      '- Ask one question at a time and confirm details back before acting on them.',
      '- If you cannot help, say so and offer to connect the caller with a person.',
    ].join('\n'),
    begin_message: business
      ? `Hello, thanks for calling ${business}! How can I help you today?`
      : 'Hello! How can I help you today?',
    language: 'en-US',
  };
}

defineOfflineShape('agent_definition', agentDefinition);
