import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';

const app = await startTestApp();
const keyCount = async () => (await app.api.get('/api-keys')).body.length as number;

describe('malformed requests get a clear 4xx and change nothing', () => {
  it.each([
    ['truncated JSON', '{"name":', 'Invalid JSON body'],
    ['single quotes', "{'name':'x'}", 'Invalid JSON body'],
    ['duplicate keys', '{"name":"a","name":"b"}', 'Invalid JSON body: duplicate key "name"'],
    ['deep nesting', `{"name":"x","scopes":${'['.repeat(80)}${']'.repeat(80)}}`, 'Invalid JSON body: nesting deeper than 64 levels'],
    ['an array body', '[{"name":"x"}]', 'body: Expected object, received array'],
    ['a string body', '"name"', 'body: Expected object, received string'],
    ['null', 'null', 'body: Expected object, received null'],
    ['a huge number', '{"name":"x","rate_limit_per_minute":1e400}', 'rate_limit_per_minute: Must be a finite number'],
  ])('%s', async (_case, rawBody, message) => {
    const before = await keyCount();
    const res = await app.api.post('/api-keys', { rawBody });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message });
    expect(await keyCount()).toBe(before);
  });

  it('answers 413 for a JSON body over 25 MB', async () => {
    const before = await keyCount();
    const res = await app.api.post('/api-keys', { rawBody: `{"name":"${'x'.repeat(25 * 1024 * 1024)}"}` });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ status: 413, message: 'JSON body exceeds the 25 MB limit' });
    expect(await keyCount()).toBe(before);
  });

  it('names the body type in the 413 of an oversized upload', async () => {
    const res = await app.api.post('/clone-voice', {
      rawBody: Buffer.alloc(25 * 1024 * 1024 + 1, 'x'),
      headers: { 'content-type': 'multipart/form-data; boundary=b' },
    });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ status: 413, message: 'Request body exceeds the 25 MB limit' });
  });

  it('accepts a large body up to validation, but no string in it over 100,000 characters', async () => {
    // 1.1 MB of unknown fields in strings at the cap: read, then dropped by validation.
    const pad = JSON.stringify(Array.from({ length: 11 }, () => 'x'.repeat(100_000)));
    const res = await app.api.post('/api-keys', { rawBody: `{"name":"x","pad":${pad}}` });
    expect(res.status).toBe(201);

    const long = await app.api.post('/api-keys', { rawBody: `{"name":"x","pad":["${'x'.repeat(100_001)}"]}` });
    expect(long.status).toBe(400);
    expect(long.body).toEqual({ status: 400, message: 'Invalid JSON body: a string is longer than 100000 characters at pad[0]' });
  });

  it('answers an unknown route or method with the route it was asked for', async () => {
    for (const [method, path] of [
      ['GET', '/does-not-exist'],
      ['DELETE', '/workspace'],
      ['GET', '/api-keys/'],
      ['PUT', '/api-keys'],
    ] as const) {
      const res = await app.api[method.toLowerCase() as 'get'](path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Route ${method} ${path} not found` });
    }
  });

  it('rejects a bad percent-encoding in a path parameter', async () => {
    const res = await app.api.delete('/api-keys/%E0%A4%A');
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^Invalid percent-encoding/);
  });

  it.each([
    ['limit=0', 'limit: Must be at least 1'],
    ['limit=-5', 'limit: Must be at least 1'],
    ['limit=abc', 'limit: Must be a whole number'],
    ['limit=1&limit=2', 'limit: Must be a whole number'],
    ['limit=123456789012345678901234567890', 'limit: Must be a whole number'],
  ])('rejects the query %s', async (query, message) => {
    const res = await app.api.get(`/audit-log?${query}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message });
  });

  it('ignores a body on a route that takes none', async () => {
    const res = await app.api.get('/workspace', { rawBody: '{not json' });
    expect(res.status).toBe(200);
  });
});
