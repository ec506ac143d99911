import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { APIError, initializeLogger, llm, stt, tts, type APIConnectOptions } from '@livekit/agents';
import * as cartesia from '@livekit/agents-plugin-cartesia';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import * as elevenlabs from '@livekit/agents-plugin-elevenlabs';
import * as openai from '@livekit/agents-plugin-openai';
import type { AudioFrame } from '@livekit/rtc-node';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import { startFakeOpenAi, streamChunks } from '../../test/support/fake-openai.ts';
import { startFakeCartesia } from './support/fake-cartesia.ts';
import { startFakeDeepgram } from './support/fake-deepgram.ts';
import { startFakeElevenLabs } from './support/fake-elevenlabs.ts';
import { startFakeOpenAiTts } from './support/fake-openai-tts.ts';
import type { VendorFailure } from './support/fake-vendor-server.ts';
import { audioFrames, concat, durationMs, noise, realtime, silence, speechPcm } from './support/speech.ts';
import { syntheticSpeech } from './support/synthetic-voice.ts';

/*
 * The fake vendors against the real LiveKit plugins: what the worker's tests and the voice
 * benchmark stand on. A fake that drifts from what a plugin sends or parses fails here.
 */

beforeAll(() => {
  initializeLogger({ pretty: false, level: 'fatal' });
});

const NO_RETRY: APIConnectOptions = { maxRetry: 0, retryIntervalMs: 0, timeoutMs: 5_000 };

async function synthesize(stream: AsyncIterable<tts.SynthesizedAudio | typeof tts.SynthesizeStream.END_OF_STREAM>) {
  const frames: AudioFrame[] = [];
  const words: { text: string; startTime?: number; endTime?: number }[] = [];
  let firstFrameAt: number | undefined;
  for await (const event of stream) {
    if (event === tts.SynthesizeStream.END_OF_STREAM) continue;
    firstFrameAt ??= Date.now();
    frames.push(event.frame);
    for (const word of event.timedTranscripts ?? []) words.push({ text: word.text, startTime: word.startTime, endTime: word.endTime });
  }
  const samples = frames.reduce((total, frame) => total + frame.samplesPerChannel, 0);
  return { frames, words, samples, firstFrameAt, sampleRates: [...new Set(frames.map((f) => f.sampleRate))] };
}

/** The framework emits a TTS failure as an 'error' event; an unheard one would throw. */
function errorsOf(engine: tts.TTS) {
  const errors: unknown[] = [];
  engine.on('error', (event) => errors.push(event.error));
  return errors;
}

describe('speech fixtures', () => {
  const rms = (pcm: Int16Array) => Math.sqrt(pcm.reduce((sum, x) => sum + (x / 32768) ** 2, 0) / pcm.length);

  it('speak the text with espeak-ng, trimmed to the voice, the same on every call, at any rate', () => {
    const pcm = speechPcm('Hello there');
    expect(speechPcm('Hello there')).toEqual(pcm);
    expect(existsSync(join(tmpdir(), 'parley-speech'))).toBe(true);
    expect(durationMs(pcm)).toBeGreaterThan(500);
    expect(durationMs(pcm)).toBeLessThan(1500);
    expect(rms(pcm.subarray(0, 160))).toBeGreaterThanOrEqual(0.003);
    expect(rms(pcm.subarray(pcm.length - 160))).toBeGreaterThanOrEqual(0.003);
    expect(Math.abs(durationMs(speechPcm('Hello there', { sampleRate: 8_000 }), 8_000) - durationMs(pcm))).toBeLessThanOrEqual(10);
    expect(() => speechPcm('  ')).toThrow('speechPcm: the text is empty');
  });

  it('make silence, steady noise, and whole 10 or 20 ms AudioFrames', () => {
    expect(silence(250)).toEqual(new Int16Array(4_000));
    expect(rms(noise(1_000))).toBeCloseTo(0.02, 3);
    expect(noise(50, { seed: 7 })).toEqual(noise(50, { seed: 7 }));
    const frames = audioFrames(concat(noise(25), silence(0)), { frameMs: 20 });
    expect(frames.map((f) => [f.sampleRate, f.channels, f.samplesPerChannel])).toEqual([
      [16_000, 1, 320],
      [16_000, 1, 320],
    ]);
    expect(Array.from(frames[1]!.data.subarray(80))).toEqual(new Array(240).fill(0));
    expect(audioFrames(silence(100, 48_000), { sampleRate: 48_000 })).toHaveLength(10);
  });
});

describe('fake Deepgram', () => {
  const first = 'Hello there, I need some help.';
  const second = 'Book a table for two.';

  it('streams interim and final transcripts of the scripted text to the real STT plugin fed 48 kHz frames, the final finalDelayMs after the speech ends', async () => {
    const fake = await startFakeDeepgram({ apiKey: 'test-key', transcripts: [first, second], finalDelayMs: 400 });
    try {
      // 48 kHz, as a LiveKit room delivers it: the plugin resamples to 16 kHz (through rtc-node's FFI).
      const rate = 48_000;
      const one = speechPcm(first, { sampleRate: rate });
      const two = speechPcm(second, { sampleRate: rate });
      const pcm = concat(silence(200, rate), one, silence(800, rate), two, silence(1200, rate));
      const firstEndsMs = 200 + durationMs(one, rate);
      const secondStartsMs = firstEndsMs + 800;
      const recognizer = new deepgram.STT({ apiKey: 'test-key', baseUrl: fake.url });
      const stream = recognizer.stream();
      const events: { event: stt.SpeechEvent; at: number }[] = [];
      const reading = (async () => {
        for await (const event of stream) events.push({ event, at: Date.now() });
      })();

      let firstEndPushedAt = 0;
      let pushedMs = 0;
      for await (const frame of realtime(audioFrames(pcm, { sampleRate: rate }))) {
        stream.pushFrame(frame);
        pushedMs += 10;
        if (pushedMs >= firstEndsMs && !firstEndPushedAt) firstEndPushedAt = Date.now();
      }
      stream.endInput();
      await reading;

      const speech = events.filter(({ event }) => event.type !== stt.SpeechEventType.RECOGNITION_USAGE);
      const kinds = speech.map(({ event }) => stt.SpeechEventType[event.type]).filter((kind, i, all) => kind !== 'INTERIM_TRANSCRIPT' || all[i - 1] !== kind);
      expect(kinds).toEqual([
        'START_OF_SPEECH',
        'INTERIM_TRANSCRIPT',
        'FINAL_TRANSCRIPT',
        'END_OF_SPEECH',
        'START_OF_SPEECH',
        'INTERIM_TRANSCRIPT',
        'FINAL_TRANSCRIPT',
        'END_OF_SPEECH',
      ]);
      const finals = speech.filter(({ event }) => event.type === stt.SpeechEventType.FINAL_TRANSCRIPT);
      expect(finals.map(({ event }) => event.alternatives![0].text)).toEqual([first, second]);
      for (const { event } of speech.filter(({ event }) => event.type === stt.SpeechEventType.INTERIM_TRANSCRIPT)) {
        const text = event.alternatives![0].text;
        expect([first, second].some((script) => script.startsWith(text))).toBe(true);
      }

      const words = finals[0]!.event.alternatives![0].words!;
      expect(words.map((w) => w.text)).toEqual(['Hello', 'there,', 'I', 'need', 'some', 'help.']);
      expect(words[0]!.startTime).toBeCloseTo(0.2, 1);
      expect(Math.abs(words.at(-1)!.endTime! - firstEndsMs / 1000)).toBeLessThan(0.05);
      for (let i = 1; i < words.length; i++) expect(words[i]!.startTime).toBeGreaterThanOrEqual(words[i - 1]!.endTime!);
      expect(Math.abs(finals[1]!.event.alternatives![0].startTime - secondStartsMs / 1000)).toBeLessThan(0.05);

      // The final comes finalDelayMs after the speech ended: on the fake's clock and the caller's.
      const [segment] = fake.segments;
      expect(segment!.finalAt! - segment!.lastVoicedAt).toBeGreaterThanOrEqual(400);
      expect(segment!.finalAt! - segment!.lastVoicedAt).toBeLessThan(550);
      // The caller's clock: the gate (-40 dBFS) hears the voice end a few windows before the
      // fixture's trimmed end (-50 dBFS), as the voice fades out.
      expect(finals[0]!.at - firstEndPushedAt).toBeGreaterThanOrEqual(340);
      expect(finals[0]!.at - firstEndPushedAt).toBeLessThan(600);

      expect(fake.segments.map((s) => s.transcript)).toEqual([first, second]);
      expect(fake.connections[0]!.headers.authorization).toBe('Token test-key');
      expect(fake.listens[0]!.query).toMatchObject({
        encoding: 'linear16',
        sample_rate: '16000',
        channels: '1',
        interim_results: 'true',
        vad_events: 'true',
        endpointing: '25',
        language: 'en-US',
        model: 'nova-3',
      });
      expect(fake.received.map((r) => r.message)).toContainEqual({ type: 'CloseStream' });
      expect(fake.listens[0]!.sent.at(-1)).toMatchObject({ type: 'Metadata', request_id: fake.listens[0]!.requestId });
    } finally {
      await fake.close();
    }
  });

  it('speaks the protocol to a raw client: clicks ignored, SpeechStarted, finals with word timings, UtteranceEnd, an unscripted segment as nothing, Finalize, CloseStream', async () => {
    const fake = await startFakeDeepgram({ transcripts: ['One two three.'] });
    try {
      const socket = new WebSocket(`${fake.url.replace('http', 'ws')}/v1/listen?encoding=linear16&sample_rate=16000&channels=1&interim_results=true&vad_events=true&utterance_end_ms=1000`, {
        headers: { Authorization: 'Token any-key' },
      });
      const messages: Record<string, unknown>[] = [];
      socket.on('message', (data) => messages.push(JSON.parse(String(data)) as Record<string, unknown>));
      const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));

      const words = speechPcm('One two three.');
      const pcm = concat(silence(100), noise(30, { rms: 0.1 }), silence(300), words, silence(1500), speechPcm('And more'), silence(400), speechPcm('Cut short'));
      for (let at = 0; at < pcm.length; at += 1600) socket.send(Buffer.from(pcm.slice(at, at + 1600).buffer));
      await vi.waitFor(() => expect(fake.segments).toHaveLength(3));
      socket.send(JSON.stringify({ type: 'Finalize' }));
      await vi.waitFor(() => expect(fake.segments[2]!.finalAt).toBeDefined());
      socket.send(JSON.stringify({ type: 'CloseStream' }));
      expect(await closed).toBe(1000);

      const startsAt = (100 + 30 + 300) / 1000;
      const types = messages.map((m) => (m.type === 'Results' ? `Results${m.is_final ? (m.speech_final ? ':speech_final' : ':final') : ''}` : m.type));
      expect(types.filter((t, i) => t !== 'Results' || types[i - 1] !== t)).toEqual([
        'SpeechStarted',
        'Results',
        'Results:speech_final',
        'UtteranceEnd',
        'SpeechStarted',
        'Results:speech_final',
        'SpeechStarted',
        'Results:final',
        'Metadata',
      ]);
      expect(messages[0]).toEqual({ type: 'SpeechStarted', channel: [0, 1], timestamp: startsAt });
      const final = messages.find((m) => m.speech_final === true) as {
        start: number;
        from_finalize: boolean;
        channel: { alternatives: { transcript: string; words: { word: string; punctuated_word: string; start: number; end: number }[] }[] };
      };
      const [alternative] = final.channel.alternatives;
      expect(alternative!.transcript).toBe('One two three.');
      expect(alternative!.words.map((w) => [w.word, w.punctuated_word])).toEqual([
        ['one', 'One'],
        ['two', 'two'],
        ['three', 'three.'],
      ]);
      expect(final.start).toBe(startsAt);
      expect(alternative!.words[0]!.start).toBe(startsAt);
      expect(Math.abs(alternative!.words[2]!.end - (startsAt + durationMs(words) / 1000))).toBeLessThanOrEqual(0.02);
      expect(final.from_finalize).toBe(false);
      expect(messages.find((m) => m.type === 'UtteranceEnd')).toEqual({ type: 'UtteranceEnd', channel: [0, 1], last_word_end: alternative!.words[2]!.end });
      // Beyond the script: recognised as nothing. Cut short by Finalize: is_final without speech_final.
      const later = messages.filter((m) => m.is_final === true).slice(1) as { from_finalize: boolean; channel: { alternatives: { transcript: string }[] } }[];
      expect(later.map((m) => [m.channel.alternatives[0]!.transcript, m.from_finalize])).toEqual([
        ['', false],
        ['', true],
      ]);
      expect(fake.segments.map((s) => [s.index, s.transcript, s.fromFinalize])).toEqual([
        [0, 'One two three.', false],
        [1, '', false],
        [2, '', true],
      ]);
      expect(fake.listens[0]!.audioBytes).toBe(pcm.length * 2);
    } finally {
      await fake.close();
    }
  });

  it('refuses a wrong key (401) and audio it cannot read (400) at the handshake, as Deepgram does', async () => {
    const fake = await startFakeDeepgram({ apiKey: 'right-key' });
    try {
      const status = (query: string, key: string) =>
        new Promise<number>((resolve) => {
          const socket = new WebSocket(`${fake.url.replace('http', 'ws')}/v1/listen?${query}`, { headers: { Authorization: `Token ${key}` } });
          socket.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
          socket.on('open', () => resolve(101));
          socket.on('error', () => undefined);
        });
      expect(await status('encoding=linear16&sample_rate=16000', 'wrong-key')).toBe(401);
      expect(await status('encoding=mulaw&sample_rate=8000', 'right-key')).toBe(400);
      expect(await status('encoding=linear16', 'right-key')).toBe(400);
      expect(await status('encoding=linear16&sample_rate=16000', 'right-key')).toBe(101);
      expect(fake.requests).toBe(4);
    } finally {
      await fake.close();
    }
  });

  it('synthesizes for the real Deepgram TTS plugin over /v1/speak, after firstByteDelayMs', async () => {
    const fake = await startFakeDeepgram({ apiKey: 'test-key', firstByteDelayMs: 150 });
    try {
      const voice = new deepgram.TTS({ apiKey: 'test-key', baseUrl: fake.url, model: 'aura-2-thalia-en' });
      const stream = voice.stream();
      const pushedAt = Date.now();
      stream.pushText('Hello there. How are you doing today?');
      stream.endInput();
      const audio = await synthesize(stream);
      const spoken = 'Hello there. How are you doing today? ';
      expect(fake.speaks[0]!.spoken).toBe(spoken);
      expect(audio.sampleRates).toEqual([24_000]);
      expect(audio.samples).toBe(spoken.length * 1440);
      expect(audio.firstFrameAt! - pushedAt).toBeGreaterThanOrEqual(150);
      expect(fake.speaks[0]!.query).toMatchObject({ model: 'aura-2-thalia-en', encoding: 'linear16', sample_rate: '24000' });
      expect(fake.received.map((r) => (r.message as { type: string }).type)).toEqual(['Speak', 'Speak', 'Flush', 'Flush', 'Close']);
      await voice.close();
    } finally {
      await fake.close();
    }
  });
});

describe('fake ElevenLabs', () => {
  const text = 'Hello there. How are you doing today?';

  it('streams PCM with character alignment to the real plugin, which times every word, after firstByteDelayMs', async () => {
    const fake = await startFakeElevenLabs({ apiKey: 'test-key', firstByteDelayMs: 150 });
    try {
      const voice = new elevenlabs.TTS({
        apiKey: 'test-key',
        baseURL: fake.url,
        voiceId: 'voice-1',
        model: 'eleven_flash_v2_5',
        voiceSettings: { stability: 0.5, similarity_boost: 0.75, speed: 1.1 },
      });
      const stream = voice.stream({ connOptions: NO_RETRY });
      const pushedAt = Date.now();
      stream.pushText(text);
      stream.endInput();
      const audio = await synthesize(stream);

      const spoken = 'Hello there. How are you doing today? ';
      expect(audio.sampleRates).toEqual([22_050]);
      expect(audio.samples).toBe(spoken.length * Math.round(22_050 * 0.06));
      expect(audio.firstFrameAt! - pushedAt).toBeGreaterThanOrEqual(150);
      expect(audio.words.map((w) => w.text.trim())).toEqual(['Hello', 'there.', 'How', 'are', 'you', 'doing', 'today?']);
      // Each word starts 60 ms a character into the context's audio; the plugin counts from the
      // first character that starts after 0 (here the second), so all but the first move 60 ms earlier.
      const starts = [0, 6, 13, 17, 21, 25, 31].map((chars) => Math.max(0, chars - 1) * 0.06);
      audio.words.forEach((word, i) => expect(word.startTime).toBeCloseTo(starts[i]!, 6));

      const [context] = fake.contexts;
      expect(context!.spoken).toBe(spoken);
      expect(context!.voiceId).toBe('voice-1');
      expect(context!.voiceSettings).toEqual({ stability: 0.5, similarity_boost: 0.75, speed: 1.1 });
      expect(context!.texts[0]).toBe(' ');
      expect(context!.finalAt).toBeDefined();
      expect(context!.generations[0]!.firstAudioAt! - context!.generations[0]!.requestedAt).toBeGreaterThanOrEqual(150);
      expect(fake.connections[0]!.path).toBe('/v1/text-to-speech/voice-1/multi-stream-input');
      expect(fake.connections[0]!.headers['xi-api-key']).toBe('test-key');
      expect(fake.connections[0]!.query).toMatchObject({ model_id: 'eleven_flash_v2_5', output_format: 'pcm_22050', auto_mode: 'true', sync_alignment: 'true' });

      // The plugin's non-streaming synthesis: the REST stream endpoint.
      const whole = await synthesize(voice.synthesize('Hello there, friend.'));
      expect(whole.samples).toBe(20 * Math.round(22_050 * 0.06));
      expect(fake.connections.at(-1)).toMatchObject({ method: 'POST', path: '/v1/text-to-speech/voice-1/stream', query: { output_format: 'pcm_22050' } });
      expect(fake.received.at(-1)!.message).toMatchObject({ text: 'Hello there, friend.', model_id: 'eleven_flash_v2_5', voice_settings: { speed: 1.1 } });
      await voice.close();
    } finally {
      await fake.close();
    }
  });

  it('speaks a raw client\'s text once the chunk length schedule is reached and at close_context, on one timeline per context', async () => {
    const fake = await startFakeElevenLabs({ msPerChar: 10 });
    try {
      const socket = new WebSocket(`${fake.url.replace('http', 'ws')}/text-to-speech/voice-2/multi-stream-input?model_id=eleven_turbo_v2_5&output_format=pcm_16000&auto_mode=false`, {
        headers: { 'xi-api-key': 'any-key' },
      });
      const messages: { audio?: string; alignment?: { chars: string[]; charStartTimesMs: number[] } | null; isFinal?: boolean | null; contextId?: string }[] = [];
      socket.on('message', (data) => messages.push(JSON.parse(String(data)) as (typeof messages)[number]));
      await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject));
      socket.send(JSON.stringify({ context_id: 'never-opened', close_context: true }));
      socket.send(JSON.stringify({ text: ' ', context_id: 'c1', generation_config: { chunk_length_schedule: [20] } }));
      socket.send(JSON.stringify({ text: 'Hello there my good friend ', context_id: 'c1' }));
      socket.send(JSON.stringify({ text: 'how are ', context_id: 'c1' }));
      await vi.waitFor(() => expect(fake.contexts[0]?.generations).toHaveLength(1));
      socket.send(JSON.stringify({ context_id: 'c1', close_context: true }));
      await vi.waitFor(() => expect(messages.at(-1)).toEqual({ isFinal: true, contextId: 'c1' }));
      socket.close();

      expect(fake.contexts.map((c) => [c.id, c.spoken, c.closed])).toEqual([['c1', 'Hello there my good friend how are ', true]]);
      expect(fake.contexts[0]!.generations.map((g) => g.text)).toEqual(['Hello there my good friend ', 'how are ']);
      const chars = messages.flatMap((m) => m.alignment?.chars ?? []);
      const starts = messages.flatMap((m) => m.alignment?.charStartTimesMs ?? []);
      expect(chars.join('')).toBe('Hello there my good friend how are ');
      expect(starts).toEqual(chars.map((_c, i) => i * 10));
      const bytes = messages.reduce((total, m) => total + (m.audio ? Buffer.from(m.audio, 'base64').length : 0), 0);
      expect(bytes).toBe(chars.length * 160 * 2);
      expect(messages.every((m) => m.contextId === 'c1')).toBe(true);
    } finally {
      await fake.close();
    }
  });

  const failures: [string, VendorFailure][] = [
    ['a refused connection', { mode: 'refuse' }],
    ['an HTTP 503 on the upgrade', { mode: 'http', status: 503 }],
    ['a close with 1011 mid-synthesis', { mode: 'close' }],
    ['an error message', { mode: 'error', message: 'quota_exceeded' }],
  ];
  it.each(failures)('fails the real plugin with %s, then serves again once healed', async (_name, failure) => {
    const fake = await startFakeElevenLabs({ apiKey: 'test-key' });
    try {
      const voice = new elevenlabs.TTS({ apiKey: 'test-key', baseURL: fake.url, voiceId: 'voice-1' });
      const errors = errorsOf(voice);
      fake.fail(failure);
      const failed = voice.stream({ connOptions: NO_RETRY });
      failed.pushText(text);
      failed.endInput();
      expect((await synthesize(failed)).samples).toBe(0);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(APIError);

      fake.fail();
      const healed = voice.stream({ connOptions: NO_RETRY });
      healed.pushText(text);
      healed.endInput();
      expect((await synthesize(healed)).samples).toBeGreaterThan(0);
      expect(errors).toHaveLength(1);
      await voice.close();
    } finally {
      await fake.close();
    }
  });
});

describe('fake Cartesia', () => {
  it('streams PCM and word timestamps to the real plugin, after firstByteDelayMs', async () => {
    const fake = await startFakeCartesia({ apiKey: 'test-key', firstByteDelayMs: 150 });
    try {
      const voice = new cartesia.TTS({ apiKey: 'test-key', baseUrl: fake.url, voice: 'voice-1', model: 'sonic-3', sampleRate: 24_000, speed: 1.1 });
      const stream = voice.stream({ connOptions: NO_RETRY });
      const pushedAt = Date.now();
      stream.pushText('Hello there. How are you doing today?');
      stream.endInput();
      const audio = await synthesize(stream);

      const sentences = ['Hello there. ', 'How are you doing today? '];
      const first = syntheticSpeech(sentences[0]!, { sampleRate: 24_000 });
      const expected = [...first.words, ...syntheticSpeech(sentences[1]!, { sampleRate: 24_000, offsetMs: first.durationMs }).words];
      expect(audio.words).toEqual(expected.map((w) => ({ text: `${w.word} `, startTime: w.start, endTime: w.end })));
      expect(audio.sampleRates).toEqual([24_000]);
      expect(audio.samples).toBe(sentences.join('').length * 1440);
      expect(audio.firstFrameAt! - pushedAt).toBeGreaterThanOrEqual(150);

      const [context] = fake.contexts;
      expect(context!.transcripts).toEqual([...sentences, ' ']);
      expect(context!.spoken).toBe(sentences.join(''));
      expect(context!.doneAt).toBeDefined();
      expect(context!.request).toMatchObject({
        model_id: 'sonic-3',
        voice: { mode: 'id', id: 'voice-1' },
        output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: 24_000 },
        language: 'en',
        add_timestamps: true,
        generation_config: { speed: 1.1 },
      });
      expect(fake.connections[0]!.headers['x-api-key']).toBe('test-key');
      expect(fake.connections[0]!.headers['cartesia-version']).toBe('2025-04-16');
      await voice.close();
    } finally {
      await fake.close();
    }
  });

  const failures: [string, VendorFailure][] = [
    ['a refused connection', { mode: 'refuse' }],
    ['an HTTP 500 on the upgrade', { mode: 'http', status: 500 }],
    ['a close with 1011 mid-synthesis', { mode: 'close' }],
    ['a 500 error message', { mode: 'error', message: 'overloaded' }],
  ];
  it.each(failures)('fails the real plugin with %s, then serves again once healed', async (_name, failure) => {
    const fake = await startFakeCartesia();
    try {
      const voice = new cartesia.TTS({ apiKey: 'test-key', baseUrl: fake.url, voice: 'voice-1' });
      const errors = errorsOf(voice);
      // Every request: the plugin reconnects once by itself after a reset connection.
      fake.fail(failure);
      const failed = voice.stream({ connOptions: NO_RETRY });
      failed.pushText('Hello there. How are you doing today?');
      failed.endInput();
      expect((await synthesize(failed)).samples).toBe(0);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(APIError);

      fake.fail();
      const healed = voice.stream({ connOptions: NO_RETRY });
      healed.pushText('Hello there. How are you doing today?');
      healed.endInput();
      expect((await synthesize(healed)).samples).toBeGreaterThan(0);
      expect(errors).toHaveLength(1);
      await voice.close();
    } finally {
      await fake.close();
    }
  });
});

describe('fake OpenAI', () => {
  it('streams a chat completion to the real OpenAI plugin LLM; its warm-up model list takes no scripted reply', async () => {
    const fake = await startFakeOpenAi();
    fake.enqueue({ events: streamChunks(['Hello', ' there', '!']) });
    const model = new openai.LLM({ apiKey: 'test-key', baseURL: fake.url, model: 'gpt-4.1-mini' });
    model.prewarm();
    await vi.waitFor(() => expect(fake.modelLists).toHaveLength(1));

    const context = llm.ChatContext.empty();
    context.addMessage({ role: 'user', content: 'Hi' });
    let text = '';
    for await (const chunk of model.chat({ chatCtx: context })) text += chunk.delta?.content ?? '';
    expect(text).toBe('Hello there!');
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.path).toBe('/v1/chat/completions');
    expect(fake.requests[0]!.body).toMatchObject({ model: 'gpt-4.1-mini', stream: true, messages: [{ role: 'user', content: 'Hi' }] });
    expect(fake.modelLists[0]!.headers.authorization).toBe('Bearer test-key');
    await model.aclose();
  });

  it('answers the real OpenAI plugin TTS with 24 kHz PCM', async () => {
    const fake = await startFakeOpenAiTts({ apiKey: 'test-key', firstByteDelayMs: 100 });
    afterAll(() => fake.close());
    const voice = new openai.TTS({ apiKey: 'test-key', baseURL: fake.url, voice: 'alloy', model: 'gpt-4o-mini-tts' });
    // 20 characters, 1.2 s: the plugin drops a last partial 100 ms frame, and there is none.
    const text = 'Hello there, friend.';
    const audio = await synthesize(voice.synthesize(text));
    expect(audio.sampleRates).toEqual([24_000]);
    expect(audio.samples).toBe(text.length * 1440);
    expect(fake.received.map((r) => r.body)).toEqual([{ input: text, model: 'gpt-4o-mini-tts', voice: 'alloy', response_format: 'pcm', speed: 1 }]);
    expect(fake.received[0]!.firstAudioAt! - fake.received[0]!.requestedAt).toBeGreaterThanOrEqual(100);

    await voice.close();

    // Failures through a plain client: the plugin's non-streaming stream leaves its failure as an
    // unhandled rejection (@livekit/agents' ChunkedStream), which would fail this file.
    const speak = () =>
      fetch(`${fake.url}/audio/speech`, {
        method: 'POST',
        headers: { authorization: 'Bearer test-key', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'tts-1', input: text, voice: 'alloy', response_format: 'pcm' }),
      });
    fake.fail({ mode: 'http', status: 500, body: JSON.stringify({ error: { message: 'overloaded', type: 'server_error' } }) }, 1);
    const failed = await speak();
    expect(failed.status).toBe(500);
    expect(await failed.json()).toEqual({ error: { message: 'overloaded', type: 'server_error' } });
    const healed = await speak();
    expect(healed.status).toBe(200);
    expect(healed.headers.get('content-type')).toBe('audio/pcm');
    expect((await healed.arrayBuffer()).byteLength).toBe(text.length * 1440 * 2);
    expect(fake.requests).toBe(3);
  });
});
