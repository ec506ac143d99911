import { describe, expect, it } from 'vitest';
import { createApiKey } from '../../shared/account/api-keys.ts';
import { admit } from '../../shared/platform/auth/gate.ts';
import { PUBLIC_KEY_CAPABILITIES } from '../../shared/platform/auth/scopes.ts';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody, publicKeyBody } from '../support/factories.ts';
import { call } from '../support/http.ts';
import { refusal } from '../support/refusal.ts';
import { awayFromMinuteBoundary } from '../support/time.ts';

const app = await startTestApp();

async function newKey(overrides: Record<string, unknown> = {}) {
  const res = await app.api.post('/api-keys', { body: apiKeyBody(overrides) });
  expect(res.status).toBe(201);
  return res.body as { api_key: string; api_key_id: string };
}

async function listedKey(apiKeyId: string) {
  return (await app.api.get('/api-keys')).body.find((key: { api_key_id: string }) => key.api_key_id === apiKeyId);
}


describe('refused requests change nothing of the key', () => {
  it('leaves last use and the window untouched when the address is not allowed', async () => {
    await awayFromMinuteBoundary();
    const key = await newKey({ allowed_ips: ['127.0.0.2'], rate_limit_per_minute: 50 });

    const refused = await call(app.url, 'GET', '/get-api-key-info', { key: key.api_key, localAddress: '127.0.0.3' });
    expect(refused.status).toBe(403);
    expect((await listedKey(key.api_key_id)).last_used_timestamp).toBeNull();

    // The first admitted request still sees the whole budget: the refusal was taken back.
    const admitted = await call(app.url, 'GET', '/get-api-key-info', { key: key.api_key, localAddress: '127.0.0.2' });
    expect(admitted.status).toBe(200);
    expect(admitted.headers['x-ratelimit-remaining']).toBe('49');
    expect((await listedKey(key.api_key_id)).last_used_timestamp).toBe(admitted.body.last_used_timestamp);
  });

  it('leaves last use and the window untouched when the scope is missing', async () => {
    await awayFromMinuteBoundary();
    const key = await newKey({ scopes: ['agents'], rate_limit_per_minute: 50 });
    const api = app.api.withKey(key.api_key);

    expect((await api.get('/workspace')).status).toBe(403);
    expect((await listedKey(key.api_key_id)).last_used_timestamp).toBeNull();
    const admitted = await api.get('/get-api-key-info');
    expect(admitted.headers['x-ratelimit-remaining']).toBe('49');
  });

  it('stamps an admitted request even when its input is then refused', async () => {
    const key = await newKey();
    const before = Date.now();
    const invalid = await app.api.withKey(key.api_key).post('/api-keys', { body: { name: '' } });
    expect(invalid.status).toBe(400);
    expect((await listedKey(key.api_key_id)).last_used_timestamp).toBeGreaterThanOrEqual(before);
  });

  it('puts last use back when the key limit refuses the request', async () => {
    await awayFromMinuteBoundary();
    const key = await newKey({ rate_limit_per_minute: 1 });
    const api = app.api.withKey(key.api_key);
    const admitted = await api.get('/get-api-key-info');
    expect(admitted.status).toBe(200);
    const stamped = (await listedKey(key.api_key_id)).last_used_timestamp;
    expect(stamped).toBe(admitted.body.last_used_timestamp);

    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await api.get('/get-api-key-info')).status).toBe(429);
    expect((await listedKey(key.api_key_id)).last_used_timestamp).toBe(stamped);
  });

  it('stamps last use at most once a minute', async () => {
    const key = await newKey();
    const request = { sourceIp: '127.0.0.1', authorization: `Bearer ${key.api_key}` };
    const stamped = async () => (await listedKey(key.api_key_id)).last_used_timestamp;
    const start = Date.now();
    await admit({ access: 'any-key' }, request, start);
    expect(await stamped()).toBe(start);
    // Fresh: the record is not written for its last use again within the minute.
    const fresh = await admit({ access: 'any-key' }, request, start + 59_000);
    expect(fresh.principal?.credential?.last_used_timestamp).toBe(start);
    expect(await stamped()).toBe(start);
    await admit({ access: 'any-key' }, request, start + 61_000);
    expect(await stamped()).toBe(start + 61_000);
  });
});

describe('public keys', () => {
  async function newPublicKey(overrides: Record<string, unknown> = {}) {
    const res = await app.api.post('/public-keys', { body: publicKeyBody(overrides) });
    expect(res.status).toBe(201);
    return res.body as { public_key: string; public_key_id: string };
  }

  it('pass on a route that names their capability, holding that capability and no scope', async () => {
    const { public_key } = await newPublicKey();
    const admission = await admit({ access: 'calls', publicKey: 'start_web_call' }, { sourceIp: '127.0.0.1', authorization: `Bearer ${public_key}` });
    expect(admission.principal).toMatchObject({ kind: 'public', scopes: [], capabilities: PUBLIC_KEY_CAPABILITIES });

    // An empty scope list is full access for a secret key; for a public key it grants nothing.
    const minted = await refusal(createApiKey(admission.principal!, { name: 'escalation', scopes: [] } as never));
    expect(minted.status).toBe(403);
    expect(minted.message).toBe('A public key cannot grant access');
  });

  it('are refused, and left unstamped, on every route that names no capability', async () => {
    const { public_key, public_key_id } = await newPublicKey();
    for (const access of ['admin', 'calls', 'any-key'] as const) {
      const refused = await refusal(admit({ access }, { sourceIp: '127.0.0.1', authorization: `Bearer ${public_key}` }));
      expect(refused.status).toBe(403);
      expect(refused.message).toBe('A public key can only start web calls and chats');
    }
    const listed = (await app.api.get('/public-keys')).body.find((key: { public_key_id: string }) => key.public_key_id === public_key_id);
    expect(listed.last_used_timestamp).toBeNull();
  });

  it('pass on their capability only from an allowed origin; elsewhere they are unauthenticated and unstamped', async () => {
    const { public_key, public_key_id } = await newPublicKey({ allowed_origins: ['https://shop.example'] });
    const route = { access: 'calls', publicKey: 'start_chat' } as const;
    const authorization = `Bearer ${public_key}`;
    for (const origin of ['https://evil.example', undefined]) {
      const refused = await refusal(admit(route, { sourceIp: '127.0.0.1', authorization, origin }));
      expect(refused.status).toBe(401);
    }
    const listed = async () => (await app.api.get('/public-keys')).body.find((key: { public_key_id: string }) => key.public_key_id === public_key_id);
    expect((await listed()).last_used_timestamp).toBeNull();

    const admitted = await admit(route, { sourceIp: '127.0.0.1', authorization, origin: 'https://SHOP.example' });
    expect(admitted.principal?.kind).toBe('public');
    expect((await listed()).last_used_timestamp).toBe(admitted.principal?.credential?.last_used_timestamp);
  });

  it('do not pass on a capability outside the fixed set', async () => {
    const { public_key } = await newPublicKey();
    const refused = await refusal(
      admit({ access: 'calls', publicKey: 'manage_numbers' as never }, { sourceIp: '127.0.0.1', authorization: `Bearer ${public_key}` }),
    );
    expect(refused.status).toBe(403);
  });
});
