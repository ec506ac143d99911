import type { WebSocket } from 'ws';
import {
  type ConnectionInfo,
  SerialQueue,
  FailureSwitch,
  type FakeVoiceOptions,
  type VendorFailure,
  parseJson,
  readBody,
  sendJson,
  sleep,
  startVendorServer,
} from './fake-vendor-server.ts';
import { DEFAULT_MS_PER_CHAR, chunkSpeech, pcmBytes, syntheticSpeech } from './synthetic-voice.ts';

/**
 * A fake ElevenLabs on 127.0.0.1 speaking the protocol @livekit/agents-plugin-elevenlabs uses:
 * the multi-context WebSocket `/v1/text-to-speech/{voice_id}/multi-stream-input` (key in
 * `xi-api-key`), where each reply is a context: `{text: " ", voice_settings, context_id}` opens
 * it, `{text, context_id, flush?}` feeds it, `{context_id, close_context: true}` ends it. The fake
 * answers with base64 PCM chunks in the requested `output_format` (`pcm_<rate>`), each with
 * `alignment` and `normalizedAlignment` (characters, start times and durations in ms on the
 * context's timeline: the framework keeps an agent reply in the chat history only with word
 * timings), and `{isFinal: true, contextId}` once a closed context is spoken. Also
 * `POST /v1/text-to-speech/{voice_id}/stream` (the plugin's non-streaming synthesize) and
 * `GET /v1/voices`.
 *
 * Text is spoken when the client flushes, in auto mode (`auto_mode=true`, the plugin's default)
 * at every message, else when the buffer reaches the chunk length schedule, and at close_context.
 *
 *   const eleven = await startFakeElevenLabs({ firstByteDelayMs: 150 });
 *   new elevenlabs.TTS({ apiKey: 'test-key', baseURL: eleven.url, ... });
 *   expect(eleven.contexts[0].spoken).toBe('Hello there. ');
 */
/** `apiKey` is checked in `xi-api-key`. */
export type FakeElevenLabsOptions = FakeVoiceOptions;

interface ElevenLabsGeneration {
  text: string;
  /** Date.now() when the text that started it arrived, and when its first audio was sent. */
  requestedAt: number;
  firstAudioAt?: number;
  audioMs: number;
}

interface ElevenLabsContext {
  id: string;
  /** Index into `connections`. */
  connection: number;
  voiceId: string;
  voiceSettings: unknown;
  generationConfig: unknown;
  /** Every text received for it, in order (the opening `" "` included). */
  texts: string[];
  generations: ElevenLabsGeneration[];
  /** What was spoken: the generations' texts joined. */
  readonly spoken: string;
  closed: boolean;
  /** Date.now() when `isFinal` was sent. */
  finalAt?: number;
}

interface ElevenLabsReceived {
  connection: number;
  at: number;
  message: unknown;
}

export interface FakeElevenLabs {
  /** The plugin's `baseURL`: `http://127.0.0.1:<port>/v1`. */
  url: string;
  /** Without `/v1`, as Parley's ELEVENLABS_BASE_URL setting takes it. */
  origin: string;
  readonly requests: number;
  connections: ConnectionInfo[];
  /** Every JSON message received over the WebSockets, and every REST synthesis body. */
  received: ElevenLabsReceived[];
  contexts: ElevenLabsContext[];
  /** Options read at each generation: change latencies between tests. */
  options: FakeElevenLabsOptions;
  /** Arms a failure for the next `times` requests (all when absent); `fail()` heals. */
  fail(failure?: VendorFailure, times?: number): void;
  close(): Promise<void>;
}

const DEFAULT_SCHEDULE = [120, 160, 250, 290];

export async function startFakeElevenLabs(options: FakeElevenLabsOptions = {}): Promise<FakeElevenLabs> {
  const received: ElevenLabsReceived[] = [];
  const contexts: ElevenLabsContext[] = [];
  const live = { ...options };
  const failures = new FailureSwitch(options.failure);
  const msPerChar = () => live.msPerChar ?? DEFAULT_MS_PER_CHAR;
  const chunkMs = () => live.chunkMs ?? 100;

  const sampleRateOf = (format: unknown): number | undefined => {
    const match = typeof format === 'string' ? /^pcm_(\d+)$/.exec(format) : null;
    return match ? Number(match[1]) : undefined;
  };

  function serve(socket: WebSocket, info: ConnectionInfo) {
    const voiceId = decodeURIComponent(info.path.split('/')[3] ?? '');
    const sampleRate = sampleRateOf(info.query.output_format ?? 'mp3_44100_128');
    const autoMode = info.query.auto_mode === 'true';
    if (sampleRate === undefined) {
      // The fake speaks PCM only; the plugin always asks for it.
      sendJson(socket, { message: `unsupported output_format ${String(info.query.output_format)}`, error: 'invalid_output_format', code: 1008 });
      socket.close(1008, 'unsupported output_format');
      return;
    }
    const open = new Map<string, { context: ElevenLabsContext; buffer: string; scheduleStep: number; timeline: number; queue: SerialQueue; failed: boolean }>();

    const generate = (state: NonNullable<ReturnType<typeof open.get>>, text: string, requestedAt: number) =>
      state.queue.push(async () => {
        if (!text.trim() || state.failed) return;
        const speech = syntheticSpeech(text, { sampleRate, msPerChar: msPerChar(), offsetMs: state.timeline });
        state.timeline += speech.durationMs;
        const generation: ElevenLabsGeneration = { text, requestedAt, audioMs: speech.durationMs };
        state.context.generations.push(generation);
        await sleep((live.firstByteDelayMs ?? 0) - (Date.now() - requestedAt));
        for (const [i, chunk] of chunkSpeech(speech, chunkMs()).entries()) {
          if (i > 0) await sleep(live.chunkIntervalMs ?? 0);
          const alignment = chunk.chars.length
            ? {
                chars: chunk.chars.map((c) => c.char),
                charStartTimesMs: chunk.chars.map((c) => c.startMs),
                charDurationsMs: chunk.chars.map((c) => c.durationMs),
              }
            : null;
          const sent = sendJson(socket, {
            audio: pcmBytes(chunk.pcm).toString('base64'),
            isFinal: null,
            normalizedAlignment: alignment,
            alignment,
            contextId: state.context.id,
          });
          if (sent) generation.firstAudioAt ??= Date.now();
        }
      });

    socket.on('message', (data, isBinary) => {
      const message = parseJson(data, isBinary) as Record<string, unknown> | undefined;
      received.push({ connection: info.index, at: Date.now(), message: message ?? String(data) });
      if (!message || typeof message !== 'object') {
        sendJson(socket, { message: 'messages must be JSON', error: 'invalid_message', code: 1008 });
        return;
      }
      if (message.close_socket === true) {
        socket.close(1000);
        return;
      }
      const id = typeof message.context_id === 'string' ? message.context_id : undefined;
      if (!id) {
        sendJson(socket, { message: 'context_id is required', error: 'invalid_message', code: 1008 });
        return;
      }
      let state = open.get(id);
      if (!state && typeof message.text !== 'string') {
        // A flush or close for a context that is not open (never opened, or already closed): nothing to do.
        return;
      }
      if (!state) {
        const context: ElevenLabsContext = {
          id,
          connection: info.index,
          voiceId,
          voiceSettings: message.voice_settings,
          generationConfig: message.generation_config,
          texts: [],
          generations: [],
          get spoken() {
            return this.generations.map((g) => g.text).join('');
          },
          closed: false,
        };
        contexts.push(context);
        state = { context, buffer: '', scheduleStep: 0, timeline: 0, queue: new SerialQueue(), failed: false };
        open.set(id, state);
      }
      const current = state;
      const now = Date.now();
      if (typeof message.text === 'string') {
        current.context.texts.push(message.text);
        if (message.text.trim() && current.context.texts.filter((t) => t.trim()).length === 1) {
          const failure = current.failed ? undefined : failures.onWork();
          if (failure?.mode === 'close') {
            socket.close(failure.code ?? 1011, failure.reason ?? 'injected failure');
            return;
          }
          if (failure?.mode === 'error') {
            current.failed = true;
            sendJson(socket, { message: failure.message ?? 'injected failure', error: failure.message ?? 'injected failure', code: 1011, contextId: id });
            return;
          }
        }
        if (current.context.texts.length > 1 || message.text.trim()) current.buffer += message.text;
        const schedule = (current.context.generationConfig as { chunk_length_schedule?: number[] } | undefined)?.chunk_length_schedule ?? DEFAULT_SCHEDULE;
        if (message.flush === true || autoMode) {
          void generate(current, current.buffer, now);
          current.buffer = '';
        } else {
          const threshold = schedule[Math.min(current.scheduleStep, schedule.length - 1)]!;
          const cut = current.buffer.lastIndexOf(' ');
          if (current.buffer.length >= threshold && cut > 0) {
            void generate(current, current.buffer.slice(0, cut + 1), now);
            current.buffer = current.buffer.slice(cut + 1);
            current.scheduleStep += 1;
          }
        }
      } else if (message.flush === true) {
        void generate(current, current.buffer, now);
        current.buffer = '';
      }
      if (message.close_context === true) {
        void generate(current, current.buffer, now);
        current.buffer = '';
        open.delete(id);
        current.context.closed = true;
        void current.queue.push(async () => {
          if (current.failed) return;
          if (sendJson(socket, { isFinal: true, contextId: id })) current.context.finalAt = Date.now();
        });
      }
    });
  }

  const server = await startVendorServer({
    authHeader: 'xi-api-key',
    apiKey: options.apiKey,
    unauthorizedBody: JSON.stringify({ detail: { status: 'invalid_api_key', message: 'Invalid API key' } }),
    failures,
    route: (path, method) => {
      if (/^\/v1\/text-to-speech\/[^/]+\/multi-stream-input$/.test(path)) return { ws: serve };
      if (method === 'POST' && /^\/v1\/text-to-speech\/[^/]+\/stream$/.test(path)) {
        return {
          http: async (req, res, info, failure) => {
            const text = await readBody(req);
            let body: { text?: unknown } = {};
            try {
              body = JSON.parse(text) as { text?: unknown };
            } catch {
              // answered below
            }
            received.push({ connection: info.index, at: Date.now(), message: body });
            const sampleRate = sampleRateOf(info.query.output_format ?? 'mp3_44100_128');
            if (typeof body.text !== 'string' || sampleRate === undefined) {
              res.writeHead(422, { 'content-type': 'application/json' });
              res.end(JSON.stringify({ detail: { status: 'invalid_request', message: 'text and a pcm_<rate> output_format are required' } }));
              return;
            }
            const injected = failure.onWork();
            if (injected?.mode === 'error') {
              res.writeHead(injected.status ?? 500, { 'content-type': 'application/json' });
              res.end(JSON.stringify({ detail: { status: 'internal_error', message: injected.message ?? 'injected failure' } }));
              return;
            }
            const speech = syntheticSpeech(body.text, { sampleRate, msPerChar: msPerChar() });
            await sleep(live.firstByteDelayMs ?? 0);
            res.writeHead(200, { 'content-type': 'audio/pcm' });
            for (const [i, chunk] of chunkSpeech(speech, chunkMs()).entries()) {
              if (i > 0) await sleep(live.chunkIntervalMs ?? 0);
              if (res.destroyed) return;
              res.write(pcmBytes(chunk.pcm));
              if (injected?.mode === 'close') {
                // Cut off after the first audio, as a vendor failing mid-stream does.
                res.destroy();
                return;
              }
            }
            res.end();
          },
        };
      }
      if (method === 'GET' && path === '/v1/voices') {
        return {
          http: (_req, res) => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ voices: [{ voice_id: 'fake-voice', name: 'Fake', category: 'premade' }] }));
          },
        };
      }
      return undefined;
    },
  });
  return {
    url: `${server.origin}/v1`,
    origin: server.origin,
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
