import { tts, type stt } from '@livekit/agents';
import * as cartesia from '@livekit/agents-plugin-cartesia';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import * as elevenlabs from '@livekit/agents-plugin-elevenlabs';
import * as openai from '@livekit/agents-plugin-openai';
import { logger } from '../../shared/platform/logger.ts';
import { recognitionLanguage, type AgentSettings } from './agent-settings.ts';
import { ELEVENLABS_PHONEME_MODELS, Pronouncer, withPronunciations, type PronunciationMarkup } from './pronunciation.ts';
import type { SpeechVendorSettings, SttVendor } from './config.ts';

/*
 * The speech vendors of a call, by settings: the recogniser the worker is set to
 * (WORKER_STT_VENDOR, Deepgram by default) and the voice the agent's voice_id names by its
 * prefix, then the workspace's fallback voices in order behind it (the framework's TTS
 * FallbackAdapter switches when a voice vendor fails). Real vendor plugins; base URLs from
 * the vendor settings, so tests point them at fakes on 127.0.0.1.
 */

export type VoiceVendor = 'elevenlabs' | 'cartesia' | 'openai' | 'deepgram';

const VOICE_PREFIXES: readonly (readonly [prefix: string, vendor: VoiceVendor])[] = [
  ['11labs-', 'elevenlabs'],
  ['elevenlabs-', 'elevenlabs'],
  ['cartesia-', 'cartesia'],
  ['openai-', 'openai'],
  ['deepgram-', 'deepgram'],
];

/** The vendor a voice_id names by its prefix, and the rest of the ID; undefined for a vendor the worker has no voice for. */
export function voiceVendorOf(voiceId: string): { vendor: VoiceVendor; name: string } | undefined {
  for (const [prefix, vendor] of VOICE_PREFIXES) {
    if (voiceId.startsWith(prefix) && voiceId.length > prefix.length) return { vendor, name: voiceId.slice(prefix.length) };
  }
  return undefined;
}

/**
 * The vendor's own ID of a Parley voice (the voices domain's `voiceVendorId`): a catalogue
 * voice's recorded ID, a workspace voice's `provider_voice_id`; undefined when none is known.
 */
export type ResolveVoice = (voiceId: string) => Promise<string | undefined>;

/**
 * When no vendor ID is known, the rest of the voice_id after its prefix is used as it is only
 * where the vendor could take it: OpenAI and Deepgram address voices by name, and a name shaped
 * like an ElevenLabs voice ID (20 letters and digits) or a Cartesia one (a UUID) is taken to be
 * one (`elevenlabs-pNInz6obpgDQGcFmaJgB`). A catalogue name such as `Adrian` is not an ID either
 * vendor accepts: such a voice is skipped so the fallback voices are tried, rather than a call
 * whose every reply the vendor refuses.
 */
function nameAsVendorId(vendor: VoiceVendor, name: string): string | undefined {
  switch (vendor) {
    case 'openai':
    case 'deepgram':
      return name;
    case 'elevenlabs':
      return /^[A-Za-z0-9]{20}$/.test(name) ? name : undefined;
    case 'cartesia':
      return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(name) ? name : undefined;
  }
}

const VENDOR_NAMES: Record<VoiceVendor, string> = { elevenlabs: 'ElevenLabs', cartesia: 'Cartesia', openai: 'OpenAI', deepgram: 'Deepgram' };

interface VoiceChoice {
  voiceId: string;
  vendor: VoiceVendor;
  vendorVoiceId: string;
}

const clamp = (value: number, min: number, max: number) => Math.min(max, Math.max(min, value));

/**
 * The model a voice speaks with: the agent's `voice_model`, else the vendor's default. An
 * English agent with a pronunciation dictionary on ElevenLabs gets eleven_flash_v2 (the
 * low-latency English model that reads phoneme tags) instead of the plugin's
 * eleven_turbo_v2_5, which would say its words as written.
 */
export function voiceModel(vendor: VoiceVendor, settings: AgentSettings): string | undefined {
  if (settings.voice_model) return settings.voice_model;
  if (vendor === 'elevenlabs' && settings.pronunciation_dictionary.length && /^en(-|$)/i.test(recognitionLanguage(settings))) return 'eleven_flash_v2';
  return undefined;
}

/** How a voice takes the pronunciation dictionary inline; undefined: it says the words as written. */
export function pronunciationMarkup(vendor: VoiceVendor, model: string | undefined): PronunciationMarkup | undefined {
  if (vendor === 'elevenlabs') return model && ELEVENLABS_PHONEME_MODELS.includes(model) ? 'ssml' : undefined;
  // Every Sonic model takes IPA between << >>.
  if (vendor === 'cartesia') return 'cartesia';
  return undefined;
}

/** One voice's TTS with the agent's voice settings mapped onto what its vendor takes, and its pronunciations. */
function voiceTts(choice: VoiceChoice, access: SpeechVendorSettings, settings: AgentSettings): tts.TTS {
  const model = voiceModel(choice.vendor, settings);
  const markup = settings.pronunciation_dictionary.length ? pronunciationMarkup(choice.vendor, model) : undefined;
  const pronouncer = markup ? new Pronouncer(settings.pronunciation_dictionary, markup) : undefined;
  const voice = vendorTts(choice, access, settings, model, markup === 'ssml' && !pronouncer!.empty);
  return pronouncer ? withPronunciations(voice, pronouncer) : voice;
}

function vendorTts(choice: VoiceChoice, access: SpeechVendorSettings, settings: AgentSettings, model: string | undefined, ssml: boolean): tts.TTS {
  const key = access[choice.vendor].apiKey;
  if (!key) throw new Error(`${choice.vendor.toUpperCase()}_API_KEY is not set`);
  const baseUrl = access[choice.vendor].baseUrl;
  const language = recognitionLanguage(settings);
  const spoken = language === 'multi' ? undefined : language;
  switch (choice.vendor) {
    case 'elevenlabs':
      return new elevenlabs.TTS({
        apiKey: key,
        baseURL: `${baseUrl}/v1`,
        voiceId: choice.vendorVoiceId,
        ...(model ? { model } : {}),
        ...(spoken ? { language: spoken } : {}),
        // ElevenLabs reads phoneme tags only when asked to parse SSML.
        ...(ssml ? { enableSsmlParsing: true } : {}),
        voiceSettings: {
          // voice_temperature 0 to 2 (1 by default): more is livelier, which ElevenLabs calls less stable.
          stability: clamp(1 - settings.voice_temperature / 2, 0, 1),
          similarity_boost: 0.75,
          speed: clamp(settings.voice_speed, 0.7, 1.2),
        },
      });
    case 'cartesia':
      return new cartesia.TTS({
        apiKey: key,
        baseUrl,
        voice: choice.vendorVoiceId,
        ...(model ? { model } : {}),
        ...(spoken ? { language: spoken } : {}),
        speed: clamp(settings.voice_speed, 0.6, 1.5),
        wordTimestamps: true,
      });
    case 'openai':
      return new openai.TTS({
        apiKey: key,
        baseURL: baseUrl,
        voice: choice.vendorVoiceId.toLowerCase() as openai.TTSOptions['voice'],
        model: model ?? 'gpt-4o-mini-tts',
        speed: clamp(settings.voice_speed, 0.25, 4),
      });
    case 'deepgram':
      return new deepgram.TTS({
        apiKey: key,
        baseUrl,
        model: choice.vendorVoiceId,
        speed: clamp(settings.voice_speed, 0.7, 1.5),
      });
  }
}

/**
 * The call's voice: the agent's, then the workspace's fallback voices, each built if its
 * vendor is one the worker speaks through and has a key (else skipped, logged). One voice is
 * used as it is; several go behind the FallbackAdapter in that order.
 */
export async function createVoice(
  voiceIds: string[],
  access: SpeechVendorSettings,
  settings: AgentSettings,
  resolveVoice: ResolveVoice = async () => undefined,
): Promise<tts.TTS> {
  const voices: tts.TTS[] = [];
  const problems: string[] = [];
  for (const voiceId of [...new Set(voiceIds)]) {
    const named = voiceVendorOf(voiceId);
    if (!named) {
      problems.push(`${voiceId}: no voice vendor the worker speaks through`);
      continue;
    }
    try {
      const vendorVoiceId = (await resolveVoice(voiceId)) ?? nameAsVendorId(named.vendor, named.name);
      if (!vendorVoiceId) {
        problems.push(`${voiceId}: no ${VENDOR_NAMES[named.vendor]} voice ID is known for it`);
        continue;
      }
      voices.push(withSettledSynthesis(voiceTts({ voiceId, vendor: named.vendor, vendorVoiceId }, access, settings)));
    } catch (error) {
      problems.push(`${voiceId}: ${(error as Error).message}`);
    }
  }
  if (problems.length) logger.warn('voices skipped', { problems });
  if (voices.length === 0) throw new Error(`No voice can speak for this call (${problems.join('; ')})`);
  if (voices.length === 1) return voices[0]!;
  const voice = new tts.FallbackAdapter({ ttsInstances: voices });
  // The adapter re-emits each voice's failure as its own 'error' event, also when no session
  // is listening (between turns, after the call): an EventEmitter's 'error' with no listener
  // throws, which would take the worker and every call on it down. A failing voice is what
  // the adapter is for, so it is logged and the adapter goes on to the next voice.
  voice.on('error', (error) => logger.warn('a voice failed; the next one speaks', { error: describeVoiceError(error) }));
  return voice;
}

/**
 * The framework's ChunkedStream (a one-shot `synthesize`, which the fallback chain uses to
 * probe whether a failed voice has recovered) starts its synthesis as a task nobody awaits:
 * when the vendor fails, the failure is emitted as the voice's 'error' and then rethrown
 * into that task, an unhandled rejection on every failed probe. The job process the
 * framework runs calls in only logs those; anywhere else (the worker's tests, a future
 * in-process runner) Node treats one as fatal. Each stream's task is given the handler it
 * lacks; its failure still reaches the voice's 'error' listeners and ends its audio.
 */
function withSettledSynthesis<T extends tts.TTS>(voice: T): T {
  const synthesize: tts.TTS['synthesize'] = voice.synthesize.bind(voice);
  voice.synthesize = (...args: Parameters<tts.TTS['synthesize']>) => {
    const stream = synthesize(...args);
    const task = stream as unknown as { mainTask?: () => Promise<unknown> };
    const run = task.mainTask;
    if (typeof run === 'function') task.mainTask = () => run.call(stream).catch(() => undefined);
    return stream;
  };
  return voice;
}

function describeVoiceError(event: unknown): string {
  const error = (event as { error?: unknown })?.error ?? event;
  return error instanceof Error ? error.message : String(error);
}

/** The recogniser: the vendor the worker is set to, with the agent's language and boosted keywords. */
export function createStt(vendor: SttVendor, access: SpeechVendorSettings, settings: AgentSettings): stt.STT {
  const language = recognitionLanguage(settings);
  const keywords = (settings.boosted_keywords ?? []).map((word) => word.trim()).filter(Boolean);
  if (vendor === 'openai') {
    const key = access.openai.apiKey;
    if (!key) throw new Error('OPENAI_API_KEY is not set');
    return new openai.STT({
      apiKey: key,
      baseURL: access.openai.baseUrl,
      ...(language === 'multi' ? { detectLanguage: true } : { language: language.split('-')[0]! }),
      ...(keywords.length ? { keywords } : {}),
    });
  }
  const key = access.deepgram.apiKey;
  if (!key) throw new Error('DEEPGRAM_API_KEY is not set');
  return new deepgram.STT({
    apiKey: key,
    // The streaming endpoint is a WebSocket on the same host.
    baseUrl: access.deepgram.baseUrl.replace(/^http/, 'ws'),
    model: settings.vocab_specialization === 'medical' ? 'nova-3-medical' : 'nova-3',
    language,
    // nova-3 takes boosted words as key terms (older models' `keywords` are not accepted by it).
    keyterm: keywords,
    interimResults: true,
    punctuate: true,
    smartFormat: true,
  });
}
