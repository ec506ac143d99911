import Retell from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { VOICE_CATALOGUE } from '../../shared/voices/voices.ts';
import { voiceVendorId } from '../../shared/voices/index.ts';
import { startTestApp } from '../support/app.ts';

/*
 * The provider's own ID of a voice, which the agent worker asks the voice vendor to speak
 * with: the catalogue's recorded IDs, and a workspace voice's provider_voice_id.
 */

const app = await startTestApp();

describe('voiceVendorId', () => {
  it('gives a catalogue voice its provider ID, a stand-in where none is known, and none for other vendors', async () => {
    const ws = app.workspace.workspace_id;
    expect(await voiceVendorId(ws, '11labs-Dorothy')).toBe('ThT5KcBeYPX3keUQqHPh');
    expect(await voiceVendorId(ws, '11labs-Grace')).toBe('oWAxZDx7w5VEj9dCyTzz');
    expect(await voiceVendorId(ws, '11labs-Lily')).toBe('pFZP5JQG7iQjIQuC4Bku');
    expect(await voiceVendorId(ws, '11labs-Paul')).toBe('5Q0t7uMcjvnagumLfvZi');
    expect(await voiceVendorId(ws, 'openai-Shimmer')).toBe('shimmer');
    // No known ID: the premade voice of the same gender stands in (the default voice included), or Cartesia's plugin default.
    expect(await voiceVendorId(ws, '11labs-Chloe')).toBe('pFZP5JQG7iQjIQuC4Bku');
    expect(await voiceVendorId(ws, '11labs-Adrian')).toBe('5Q0t7uMcjvnagumLfvZi');
    expect(await voiceVendorId(ws, 'cartesia-Cleo')).toBe('f786b574-daa5-4673-aa0c-cbe3e8534c02');
    expect(await voiceVendorId(ws, 'minimax-Ava')).toBeUndefined();
    // ElevenLabs voice IDs are 20 letters and digits; every recorded one has that shape.
    const elevenLabs = VOICE_CATALOGUE.filter((voice) => voice.provider === 'elevenlabs' && voice.provider_voice_id);
    expect(elevenLabs.map((voice) => voice.voice_id)).toEqual(['11labs-Dorothy', '11labs-Grace', '11labs-Lily', '11labs-Paul']);
    expect(elevenLabs.every((voice) => /^[A-Za-z0-9]{20}$/.test(voice.provider_voice_id!))).toBe(true);
  });

  it('keeps the provider ID out of the API\'s voice shape', async () => {
    const voice = await new Retell({ apiKey: app.workspace.api_key, baseURL: app.url, maxRetries: 0 }).voice.retrieve('11labs-Dorothy');
    expect(Object.keys(voice).sort()).toEqual(['accent', 'age', 'gender', 'preview_audio_url', 'provider', 'voice_id', 'voice_name']);
  });

  it('gives a workspace voice its provider_voice_id, and another workspace nothing', async () => {
    const owner = await app.newWorkspace();
    const added = await new Retell({ apiKey: owner.api_key, baseURL: app.url, maxRetries: 0 }).voice.addResource({
      provider_voice_id: 'mockEL0001harbour',
      voice_name: 'Harbour',
    });
    expect(await voiceVendorId(owner.workspace_id, added.voice_id)).toBe('mockEL0001harbour');
    expect(await voiceVendorId(app.workspace.workspace_id, added.voice_id)).toBeUndefined();
    expect(await voiceVendorId(owner.workspace_id, '11labs-custom_voice_missing')).toBeUndefined();
    expect(await voiceVendorId(owner.workspace_id, `11labs-${'x'.repeat(300)}`)).toBeUndefined();
  });
});
