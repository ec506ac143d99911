import { describe, expect, it } from 'vitest';
import { bearerToken } from '../shared/auth/gate.ts';
import { startTestApp } from './support/app.ts';
import { call } from './support/http.ts';

/** Issue 8, "Hardening": what probing the running server found, through the real HTTP layer. */
const app = await startTestApp();
const UNAUTHORIZED = { status: 401, message: 'Missing or invalid API key / session' };

describe('one credential per request', () => {
  const other = `key_${'0'.repeat(48)}`;

  it.each([
    ['a valid key first', () => [`Bearer ${app.workspace.api_key}`, `Bearer ${other}`]],
    ['a valid key second', () => [`Bearer ${other}`, `Bearer ${app.workspace.api_key}`]],
    ['the same valid key twice', () => [`Bearer ${app.workspace.api_key}`, `Bearer ${app.workspace.api_key}`]],
    ['a valid key and an empty header', () => [`Bearer ${app.workspace.api_key}`, '']],
  ])('answers 401 to two Authorization headers: %s', async (_case, values) => {
    const res = await call(app.url, 'GET', '/workspace', {
      rawHeaders: values().flatMap((value) => ['Authorization', value]),
    });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED);
  });

  it('answers 401 to one header listing two credentials, as API Gateway joins repeats', async () => {
    const res = await call(app.url, 'GET', '/workspace', {
      headers: { authorization: `Bearer ${app.workspace.api_key},Bearer ${other}` },
    });
    expect(res.status).toBe(401);
    expect(res.body).toEqual(UNAUTHORIZED);
  });

  it('still accepts the one key alone', async () => {
    expect((await app.api.get('/workspace')).status).toBe(200);
  });

  it('refuses a joined value in the gate itself (what a Lambda behind API Gateway sees)', () => {
    const key = `key_${'a'.repeat(48)}`;
    expect(bearerToken(`Bearer ${key}`)).toBe(key);
    expect(bearerToken(`Bearer ${key},Bearer ${other}`)).toBeUndefined();
    expect(bearerToken(`Bearer ${key}, Bearer ${key}`)).toBeUndefined();
    expect(bearerToken(`Bearer ${key},`)).toBeUndefined();
  });
});

describe('paths are matched as sent', () => {
  it.each([
    ['GET', '//anything/api-keys'],
    ['GET', '//api-keys'],
    ['GET', '/api-keys//'],
    ['GET', '//workspace'],
    ['GET', '/workspace/'],
    ['GET', '/x/../workspace'],
    ['DELETE', '/api-keys//x'],
  ])('answers %s %s with 404', async (method, path) => {
    const res = await call(app.url, method, path, { key: app.workspace.api_key });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ status: 404, message: `Route ${method} ${path} not found` });
  });

  it('still serves the path without empty segments', async () => {
    expect((await call(app.url, 'GET', '/api-keys', { key: app.workspace.api_key })).status).toBe(200);
    expect((await call(app.url, 'GET', '/audit-log?limit=1', { key: app.workspace.api_key })).status).toBe(200);
  });
});
