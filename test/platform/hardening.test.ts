import { describe, expect, it } from 'vitest';
import { bearerToken } from '../../shared/platform/auth/gate.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

/** What probing the running server found, through the real HTTP layer. */
const app = await startTestApp();
const UNAUTHORIZED = { status: 401, message: 'Missing or invalid API key / session' };
const keyCount = async () => (await app.api.get('/api-keys')).body.length as number;

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

describe('JSON routes take JSON', () => {
  const body = JSON.stringify({ name: 'hardening' });

  it.each([
    ['text/plain', 'text/plain'],
    ['a form', 'application/x-www-form-urlencoded'],
    ['XML', 'application/xml'],
    ['multipart', 'multipart/form-data; boundary=b'],
    ['JSON in another charset', 'application/json; charset=iso-8859-1'],
    ['two content types', 'application/json,text/plain'],
  ])('answers 415 to %s and creates nothing', async (_case, contentType) => {
    const before = await keyCount();
    const res = await app.api.post('/api-keys', { rawBody: body, headers: { 'content-type': contentType } });
    expect(res.status).toBe(415);
    expect(res.body).toEqual({
      status: 415,
      message: `Unsupported content type "${contentType}": this route takes a JSON body, sent with "Content-Type: application/json"`,
    });
    expect(await keyCount()).toBe(before);
  });

  it('answers 415 to a body without a content type', async () => {
    const before = await keyCount();
    const res = await app.api.post('/api-keys', { rawBody: body, headers: { 'content-type': null } });
    expect(res.status).toBe(415);
    expect(res.body.message).toBe('Missing content type: this route takes a JSON body, sent with "Content-Type: application/json"');
    expect(await keyCount()).toBe(before);
  });

  it.each(['application/json', 'application/json; charset=utf-8', 'application/json;charset=UTF-8', 'application/merge-patch+json'])(
    'accepts %s',
    async (contentType) => {
      const res = await app.api.post('/api-keys', { rawBody: body, headers: { 'content-type': contentType } });
      expect(res.status).toBe(201);
    },
  );

  it('answers 400 to bytes that are not UTF-8, storing nothing', async () => {
    const before = await keyCount();
    const res = await app.api.post('/api-keys', {
      rawBody: Buffer.concat([Buffer.from('{"name":"bad '), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]),
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message: 'Invalid request body: not valid UTF-8' });
    expect(await keyCount()).toBe(before);
  });

  it('keeps non-ASCII text as sent', async () => {
    const res = await app.api.post('/api-keys', { body: { name: 'Zoë — 名前 😀' } });
    expect(res.status).toBe(201);
    const listed = (await app.api.get('/api-keys')).body as { name: string }[];
    expect(listed.map((key) => key.name)).toContain('Zoë — 名前 😀');
  });

  it('still reads an empty body without a content type as no body', async () => {
    const res = await call(app.url, 'POST', '/api-keys', { key: app.workspace.api_key, headers: { 'content-length': '0' } });
    // The route requires a name: the empty body reached validation rather than a 415.
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/name/);
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

describe('the local server runs a bounded number of handlers at once', () => {
  it('holds the rest in arrival order until a slot frees', async () => {
    const { InvocationSlots } = await import('../../local/invocation-slots.ts');
    const slots = new InvocationSlots(2);
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const gates = Array.from({ length: 5 }, () => {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      return { promise, resolve };
    });
    const runs = gates.map((gate, i) =>
      slots.run(async () => {
        started.push(i);
        peak = Math.max(peak, ++running);
        await gate.promise;
        running--;
        return i;
      }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1]);
    gates[1]!.resolve();
    await runs[1];
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual([0, 1, 2]);
    for (const gate of gates) gate.resolve();
    expect(await Promise.all(runs)).toEqual([0, 1, 2, 3, 4]);
    expect(started).toEqual([0, 1, 2, 3, 4]);
    expect(peak).toBe(2);
  });

  it('frees the slot of a handler that throws', async () => {
    const { InvocationSlots } = await import('../../local/invocation-slots.ts');
    const slots = new InvocationSlots(1);
    await expect(slots.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await slots.run(async () => 'next')).toBe('next');
  });
});
