import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';

const app = await startTestApp();

describe('local runtime', () => {
  it('answers get-api-key-info for the Default key', async () => {
    const res = await app.api.get('/get-api-key-info');
    expect(res.status).toBe(200);
    expect(res.body.name).toBe('Default key');
  });
});
