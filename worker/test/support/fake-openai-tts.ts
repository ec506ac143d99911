import { FailureSwitch, type FakeVoiceOptions, type VendorFailure, readBody, sleep, startVendorServer, type ConnectionInfo } from './fake-vendor-server.ts';
import { DEFAULT_MS_PER_CHAR, chunkSpeech, pcmBytes, syntheticSpeech } from './synthetic-voice.ts';

/**
 * A fake OpenAI speech endpoint on 127.0.0.1 for @livekit/agents-plugin-openai's TTS:
 * `POST /v1/audio/speech` (`Authorization: Bearer <key>`) with `{model, input, voice,
 * response_format: 'pcm', speed, instructions}`, answered with raw 16-bit PCM at 24 kHz mono in a
 * chunked body, as OpenAI streams it. OpenAI sends no word timings (the plugin claims none and
 * does not stream text in). Chat completions are test/support/fake-openai.ts.
 *
 *   const speech = await startFakeOpenAiTts({ firstByteDelayMs: 150 });
 *   new openai.TTS({ apiKey: 'test-key', baseURL: speech.url });
 */
/** `apiKey` is checked as the bearer token. */
export type FakeOpenAiTtsOptions = FakeVoiceOptions;

interface OpenAiSpeechRequest {
  connection: number;
  body: Record<string, unknown>;
  requestedAt: number;
  firstAudioAt?: number;
  audioMs?: number;
}

export interface FakeOpenAiTts {
  /** The plugin's `baseURL`: `http://127.0.0.1:<port>/v1`. */
  url: string;
  readonly requests: number;
  connections: ConnectionInfo[];
  /** Every speech request's body, in order. */
  received: OpenAiSpeechRequest[];
  options: FakeOpenAiTtsOptions;
  fail(failure?: VendorFailure, times?: number): void;
  close(): Promise<void>;
}

const OPENAI_TTS_SAMPLE_RATE = 24_000;

export async function startFakeOpenAiTts(options: FakeOpenAiTtsOptions = {}): Promise<FakeOpenAiTts> {
  const live = { ...options };
  const received: OpenAiSpeechRequest[] = [];
  const failures = new FailureSwitch(options.failure);
  const error = (status: number, message: string, type = 'invalid_request_error') =>
    JSON.stringify({ error: { message, type, param: null, code: null } });

  const server = await startVendorServer({
    authHeader: 'authorization',
    keyFrom: (value) => /^Bearer (.+)$/i.exec(value)?.[1],
    apiKey: options.apiKey,
    unauthorizedBody: error(401, 'Incorrect API key provided.'),
    failures,
    route: (path, method) =>
      method === 'POST' && path === '/v1/audio/speech'
        ? {
            http: async (req, res, info) => {
              const text = await readBody(req);
              let body: Record<string, unknown> = {};
              try {
                body = JSON.parse(text) as Record<string, unknown>;
              } catch {
                // answered below
              }
              const request: OpenAiSpeechRequest = { connection: info.index, body, requestedAt: Date.now() };
              received.push(request);
              if (typeof body.input !== 'string' || typeof body.model !== 'string' || typeof body.voice !== 'string') {
                res.writeHead(400, { 'content-type': 'application/json' });
                res.end(error(400, 'model, input and voice are required'));
                return;
              }
              if (body.response_format !== 'pcm') {
                res.writeHead(400, { 'content-type': 'application/json' });
                res.end(error(400, 'the fake speaks response_format "pcm" only'));
                return;
              }
              const injected = failures.onWork();
              if (injected?.mode === 'error') {
                res.writeHead(injected.status ?? 500, { 'content-type': 'application/json' });
                res.end(error(injected.status ?? 500, injected.message ?? 'injected failure', 'server_error'));
                return;
              }
              const speech = syntheticSpeech(body.input, { sampleRate: OPENAI_TTS_SAMPLE_RATE, msPerChar: live.msPerChar ?? DEFAULT_MS_PER_CHAR });
              request.audioMs = speech.durationMs;
              await sleep(live.firstByteDelayMs ?? 0);
              res.writeHead(200, { 'content-type': 'audio/pcm', 'transfer-encoding': 'chunked' });
              for (const [i, chunk] of chunkSpeech(speech, live.chunkMs ?? 100).entries()) {
                if (i > 0) await sleep(live.chunkIntervalMs ?? 0);
                if (res.destroyed) return;
                res.write(pcmBytes(chunk.pcm));
                request.firstAudioAt ??= Date.now();
                if (injected?.mode === 'close') {
                  // Cut off after the first audio, as a vendor failing mid-stream does.
                  res.destroy();
                  return;
                }
              }
              res.end();
            },
          }
        : undefined,
  });

  return {
    url: `${server.origin}/v1`,
    get requests() {
      return server.requests;
    },
    connections: server.connections,
    received,
    options: live,
    fail: (failure, times) => failures.set(failure, times),
    close: server.close,
  };
}
