import { describe, expect, it } from 'vitest';
import { BadDispatchMetadata, parseDispatchMetadata } from '../src/dispatch.ts';
import { readSpeechVendorSettings } from '../src/config.ts';

const metadata = {
  call_id: 'call_0a1b2c3d4e5f60718293a4b5',
  workspace_id: 'ws_1',
  agent_id: 'agent_1',
  agent_version: 3,
  call_type: 'phone_call',
  direction: 'outbound',
  from_number: '+14155550100',
  to_number: '+14155550199',
  dynamic_variables: { customer_name: 'Ada' },
  agent_override: { agent: { voice_speed: 1.2 }, llm: { begin_message: 'Hi Ada!' } },
  reliability: { fallback_voice_ids: ['cartesia-Cleo', '11labs-Adrian'], fallback_llm_model: 'gpt-4.1-mini' },
  report_url: 'https://api.example.com/internal/calls/call_0a1b2c3d4e5f60718293a4b5/events',
  report_token: 'wrt_secret',
};

describe('dispatch metadata', () => {
  it('reads the contract\'s example, ignoring fields it does not know', () => {
    expect(parseDispatchMetadata(JSON.stringify({ ...metadata, added_later: true }))).toEqual(metadata);
    const { agent_override: _override, reliability: _reliability, ...call } = metadata;
    const web = { ...call, call_type: 'web_call', direction: null, from_number: null, to_number: null };
    expect(parseDispatchMetadata(JSON.stringify(web))).toEqual(web);
  });

  it('refuses what is not a call\'s dispatch, naming the fields and never the token', () => {
    const attempt = (text: string | undefined) => {
      try {
        parseDispatchMetadata(text);
      } catch (error) {
        expect(error).toBeInstanceOf(BadDispatchMetadata);
        return (error as Error).message;
      }
      throw new Error('accepted');
    };
    expect(attempt(undefined)).toBe('Dispatch metadata is empty: the worker answers only Parley\'s dispatches');
    expect(attempt('{"call_id":')).toBe('Dispatch metadata is not JSON');
    expect(attempt(JSON.stringify({ ...metadata, agent_version: '3', report_url: 'ftp://x', dynamic_variables: { n: 1 } }))).toBe(
      'Dispatch metadata is not a call\'s: agent_version: Invalid input: expected number, received string; dynamic_variables.n: Invalid input: expected string, received number; report_url: Must be an http:// or https:// URL',
    );
    expect(attempt(JSON.stringify({ ...metadata, report_token: '' }))).not.toContain('wrt_');
  });
});

describe('speech vendor settings', () => {
  it('reads keys and base URLs from the vendor settings, with each vendor\'s own address by default', async () => {
    const settings: Record<string, string> = { DEEPGRAM_API_KEY: ' dg-key ', ELEVENLABS_BASE_URL: 'http://127.0.0.1:9999/', CARTESIA_API_KEY: '' };
    expect(await readSpeechVendorSettings(async (name) => settings[name])).toEqual({
      deepgram: { apiKey: 'dg-key', baseUrl: 'https://api.deepgram.com' },
      elevenlabs: { baseUrl: 'http://127.0.0.1:9999' },
      cartesia: { baseUrl: 'https://api.cartesia.ai' },
      openai: { baseUrl: 'https://api.openai.com/v1' },
    });
    await expect(readSpeechVendorSettings(async (name) => (name === 'OPENAI_BASE_URL' ? 'api.openai.com' : undefined))).rejects.toThrow(
      'Invalid worker settings: OPENAI_BASE_URL: Must be an http:// or https:// URL',
    );
  });
});
