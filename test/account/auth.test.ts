import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody, publicKeyBody } from '../support/factories.ts';
import { call } from '../support/http.ts';

const app = await startTestApp();
const UNAUTHORIZED = { status: 401, message: 'Missing or invalid API key / session' };

async function createKey(overrides: Record<string, unknown> = {}) {
  const res = await app.api.post('/api-keys', { body: apiKeyBody(overrides) });
  expect(res.status).toBe(201);
  return res.body as { api_key: string; api_key_id: string };
}

describe('authentication', () => {
  it.each([
    ['no Authorization header', {}],
    ['another scheme', { authorization: `Basic ${app.workspace.api_key}` }],
    ['a bare key', { authorization: app.workspace.api_key }],
    ['a key of the wrong length', { authorization: `Bearer ${app.workspace.api_key.slice(0, -1)}` }],
    ['upper-case hex', { authorization: `Bearer ${app.workspace.api_key.toUpperCase().replace('KEY_', 'key_')}` }],
    ['an unknown key', { authorization: `Bearer key_${'0'.repeat(48)}` }],
    ['two tokens', { authorization: `Bearer ${app.workspace.api_key} ${app.workspace.api_key}` }],
  ])('answers 401 for %s', async (_case, headers) => {
    const res = await call(app.url, 'GET', '/workspace', { headers });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED);
  });

  it('accepts the scheme in any case', async () => {
    const res = await call(app.url, 'GET', '/workspace', { headers: { authorization: `bearer ${app.workspace.api_key}` } });
    expect(res.status).toBe(200);
  });

  it('fails a deleted key on its very next request', async () => {
    const key = await createKey();
    const api = app.api.withKey(key.api_key);
    expect((await api.get('/get-api-key-info')).status).toBe(200);
    expect((await app.api.delete(`/api-keys/${key.api_key_id}`)).status).toBe(204);
    const after = await api.get('/get-api-key-info');
    expect(after.status).toBe(401);
    expect(after.body).toEqual(UNAUTHORIZED);
  });

  it('stamps last_used_timestamp on each use', async () => {
    const key = await createKey();
    const listed = (await app.api.get('/api-keys')).body.find((k: { api_key_id: string }) => k.api_key_id === key.api_key_id);
    expect(listed.last_used_timestamp).toBeNull();
    const before = Date.now();
    const info = await app.api.withKey(key.api_key).get('/get-api-key-info');
    expect(info.body.last_used_timestamp).toBeGreaterThanOrEqual(before);
    const relisted = (await app.api.get('/api-keys')).body.find((k: { api_key_id: string }) => k.api_key_id === key.api_key_id);
    expect(relisted.last_used_timestamp).toBe(info.body.last_used_timestamp);
  });

  it('serves public routes without a key', async () => {
    const res = await call(app.url, 'GET', '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
  });
});

describe('scopes', () => {
  it('refuses a route outside the key scopes with the spec message', async () => {
    const key = await createKey({ scopes: ['agents', 'calls'] });
    const res = await app.api.withKey(key.api_key).get('/workspace');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "admin" scope' });
  });

  it('lets any key read its own info, and admin pass every check', async () => {
    const scoped = await createKey({ scopes: ['kb'] });
    expect((await app.api.withKey(scoped.api_key).get('/get-api-key-info')).body.scopes).toEqual(['kb']);
    const admin = await createKey({ scopes: ['admin'] });
    expect((await app.api.withKey(admin.api_key).get('/workspace')).status).toBe(200);
  });
});

describe('IP allowlist', () => {
  it('matches the connection source address, not a client header', async () => {
    const key = await createKey({ allowed_ips: ['127.0.0.2'] });
    const api = app.api.withKey(key.api_key);

    expect((await api.get('/get-api-key-info', { localAddress: '127.0.0.2' })).status).toBe(200);

    const refused = await api.get('/get-api-key-info', {
      localAddress: '127.0.0.3',
      headers: { 'x-forwarded-for': '127.0.0.2', 'x-real-ip': '127.0.0.2' },
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ status: 403, message: 'This API key is not allowed from 127.0.0.3' });
  });

  it('compares IPv6 addresses in canonical form', async () => {
    const key = await createKey({ allowed_ips: ['0:0:0:0:0:0:0:1'] });
    expect(key).toMatchObject({ allowed_ips: ['::1'] });
    const { startLocalServer } = await import('../../local/server.ts');
    const v6 = await startLocalServer({ port: 0, host: '::1' });
    try {
      const allowed = await call(v6.url, 'GET', '/get-api-key-info', { key: key.api_key, localAddress: '::1' });
      expect(allowed.status).toBe(200);
    } finally {
      await v6.close();
    }
    const v4 = await call(app.url, 'GET', '/get-api-key-info', { key: key.api_key, localAddress: '127.0.0.1' });
    expect(v4.status).toBe(403);
    expect(v4.body.message).toBe('This API key is not allowed from 127.0.0.1');
  });
});

describe('public keys', () => {
  it('may only start web calls and chats', async () => {
    const created = await app.api.post('/public-keys', { body: publicKeyBody() });
    expect(created.status).toBe(201);
    expect(created.body.public_key).toMatch(/^public_key_[0-9a-f]{48}$/);
    const res = await app.api.withKey(created.body.public_key).get('/workspace');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 403, message: 'A public key can only start web calls and chats' });
  });

  it('is refused as unauthenticated from an origin it does not allow', async () => {
    const created = await app.api.post('/public-keys', { body: publicKeyBody({ allowed_origins: ['https://shop.example'] }) });
    const key = created.body.public_key as string;
    const wrongOrigin = await call(app.url, 'GET', '/workspace', { key, headers: { origin: 'https://evil.example' } });
    expect(wrongOrigin.status).toBe(401);
    expect(wrongOrigin.body).toEqual(UNAUTHORIZED);
    const noOrigin = await call(app.url, 'GET', '/workspace', { key });
    expect(noOrigin.status).toBe(401);
    const rightOrigin = await call(app.url, 'GET', '/workspace', { key, headers: { origin: 'https://shop.example' } });
    expect(rightOrigin.status).toBe(403);
  });

  it('validates origins when written', async () => {
    const res = await app.api.post('/public-keys', {
      body: publicKeyBody({ allowed_origins: ['https://ok.example', 'https://bad.example/path', 'ftp://x.example'] }),
    });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe(
      'allowed_origins.1: Must be an origin such as https://example.com; allowed_origins.2: Must be an origin such as https://example.com',
    );
  });
});
