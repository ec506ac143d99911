import { createHash } from 'node:crypto';
import { notFound } from '../../platform/errors.ts';
import type { CommunityProvider, CommunityVoice, Gender, VendorVoice, VoiceVendor } from './types.ts';

/**
 * The built-in offline voice provider, used for every provider without a configured real
 * client (locally, in tests, and for providers that have no client yet). It never touches
 * the network: clones get an ID derived from the name and audio, the community library is
 * the fixed list below, and previews are short synthesized tones as `data:` URLs that any
 * browser or audio player can play.
 */

interface MockCommunityVoice extends CommunityVoice {
  provider: CommunityProvider;
  gender: Gender;
  accent: string;
  age: string;
}

const MOCK_COMMUNITY_LIBRARY: readonly MockCommunityVoice[] = [
  { provider: 'elevenlabs', provider_voice_id: 'mockEL0001harbour', name: 'Harbour', description: 'Warm, relaxed narrator with an Australian accent', public_user_id: 'mock_owner_01', gender: 'male', accent: 'Australian', age: 'Middle Aged' },
  { provider: 'elevenlabs', provider_voice_id: 'mockEL0002juniper', name: 'Juniper', description: 'Bright and friendly customer support voice', public_user_id: 'mock_owner_02', gender: 'female', accent: 'American', age: 'Young' },
  { provider: 'elevenlabs', provider_voice_id: 'mockEL0003maple', name: 'Maple', description: 'Calm, reassuring voice for healthcare reminders', public_user_id: 'mock_owner_02', gender: 'female', accent: 'Canadian', age: 'Middle Aged' },
  { provider: 'elevenlabs', provider_voice_id: 'mockEL0004thames', name: 'Thames', description: 'Crisp British newsreader', public_user_id: 'mock_owner_03', gender: 'male', accent: 'British', age: 'Old' },
  { provider: 'elevenlabs', provider_voice_id: 'mockEL0005koa', name: 'Koa', description: 'Upbeat sales voice, energetic and warm', public_user_id: 'mock_owner_04', gender: 'male', accent: 'American', age: 'Young' },
  // One voice ID under two owners, and one ID in two libraries: adding either needs the field that tells them apart.
  { provider: 'elevenlabs', provider_voice_id: 'mockEL0006echo', name: 'Echo', description: 'Lively podcast host', public_user_id: 'mock_owner_03', gender: 'female', accent: 'Irish', age: 'Young' },
  { provider: 'elevenlabs', provider_voice_id: 'mockEL0006echo', name: 'Echo', description: 'Lively podcast host', public_user_id: 'mock_owner_05', gender: 'female', accent: 'Irish', age: 'Young' },
  { provider: 'cartesia', provider_voice_id: 'mock-cartesia-0001-wren', name: 'Wren', description: 'Soft-spoken receptionist', gender: 'female', accent: 'British', age: 'Young' },
  { provider: 'cartesia', provider_voice_id: 'mock-cartesia-0002-flint', name: 'Flint', description: 'Deep, steady voice for collections', gender: 'male', accent: 'American', age: 'Middle Aged' },
  { provider: 'cartesia', provider_voice_id: 'mock-shared-0001-ember', name: 'Ember', description: 'Smoky late-night radio host', gender: 'male', accent: 'American', age: 'Middle Aged' },
  { provider: 'minimax', provider_voice_id: 'mock_minimax_0001_lotus', name: 'Lotus', description: 'Gentle narrator', gender: 'female', accent: 'American', age: 'Young' },
  { provider: 'minimax', provider_voice_id: 'mock-shared-0001-ember', name: 'Ember', description: 'Smoky late-night radio host', gender: 'male', accent: 'American', age: 'Middle Aged' },
  { provider: 'fish_audio', provider_voice_id: 'mockfish0001reef', name: 'Reef', description: 'Laid-back surfer voice with an Australian accent', gender: 'male', accent: 'Australian', age: 'Young' },
  { provider: 'inworld', provider_voice_id: 'mock-inworld-0001-sage', name: 'Sage', description: 'Thoughtful, measured advisor', gender: 'female', accent: 'American', age: 'Old' },
];

const MAX_SEARCH_RESULTS = 30;

export const mockVoiceVendor: VoiceVendor = {
  kind: 'mock',

  async clone({ provider, voiceName, files }) {
    const hash = createHash('sha256').update(provider).update('\0').update(voiceName);
    for (const file of files) hash.update('\0').update(file.data);
    const providerVoiceId = `mock_clone_${hash.digest('hex').slice(0, 20)}`;
    return { provider_voice_id: providerVoiceId, preview_audio_url: synthesizedPreviewUrl(providerVoiceId) };
  },

  async searchCommunity({ provider, query }) {
    const needle = query.trim().toLowerCase();
    return MOCK_COMMUNITY_LIBRARY.filter(
      (voice) =>
        voice.provider === provider &&
        [voice.name, voice.description ?? '', voice.provider_voice_id].some((text) => text.toLowerCase().includes(needle)),
    )
      .slice(0, MAX_SEARCH_RESULTS)
      .map(({ provider_voice_id, name, description, public_user_id }) => ({
        provider_voice_id,
        name,
        ...(description ? { description } : {}),
        ...(public_user_id ? { public_user_id } : {}),
      }));
  },

  async findCommunity({ provider, providerVoiceId }) {
    return MOCK_COMMUNITY_LIBRARY.filter((voice) => voice.provider === provider && voice.provider_voice_id === providerVoiceId).map(
      ({ provider_voice_id, name, public_user_id }) => ({ provider_voice_id, name, ...(public_user_id ? { public_user_id } : {}) }),
    );
  },

  async addCommunity({ provider, providerVoiceId, publicUserId }): Promise<VendorVoice> {
    const voice = MOCK_COMMUNITY_LIBRARY.find(
      (candidate) =>
        candidate.provider === provider &&
        candidate.provider_voice_id === providerVoiceId &&
        (candidate.public_user_id === undefined || candidate.public_user_id === publicUserId),
    );
    if (!voice) throw notFound('Community voice not found');
    return {
      provider_voice_id: voice.provider_voice_id,
      gender: voice.gender,
      accent: voice.accent,
      age: voice.age,
      preview_audio_url: synthesizedPreviewUrl(voice.provider_voice_id, voice.gender),
    };
  },

  async preview({ providerVoiceId }) {
    return synthesizedPreviewUrl(providerVoiceId);
  },
};

const previewCache = new Map<string, string>();

/**
 * A 0.3-second two-note chime as a `data:audio/wav` URL (8 kHz, 8-bit mono, ~3 KB), its
 * pitch derived from the seed (lower for male voices), so each voice sounds different and
 * nothing needs the network. The built-in catalogue's previews are made the same way.
 */
export function synthesizedPreviewUrl(seed: string, gender?: Gender): string {
  const cacheKey = `${gender ?? ''}:${seed}`;
  const cached = previewCache.get(cacheKey);
  if (cached) return cached;
  const sampleRate = 8000;
  const samples = Math.round(sampleRate * 0.3);
  const spread = createHash('sha256').update(seed).digest().readUInt16BE(0) % 60;
  const base = (gender === 'male' ? 110 : gender === 'female' ? 200 : 150) + spread;
  const wav = Buffer.alloc(44 + samples);
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + samples, 4);
  wav.write('WAVE', 8, 'ascii');
  wav.write('fmt ', 12, 'ascii');
  wav.writeUInt32LE(16, 16); // fmt chunk size
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(sampleRate, 24);
  wav.writeUInt32LE(sampleRate, 28); // byte rate
  wav.writeUInt16LE(1, 32); // block align
  wav.writeUInt16LE(8, 34); // bits per sample
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(samples, 40);
  for (let i = 0; i < samples; i++) {
    const frequency = i < samples / 2 ? base : base * 1.25;
    const envelope = Math.min(1, i / 200, (samples - i) / 400);
    wav[44 + i] = Math.round(128 + 90 * envelope * Math.sin((2 * Math.PI * frequency * i) / sampleRate));
  }
  const url = `data:audio/wav;base64,${wav.toString('base64')}`;
  previewCache.set(cacheKey, url);
  return url;
}
