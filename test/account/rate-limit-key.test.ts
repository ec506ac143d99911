import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody } from '../support/factories.ts';
import { awayFromMinuteBoundary } from '../support/time.ts';

const app = await startTestApp();

async function keyWithLimit(limit: number, extra: Record<string, unknown> = {}) {
  const res = await app.api.post('/api-keys', { body: apiKeyBody({ rate_limit_per_minute: limit, ...extra }) });
  expect(res.status).toBe(201);
  return app.api.withKey(res.body.api_key as string);
}

describe('per-key rate limit', () => {
  it('admits exactly the limit out of a concurrent burst', async () => {
    const api = await keyWithLimit(10);
    await awayFromMinuteBoundary();

    const responses = await Promise.all(Array.from({ length: 30 }, () => api.get('/get-api-key-info')));

    const admitted = responses.filter((r) => r.status === 200);
    const refused = responses.filter((r) => r.status === 429);
    expect(admitted).toHaveLength(10);
    expect(refused).toHaveLength(20);
    expect(admitted.map((r) => Number(r.headers['x-ratelimit-remaining'])).sort((a, b) => a - b)).toEqual([
      0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ]);
    for (const res of responses) expect(res.headers['x-ratelimit-limit']).toBe('10');
    for (const res of refused) {
      const retry = Number(res.headers['retry-after']);
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(res.body).toEqual({
        status: 429,
        message: `Rate limit exceeded for this API key: 10 requests per minute. Retry in ${retry}s.`,
      });
    }
  });

  it('puts the rate-limit headers on every response, errors included', async () => {
    const api = await keyWithLimit(50, { scopes: ['agents'] });
    const forbidden = await api.get('/workspace');
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers['x-ratelimit-limit']).toBe('50');
    expect(Number(forbidden.headers['x-ratelimit-reset'])).toBeGreaterThanOrEqual(1);
    expect(Number(forbidden.headers['x-ratelimit-reset'])).toBeLessThanOrEqual(60);
    const invalid = await app.api.post('/api-keys', { body: { name: '' } });
    expect(invalid.status).toBe(400);
    expect(invalid.headers['x-ratelimit-limit']).toBe('600');
  });

  it('does not charge requests refused for their source address', async () => {
    const api = await keyWithLimit(5, { allowed_ips: ['127.0.0.2'] });
    await awayFromMinuteBoundary();
    for (let i = 0; i < 5; i++) {
      expect((await api.get('/get-api-key-info', { localAddress: '127.0.0.3' })).status).toBe(403);
    }
    const statuses = [];
    for (let i = 0; i < 6; i++) statuses.push((await api.get('/get-api-key-info', { localAddress: '127.0.0.2' })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it('counts each key on its own', async () => {
    const first = await keyWithLimit(3);
    const second = await keyWithLimit(3);
    await awayFromMinuteBoundary();
    const firstStatuses = await Promise.all(Array.from({ length: 5 }, () => first.get('/get-api-key-info')));
    const secondStatuses = await Promise.all(Array.from({ length: 3 }, () => second.get('/get-api-key-info')));
    expect(firstStatuses.filter((r) => r.status === 200)).toHaveLength(3);
    expect(secondStatuses.map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it('applies a new limit from the next request', async () => {
    const created = await app.api.post('/api-keys', { body: apiKeyBody({ rate_limit_per_minute: 2 }) });
    const api = app.api.withKey(created.body.api_key);
    await awayFromMinuteBoundary();
    expect((await api.get('/get-api-key-info')).status).toBe(200);
    expect((await api.get('/get-api-key-info')).status).toBe(200);
    expect((await api.get('/get-api-key-info')).status).toBe(429);
    const raised = await app.api.patch(`/api-keys/${created.body.api_key_id}`, { body: { rate_limit_per_minute: 3 } });
    expect(raised.body.rate_limit_per_minute).toBe(3);
    expect((await api.get('/get-api-key-info')).status).toBe(200);
    expect((await api.get('/get-api-key-info')).status).toBe(429);
  });
});
