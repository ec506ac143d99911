import type { ClientOptions, RawData, WebSocket } from 'ws';
import { VendorFailed } from '../../platform/errors.ts';
import { EgressRefused, WEBSOCKET_SCHEMES, checkDestination, type Resolver } from '../../platform/egress/egress.ts';
import { logger } from '../../platform/logger.ts';
import { wire } from '../../platform/naming.ts';
import { trimTrailing } from '../../platform/text/text.ts';
import { callContext, type TurnOutput } from './model-turn.ts';
import type { ConversationState, TranscriptEvent, TurnEvent } from '../types.ts';
import { loadOnce } from '../../platform/lazy.ts';
import { EventQueue } from '../event-queue.ts';

/*
 * A custom LLM, over the compatible API's LLM WebSocket protocol: Parley connects to
 * `<llm_websocket_url>/<call_id>` (through the egress guard: the host's addresses are
 * checked and the socket pinned to the checked one; no redirects), sends `call_details`,
 * and reads the server's opening `response` (response_id 0: the begin message, empty when
 * the user speaks first). Each user line is a `response_required` with the next
 * response_id and the transcript; the server's `response` events for that ID are streamed
 * to the turn as they arrive (their `content` is the reply's next words) until
 * `content_complete`, and `end_call` / `transfer_number` end or transfer the call. A
 * response_id is never asked twice on one socket: a turn that was aborted or discarded
 * leaves its ID behind, so late words for it are dropped, not joined to the next reply.
 * Server `tool_call_invocation` / `tool_call_result` events go into the transcript;
 * `ping_pong` is answered; `config`, `metadata`, `update_agent` and `agent_interrupt`
 * are read and ignored.
 *
 * Connections: a ConversationState is JSON and cannot hold a socket, so each process keeps
 * an in-memory cache keyed by call_id. A turn uses the cached socket when it is open, and
 * otherwise reconnects (another process or Lambda instance took the turn, the server
 * dropped it, or it sat idle past CUSTOM_LLM_IDLE_MS): the server is told the call again
 * (`call_details`) and its new opening response is ignored, and since every
 * `response_required` carries the whole transcript, a reconnect loses nothing the
 * protocol needs. `closeCustomLlm(callId)` closes a call's socket when the call ends.
 *
 * Why `ws`: Node 20 has no WebSocket client without a flag, and the protocol needs the
 * whole of RFC 6455 (framing, masking, fragmentation, ping/pong, close), which the
 * handshake-only test in shared/agent-tools/custom-llm-connection.ts does not. It is loaded
 * on the first connection (a literal `import('ws')`: its own chunk when the bundle is split),
 * not at import, so a cold start of a function that never meets a custom LLM does not load it.
 */

const loadWebSocket = loadOnce((): Promise<typeof WebSocket> => import('ws').then((module) => module.WebSocket));

/** How long a turn waits for the server's complete response. */
const CUSTOM_LLM_RESPONSE_TIMEOUT_MS = 30_000;
/** How long the call's start waits for the server's opening response before the agent just waits for the user. */
const CUSTOM_LLM_BEGIN_TIMEOUT_MS = 5_000;
/** An idle cached socket is closed after this. */
const CUSTOM_LLM_IDLE_MS = 120_000;
const CONNECT_TIMEOUT_MS = 10_000;
const MAX_MESSAGE_BYTES = 1024 * 1024;
const MAX_CACHED = 1000;

/** The compatible API's disconnection reasons for a failing custom LLM. */
export type CustomLlmFailure =
  | 'error_llm_websocket_open'
  | 'error_llm_websocket_lost_connection'
  | 'error_llm_websocket_runtime'
  | 'error_llm_websocket_corrupt_payload';

/** A custom LLM failed this turn; `disconnection_reason` is what the call should end with. */
export class CustomLlmFailed extends VendorFailed {
  constructor(
    readonly disconnection_reason: CustomLlmFailure,
    detail: string,
  ) {
    super(`Custom LLM failed: ${detail}`);
    this.name = 'CustomLlmFailed';
  }
}

/** A reply that arrived before its turn listened (the opening one comes with the handshake). */
interface Reply {
  pieces: string[];
  complete: boolean;
  endCall: boolean;
  transferNumber?: string;
}

/** What a turn hears of its reply: its words, the server's tool events, then its end (or the timeout). */
type ReplyItem =
  | { type: 'content'; content: string }
  | { type: 'event'; event: TranscriptEvent }
  | { type: 'end'; endCall: boolean; transferNumber?: string }
  | { type: 'timeout' };

/** Tests: plays DNS for the guard. */
let resolverForTests: Resolver | undefined;
export function useCustomLlmResolver(resolver: Resolver | undefined): void {
  resolverForTests = resolver;
}

class Connection {
  private readonly replies = new Map<number, Reply>();
  private listener?: { id: number; queue: EventQueue<ReplyItem> };
  /** The highest response_id a turn listened for on this socket: replies up to it that no turn awaits are dropped. */
  private listened = -1;
  /** Tool events the server reported between turns, until the next turn takes them. */
  readonly serverEvents: TranscriptEvent[] = [];
  private idle?: NodeJS.Timeout;

  constructor(
    readonly callId: string,
    private readonly socket: WebSocket,
  ) {
    socket.on('message', (data, isBinary) => this.onMessage(data, isBinary));
    socket.on('close', () => this.fail(new CustomLlmFailed('error_llm_websocket_lost_connection', 'the connection closed')));
    socket.on('error', (error) => this.fail(new CustomLlmFailed('error_llm_websocket_lost_connection', `connection error (${codeOf(error)})`)));
    this.touch();
  }

  get open(): boolean {
    return this.socket.readyState === this.socket.OPEN;
  }

  /** The response_id for the next user line: past the state's, and past any this socket was asked for. */
  nextResponseId(stateId: number): number {
    return Math.max(stateId, this.listened) + 1;
  }

  send(message: Record<string, unknown>): void {
    this.socket.send(JSON.stringify(message));
  }

  /**
   * The reply for `id` as it arrives (what came before is replayed first), until its end,
   * `timeoutMs` (then `timeout`), the signal's abort or the connection's failure (thrown).
   * `stop()` stops listening.
   */
  listen(id: number, timeoutMs: number, signal?: AbortSignal): { items: AsyncIterable<ReplyItem>; stop: () => void } {
    this.touch();
    // One turn at a time on a socket: a turn still listening is told, not left to wait out its timeout.
    this.listener?.queue.fail(new Error('Another turn asked the custom LLM for a response while this one was listening'));
    const queue = new EventQueue<ReplyItem>();
    this.listened = Math.max(this.listened, id);
    const early = this.replies.get(id);
    for (const older of this.replies.keys()) if (older <= id) this.replies.delete(older);
    for (const content of early?.pieces ?? []) queue.push({ type: 'content', content });
    const stop = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      queue.end();
      if (this.listener?.queue === queue) this.listener = undefined;
    };
    const onAbort = () => {
      queue.fail(signal!.reason);
      stop();
    };
    const timer = setTimeout(() => {
      queue.push({ type: 'timeout' });
      stop();
    }, timeoutMs);
    if (early?.complete) {
      queue.push({ type: 'end', endCall: early.endCall, ...(early.transferNumber ? { transferNumber: early.transferNumber } : {}) });
      stop();
    } else if (signal?.aborted) onAbort();
    else {
      this.listener = { id, queue };
      signal?.addEventListener('abort', onAbort, { once: true });
    }
    return { items: queue, stop };
  }

  close(): void {
    clearTimeout(this.idle);
    this.fail(new CustomLlmFailed('error_llm_websocket_lost_connection', 'the connection was closed while a turn was listening'));
    this.socket.removeAllListeners();
    this.socket.on('error', () => undefined);
    if (this.socket.readyState === this.socket.OPEN) this.socket.close(1000);
    else if (this.socket.readyState === this.socket.CONNECTING) this.socket.terminate();
    if (connections.get(this.callId) === this) connections.delete(this.callId);
  }

  private touch(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.close(), CUSTOM_LLM_IDLE_MS);
    this.idle.unref();
  }

  private fail(error: CustomLlmFailed): void {
    const listener = this.listener;
    this.listener = undefined;
    listener?.queue.fail(error);
    if (connections.get(this.callId) === this) connections.delete(this.callId);
    clearTimeout(this.idle);
  }

  private onMessage(data: RawData, isBinary: boolean): void {
    let message: Record<string, unknown>;
    try {
      const parsed: unknown = JSON.parse(isBinary ? '' : rawText(data));
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
      message = parsed as Record<string, unknown>;
    } catch {
      this.fail(new CustomLlmFailed('error_llm_websocket_corrupt_payload', 'the server sent a message that is not a JSON object'));
      this.close();
      return;
    }
    switch (message.response_type) {
      case 'response': {
        const id = typeof message.response_id === 'number' ? message.response_id : -1;
        const content = typeof message.content === 'string' ? message.content : '';
        const endCall = message.end_call === true;
        const transferNumber = typeof message.transfer_number === 'string' && message.transfer_number ? message.transfer_number : undefined;
        const complete = message.content_complete === true || endCall || transferNumber !== undefined;
        const listener = this.listener?.id === id ? this.listener : undefined;
        if (listener) {
          if (content) listener.queue.push({ type: 'content', content });
          if (complete) {
            listener.queue.push({ type: 'end', endCall, ...(transferNumber ? { transferNumber } : {}) });
            listener.queue.end();
            this.listener = undefined;
          }
          return;
        }
        // A reply no turn waits for any more (superseded, or its turn stopped) is dropped.
        if (id <= this.listened) return;
        const reply = this.replies.get(id) ?? { pieces: [], complete: false, endCall: false };
        if (content) reply.pieces.push(content);
        reply.complete ||= complete;
        reply.endCall ||= endCall;
        reply.transferNumber ??= transferNumber;
        this.replies.set(id, reply);
        return;
      }
      case 'tool_call_invocation':
        if (typeof message.tool_call_id === 'string' && typeof message.name === 'string') {
          this.serverEvent({
            role: 'tool_call_invocation',
            tool_call_id: message.tool_call_id,
            name: message.name,
            arguments: typeof message.arguments === 'string' ? message.arguments : JSON.stringify(message.arguments ?? {}),
          });
        }
        return;
      case 'tool_call_result':
        if (typeof message.tool_call_id === 'string') {
          this.serverEvent({
            role: 'tool_call_result',
            tool_call_id: message.tool_call_id,
            content: typeof message.content === 'string' ? message.content : JSON.stringify(message.content ?? ''),
          });
        }
        return;
      case 'ping_pong':
        this.send({ interaction_type: 'ping_pong', timestamp: Date.now() });
        return;
      default:
        // config, metadata, update_agent, agent_interrupt: nothing the text runtime acts on.
        return;
    }
  }

  /** To the listening turn as it happens; between turns, kept for the next one. */
  private serverEvent(event: TranscriptEvent): void {
    if (this.listener) this.listener.queue.push({ type: 'event', event });
    else this.serverEvents.push(event);
  }
}

const connections = new Map<string, Connection>();

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data as ArrayBuffer).toString('utf8');
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : error instanceof Error ? error.message : 'unknown';
}

/** The URL a call opens: the engine's URL with `/<call_id>` appended to its path. */
function customLlmCallUrl(llmWebsocketUrl: string, callId: string): URL {
  const url = new URL(llmWebsocketUrl);
  url.pathname = `${trimTrailing(url.pathname, '/')}/${callId}`;
  return url;
}

async function connect(state: ConversationState, url: string): Promise<Connection> {
  const target = customLlmCallUrl(url, state.call_id);
  let lookup;
  try {
    ({
      destination: { lookup },
    } = await checkDestination(target, {
      schemes: WEBSOCKET_SCHEMES,
      signal: AbortSignal.timeout(CONNECT_TIMEOUT_MS),
      ...(resolverForTests ? { resolver: resolverForTests } : {}),
    }));
  } catch (error) {
    if (error instanceof EgressRefused) throw new CustomLlmFailed('error_llm_websocket_open', error.message);
    throw new CustomLlmFailed('error_llm_websocket_open', `could not resolve the server (${codeOf((error as { cause?: unknown }).cause ?? error)})`);
  }
  const options = {
    // Pinned to the checked address (ws hands `lookup` to node:net / node:tls), and never redirected elsewhere.
    lookup,
    followRedirects: false,
    handshakeTimeout: CONNECT_TIMEOUT_MS,
    maxPayload: MAX_MESSAGE_BYTES,
    perMessageDeflate: false,
    headers: { 'user-agent': `${wire.service}-custom-llm/1` },
  } as ClientOptions;
  const WebSocketClient = await loadWebSocket();
  const socket = new WebSocketClient(target, options);
  // Listening from the start: the server's opening messages may arrive with the handshake.
  const connection = new Connection(state.call_id, socket);
  await new Promise<void>((resolve, reject) => {
    const failed = (detail: string) => {
      connection.close();
      reject(new CustomLlmFailed('error_llm_websocket_open', detail));
    };
    socket.once('open', () => resolve());
    socket.once('unexpected-response', (_request, response) => {
      response.resume();
      failed(`the server answered HTTP ${response.statusCode} instead of switching to WebSocket`);
    });
    socket.once('error', (error) => failed(`could not connect (${codeOf(error)})`));
  });
  if (connections.size >= MAX_CACHED) connections.values().next().value?.close();
  connections.set(state.call_id, connection);
  connection.send({ interaction_type: 'call_details', call: callContext(state) });
  return connection;
}

async function connectionFor(state: ConversationState, url: string): Promise<Connection> {
  const cached = connections.get(state.call_id);
  if (cached?.open) return cached;
  cached?.close();
  return connect(state, url);
}

export async function customLlmTurn(out: TurnOutput, event: TurnEvent): Promise<void> {
  const state = out.state;
  if (state.engine.type !== 'custom-llm') throw new Error('not a custom LLM conversation');
  const url = state.engine.llm_websocket_url;
  let connection: Connection;
  let id: number;
  if (event.type === 'call_started') {
    connection = await connectionFor(state, url);
    id = 0;
  } else {
    out.user(event.text);
    // The server runs its own tools as soon as it is asked, and Parley cannot hold them back:
    // a turn that may yet be discarded (preemptive generation) asks only once it stands.
    await out.allowTools();
    connection = await connectionFor(state, url);
    id = connection.nextResponseId(state.response_id ?? 0);
  }
  out.signal?.throwIfAborted();
  state.response_id = id;
  const timeoutMs = id === 0 ? CUSTOM_LLM_BEGIN_TIMEOUT_MS : CUSTOM_LLM_RESPONSE_TIMEOUT_MS;
  const started = performance.now();
  const reply = connection.listen(id, timeoutMs, out.signal);
  let end: Extract<ReplyItem, { type: 'end' }> | undefined;
  let timedOut = false;
  try {
    if (id !== 0) connection.send({ interaction_type: 'response_required', response_id: id, transcript: customLlmTranscript(state) });
    for (const serverEvent of connection.serverEvents.splice(0)) out.record(serverEvent);
    for await (const item of reply.items) {
      if (item.type === 'content') {
        out.firstToken(performance.now() - started);
        out.text(item.content);
      } else if (item.type === 'event') out.record(item.event);
      else if (item.type === 'end') end = item;
      else timedOut = true;
    }
  } finally {
    reply.stop();
  }
  // The reply is one utterance, after the server's tool events (as the joined reply always was).
  out.endText();
  if (timedOut && id !== 0) throw new CustomLlmFailed('error_llm_websocket_runtime', `no complete response within ${CUSTOM_LLM_RESPONSE_TIMEOUT_MS} ms`);
  if (!end) return;
  if (end.transferNumber) out.transfer = { number: end.transferNumber, kind: 'cold' };
  if (end.endCall) {
    out.end = { reason: 'agent_hangup' };
    state.ended = true;
    connection.close();
  }
}

/**
 * The `transcript` of a `response_required`: the utterances so far, with the notes the
 * caller of the runtime left for the agent (`noteToAgent`: a transfer that did not go
 * through) as `{role: 'system', content}` turns where they happened. The compatible
 * protocol has no event for them, and a server that reads only agent and user turns
 * skips them.
 */
function customLlmTranscript(state: ConversationState): { role: 'agent' | 'user' | 'system'; content: string }[] {
  const notes = state.agent_notes ?? [];
  const out: { role: 'agent' | 'user' | 'system'; content: string }[] = [];
  const noteAt = (index: number) => {
    for (const note of notes) if (note.after === index) out.push({ role: 'system', content: note.content });
  };
  state.history.forEach((entry, index) => {
    noteAt(index);
    if (entry.role === 'agent' || entry.role === 'user') out.push({ role: entry.role, content: entry.content });
  });
  for (const note of notes) if (note.after >= state.history.length) out.push({ role: 'system', content: note.content });
  return out;
}

/** Closes the call's cached custom LLM socket, if this process has one (the call ended). */
export function closeCustomLlm(callId: string): void {
  const connection = connections.get(callId);
  if (!connection) return;
  logger.debug('Closing the custom LLM connection', { call_id: callId });
  connection.close();
}
