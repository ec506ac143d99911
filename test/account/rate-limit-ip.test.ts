import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { awayFromMinuteBoundary } from '../support/time.ts';

// Settings are read once at load, like a Lambda's environment.
const app = await startTestApp({ RATE_LIMIT_PER_IP: '20', RATE_LIMIT_PER_KEY: '7' });

describe('per-IP rate limit', () => {
  it('applies to failed authentications, with exact counts under a concurrent burst', async () => {
    await awayFromMinuteBoundary();
    const responses = await Promise.all(
      Array.from({ length: 35 }, () => call(app.url, 'GET', '/workspace', { localAddress: '127.0.0.5' })),
    );
    expect(responses.filter((r) => r.status === 401)).toHaveLength(20);
    const limited = responses.filter((r) => r.status === 429);
    expect(limited).toHaveLength(15);
    for (const res of limited) {
      expect(res.headers['x-ratelimit-limit']).toBe('20');
      expect(res.body.message).toBe(
        `Rate limit exceeded for this IP address: 20 requests per minute. Retry in ${res.headers['retry-after']}s.`,
      );
    }
    // An unknown key is a failed authentication: the address's window refuses it.
    const guessed = await call(app.url, 'GET', '/workspace', { localAddress: '127.0.0.5', key: `key_${'0'.repeat(48)}` });
    expect(guessed.status).toBe(429);
    // A valid key is bounded by its own window, not its address's (which it does not write).
    const keyed = await call(app.url, 'GET', '/workspace', { localAddress: '127.0.0.5', key: app.workspace.api_key });
    expect(keyed.status).toBe(200);
    expect(keyed.headers['x-ratelimit-limit']).toBe('7');
    // Other addresses are unaffected.
    const other = await call(app.url, 'GET', '/workspace', { localAddress: '127.0.0.6', key: app.workspace.api_key });
    expect(other.status).toBe(200);
  });

  it('limits unknown routes too', async () => {
    await awayFromMinuteBoundary();
    const responses = await Promise.all(
      Array.from({ length: 25 }, () => call(app.url, 'GET', '/no-such-route', { localAddress: '127.0.0.7' })),
    );
    expect(responses.filter((r) => r.status === 404)).toHaveLength(20);
    expect(responses.filter((r) => r.status === 429)).toHaveLength(5);
  });
});

describe('RATE_LIMIT_PER_KEY', () => {
  it('is the limit of keys without their own', async () => {
    const info = await call(app.url, 'GET', '/get-api-key-info', { key: app.workspace.api_key, localAddress: '127.0.0.8' });
    expect(info.body.rate_limit_per_minute).toBe(7);
    expect(info.headers['x-ratelimit-limit']).toBe('7');
  });
});
