import { addFunctionCall } from '../../analytics/rollups/index.ts';
import { logger } from '../../platform/logger.ts';
import { ApiError, Unavailable } from '../../platform/errors.ts';
import { wire } from '../../platform/naming.ts';
import { appToolDefinition, executeTool } from '../../integrations/index.ts';
import type { Completion, CompletionRequest, ToolDefinition } from '../../vendors/llm/index.ts';
import { NoSigningKey, webhookSigningSecret } from '../../webhooks/index.ts';
import { fitToTokenLimit, historyMessages } from './context-window.ts';
import { REPLY_MAX_TOKENS } from '../limits.ts';
import { callCustomFunction, findToolMock, responseVariables, type CustomFunctionTool } from '../tools/index.ts';
import { completeWithFallback, recordFallback, streamWithFallback, type FallbackUse } from './fallback.ts';
import { transferOptions } from '../transfers/index.ts';
import { fillTemplate, variablesOf } from '../variables.ts';
import type { ConversationState, StreamTurnOptions, TransferAsk, TranscriptEvent, TurnResult, TurnStreamEvent } from '../types.ts';

/*
 * One turn's output, and the model loop every engine that uses the language model shares
 * (Retell LLMs, and conversation flow nodes): ask the model with the conversation so far
 * and the tools on offer, speak what it says, run what it calls, feed results back, until
 * it answers without a tool call (or a tool ends, transfers or moves the conversation).
 */

/** How a turn runs: who hears it as it happens, and the streaming turn's options (../types.ts StreamTurnOptions). */
export interface TurnIo extends StreamTurnOptions {
  /** Ask the model with `stream()` (a streaming turn), else with `complete()` (agentTurn). */
  stream?: boolean;
  /** Hears the turn's words and tool, node events as they happen. */
  emit?: (event: TurnStreamEvent) => void;
  /** Hears the model's time to first token, once per turn. */
  onFirstToken?: (ms: number) => void;
}

/** Thrown when the turn's tool gate answered false: the turn is dropped where it stands. */
export class TurnDiscarded extends Error {
  constructor() {
    super('The turn was discarded: its tool gate answered false, so it has nothing to commit');
    this.name = 'TurnDiscarded';
  }
}

/**
 * Collects what a turn says and does, and keeps the state's history in step. What the agent
 * says arrives as text pieces (`text`, a model's deltas) closed into one utterance
 * (`endText`), or whole (`say`); each piece is heard by the turn's listener as it comes.
 */
export class TurnOutput {
  readonly utterances: string[] = [];
  readonly events: TranscriptEvent[] = [];
  end?: TurnResult['end'];
  transfer?: TurnResult['transfer'];
  decision?: TurnResult['transfer_decision'];
  /** Keys pressed this turn (press_digit). */
  digits = '';
  /** The utterance being written, as it was streamed. */
  private open = '';
  /** The last character streamed this turn ('' before the first). */
  private lastStreamed = '';
  /** Each utterance with its history entry and its event, for `heard`. */
  private readonly said: { content: string; entries: TranscriptEvent[] }[] = [];
  private toolsAllowed = false;
  private firstTokenSeen = false;

  constructor(
    readonly state: ConversationState,
    readonly io: TurnIo = {},
  ) {}

  user(text: string): void {
    this.record({ role: 'user', content: text });
  }

  /** A whole utterance (a begin message, a static text, an execution message). */
  say(text: string): void {
    this.endText();
    this.text(text);
    this.endText();
  }

  /** A piece of the utterance being written, streamed as it comes. */
  text(piece: string): void {
    if (piece === '') return;
    // A new utterance after earlier words (a reply after a tool's result, the next node's
    // text) is set apart by a space, so a voice does not run the two together.
    const apart = this.open === '' && this.lastStreamed !== '' && !/\s/.test(this.lastStreamed) && !/^\s/.test(piece);
    this.open += piece;
    this.lastStreamed = piece.at(-1)!;
    this.io.emit?.({ type: 'text', text: apart ? ` ${piece}` : piece });
  }

  /** Closes the utterance being written: recorded, unless it was only whitespace. */
  endText(): void {
    const content = this.open.trim();
    this.open = '';
    if (!content) return;
    this.utterances.push(content);
    const entry: TranscriptEvent = { role: 'agent', content };
    const event: TranscriptEvent = { ...entry, words: [] };
    this.events.push(event);
    this.state.history.push(entry);
    this.said.push({ content, entries: [entry, event] });
  }

  /** An entry of `transcript_with_tool_calls`; node transitions stay out of the model's history. */
  record(event: TranscriptEvent): void {
    this.events.push(event.role === 'agent' || event.role === 'user' ? { ...event, words: [] } : event);
    if (event.role !== 'node_transition') this.state.history.push(event);
    if (event.role !== 'agent' && event.role !== 'user') this.io.emit?.({ type: 'event', event });
  }

  get done(): boolean {
    return this.end !== undefined || this.transfer !== undefined || this.decision !== undefined;
  }

  get signal(): AbortSignal | undefined {
    return this.io.signal;
  }

  get aborted(): boolean {
    return this.io.signal?.aborted === true;
  }

  /** Before the turn's first tool: its gate, once (TurnDiscarded when it answers false). */
  async allowTools(): Promise<void> {
    if (this.toolsAllowed) return;
    if (this.io.toolGate && !(await this.io.toolGate())) throw new TurnDiscarded();
    this.toolsAllowed = true;
  }

  firstToken(ms: number): void {
    if (this.firstTokenSeen) return;
    this.firstTokenSeen = true;
    this.io.onFirstToken?.(ms);
  }

  result(): TurnResult {
    return {
      state: this.state,
      utterances: this.utterances,
      events: this.events,
      ...(this.end ? { end: this.end } : {}),
      ...(this.transfer ? { transfer: this.transfer } : {}),
      ...(this.decision ? { transfer_decision: this.decision } : {}),
      ...(this.digits ? { digits: this.digits } : {}),
    };
  }

  /**
   * The result as the caller heard it, when the reply was interrupted: each utterance cut to
   * what `text` covers of it (heardPrefix), those not reached left out, in the state's
   * history as in the events. Everything else stands: the user's line, tool calls that ran
   * and their results, node moves, an end or a transfer the turn decided.
   */
  heard(text: string): TurnResult {
    const kept = heardPrefix(
      this.said.map((utterance) => utterance.content),
      text,
    );
    const replaced = new Map<TranscriptEvent, string>();
    this.said.forEach((utterance, i) => utterance.entries.forEach((entry) => replaced.set(entry, kept[i]!)));
    const rewrite = (entries: TranscriptEvent[]) =>
      entries.flatMap((entry) => {
        const content = replaced.get(entry);
        if (content === undefined) return [entry];
        return content ? [{ ...entry, content } as TranscriptEvent] : [];
      });
    return {
      ...this.result(),
      state: { ...this.state, history: rewrite(this.state.history) },
      utterances: kept.filter((content) => content !== ''),
      events: rewrite(this.events),
    };
  }
}

/**
 * What was heard of each utterance, given the text the caller heard (a prefix of what was
 * streamed): matched character by character with whitespace ignored (a voice pipeline may
 * space words its own way). An utterance the heard text covers is kept whole; the one where
 * it stops is cut there; later ones are '' (not heard). Where the heard text departs from
 * what was streamed (the pipeline changed words), the rest of it is taken as said in that
 * utterance's place: it is what the caller heard.
 */
function heardPrefix(utterances: readonly string[], heard: string): string[] {
  let h = 0;
  const skipSpace = (text: string, at: number) => {
    while (at < text.length && /\s/.test(text[at]!)) at++;
    return at;
  };
  return utterances.map((content) => {
    const start = skipSpace(heard, h);
    if (start >= heard.length) return '';
    let c = skipSpace(content, 0);
    let at = start;
    let cut = 0;
    for (;;) {
      if (c >= content.length) {
        // All of this utterance was heard.
        h = at;
        return content;
      }
      if (at >= heard.length) {
        // The heard text stops inside this utterance.
        h = at;
        return content.slice(0, cut).trim();
      }
      if (heard[at] !== content[c]) {
        h = heard.length;
        return heard.slice(start).trim();
      }
      cut = c + 1;
      c = skipSpace(content, c + 1);
      at = skipSpace(heard, at + 1);
    }
  });
}

/** A tool as the runtime runs it: what the model is shown, and what calling it does. */
export type RuntimeTool =
  | { kind: 'custom'; definition: ToolDefinition; tool: RetellTool }
  | { kind: 'end_call'; definition: ToolDefinition; tool: RetellTool }
  | { kind: 'transfer_call'; definition: ToolDefinition; tool: RetellTool }
  /** A transfer agent's decision in an agentic warm transfer (retell-sdk BridgeTransferTool / CancelTransferTool). */
  | { kind: 'bridge_transfer' | 'cancel_transfer'; definition: ToolDefinition; tool: RetellTool }
  /** Presses keys on the call (retell-sdk PressDigitTool), to find the way through a phone menu. */
  | { kind: 'press_digit'; definition: ToolDefinition; tool: RetellTool }
  /** One tool of an integration app (ours: docs/integrations.md, "App tools"). */
  | { kind: 'app'; definition: ToolDefinition; tool: RetellTool; appId: string; appTool: string }
  /** Moves the conversation: a multi-state LLM's edge, or a flow node's edge. */
  | { kind: 'transition'; definition: ToolDefinition; target: string };

/** A tool object as stored on an LLM or a flow (retell-sdk llm.d.ts general_tools entries). */
export type RetellTool = Record<string, unknown> & { type: string; name?: string; description?: string };

const END_CALL_WORDS = ['bye', 'goodbye', 'hang up'];
const TRANSFER_WORDS = ['human', 'transfer', 'person', 'representative', 'operator'];
const NO_PARAMETERS = { type: 'object', properties: {} };
const PRESS_WORDS = ['press'];
/** The offline model's words for a transfer agent's decision (the destination's answer). */
const BRIDGE_WORDS = ['yes', 'sure', 'accept', 'okay', 'connect', 'put them through'];
const CANCEL_WORDS = ['decline', 'cannot', 'busy', 'unavailable', 'refuse'];

/**
 * The tools of a Retell LLM (or a flow) the runtime can run: custom functions, end_call,
 * transfer_call and app tools (offered with the catalogue tool's parameters). Built-in scheduling, SMS, MCP and the other kinds arrive with their
 * issues; until then they are not offered to the model.
 */
export function runtimeTools(tools: readonly RetellTool[] | null | undefined): RuntimeTool[] {
  const out: RuntimeTool[] = [];
  for (const tool of tools ?? []) {
    const name = typeof tool.name === 'string' ? tool.name : undefined;
    if (!name) continue;
    const description = typeof tool.description === 'string' && tool.description ? tool.description : undefined;
    if (tool.type === 'custom' && typeof tool.url === 'string') {
      const parameters = (tool.parameters as Record<string, unknown> | undefined) ?? NO_PARAMETERS;
      out.push({ kind: 'custom', tool, definition: { name, ...(description ? { description } : {}), parameters } });
    } else if (tool.type === 'app' && typeof tool.app_id === 'string' && typeof tool.tool === 'string') {
      const catalogue = appToolDefinition(tool.tool);
      if (!catalogue) continue;
      out.push({
        kind: 'app',
        tool,
        appId: tool.app_id,
        appTool: tool.tool,
        definition: { name, description: description ?? catalogue.description, parameters: catalogue.parameters },
      });
    } else if (tool.type === 'end_call') {
      out.push({
        kind: 'end_call',
        tool,
        definition: {
          name,
          description: description ?? 'End the call when the user says goodbye or asks to end it.',
          parameters: NO_PARAMETERS,
          offlineKeywords: END_CALL_WORDS,
        },
      });
    } else if (tool.type === 'transfer_call') {
      const inferred = (tool.transfer_destination as { type?: string } | undefined)?.type === 'inferred';
      out.push({
        kind: 'transfer_call',
        tool,
        definition: {
          name,
          description: description ?? 'Transfer the call to a human when the user asks for one.',
          parameters: inferred
            ? { type: 'object', properties: { number: { type: 'string', description: 'The E.164 number to transfer to' } }, required: ['number'] }
            : NO_PARAMETERS,
          offlineKeywords: TRANSFER_WORDS,
        },
      });
    } else if (tool.type === 'press_digit') {
      out.push({
        kind: 'press_digit',
        tool,
        definition: {
          name,
          description: description ?? 'Press keys on the phone to navigate a phone menu (IVR).',
          parameters: {
            type: 'object',
            properties: { digit: { type: 'string', description: 'The keys to press, in order: digits 0-9, * and #' } },
            required: ['digit'],
          },
          offlineKeywords: PRESS_WORDS,
        },
      });
    } else if (tool.type === 'bridge_transfer' || tool.type === 'cancel_transfer') {
      const bridge = tool.type === 'bridge_transfer';
      out.push({
        kind: tool.type,
        tool,
        definition: {
          name,
          description:
            description ?? (bridge ? 'Connect the waiting caller when the person you are talking to accepts the call.' : 'Cancel the transfer when the person you are talking to declines the call.'),
          parameters: NO_PARAMETERS,
          offlineKeywords: bridge ? BRIDGE_WORDS : CANCEL_WORDS,
        },
      });
    }
  }
  return out;
}

export interface ModelTurnOptions {
  model: string;
  temperature?: number;
  system: string;
  tools: RuntimeTool[];
  /** Make the model call this tool (flow function nodes). */
  forceTool?: string;
  /** Most model calls in this turn (tool results trigger another). */
  maxRounds?: number;
}

/** Runs the model until it answers without tools; answers the transition target when a transition tool was called. */
export async function modelTurn(out: TurnOutput, options: ModelTurnOptions): Promise<{ transitionTo?: string }> {
  const state = out.state;
  const definitions = options.tools.map((tool) => tool.definition);
  const maxRounds = options.maxRounds ?? 5;
  // Once the primary model failed in this turn, its later rounds go to the fallback directly.
  let model = options.model;
  for (let round = 0; round < maxRounds; round++) {
    const messages = fitToTokenLimit([{ role: 'system', content: options.system }], historyMessages(state.history, state.agent_notes), state.token_limit);
    const answer = await askModel(out, {
      model,
      messages,
      maxTokens: REPLY_MAX_TOKENS,
      ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      ...(definitions.length ? { tools: definitions } : {}),
      ...(round === 0 && options.forceTool ? { toolChoice: { name: options.forceTool } } : {}),
      ...(out.signal ? { signal: out.signal } : {}),
    }, (use) => {
      recordFallback(state, use);
      model = use.fallback_model;
    });
    const spoke = answer.content.trim() !== '';
    out.endText();
    if (!answer.toolCalls?.length) return {};
    // A turn that may yet be discarded (preemptive generation) runs no tool before its gate
    // says it stands; an aborted one runs none at all, and records no call it will not run.
    await out.allowTools();
    out.signal?.throwIfAborted();
    // A static execution message ("One moment…") is said before the calls, when the model said nothing itself.
    if (!spoke) {
      for (const call of answer.toolCalls) {
        const tool = options.tools.find((candidate) => candidate.definition.name === call.name);
        if (tool && tool.kind !== 'transition' && speakExecutionMessage(out, tool.tool)) break;
      }
    }
    // Every call first, then every result: one assistant message with its calls, then the
    // results, which is the order providers expect them back in.
    for (const call of answer.toolCalls) {
      out.record({ role: 'tool_call_invocation', tool_call_id: call.id, name: call.name, arguments: call.arguments });
    }
    let ranFunction = false;
    let outcome: { transitionTo?: string } | undefined;
    for (const call of answer.toolCalls) {
      const result = (content: string, successful: boolean) =>
        out.record({ role: 'tool_call_result', tool_call_id: call.id, content, successful });
      if (outcome || out.done) {
        // A call after one that ended, transferred or moved the conversation is not run.
        result('Not run: the conversation moved on.', false);
        continue;
      }
      if (out.aborted) {
        // Aborted while an earlier call ran: the rest are answered (the model expects a
        // result for each call) but not run.
        result('Not run: the turn was interrupted.', false);
        continue;
      }
      const tool = options.tools.find((candidate) => candidate.definition.name === call.name);
      const args = parseArguments(call.arguments);
      const mock = tool && (tool.kind === 'custom' || tool.kind === 'transfer_call' || tool.kind === 'app') ? findToolMock(state.tool_mocks, call.name, args) : undefined;
      if (tool && mock) {
        // Mocked (the playground): the given output stands in for the function's answer or the
        // transfer's outcome, and nothing runs; a custom function's response variables are read from it.
        result(mock.output, mock.result ?? true);
        if (tool.kind === 'custom') Object.assign(state.collected_dynamic_variables, responseVariables(tool.tool as unknown as CustomFunctionTool, mock.output));
        ranFunction = true;
      } else if (!tool) {
        result(`Error: there is no tool named ${call.name}`, false);
        ranFunction = true;
      } else if (tool.kind === 'transition') {
        result(`Moved on to ${tool.target}`, true);
        outcome = { transitionTo: tool.target };
      } else if (tool.kind === 'end_call') {
        result('The call was ended.', true);
        out.end = { reason: 'agent_hangup' };
        state.ended = true;
      } else if (tool.kind === 'transfer_call') {
        const transfer = transferOf(tool.tool, args, variablesOf(state));
        if (state.can_transfer === false) {
          // A web call (or a chat) has no phone line to hand over: the agent is told and goes on.
          result('Error: this call cannot be transferred (only phone calls can be transferred)', false);
          ranFunction = true;
        } else if (transfer) {
            result(`Transferring the call to ${transfer.number}.`, true);
          out.transfer = transfer;
        } else {
          result('Error: no number to transfer to', false);
          ranFunction = true;
        }
      } else if (tool.kind === 'press_digit') {
        // The menu answers the keys: the turn ends with them, and the next turn hears the menu.
        const keys = typeof args.digit === 'string' ? args.digit.replace(/[^0-9*#]/g, '') : '';
        if (keys) {
          out.digits += keys;
          result(`Pressed ${keys}.`, true);
        } else {
          result('Error: no keys to press (digits 0-9, * and #)', false);
          ranFunction = true;
        }
      } else if (tool.kind === 'bridge_transfer' || tool.kind === 'cancel_transfer') {
        const bridge = tool.kind === 'bridge_transfer';
        result(bridge ? 'Bridging the caller to you.' : 'The transfer was cancelled; the caller goes back to the agent.', true);
        out.decision = bridge ? 'bridge' : 'cancel';
      } else if (tool.kind === 'app') {
        const done = await runAppTool(state, tool.appId, tool.appTool, args);
        result(done.content, done.successful);
        ranFunction = true;
      } else {
        const done = await runCustomFunction(state, tool.tool, args);
        result(done.content, done.successful);
        Object.assign(state.collected_dynamic_variables, done.variables);
        ranFunction = true;
      }
    }
    out.signal?.throwIfAborted();
    if (outcome) return outcome;
    if (out.done) return {};
    if (!ranFunction) return {};
  }
  return {};
}

/**
 * One model call, with the workspace's fallback model: streamed when the turn streams (its
 * words reach the turn's listener as the model writes them), else asked whole (the same
 * words, in one piece). Either way the text goes into the utterance being written; the
 * caller closes it.
 */
async function askModel(out: TurnOutput, request: CompletionRequest, onFallback: (use: FallbackUse) => void): Promise<Completion> {
  const fallback = out.state.fallback_llm_model;
  const started = performance.now();
  if (!out.io.stream) {
    const answer = await completeWithFallback(request, fallback, onFallback);
    out.firstToken(performance.now() - started);
    out.text(answer.content);
    return answer;
  }
  for await (const event of streamWithFallback(request, fallback, onFallback)) {
    out.firstToken(performance.now() - started);
    if (event.type === 'done') return event;
    out.text(event.content);
  }
  throw new Error('The language model stream ended without its answer');
}

/** A custom function call with the conversation's context, signed with the workspace's webhook key. */
async function runCustomFunction(state: ConversationState, tool: RetellTool, args: Record<string, unknown>) {
  let secret: string;
  try {
    secret = await webhookSigningSecret(state.workspace_id);
  } catch (error) {
    if (error instanceof NoSigningKey) return { content: `Error: ${error.message}`, successful: false, variables: {} };
    throw error;
  }
  const started = performance.now();
  const done = await callCustomFunction({ tool: tool as unknown as CustomFunctionTool, args, call: callContext(state), secret });
  // The request's latency and outcome feed the workspace's alerts; a lost count never fails the turn.
  await addFunctionCall({ workspaceId: state.workspace_id, agentId: state.agent_id, latencyMs: performance.now() - started, failed: !done.successful, at: Date.now() }).catch(
    (error: unknown) => logger.warn('counting a custom function call for alerts failed', { error: error instanceof Error ? error.message : String(error) }),
  );
  return done;
}

const APP_RESULT_MAX_CHARS = 8_000;

/**
 * An app tool call through the integrations domain (the app's vendor API, or the mock
 * provider's `{mock: true, ...}`): the result the model reads is the tool's JSON answer
 * (first 8,000 characters). A deleted app, one that needs reconnecting, missing arguments
 * or a vendor failure are an `Error: …` result, never a failed turn; only an unavailable
 * store throws, as everywhere in the runtime.
 */
async function runAppTool(state: ConversationState, appId: string, tool: string, args: Record<string, unknown>): Promise<{ content: string; successful: boolean }> {
  try {
    const done = await executeTool(state.workspace_id, appId, tool, args);
    return { content: JSON.stringify(done.result ?? null).slice(0, APP_RESULT_MAX_CHARS), successful: true };
  } catch (error) {
    if (error instanceof ApiError && !(error instanceof Unavailable)) return { content: `Error: ${error.message}`, successful: false };
    throw error;
  }
}

/** The `call` of a custom function's body: the call as far as the conversation knows it. */
export function callContext(state: ConversationState): Record<string, unknown> {
  const transcript = state.history.flatMap((entry) =>
    entry.role === 'agent' || entry.role === 'user' ? [{ role: entry.role, content: entry.content }] : [],
  );
  return {
    call_id: state.call_id,
    call_type: state.channel === 'chat' ? 'chat' : 'phone_call',
    agent_id: state.agent_id,
    agent_version: state.agent_version,
    call_status: 'ongoing',
    ...(state.from_number ? { from_number: state.from_number } : {}),
    ...(state.to_number ? { to_number: state.to_number } : {}),
    ...(state.metadata !== undefined ? { metadata: state.metadata } : {}),
    [`${wire.compat}_llm_dynamic_variables`]: state.dynamic_variables,
    collected_dynamic_variables: state.collected_dynamic_variables,
    transcript: transcript.map((entry) => `${entry.role === 'agent' ? 'Agent' : 'User'}: ${entry.content}`).join('\n'),
    transcript_object: transcript,
  };
}

/** A static execution message is spoken as it is; a prompt-type one would need another model call, so it is not spoken. */
function speakExecutionMessage(out: TurnOutput, tool: RetellTool): boolean {
  if (tool.speak_during_execution !== true || tool.execution_message_type !== 'static_text') return false;
  if (typeof tool.execution_message_description !== 'string' || !tool.execution_message_description.trim()) return false;
  out.say(fillTemplate(tool.execution_message_description, variablesOf(out.state)));
  return true;
}

/** transfer_call's destination, kind and options: a predefined number (placeholders filled) or the model's `number`; warm for the warm options. */
export function transferOf(tool: RetellTool, args: Record<string, unknown>, variables: Record<string, string>): TransferAsk | undefined {
  const destination = tool.transfer_destination as { type?: string; number?: unknown } | undefined;
  const raw = destination?.type === 'inferred' ? args.number : destination?.number;
  const number = typeof raw === 'string' ? fillTemplate(raw, variables).trim() : '';
  if (!number) return undefined;
  const option = tool.transfer_option as Record<string, unknown> | undefined;
  const type = option?.type;
  const warm = type === 'warm_transfer' || type === 'agentic_warm_transfer';
  const options = transferOptions(option ?? {}, variables, tool.custom_sip_headers);
  const headers = tool.custom_sip_headers;
  return {
    number,
    kind: warm ? 'warm' : 'cold',
    ...(options ? { options } : {}),
    ...(option && typeof option.type === 'string' ? { transfer_option: option } : {}),
    ...(isStringRecord(headers) && Object.keys(headers).length ? { custom_sip_headers: headers } : {}),
  };
}

const isStringRecord = (value: unknown): value is Record<string, string> =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.values(value).every((entry) => typeof entry === 'string');

function parseArguments(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text || '{}');
    return typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
