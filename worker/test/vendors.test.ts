import { tts } from '@livekit/agents';
import { describe, expect, it } from 'vitest';
import { agentSettings, endOfTurnDelayMs, interruption } from '../src/agent-settings.ts';
import { catalogueVoice } from '../../shared/voices/index.ts';
import type { SpeechVendorSettings } from '../src/config.ts';
import { createStt, createVoice, voiceVendorOf, type ResolveVoice } from '../src/vendors.ts';
import { startFakeElevenLabs } from './support/fake-elevenlabs.ts';
import './support/scripted-vendors.ts';

/*
 * Which vendor plugin a call gets, by settings. What each plugin then sends its vendor is
 * for the integration tests against the vendor-protocol fakes.
 */

const access = (keys: Partial<Record<keyof SpeechVendorSettings, string>>): SpeechVendorSettings => ({
  deepgram: { baseUrl: 'http://127.0.0.1:9', ...(keys.deepgram ? { apiKey: keys.deepgram } : {}) },
  elevenlabs: { baseUrl: 'http://127.0.0.1:9', ...(keys.elevenlabs ? { apiKey: keys.elevenlabs } : {}) },
  cartesia: { baseUrl: 'http://127.0.0.1:9', ...(keys.cartesia ? { apiKey: keys.cartesia } : {}) },
  openai: { baseUrl: 'http://127.0.0.1:9/v1', ...(keys.openai ? { apiKey: keys.openai } : {}) },
});
const all = access({ deepgram: 'dg', elevenlabs: 'el', cartesia: 'ca', openai: 'oa' });
const settings = (fields: Record<string, unknown> = {}) => agentSettings(fields).settings;
/** The catalogue's provider voice IDs (the voices domain's voiceVendorId, without the workspace's own voices). */
const catalogueIds: ResolveVoice = async (voiceId) => catalogueVoice(voiceId)?.provider_voice_id;
const CARTESIA_VOICE = 'cartesia-a0e99841-438c-4a64-b679-ae501e7d6091';

describe('speech vendors', () => {
  it('reads the voice vendor from the voice_id prefix', () => {
    expect(voiceVendorOf('11labs-Adrian')).toEqual({ vendor: 'elevenlabs', name: 'Adrian' });
    expect(voiceVendorOf('elevenlabs-pNInz6obpgDQGcFmaJgB')).toEqual({ vendor: 'elevenlabs', name: 'pNInz6obpgDQGcFmaJgB' });
    expect(voiceVendorOf('cartesia-Cleo')).toEqual({ vendor: 'cartesia', name: 'Cleo' });
    expect(voiceVendorOf('openai-Alloy')).toEqual({ vendor: 'openai', name: 'Alloy' });
    expect(voiceVendorOf('deepgram-aura-2-thalia-en')).toEqual({ vendor: 'deepgram', name: 'aura-2-thalia-en' });
    expect(voiceVendorOf('minimax-Ava')).toBeUndefined();
    expect(voiceVendorOf('cartesia-')).toBeUndefined();
  });

  it('builds the agent\'s voice, and the fallback voices behind it in order', async () => {
    const one = await createVoice(['11labs-Dorothy'], all, settings({ voice_model: 'eleven_flash_v2_5' }), catalogueIds);
    expect(one.label).toBe('elevenlabs.TTS');
    expect(one.model).toBe('eleven_flash_v2_5');

    const chain = await createVoice([CARTESIA_VOICE, '11labs-Paul', 'openai-Alloy', 'deepgram-aura-2-thalia-en', CARTESIA_VOICE], all, settings(), catalogueIds);
    expect(chain).toBeInstanceOf(tts.FallbackAdapter);
    expect((chain as tts.FallbackAdapter).ttsInstances.map((voice) => [voice.label, voice.model])).toEqual([
      ['cartesia.TTS', 'sonic-3'],
      ['elevenlabs.TTS', 'eleven_turbo_v2_5'],
      ['openai.TTS', 'gpt-4o-mini-tts'],
      ['deepgram.TTS', 'aura-2-thalia-en'],
    ]);
    // Word timings only when every voice in the chain gives them (OpenAI's does not).
    expect(chain.capabilities.alignedTranscript).toBe(false);
    // A voice failing while no session listens (between turns, after the call) is re-emitted by
    // the adapter as its 'error': without a listener of ours that would throw and end the worker.
    const failure = { type: 'tts_error', timestamp: 0, label: 'cartesia.TTS', error: new Error('injected 503'), recoverable: false };
    expect(() => (chain as tts.FallbackAdapter).ttsInstances[0]!.emit('error', failure as never)).not.toThrow();
  });

  it('skips a voice it cannot use, and refuses a call no voice can speak for', async () => {
    const voice = await createVoice(['minimax-Ava', CARTESIA_VOICE, '11labs-Grace'], access({ elevenlabs: 'el' }), settings(), catalogueIds);
    expect(voice.label).toBe('elevenlabs.TTS');
    await expect(createVoice(['minimax-Ava', CARTESIA_VOICE], access({}), settings(), catalogueIds)).rejects.toThrow(
      `No voice can speak for this call (minimax-Ava: no voice vendor the worker speaks through; ${CARTESIA_VOICE}: CARTESIA_API_KEY is not set)`,
    );
  });

  it('skips a catalogue voice whose vendor ID is not known rather than sending the vendor its name', async () => {
    const voice = await createVoice(['11labs-Adrian', 'cartesia-Cleo', 'openai-Nova'], all, settings(), catalogueIds);
    expect(voice.label).toBe('openai.TTS');
    await expect(createVoice(['11labs-Adrian', 'cartesia-Cleo'], all, settings(), catalogueIds)).rejects.toThrow(
      'No voice can speak for this call (11labs-Adrian: no ElevenLabs voice ID is known for it; cartesia-Cleo: no Cartesia voice ID is known for it)',
    );
    // A name shaped like the vendor's own ID is taken as one.
    expect((await createVoice(['elevenlabs-pNInz6obpgDQGcFmaJgB'], all, settings())).label).toBe('elevenlabs.TTS');
    expect((await createVoice([CARTESIA_VOICE], all, settings())).label).toBe('cartesia.TTS');
  });

  it('asks ElevenLabs for a catalogue voice by its premade voice ID', async () => {
    const fake = await startFakeElevenLabs({ apiKey: 'el' });
    try {
      const voice = await createVoice(['11labs-Dorothy'], { ...all, elevenlabs: { apiKey: 'el', baseUrl: fake.origin } }, settings(), catalogueIds);
      const stream = voice.stream({ connOptions: { maxRetry: 0, retryIntervalMs: 0, timeoutMs: 5_000 } });
      stream.pushText('Hello there.');
      stream.endInput();
      for await (const event of stream) if (event === tts.SynthesizeStream.END_OF_STREAM) break;
      expect(fake.connections[0]!.path).toBe('/v1/text-to-speech/ThT5KcBeYPX3keUQqHPh/multi-stream-input');
      expect(fake.contexts.map((context) => context.voiceId)).toEqual(['ThT5KcBeYPX3keUQqHPh']);
      await voice.close();
    } finally {
      await fake.close();
    }
  });

  it('settles a failed one-shot synthesis (the fallback chain\'s recovery probe) instead of leaving its task rejected', async () => {
    const fake = await startFakeElevenLabs({ apiKey: 'el' });
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', record);
    try {
      // A refusal the framework does not retry (the ElevenLabs plugin ignores the probe's
      // maxRetry: 0, so a 5xx would be retried three times, seconds apart, first).
      fake.fail({ mode: 'error', status: 401, message: 'key revoked' });
      const voice = await createVoice(['elevenlabs-pNInz6obpgDQGcFmaJgB'], { ...all, elevenlabs: { apiKey: 'el', baseUrl: fake.origin } }, settings());
      const failures: string[] = [];
      voice.on('error', (event) => failures.push((event as { error: Error }).error.message));
      const probe = voice.synthesize('Hello world, this is a recovery test.', { maxRetry: 0, retryIntervalMs: 0, timeoutMs: 5_000 });
      const frames: unknown[] = [];
      for await (const frame of probe) frames.push(frame);
      // Node reports a rejection left unhandled once the microtasks after it have run.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(frames).toEqual([]);
      expect(failures).toHaveLength(1);
      expect(failures[0]).toContain('key revoked');
      expect(unhandled).toEqual([]);
      await voice.close();
    } finally {
      process.off('unhandledRejection', record);
      await fake.close();
    }
  });

  it('uses the vendor\'s own ID of a workspace voice', async () => {
    const voice = await createVoice(['deepgram-custom_voice_1'], all, settings(), async (id) => (id === 'deepgram-custom_voice_1' ? 'aura-2-luna-en' : undefined));
    expect(voice.model).toBe('aura-2-luna-en');
  });

  it('listens through the recogniser the worker is set to', () => {
    expect(createStt('deepgram', all, settings({ boosted_keywords: ['Parley'] })).label).toBe('deepgram.STT');
    expect(createStt('deepgram', all, settings({ vocab_specialization: 'medical' })).model).toBe('nova-3-medical');
    expect(createStt('openai', all, settings()).label).toBe('openai.STT');
    expect(() => createStt('deepgram', access({}), settings())).toThrow('DEEPGRAM_API_KEY is not set');
  });
});

describe('the agent\'s behaviour settings', () => {
  it('lays the call\'s override over the version, defaults what is missing, and ignores what it cannot use', () => {
    const { settings: read, ignored } = agentSettings(
      { voice_id: '11labs-Adrian', responsiveness: 0.5, interruption_sensitivity: 0.9, volume: 7, language: 'en-GB' },
      { voice_speed: 1.2, responsiveness: 0.2 },
    );
    expect(ignored).toEqual(['volume']);
    expect(read).toMatchObject({ voice_id: '11labs-Adrian', voice_speed: 1.2, responsiveness: 0.2, volume: 1, language: 'en-GB', end_call_after_silence_ms: 600_000 });
  });

  it('maps responsiveness to the end-of-turn delay and interruption_sensitivity to barge-in', () => {
    expect([1, 0.5, 0].map((responsiveness) => endOfTurnDelayMs({ responsiveness }))).toEqual([250, 875, 1500]);
    expect(interruption({ interruption_sensitivity: 0 })).toEqual({ enabled: false });
    expect(interruption({ interruption_sensitivity: 1 })).toEqual({ enabled: true, minDurationMs: 300 });
    expect(interruption({ interruption_sensitivity: 0.9 })).toEqual({ enabled: true, minDurationMs: 420 });
  });
});
