import { badRequest } from '../platform/errors.ts';
import { wire } from '../platform/naming.ts';
import type { Voice } from './schemas.ts';
import { queryAll } from '../platform/store/query.ts';
import { workspaceVoices, workspaceVoicesOf, type WorkspaceVoiceItem } from './store.ts';
import { synthesizedPreviewUrl } from '../vendors/voice/mock.ts';
import type { Gender, VoiceProvider } from '../vendors/voice/voice-vendor.ts';

/**
 * Voices: a fixed built-in catalogue (IDs `<vendor>-<name>`) plus each workspace's own
 * voices, cloned from audio or added from a vendor's community library, stored in the
 * workspace's partition (another workspace's voice is simply not found).
 */

/** The ID prefix of each provider's voices (`11labs-Adrian`, `cartesia-Cleo`, `retell-Cimo`, …). */
export const VOICE_ID_PREFIX: Record<VoiceProvider, string> = {
  elevenlabs: '11labs',
  openai: 'openai',
  cartesia: 'cartesia',
  minimax: 'minimax',
  fish_audio: 'fish_audio',
  inworld: 'inworld',
  platform: wire.compat,
};

/**
 * The premium (highest-quality) model tier recommended for each provider's voices, from the
 * compatible API's voice_model list. The platform's own voices have no model choice.
 */
export const PREMIUM_VOICE_MODEL = {
  elevenlabs: 'eleven_multilingual_v2',
  openai: 'gpt-4o-mini-tts',
  cartesia: 'sonic-3',
  minimax: 'speech-2.8-turbo',
  fish_audio: 's2.1-pro',
  inworld: 'inworld-tts-2',
  platform: null,
} as const satisfies Record<VoiceProvider, string | null>;
export type VoiceModel = Exclude<(typeof PREMIUM_VOICE_MODEL)[VoiceProvider], null>;

export interface CatalogueVoice {
  voice_id: string;
  voice_name: string;
  provider: VoiceProvider;
  gender: Gender;
  accent: string;
  age: string;
  /** Recommended voice_model for this voice: its provider's premium tier. */
  premium_model: VoiceModel | null;
  /**
   * The provider's own ID of the voice, what the agent worker asks the provider to speak with
   * (ElevenLabs and Cartesia address a voice only by its ID). Absent where no ID is known:
   * the worker then cannot speak with that voice and tries the fallback voices. Never part of
   * the API's voice shape.
   */
  provider_voice_id?: string;
}

type Entry = [name: string, gender: Gender, accent: string, age: string, providerVoiceId?: string];

const catalogueOf = (provider: VoiceProvider, entries: Entry[]): CatalogueVoice[] =>
  entries.map(([name, gender, accent, age, providerVoiceId]) => ({
    voice_id: `${VOICE_ID_PREFIX[provider]}-${name}`,
    voice_name: name,
    provider,
    gender,
    accent,
    age,
    premium_model: PREMIUM_VOICE_MODEL[provider],
    ...(providerVoiceId ? { provider_voice_id: providerVoiceId } : {}),
  }));

/**
 * The built-in catalogue, in list order. Provider voice IDs: Dorothy, Grace, Lily and Paul are
 * ElevenLabs premade voices (the same IDs in every ElevenLabs account; ElevenLabs labels Lily
 * British and Grace young, which the catalogue's labels do not say); OpenAI addresses its voices
 * by their lower-case names. The other ElevenLabs voices and the Cartesia voices have no
 * published premade ID under these names, so none is recorded for them.
 */
export const VOICE_CATALOGUE: readonly CatalogueVoice[] = [
  ...catalogueOf('elevenlabs', [
    ['Adrian', 'male', 'American', 'Young'],
    ['Anthony', 'male', 'British', 'Middle Aged'],
    ['Chloe', 'female', 'Australian', 'Young'],
    ['Dorothy', 'female', 'British', 'Young', 'ThT5KcBeYPX3keUQqHPh'],
    ['Grace', 'female', 'American', 'Middle Aged', 'oWAxZDx7w5VEj9dCyTzz'],
    ['Lily', 'female', 'American', 'Young', 'pFZP5JQG7iQjIQuC4Bku'],
    ['Marissa', 'female', 'American', 'Young'],
    ['Noah', 'male', 'Australian', 'Middle Aged'],
    ['Paul', 'male', 'American', 'Middle Aged', '5Q0t7uMcjvnagumLfvZi'],
  ]),
  ...catalogueOf('cartesia', [
    ['Cleo', 'female', 'American', 'Young'],
    ['Emily', 'female', 'British', 'Middle Aged'],
    ['Ryan', 'male', 'Australian', 'Young'],
    ['Walter', 'male', 'American', 'Old'],
  ]),
  ...catalogueOf('openai', [
    ['Alloy', 'female', 'American', 'Young', 'alloy'],
    ['Echo', 'male', 'American', 'Young', 'echo'],
    ['Nova', 'female', 'American', 'Young', 'nova'],
    ['Onyx', 'male', 'American', 'Middle Aged', 'onyx'],
    ['Shimmer', 'female', 'American', 'Young', 'shimmer'],
  ]),
  ...catalogueOf('minimax', [
    ['Ava', 'female', 'American', 'Young'],
    ['Leo', 'male', 'American', 'Middle Aged'],
    ['Mia', 'female', 'British', 'Young'],
  ]),
  ...catalogueOf('platform', [['Cimo', 'female', 'American', 'Young']]),
];

const catalogueById = new Map(VOICE_CATALOGUE.map((voice) => [voice.voice_id, voice]));

/**
 * What a catalogue voice with no known provider ID speaks with, so that an agent on such a
 * voice (the default voice, `11labs-Chloe`, among them) is heard rather than silent: an
 * ElevenLabs voice, the premade voice of its gender recorded above (Lily, Paul); a Cartesia
 * voice, the voice LiveKit's Cartesia plugin ships as its default (present in every Cartesia
 * account). Other vendors' voices without an ID have
 * none: the worker tries the fallback voices.
 */
const STAND_IN_VOICE_IDS: Partial<Record<VoiceProvider, Record<Gender, string>>> = {
  elevenlabs: { female: 'pFZP5JQG7iQjIQuC4Bku', male: '5Q0t7uMcjvnagumLfvZi' },
  cartesia: { female: 'f786b574-daa5-4673-aa0c-cbe3e8534c02', male: 'f786b574-daa5-4673-aa0c-cbe3e8534c02' },
};

/** The provider ID a catalogue voice speaks with: its own, else its stand-in (STAND_IN_VOICE_IDS). */
function catalogueVendorVoice(voice: CatalogueVoice): { id: string; stand_in: boolean } | undefined {
  if (voice.provider_voice_id) return { id: voice.provider_voice_id, stand_in: false };
  const standIn = STAND_IN_VOICE_IDS[voice.provider]?.[voice.gender];
  return standIn ? { id: standIn, stand_in: true } : undefined;
}

/**
 * The voice of a new agent when none is given (spec: Agent defaults, "built-in voice from
 * a voice-vendor catalogue, premium model tier"): an ElevenLabs voice with an Australian
 * accent, matching the default language en-AU. Its model is DEFAULT_VOICE_MODEL.
 */
export const DEFAULT_VOICE_ID = '11labs-Chloe';
export const DEFAULT_VOICE_MODEL: VoiceModel = PREMIUM_VOICE_MODEL.elevenlabs;

export function catalogueVoice(voiceId: string): CatalogueVoice | undefined {
  return catalogueById.get(voiceId);
}

export function toVoice(voice: CatalogueVoice): Voice {
  return {
    voice_id: voice.voice_id,
    voice_name: voice.voice_name,
    provider: voice.provider,
    gender: voice.gender,
    accent: voice.accent,
    age: voice.age,
    preview_audio_url: synthesizedPreviewUrl(voice.voice_id, voice.gender),
  };
}

export function fromItem(item: WorkspaceVoiceItem): Voice {
  return {
    voice_id: item.voice_id,
    voice_name: item.voice_name,
    provider: item.provider,
    gender: item.gender,
    ...(item.accent ? { accent: item.accent } : {}),
    ...(item.age ? { age: item.age } : {}),
    ...(item.preview_audio_url ? { preview_audio_url: item.preview_audio_url } : {}),
  };
}

async function listWorkspaceVoices(workspaceId: string): Promise<WorkspaceVoiceItem[]> {
  const items = await queryAll<WorkspaceVoiceItem>(workspaceVoicesOf(workspaceId));
  return items.sort((a, b) => a.created_timestamp - b.created_timestamp || a.voice_id.localeCompare(b.voice_id));
}

/** The catalogue first, then the workspace's own voices, oldest first. */
export async function listVoices(workspaceId: string): Promise<Voice[]> {
  return [...VOICE_CATALOGUE.map(toVoice), ...(await listWorkspaceVoices(workspaceId)).map(fromItem)];
}

export async function getVoice(workspaceId: string, voiceId: string): Promise<Voice> {
  const builtIn = catalogueVoice(voiceId);
  if (builtIn) return toVoice(builtIn);
  return fromItem(await workspaceVoices.mustGet(workspaceId, voiceId));
}

/**
 * The provider's own ID of a voice the workspace can use: what the agent worker asks the
 * voice vendor to speak with. A catalogue voice's recorded ID, a workspace voice's (cloned, or
 * added from a vendor's library) `provider_voice_id`; a catalogue voice with no known ID its
 * stand-in (catalogueVendorVoice); undefined where there is none and for an ID the workspace
 * does not have.
 */
export async function voiceVendorId(workspaceId: string, voiceId: string): Promise<string | undefined> {
  const builtIn = catalogueVoice(voiceId);
  if (builtIn) return catalogueVendorVoice(builtIn)?.id;
  if (voiceId.length > 200) return undefined;
  return (await workspaceVoices.get(workspaceId, voiceId))?.provider_voice_id;
}

/**
 * For agents: a voice_id is usable when it is a catalogue voice or one of the workspace's
 * own. Otherwise 400 `voice_id: Unknown voice <id>` (a request field, not a missing resource).
 */
export async function assertVoiceUsable(workspaceId: string, voiceId: string): Promise<void> {
  if (catalogueVoice(voiceId)) return;
  if (voiceId.length <= 200 && (await workspaceVoices.get(workspaceId, voiceId))) return;
  throw badRequest(`voice_id: Unknown voice ${voiceId.slice(0, 200)}`);
}
