/*
 * What the voice vendor adapter (voice-vendor.ts) and the offline mock (mock.ts) share:
 * the provider lists and the adapter's interface. Callers import them from voice-vendor.ts, which
 * re-exports them; the mock imports them from here, since voice-vendor.ts imports the mock.
 */

/** Providers as the compatible API's VoiceResponse names them. */
export const VOICE_PROVIDERS = ['elevenlabs', 'openai', 'cartesia', 'minimax', 'fish_audio', 'inworld', 'platform'] as const;
export type VoiceProvider = (typeof VOICE_PROVIDERS)[number];

/** Providers that can clone from audio (VoiceCloneParams.voice_provider). */
export const CLONE_PROVIDERS = ['elevenlabs', 'cartesia', 'minimax', 'fish_audio', 'platform', 'inworld'] as const;
type CloneProvider = (typeof CLONE_PROVIDERS)[number];

/** Providers with a community library (VoiceSearchParams / VoiceAddResourceParams.voice_provider). */
export const COMMUNITY_PROVIDERS = ['elevenlabs', 'cartesia', 'minimax', 'fish_audio', 'inworld'] as const;
export type CommunityProvider = (typeof COMMUNITY_PROVIDERS)[number];

export type Gender = 'male' | 'female';

export interface AudioSample {
  filename: string;
  contentType: string;
  data: Buffer;
}

/** A voice as the vendor holds it after a clone or an add. */
export interface VendorVoice {
  provider_voice_id: string;
  gender?: Gender;
  accent?: string;
  age?: string;
  preview_audio_url?: string;
}

/** One community search hit, in the compatible API's VoiceSearchResponse.Voice shape. */
export interface CommunityVoice {
  provider_voice_id: string;
  name: string;
  description?: string;
  /** ElevenLabs only: the owner, needed to add the voice. */
  public_user_id?: string;
}

export interface VoiceVendor {
  /** `elevenlabs` for the real client, `mock` for the built-in offline provider. */
  readonly kind: string;
  clone(input: { provider: CloneProvider; voiceName: string; files: readonly AudioSample[] }): Promise<VendorVoice>;
  searchCommunity(input: { provider: CommunityProvider; query: string }): Promise<CommunityVoice[]>;
  /** The community library's entries with exactly this voice ID (one per owner); empty when it has none. */
  findCommunity(input: { provider: CommunityProvider; providerVoiceId: string }): Promise<CommunityVoice[]>;
  addCommunity(input: {
    provider: CommunityProvider;
    providerVoiceId: string;
    publicUserId?: string;
    voiceName: string;
  }): Promise<VendorVoice>;
  /** A playable URL for the voice's preview, or undefined when the vendor has none yet. */
  preview(input: { provider: VoiceProvider; providerVoiceId: string }): Promise<string | undefined>;
}
