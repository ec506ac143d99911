import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';

const app = await startTestApp();

describe('workspace', () => {
  it('reads the workspace with its defaults', async () => {
    const res = await app.api.get('/workspace');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      workspace_id: app.workspace.workspace_id,
      name: app.workspace.name,
      webhook_url: null,
      concurrency_limit: 20,
      created_timestamp: expect.any(Number),
    });
  });

  it('updates webhook_url and concurrency_limit; null removes the URL', async () => {
    const { api } = await app.newWorkspace();
    const set = await api.patch('/workspace', { body: { webhook_url: 'http://127.0.0.1:4009/hook', concurrency_limit: 1000 } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ webhook_url: 'http://127.0.0.1:4009/hook', concurrency_limit: 1000 });
    const cleared = await api.patch('/workspace', { body: { webhook_url: null } });
    expect(cleared.body).toMatchObject({ webhook_url: null, concurrency_limit: 1000 });
    expect((await api.get('/workspace')).body.webhook_url).toBeNull();
    const actions = (await api.get('/audit-log')).body.map((e: { action: string; changes: string[] }) => [e.action, e.changes]);
    expect(actions.slice(0, 2)).toEqual([
      ['workspace.update', ['webhook_url']],
      ['workspace.update', ['webhook_url', 'concurrency_limit']],
    ]);
  });

  it.each([
    [{ concurrency_limit: 0 }, 'concurrency_limit: Must be at least 1'],
    [{ concurrency_limit: 1001 }, 'concurrency_limit: Must be at most 1000'],
    [{ webhook_url: 'ftp://example.com/x' }, 'webhook_url: Must be an http:// or https:// URL'],
    [{ webhook_url: 'not a url' }, 'webhook_url: Must be an http:// or https:// URL'],
    [{ name: ' ' }, 'name: Must be at least 1 characters'],
  ])('rejects %j and changes nothing', async (body, message) => {
    const before = (await app.api.get('/workspace')).body;
    const res = await app.api.patch('/workspace', { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message });
    expect((await app.api.get('/workspace')).body).toEqual(before);
  });

  it('ignores server-controlled fields', async () => {
    const before = (await app.api.get('/workspace')).body;
    const res = await app.api.patch('/workspace', { body: { workspace_id: 'ws_000000000000000000000000', created_timestamp: 5 } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual(before);
  });
});

describe('workspace settings', () => {
  it('defaults webhook_timeout_ms to 10,000; null restores it', async () => {
    const { api } = await app.newWorkspace();
    expect((await api.get('/workspace/settings')).body).toEqual({ webhook_timeout_ms: 10_000 });
    expect((await api.patch('/workspace/settings', { body: { webhook_timeout_ms: 2500 } })).body).toEqual({ webhook_timeout_ms: 2500 });
    expect((await api.patch('/workspace/settings', { body: { webhook_timeout_ms: null } })).body).toEqual({ webhook_timeout_ms: 10_000 });
  });

  it.each([999, 60_001, 'fast'])('rejects webhook_timeout_ms %j', async (value) => {
    const res = await app.api.patch('/workspace/settings', { body: { webhook_timeout_ms: value } });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^webhook_timeout_ms: /);
  });

  it('is admin only', async () => {
    const scoped = (await app.api.post('/api-keys', { body: { name: 'n', scopes: ['numbers'] } })).body.api_key;
    const res = await app.api.withKey(scoped).patch('/workspace/settings', { body: { webhook_timeout_ms: 2000 } });
    expect(res.status).toBe(403);
    expect(res.body.message).toBe('This API key lacks the "admin" scope');
  });
});
