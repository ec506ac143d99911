import { randomUUID } from 'node:crypto';
import type { WebSocket } from 'ws';
import {
  type ConnectionInfo,
  FailureSwitch,
  SerialQueue,
  type VendorFailure,
  after,
  parseJson,
  sendBinary,
  sendJson,
  sleep,
  startVendorServer,
} from './fake-vendor-server.ts';
import { DEFAULT_MS_PER_CHAR, chunkSpeech, pcmBytes, syntheticSpeech } from './synthetic-voice.ts';

/**
 * A fake Deepgram on 127.0.0.1 speaking what @livekit/agents-plugin-deepgram uses (key in
 * `Authorization: Token <key>`):
 *
 * - Streaming recognition, the WebSocket `/v1/listen` with the plugin's query (`encoding=linear16`,
 *   `sample_rate`, `channels`, `interim_results`, `vad_events`, `endpointing`, `utterance_end_ms`,
 *   `language`, `keyterm`…): binary PCM in, JSON out. It cannot recognise speech, so it is
 *   scripted: an energy gate (RMS over 10 ms windows, with a hangover) finds the voiced segments
 *   in the audio it receives, and the Nth segment says the Nth of `transcripts`. While a segment
 *   is voiced it sends `SpeechStarted` (with `vad_events=true`) and interim `Results` revealing the
 *   words at `msPerWord`; once the segment's speech has ended (`hangoverMs` of silence) it sends one
 *   `Results` with `is_final` and `speech_final`, the words timed in seconds from the start of the
 *   connection's audio, `finalDelayMs` after the segment's last voiced audio arrived (or as soon as
 *   the end is known, when that is later); then `UtteranceEnd` once `utterance_end_ms` of silence
 *   followed the last word, when the query asks for it. `Finalize` ends a segment at once
 *   (`from_finalize: true`); `CloseStream` ends it, sends `Metadata` and closes; `KeepAlive` is
 *   recorded. A segment beyond the script, or a script entry of `''`, is recognised as nothing
 *   (an empty final), which is what noise gets.
 *
 *   The plugin sends audio in 100 ms messages and stops sending a second after the voice stops
 *   (its energy filter), so the segments' times are on the timeline of the audio received, as
 *   Deepgram's are. Pauses: espeak-ng pauses about 150 ms at a comma and 300 ms at a sentence's
 *   end, so with the default 200 ms hangover a fixture of two sentences is two segments.
 *
 * - Streaming synthesis (Aura), the WebSocket `/v1/speak` (`{type: 'Speak', text}`, `Flush`,
 *   `Clear`, `Close`): binary linear16 audio at the query's `sample_rate`, then `Flushed`. Deepgram
 *   sends no word timings (the plugin claims none). Its REST synthesis always dials https on 443.
 *
 *   const deepgram = await startFakeDeepgram({ transcripts: ['Hello there.'], finalDelayMs: 100 });
 *   new deepgramPlugin.STT({ apiKey: 'test-key', baseUrl: deepgram.url });
 */
export interface FakeDeepgramOptions {
  /** The key to require after `Token `; absent: any key. */
  apiKey?: string;
  /** What the Nth voiced segment says, counted across the fake's connections (append to `fake.transcripts` later). */
  transcripts?: string[];
  /** Decides a segment's words instead of `transcripts` (e.g. per connection for concurrent calls). */
  transcriptFor?: (segment: { index: number; connection: number; segmentOfConnection: number; query: ConnectionInfo['query'] }) => string;
  /** Final transcript this long after the segment's last voiced audio arrived (default 0). */
  finalDelayMs?: number;
  /** Silence that ends a segment (default 200 ms). */
  hangoverMs?: number;
  /** The RMS (of samples scaled to ±1) from which a 10 ms window is voiced (default 0.01, -40 dBFS). */
  thresholdRms?: number;
  /** Voiced audio a segment needs to count (default 60 ms): shorter bursts are clicks, not speech. */
  minSpeechMs?: number;
  /** Audio between interim results (default 250 ms). */
  interimIntervalMs?: number;
  /** How fast interim results reveal the words (default 300 ms a word). */
  msPerWord?: number;
  /** Synthesis: wait between a Flush and the first audio (default 0). */
  firstByteDelayMs?: number;
  /** Synthesis: audio per binary message (default 100 ms). */
  chunkMs?: number;
  /** Synthesis: wait between binary messages (default 0). */
  chunkIntervalMs?: number;
  /** Synthesis: the synthetic voice's pace (default 60 ms a character). */
  msPerChar?: number;
  failure?: VendorFailure;
}

interface DeepgramWord {
  word: string;
  start: number;
  end: number;
  confidence: number;
  punctuated_word: string;
}

interface DeepgramSegment {
  /** Counts from 0 across the fake. */
  index: number;
  connection: number;
  transcript: string;
  /** Seconds on the connection's audio timeline: first and last voiced audio. */
  start: number;
  end: number;
  /** Date.now() estimates of when the segment's first and last voiced audio were captured. */
  startedAt: number;
  lastVoicedAt: number;
  /** When the fake knew the speech had ended, and when it sent the final. */
  endedAt?: number;
  finalAt?: number;
  fromFinalize: boolean;
  interims: number;
}

interface DeepgramListen {
  connection: number;
  requestId: string;
  query: ConnectionInfo['query'];
  audioBytes: number;
  /** Every JSON message sent, in order. */
  sent: Record<string, unknown>[];
  closedAt?: number;
}

interface DeepgramSpeakGeneration {
  text: string;
  requestedAt: number;
  firstAudioAt?: number;
  audioMs: number;
}

interface DeepgramSpeak {
  connection: number;
  query: ConnectionInfo['query'];
  texts: string[];
  generations: DeepgramSpeakGeneration[];
  readonly spoken: string;
}

interface DeepgramReceived {
  connection: number;
  at: number;
  /** The JSON control messages (KeepAlive, Finalize, CloseStream, Speak, Flush…); audio is counted in `listens`. */
  message: unknown;
}

export interface FakeDeepgram {
  /** The plugin's `baseUrl` for both STT and TTS: `http://127.0.0.1:<port>` (the plugin swaps in ws:). */
  url: string;
  readonly requests: number;
  connections: ConnectionInfo[];
  received: DeepgramReceived[];
  listens: DeepgramListen[];
  segments: DeepgramSegment[];
  speaks: DeepgramSpeak[];
  /** The script, read as segments come: push to extend it. */
  transcripts: string[];
  options: FakeDeepgramOptions;
  fail(failure?: VendorFailure, times?: number): void;
  close(): Promise<void>;
}

const MODEL_UUID = '1ed36bac-f71c-4f3f-a31f-02fd6525c489';

export async function startFakeDeepgram(options: FakeDeepgramOptions = {}): Promise<FakeDeepgram> {
  const live = { ...options };
  const transcripts = options.transcripts ?? [];
  const received: DeepgramReceived[] = [];
  const listens: DeepgramListen[] = [];
  const segments: DeepgramSegment[] = [];
  const speaks: DeepgramSpeak[] = [];
  const failures = new FailureSwitch(options.failure);
  const requestIds = new Map<string, string>();

  function listen(socket: WebSocket, info: ConnectionInfo) {
    const query = info.query;
    const flag = (name: string) => query[name] === 'true';
    const rate = Number(query.sample_rate);
    const channels = Number(query.channels ?? 1);
    const utteranceEndMs = query.utterance_end_ms === undefined ? undefined : Number(query.utterance_end_ms);
    const window = Math.max(1, Math.round(rate / 100));
    const record: DeepgramListen = { connection: info.index, requestId: requestIds.get(info.id) ?? randomUUID(), query, audioBytes: 0, sent: [] };
    listens.push(record);
    const model = typeof query.model === 'string' ? query.model : 'nova-3';
    const metadata = { request_id: record.requestId, model_info: { name: `general-${model}`, version: '2024-01-01.0', arch: model }, model_uuid: MODEL_UUID };
    // Messages leave in the order of the audio they describe: a final waiting out finalDelayMs
    // holds back what later audio produced (audio can arrive faster than it is spoken).
    const outbox: { message?: Record<string, unknown> }[] = [];
    const drain = () => {
      while (outbox[0]?.message) {
        const { message } = outbox.shift()!;
        if (sendJson(socket, message)) record.sent.push(message!);
      }
    };
    const send = (message: Record<string, unknown>) => {
      outbox.push({ message });
      drain();
    };
    /** A place in the outbox for a message that is not ready yet. */
    const reserve = () => {
      const slot: { message?: Record<string, unknown> } = {};
      outbox.push(slot);
      return (message: Record<string, unknown>) => {
        slot.message = message;
        drain();
      };
    };

    let samples = 0; // per channel, through the last complete window
    let carry: number[] = []; // channel 0 samples of an incomplete window
    let oddByte: Buffer | undefined;
    let frameRemainder = 0; // interleaved samples of an incomplete multi-channel frame, dropped from carry
    let segmentOfConnection = 0;
    let worked = false;
    interface Open {
      startSample: number;
      lastVoicedEnd: number;
      voiced: number;
      startedAt: number;
      lastVoicedAt: number;
      lastInterim: number;
      segment?: DeepgramSegment;
      words?: { punctuated: string; plain: string }[];
    }
    let open: Open | undefined;
    let utterance: { lastWordEnd: number } | undefined;
    const pending = new Set<Promise<void>>();

    const wordsOf = (text: string) =>
      text
        .split(/\s+/)
        .filter(Boolean)
        .map((punctuated) => ({ punctuated, plain: punctuated.toLowerCase().replace(/[^\p{L}\p{N}'-]/gu, '') || punctuated.toLowerCase() }));

    const timed = (words: { punctuated: string; plain: string }[], from: number, to: number): DeepgramWord[] => {
      // Spread over the voiced span by length, as if the speaker kept one pace.
      const weights = words.map((w) => w.plain.length + 1);
      const total = weights.reduce((a, b) => a + b, 0) || 1;
      let at = from;
      return words.map((w, i) => {
        const start = at;
        at = i === words.length - 1 ? to : at + ((to - from) * weights[i]!) / total;
        return { word: w.plain, start: round(start), end: round(at), confidence: 0.99, punctuated_word: w.punctuated };
      });
    };

    const results = (segment: DeepgramSegment, words: DeepgramWord[], isFinal: boolean, speechFinal: boolean, fromFinalize: boolean) => ({
      type: 'Results',
      channel_index: [0, channels],
      duration: round(segment.end - segment.start),
      start: round(segment.start),
      is_final: isFinal,
      speech_final: speechFinal,
      from_finalize: fromFinalize,
      channel: {
        alternatives: [
          {
            transcript: words.map((w) => w.punctuated_word).join(' '),
            confidence: words.length ? 0.99 : 0,
            words,
            ...(query.language === 'multi' ? { languages: ['en'] } : {}),
          },
        ],
      },
      metadata,
    });

    const announce = (state: Open) => {
      const index = segments.length;
      const transcript =
        live.transcriptFor?.({ index, connection: info.index, segmentOfConnection, query }) ?? transcripts[index] ?? '';
      segmentOfConnection += 1;
      const segment: DeepgramSegment = {
        index,
        connection: info.index,
        transcript,
        start: state.startSample / rate,
        end: state.lastVoicedEnd / rate,
        startedAt: state.startedAt,
        lastVoicedAt: state.lastVoicedAt,
        fromFinalize: false,
        interims: 0,
      };
      segments.push(segment);
      state.segment = segment;
      state.words = wordsOf(transcript);
      state.lastInterim = state.startSample;
      utterance = undefined;
      if (flag('vad_events')) send({ type: 'SpeechStarted', channel: [0, channels], timestamp: round(segment.start) });
    };

    const interim = (state: Open) => {
      const { segment, words } = state;
      if (!segment || !words?.length || !flag('interim_results')) return;
      const heard = Math.min(words.length, Math.max(1, Math.ceil((state.voiced / rate) * 1000 / (live.msPerWord ?? 300))));
      segment.end = state.lastVoicedEnd / rate;
      send(results(segment, timed(words.slice(0, heard), segment.start, segment.end), false, false, false));
      segment.interims += 1;
      state.lastInterim = samples;
    };

    /** Ends the open segment: its final goes out finalDelayMs after its last voiced audio. */
    const end = (fromFinalize: boolean) => {
      const state = open;
      open = undefined;
      if (!state?.segment || !state.words) return;
      const { segment, words } = state;
      segment.end = state.lastVoicedEnd / rate;
      segment.lastVoicedAt = state.lastVoicedAt;
      segment.endedAt = Date.now();
      segment.fromFinalize = fromFinalize;
      const delay = state.lastVoicedAt + (live.finalDelayMs ?? 0) - Date.now();
      const deliver = reserve();
      const sent = new Promise<void>((resolve) => {
        after(delay, () => {
          const finalWords = timed(words, segment.start, segment.end);
          deliver(results(segment, finalWords, true, !fromFinalize, fromFinalize));
          segment.finalAt = Date.now();
          resolve();
        });
      });
      pending.add(sent);
      void sent.then(() => pending.delete(sent));
      // UtteranceEnd counts its silence from the last word on the audio's timeline; sent through
      // the outbox, it still follows the final.
      if (words.length) utterance = { lastWordEnd: round(segment.end) };
      checkUtteranceEnd();
    };

    const checkUtteranceEnd = () => {
      if (!utterance || open?.segment || utteranceEndMs === undefined) return;
      if ((samples / rate - utterance.lastWordEnd) * 1000 >= utteranceEndMs) {
        send({ type: 'UtteranceEnd', channel: [0, channels], last_word_end: utterance.lastWordEnd });
        utterance = undefined;
      }
    };

    const audio = (data: Buffer) => {
      const arrivedAt = Date.now();
      record.audioBytes += data.length;
      let bytes = oddByte ? Buffer.concat([oddByte, data]) : data;
      oddByte = bytes.length % 2 ? bytes.subarray(bytes.length - 1) : undefined;
      if (oddByte) bytes = bytes.subarray(0, bytes.length - 1);
      // Channel 0 of interleaved samples.
      const count = bytes.length / 2;
      const mono: number[] = [];
      for (let i = frameRemainder ? channels - frameRemainder : 0; i < count; i += channels) mono.push(bytes.readInt16LE(i * 2));
      frameRemainder = (frameRemainder + count) % channels;
      const endOfMessage = samples + carry.length + mono.length;
      carry = carry.concat(mono);
      const threshold = live.thresholdRms ?? 0.01;
      const hangover = ((live.hangoverMs ?? 200) / 1000) * rate;
      const minSpeech = ((live.minSpeechMs ?? 60) / 1000) * rate;
      while (carry.length >= window) {
        const frame = carry.splice(0, window);
        const start = samples;
        samples += window;
        let energy = 0;
        for (const sample of frame) energy += (sample / 32768) ** 2;
        const voiced = Math.sqrt(energy / window) >= threshold;
        // When this window was captured, if the caller sends audio as it is spoken.
        const capturedAt = arrivedAt - ((endOfMessage - samples) / rate) * 1000;
        if (voiced) {
          open ??= { startSample: start, lastVoicedEnd: samples, voiced: 0, startedAt: capturedAt - (window / rate) * 1000, lastVoicedAt: capturedAt, lastInterim: start };
          open.lastVoicedEnd = samples;
          open.lastVoicedAt = capturedAt;
          open.voiced += window;
          if (!open.segment && open.voiced >= minSpeech) announce(open);
        } else if (open && samples - open.lastVoicedEnd >= hangover) {
          end(false);
        }
      }
      if (open?.segment && samples - open.lastInterim >= ((live.interimIntervalMs ?? 250) / 1000) * rate) interim(open);
      checkUtteranceEnd();
    };

    socket.on('message', (data, isBinary) => {
      if (isBinary) {
        if (!worked) {
          worked = true;
          const failure = failures.onWork();
          if (failure?.mode === 'close') {
            socket.close(failure.code ?? 1011, failure.reason ?? 'injected failure');
            return;
          }
          if (failure?.mode === 'error') {
            send({ type: 'Error', description: failure.message ?? 'injected failure', message: '', variant: 'error' });
            socket.close(1011, failure.message ?? 'injected failure');
            return;
          }
        }
        audio(data as Buffer);
        return;
      }
      const message = parseJson(data, isBinary) as { type?: unknown } | undefined;
      received.push({ connection: info.index, at: Date.now(), message: message ?? String(data) });
      if (message?.type === 'Finalize') {
        end(true);
      } else if (message?.type === 'CloseStream') {
        end(false);
        void Promise.all(pending).then(() => {
          send({
            type: 'Metadata',
            transaction_key: 'deprecated',
            request_id: record.requestId,
            sha256: '',
            created: new Date().toISOString(),
            duration: round(samples / rate),
            channels,
            models: [MODEL_UUID],
            model_info: { [MODEL_UUID]: metadata.model_info },
          });
          socket.close(1000);
        });
      }
    });
    socket.on('close', () => {
      record.closedAt = Date.now();
    });
  }

  function speak(socket: WebSocket, info: ConnectionInfo) {
    const rate = Number(info.query.sample_rate ?? 24000);
    const record: DeepgramSpeak = {
      connection: info.index,
      query: info.query,
      texts: [],
      generations: [],
      get spoken() {
        return this.generations.map((g) => g.text).join('');
      },
    };
    speaks.push(record);
    const queue = new SerialQueue();
    let buffer = '';
    let sequence = 0;
    let cleared = 0;
    let failed = false;
    sendJson(socket, { type: 'Metadata', request_id: requestIds.get(info.id) ?? randomUUID(), model_name: info.query.model, model_version: '2025-01-01.0', model_uuid: MODEL_UUID });

    socket.on('message', (data, isBinary) => {
      const message = parseJson(data, isBinary) as { type?: unknown; text?: unknown } | undefined;
      received.push({ connection: info.index, at: Date.now(), message: message ?? String(data) });
      if (failed) return;
      if (message?.type === 'Speak' && typeof message.text === 'string') {
        if (record.texts.length === 0) {
          const failure = failures.onWork();
          if (failure?.mode === 'close') {
            socket.close(failure.code ?? 1011, failure.reason ?? 'injected failure');
            return;
          }
          if (failure?.mode === 'error') {
            failed = true;
            sendJson(socket, { type: 'Error', err_code: 'INTERNAL_SERVER_ERROR', err_msg: failure.message ?? 'injected failure' });
            return;
          }
        }
        record.texts.push(message.text);
        buffer += message.text;
      } else if (message?.type === 'Flush') {
        const text = buffer;
        buffer = '';
        const requestedAt = Date.now();
        const generation = cleared;
        const id = sequence++;
        void queue.push(async () => {
          if (text.trim()) {
            const speech = syntheticSpeech(text, { sampleRate: rate, msPerChar: live.msPerChar ?? DEFAULT_MS_PER_CHAR });
            const entry: DeepgramSpeakGeneration = { text, requestedAt, audioMs: speech.durationMs };
            record.generations.push(entry);
            await sleep((live.firstByteDelayMs ?? 0) - (Date.now() - requestedAt));
            for (const [i, chunk] of chunkSpeech(speech, live.chunkMs ?? 100).entries()) {
              if (i > 0) await sleep(live.chunkIntervalMs ?? 0);
              if (generation !== cleared) return;
              if (sendBinary(socket, pcmBytes(chunk.pcm))) entry.firstAudioAt ??= Date.now();
            }
          }
          if (generation === cleared) sendJson(socket, { type: 'Flushed', sequence_id: id });
        });
      } else if (message?.type === 'Clear') {
        buffer = '';
        cleared += 1;
        sendJson(socket, { type: 'Cleared', sequence_id: sequence });
      } else if (message?.type === 'Close') {
        void queue.push(async () => socket.close(1000));
      } else {
        sendJson(socket, { type: 'Warning', warn_code: 'UNKNOWN_MESSAGE_TYPE', warn_msg: `unknown message type ${String(message?.type)}` });
      }
    });
  }

  const badRequest = (message: string) => ({ status: 400, body: JSON.stringify({ err_code: 'Bad Request', err_msg: message, request_id: randomUUID() }) });
  const server = await startVendorServer({
    authHeader: 'authorization',
    keyFrom: (value) => /^Token (.+)$/i.exec(value)?.[1],
    apiKey: options.apiKey,
    unauthorizedBody: JSON.stringify({ err_code: 'INVALID_AUTH', err_msg: 'Invalid credentials.', request_id: randomUUID() }),
    failures,
    route: (path) => {
      const upgradeHeaders = (info: ConnectionInfo) => {
        const id = randomUUID();
        requestIds.set(info.id, id);
        return { 'dg-request-id': id };
      };
      if (path === '/v1/listen') {
        return {
          validate: (info) => {
            const { encoding, sample_rate: rate, channels } = info.query;
            if (encoding !== 'linear16') return badRequest('the fake takes encoding=linear16 only');
            if (typeof rate !== 'string' || !(Number(rate) > 0) || !Number.isInteger(Number(rate))) return badRequest('sample_rate is required with raw audio');
            if (channels !== undefined && !(Number(channels) >= 1)) return badRequest('channels must be a positive integer');
            return undefined;
          },
          upgradeHeaders,
          ws: listen,
        };
      }
      if (path === '/v1/speak') {
        return {
          validate: (info) => {
            const { encoding, sample_rate: rate } = info.query;
            if (encoding !== undefined && encoding !== 'linear16') return badRequest('the fake speaks encoding=linear16 only');
            if (rate !== undefined && !(Number(rate) > 0)) return badRequest('sample_rate must be a positive integer');
            return undefined;
          },
          upgradeHeaders,
          ws: speak,
        };
      }
      return undefined;
    },
  });

  return {
    url: server.origin,
    get requests() {
      return server.requests;
    },
    connections: server.connections,
    received,
    listens,
    segments,
    speaks,
    transcripts,
    options: live,
    fail: (failure, times) => failures.set(failure, times),
    close: server.close,
  };
}

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}
