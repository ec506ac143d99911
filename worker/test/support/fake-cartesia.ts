import type { WebSocket } from 'ws';
import {
  type ConnectionInfo,
  FailureSwitch,
  SerialQueue,
  type FakeVoiceOptions,
  type VendorFailure,
  parseJson,
  sendJson,
  sleep,
  startVendorServer,
} from './fake-vendor-server.ts';
import { DEFAULT_MS_PER_CHAR, chunkSpeech, pcmBytes, syntheticSpeech } from './synthetic-voice.ts';

/**
 * A fake Cartesia on 127.0.0.1 speaking the protocol @livekit/agents-plugin-cartesia uses: the
 * WebSocket `/tts/websocket` (key in `X-API-Key`, `Cartesia-Version` header), one context per
 * reply: generation requests `{model_id, voice, output_format: {container: 'raw', encoding:
 * 'pcm_s16le', sample_rate}, language, add_timestamps, context_id, transcript, continue}`, the
 * last with `continue: false`; `{context_id, cancel: true}` stops one. Every transcript is spoken
 * as it arrives (the plugin sends `max_buffer_delay_ms: 0`): `chunk` messages of base64 PCM, each
 * preceded, when `add_timestamps` is set, by a `timestamps` message for the words that start in
 * it (seconds on the context's timeline), then `done` once the context is ended and spoken.
 *
 * The plugin's non-streaming `synthesize` always dials https on port 443 and cannot be faked.
 *
 *   const cartesia = await startFakeCartesia({ firstByteDelayMs: 150 });
 *   new cartesiaPlugin.TTS({ apiKey: 'test-key', baseUrl: cartesia.url });
 */
/** `apiKey` is checked in `X-API-Key`. */
export type FakeCartesiaOptions = FakeVoiceOptions;

interface CartesiaGeneration {
  transcript: string;
  requestedAt: number;
  firstAudioAt?: number;
  audioMs: number;
}

interface CartesiaContext {
  id: string;
  connection: number;
  /** The first generation request, as received (model, voice, output format, language…). */
  request: Record<string, unknown>;
  transcripts: string[];
  generations: CartesiaGeneration[];
  readonly spoken: string;
  ended: boolean;
  cancelled: boolean;
  doneAt?: number;
}

interface CartesiaReceived {
  connection: number;
  at: number;
  message: unknown;
}

export interface FakeCartesia {
  /** The plugin's `baseUrl`: `http://127.0.0.1:<port>`. */
  url: string;
  readonly requests: number;
  connections: ConnectionInfo[];
  received: CartesiaReceived[];
  contexts: CartesiaContext[];
  options: FakeCartesiaOptions;
  fail(failure?: VendorFailure, times?: number): void;
  close(): Promise<void>;
}

export async function startFakeCartesia(options: FakeCartesiaOptions = {}): Promise<FakeCartesia> {
  const received: CartesiaReceived[] = [];
  const contexts: CartesiaContext[] = [];
  const live = { ...options };
  const failures = new FailureSwitch(options.failure);

  function serve(socket: WebSocket, info: ConnectionInfo) {
    const open = new Map<string, { context: CartesiaContext; timeline: number; queue: SerialQueue; failed: boolean }>();
    const error = (contextId: string, status: number, message: string) =>
      sendJson(socket, { type: 'error', done: true, error: message, status_code: status, context_id: contextId });

    socket.on('message', (data, isBinary) => {
      const message = parseJson(data, isBinary) as Record<string, unknown> | undefined;
      received.push({ connection: info.index, at: Date.now(), message: message ?? String(data) });
      const id = typeof message?.context_id === 'string' ? message.context_id : '';
      if (!message || typeof message !== 'object' || !id) {
        error(id, 400, 'a JSON message with a context_id is required');
        return;
      }
      const now = Date.now();
      let state = open.get(id);
      if (message.cancel === true) {
        if (state) {
          state.context.cancelled = true;
          open.delete(id);
        }
        return;
      }
      const format = message.output_format as { container?: unknown; encoding?: unknown; sample_rate?: unknown } | undefined;
      if (typeof message.model_id !== 'string' || !message.voice || format?.encoding !== 'pcm_s16le' || typeof format.sample_rate !== 'number') {
        error(id, 400, 'model_id, voice and a raw pcm_s16le output_format with a sample_rate are required');
        return;
      }
      const sampleRate = format.sample_rate;
      if (!state) {
        const context: CartesiaContext = {
          id,
          connection: info.index,
          request: message,
          transcripts: [],
          generations: [],
          get spoken() {
            return this.generations.map((g) => g.transcript).join('');
          },
          ended: false,
          cancelled: false,
        };
        contexts.push(context);
        state = { context, timeline: 0, queue: new SerialQueue(), failed: false };
        open.set(id, state);
      }
      const current = state;
      const transcript = typeof message.transcript === 'string' ? message.transcript : '';
      current.context.transcripts.push(transcript);
      if (transcript.trim() && current.context.generations.length === 0 && !current.failed) {
        const failure = failures.onWork();
        if (failure?.mode === 'close') {
          socket.close(failure.code ?? 1011, failure.reason ?? 'injected failure');
          return;
        }
        if (failure?.mode === 'error') {
          current.failed = true;
          error(id, failure.status ?? 500, failure.message ?? 'injected failure');
          return;
        }
      }
      if (transcript.trim()) {
        const speech = syntheticSpeech(transcript, { sampleRate, msPerChar: live.msPerChar ?? DEFAULT_MS_PER_CHAR, offsetMs: current.timeline });
        current.timeline += speech.durationMs;
        const generation: CartesiaGeneration = { transcript, requestedAt: now, audioMs: speech.durationMs };
        current.context.generations.push(generation);
        void current.queue.push(async () => {
          await sleep((live.firstByteDelayMs ?? 0) - (Date.now() - now));
          for (const [i, chunk] of chunkSpeech(speech, live.chunkMs ?? 100).entries()) {
            if (i > 0) await sleep(live.chunkIntervalMs ?? 0);
            if (current.context.cancelled || current.failed) return;
            if (message.add_timestamps === true && chunk.words.length) {
              sendJson(socket, {
                type: 'timestamps',
                done: false,
                status_code: 206,
                context_id: id,
                word_timestamps: {
                  words: chunk.words.map((w) => w.word),
                  start: chunk.words.map((w) => w.start),
                  end: chunk.words.map((w) => w.end),
                },
              });
            }
            const chunkMessage = { type: 'chunk', data: pcmBytes(chunk.pcm).toString('base64'), done: false, status_code: 206, step_time: 0, context_id: id };
            if (sendJson(socket, chunkMessage)) {
              generation.firstAudioAt ??= Date.now();
            }
          }
        });
      }
      if (message.continue === false) {
        current.context.ended = true;
        open.delete(id);
        void current.queue.push(async () => {
          if (current.context.cancelled || current.failed) return;
          if (sendJson(socket, { type: 'done', done: true, status_code: 200, context_id: id })) current.context.doneAt = Date.now();
        });
      }
    });
  }

  const server = await startVendorServer({
    authHeader: 'x-api-key',
    apiKey: options.apiKey,
    unauthorizedBody: JSON.stringify({ error: 'Invalid API key' }),
    failures,
    route: (path) => (path === '/tts/websocket' ? { ws: serve } : undefined),
  });

  return {
    url: server.origin,
    get requests() {
      return server.requests;
    },
    connections: server.connections,
    received,
    contexts,
    options: live,
    fail: (failure, times) => failures.set(failure, times),
    close: server.close,
  };
}
