import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';

const app = await startTestApp();

type Key = { api_key_id: string; name: string; is_webhook_key: boolean; masked_key: string; scopes: string[] };

async function keysOf(api = app.api): Promise<Key[]> {
  const res = await api.get('/api-keys');
  expect(res.status).toBe(200);
  return res.body;
}
const webhookKeys = (keys: Key[]) => keys.filter((k) => k.is_webhook_key).map((k) => k.name);

describe('API keys', () => {
  it('shows the secret once and masks it everywhere else', async () => {
    const created = await app.api.post('/api-keys', { body: apiKeyBody({ name: 'deploy' }) });
    expect(created.status).toBe(201);
    const secret: string = created.body.api_key;
    expect(secret).toMatch(/^key_[0-9a-f]{48}$/);
    expect(created.body.api_key_id).toMatch(/^key_[0-9a-f]{24}$/);
    expect(created.body.masked_key).toBe(`${secret.slice(0, 8)}********${secret.slice(-4)}`);
    expect(created.body).toMatchObject({
      name: 'deploy',
      is_webhook_key: false,
      scopes: [],
      allowed_ips: [],
      rate_limit_per_minute: 600,
      last_used_timestamp: null,
    });

    const listed = (await keysOf()).find((k) => k.api_key_id === created.body.api_key_id)!;
    expect(listed).not.toHaveProperty('api_key');
    expect(JSON.stringify(await keysOf())).not.toContain(secret);
    expect(listed.masked_key).toBe(created.body.masked_key);
  });

  it('lists newest first, the Default key last', async () => {
    const { api } = await app.newWorkspace();
    await api.post('/api-keys', { body: apiKeyBody({ name: 'second' }) });
    await new Promise((r) => setTimeout(r, 5));
    await api.post('/api-keys', { body: apiKeyBody({ name: 'third' }) });
    expect((await keysOf(api)).map((k) => k.name)).toEqual(['third', 'second', 'Default key']);
  });

  it('canonicalises and de-duplicates allowed_ips and scopes', async () => {
    const res = await app.api.post('/api-keys', {
      body: apiKeyBody({ allowed_ips: ['2001:DB8::1', '2001:db8:0::1', '::ffff:10.1.2.3'], scopes: ['kb', 'kb', 'calls'] }),
    });
    expect(res.status).toBe(201);
    expect(res.body.allowed_ips).toEqual(['2001:db8::1', '10.1.2.3']);
    expect(res.body.scopes).toEqual(['kb', 'calls']);
  });

  it.each([
    [{ name: '' }, 'name: Must be at least 1 characters'],
    [{}, 'name: Required'],
    [{ name: 'x', scopes: ['root'] }, 'scopes.0: Expected one of "agents", "calls", "numbers", "kb", "analytics", "admin"'],
    [{ name: 'x', allowed_ips: ['1.2.3.4', '1.2.3.0/24'] }, 'allowed_ips.1: Must be an exact IPv4 or IPv6 address (CIDR ranges are not allowed)'],
    [{ name: 'x', allowed_ips: Array.from({ length: 51 }, (_, i) => `10.0.0.${i}`) }, 'allowed_ips: Must have at most 50 items'],
    [{ name: 'x', rate_limit_per_minute: 0 }, 'rate_limit_per_minute: Must be at least 1'],
    [{ name: 'x', rate_limit_per_minute: 100_001 }, 'rate_limit_per_minute: Must be at most 100000'],
    [{ name: 'x', rate_limit_per_minute: 1.5 }, 'rate_limit_per_minute: Must be a whole number'],
    [{ name: 'x', is_webhook_key: 'yes' }, 'is_webhook_key: Expected boolean, received string'],
  ])('rejects %j', async (body, message) => {
    const before = (await keysOf()).length;
    const res = await app.api.post('/api-keys', { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message });
    expect((await keysOf()).length).toBe(before);
  });

  it('ignores server-controlled and unknown fields on create', async () => {
    const res = await app.api.post('/api-keys', {
      body: apiKeyBody({ api_key_id: 'key_000000000000000000000000', created_timestamp: 1, api_key: 'key_x', masked_key: 'x', bogus: true }),
    });
    expect(res.status).toBe(201);
    expect(res.body.api_key_id).not.toBe('key_000000000000000000000000');
    expect(res.body.created_timestamp).toBeGreaterThan(1);
    expect(res.body).not.toHaveProperty('bogus');
  });

  it('updates name, access and limit, and null restores the default limit', async () => {
    const created = (await app.api.post('/api-keys', { body: apiKeyBody({ rate_limit_per_minute: 5 }) })).body;
    const patched = await app.api.patch(`/api-keys/${created.api_key_id}`, {
      body: { name: 'renamed', scopes: ['calls'], allowed_ips: ['192.0.2.1'] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'renamed', scopes: ['calls'], allowed_ips: ['192.0.2.1'], rate_limit_per_minute: 5 });
    const restored = await app.api.patch(`/api-keys/${created.api_key_id}`, { body: { rate_limit_per_minute: null } });
    expect(restored.body.rate_limit_per_minute).toBe(600);
  });

  it('answers 404 for a missing key and for a key of another workspace', async () => {
    const other = await app.newWorkspace();
    const foreign = (await other.api.post('/api-keys', { body: apiKeyBody() })).body;
    for (const res of [
      await app.api.patch(`/api-keys/${foreign.api_key_id}`, { body: { name: 'mine now' } }),
      await app.api.delete(`/api-keys/${foreign.api_key_id}`),
      await app.api.delete('/api-keys/key_000000000000000000000000'),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: 'API key not found' });
    }
    expect((await other.api.withKey(foreign.api_key).get('/get-api-key-info')).body.name).toBe(foreign.name);
  });

  it('rejects malformed key IDs in the path', async () => {
    for (const id of ['agent_000000000000000000000000', 'key_00000000000000000000000０', 'key_123', 'key_000000000000000000000000%0A']) {
      const res = await app.api.delete(`/api-keys/${id}`);
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('id: Must be an API key ID (key_ followed by 24 hex characters)');
    }
  });
});

describe('the last full-access key', () => {
  const LAST_KEY = (action: string) =>
    `This is the workspace's last API key with full access (no scopes, or "admin"): create another such key before ${action}`;

  it('cannot be deleted, so the workspace is never locked out', async () => {
    const { api } = await app.newWorkspace();
    const scoped = (await api.post('/api-keys', { body: apiKeyBody({ scopes: ['agents'] }) })).body;
    const only = (await keysOf(api)).find((key: { name: string }) => key.name === 'Default key')!;

    const res = await api.delete(`/api-keys/${only.api_key_id}`);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ status: 409, message: LAST_KEY('deleting it') });
    expect((await api.get('/get-api-key-info')).status).toBe(200);

    // A scoped key is not full access and goes; an admin key can take over, then the old one goes.
    expect((await api.delete(`/api-keys/${scoped.api_key_id}`)).status).toBe(204);
    const admin = (await api.post('/api-keys', { body: apiKeyBody({ scopes: ['admin'] }) })).body;
    expect((await api.delete(`/api-keys/${only.api_key_id}`)).status).toBe(204);
    expect((await api.withKey(admin.api_key).delete(`/api-keys/${admin.api_key_id}`)).body.message).toBe(LAST_KEY('deleting it'));
  });

  it('cannot lose its full access by a scope change', async () => {
    const { api } = await app.newWorkspace();
    const only = (await keysOf(api))[0]!;
    const res = await api.patch(`/api-keys/${only.api_key_id}`, { body: { scopes: ['agents'] } });
    expect(res.status).toBe(409);
    expect(res.body.message).toBe(LAST_KEY('removing its full access'));
    expect((await keysOf(api))[0]!.scopes).toEqual([]);
    expect((await api.patch(`/api-keys/${only.api_key_id}`, { body: { scopes: ['admin', 'agents'] } })).status).toBe(200);
  });

  it('survives concurrent deletes and downgrades of the last full-access keys: exactly one wins', async () => {
    const { api } = await app.newWorkspace();
    const second = (await api.post('/api-keys', { body: apiKeyBody({ name: 'second' }) })).body;
    const third = (await api.post('/api-keys', { body: apiKeyBody({ name: 'third' }) })).body;
    const first = (await keysOf(api)).find((key: { name: string }) => key.name === 'Default key')!;

    const results = await Promise.all([
      api.delete(`/api-keys/${first.api_key_id}`),
      api.delete(`/api-keys/${second.api_key_id}`),
      api.patch(`/api-keys/${third.api_key_id}`, { body: { scopes: ['calls'] } }),
    ]);

    const statuses = results.map((res) => res.status);
    expect(statuses.filter((status) => status === 409), JSON.stringify(results.map((res) => res.body))).toHaveLength(1);
    // Whichever key survived lists them (the Default key may be the one deleted).
    const survivor = [api, api.withKey(second.api_key), api.withKey(third.api_key)];
    const listings = await Promise.all(survivor.map((client) => client.get('/api-keys')));
    const remaining = listings.find((res) => res.status === 200)!.body;
    const deleted = statuses.slice(0, 2).filter((status) => status === 204).length;
    expect(remaining).toHaveLength(3 - deleted);
    const full = remaining.filter((key: { scopes: string[] }) => key.scopes.length === 0 || key.scopes.includes('admin'));
    expect(full).toHaveLength(1);
  });
});

describe('webhook key', () => {
  it('starts on the Default key and moves when set on another key', async () => {
    const { api } = await app.newWorkspace();
    expect(webhookKeys(await keysOf(api))).toEqual(['Default key']);

    const created = await api.post('/api-keys', { body: apiKeyBody({ name: 'signer', is_webhook_key: true }) });
    expect(created.body.is_webhook_key).toBe(true);
    expect(webhookKeys(await keysOf(api))).toEqual(['signer']);

    const other = (await api.post('/api-keys', { body: apiKeyBody({ name: 'other' }) })).body;
    const moved = await api.patch(`/api-keys/${other.api_key_id}`, { body: { is_webhook_key: true } });
    expect(moved.body.is_webhook_key).toBe(true);
    expect(webhookKeys(await keysOf(api))).toEqual(['other']);
  });

  it('cannot be switched off directly, only moved', async () => {
    const { api } = await app.newWorkspace();
    const holder = (await keysOf(api))[0]!;
    const res = await api.patch(`/api-keys/${holder.api_key_id}`, { body: { is_webhook_key: false } });
    expect(res.status).toBe(400);
    expect(res.body.message).toBe('is_webhook_key: Set is_webhook_key on another key to move the webhook flag');
    expect(webhookKeys(await keysOf(api))).toEqual(['Default key']);
  });

  it('is gone with the key: deleting the webhook key leaves none', async () => {
    const { api } = await app.newWorkspace();
    const signer = (await api.post('/api-keys', { body: apiKeyBody({ name: 'signer', is_webhook_key: true }) })).body;
    const admin = api.withKey(signer.api_key);
    expect((await admin.delete(`/api-keys/${signer.api_key_id}`)).status).toBe(204);
    expect(webhookKeys(await keysOf(api))).toEqual([]);
    const next = (await api.post('/api-keys', { body: apiKeyBody({ name: 'next', is_webhook_key: true }) })).body;
    expect(next.is_webhook_key).toBe(true);
    expect(webhookKeys(await keysOf(api))).toEqual(['next']);
  });

  it('ends with exactly one holder after concurrent moves', async () => {
    const { api } = await app.newWorkspace();
    const candidates = await Promise.all(
      Array.from({ length: 6 }, (_, i) => api.post('/api-keys', { body: apiKeyBody({ name: `k${i}` }) })),
    );
    const results = await Promise.all(
      candidates.map((c) => api.patch(`/api-keys/${c.body.api_key_id}`, { body: { is_webhook_key: true } })),
    );
    expect(results.every((r) => r.status === 200)).toBe(true);
    expect(webhookKeys(await keysOf(api))).toHaveLength(1);
  });
});

describe('audit log', () => {
  it('records create, update and delete of keys, newest first, with pagination', async () => {
    const { api } = await app.newWorkspace();
    const key = (await api.post('/api-keys', { body: apiKeyBody({ name: 'audited' }) })).body;
    await api.patch(`/api-keys/${key.api_key_id}`, { body: { name: 'audited 2' } });
    await api.delete(`/api-keys/${key.api_key_id}`);
    const actor = (await api.get('/get-api-key-info')).body.api_key_id;

    const log = await api.get('/audit-log');
    expect(log.status).toBe(200);
    expect(log.body.map((e: { action: string }) => e.action)).toEqual([
      'api_key.delete',
      'api_key.update',
      'api_key.create',
      'api_key.create',
    ]);
    expect(log.body[0]).toMatchObject({ actor: { type: 'api_key', id: actor }, target: { type: 'api_key', id: key.api_key_id } });
    expect(log.body[1].changes).toEqual(['name']);
    expect(log.body[3].actor).toEqual({ type: 'system', id: null });

    const page1 = await api.get('/audit-log?limit=2');
    const page2 = await api.get(`/audit-log?limit=2&pagination_key=${page1.body[1].audit_log_id}`);
    expect([...page1.body, ...page2.body].map((e: { audit_log_id: string }) => e.audit_log_id)).toEqual(
      log.body.map((e: { audit_log_id: string }) => e.audit_log_id),
    );
  });

  it('rejects a malformed pagination_key', async () => {
    const res = await app.api.get('/audit-log?pagination_key=nope');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message: 'Invalid pagination_key' });
  });

  it('records nothing for a change that failed', async () => {
    const { api } = await app.newWorkspace();
    const before = (await api.get('/audit-log')).body.length;
    await api.post('/api-keys', { body: { name: 'x', scopes: ['nope'] } });
    await api.patch('/api-keys/key_000000000000000000000000', { body: { name: 'y' } });
    expect((await api.get('/audit-log')).body.length).toBe(before);
  });
});

describe('GET /get-api-key-info as retell-sdk identity.retrieve', () => {
  it("names the key and the workspace (the org), as the workspace is named now", async () => {
    const { api, api_key, name } = await app.newWorkspace();
    const key = (await api.post('/api-keys', { body: apiKeyBody({ name: 'deploy bot' }) })).body;
    const identity = await retellClient(app.url, key.api_key).identity.retrieve();
    expect(identity).toMatchObject({ api_key_name: 'deploy bot', org_name: name });

    expect((await api.patch('/workspace', { body: { name: 'Renamed Inc' } })).status).toBe(200);
    const info = await api.withKey(api_key).get('/get-api-key-info');
    expect(info.body).toMatchObject({ name: 'Default key', api_key_name: 'Default key', org_name: 'Renamed Inc' });
  });

  it('keeps every key on the final name while renames and key creations race', async () => {
    const { api, api_key } = await app.newWorkspace();
    const created = await Promise.all([
      ...Array.from({ length: 8 }, (_, i) => api.post('/api-keys', { body: apiKeyBody({ name: `k${i}` }) })),
      ...['First', 'Second', 'Third'].map((name) => api.patch('/workspace', { body: { name } })),
    ]);
    expect(created.map((res) => res.status).sort()).toEqual([200, 200, 200, 201, 201, 201, 201, 201, 201, 201, 201]);
    const finalName = (await api.get('/workspace')).body.name;

    const keys = [api_key, ...created.filter((res) => res.status === 201).map((res) => res.body.api_key as string)];
    const names = await Promise.all(keys.map(async (key) => (await api.withKey(key).get('/get-api-key-info')).body.org_name));
    expect(names).toEqual(keys.map(() => finalName));
  });

  it('reads the workspace for a key stored before keys carried its name', async () => {
    const { api, api_key, workspace_id } = await app.newWorkspace();
    expect((await api.patch('/workspace', { body: { name: 'Old Record Inc' } })).status).toBe(200);
    const { table } = await import('../../shared/platform/store/table.ts');
    const { keys } = await import('../../shared/platform/store/keys.ts');
    const { sha256 } = await import('../../shared/platform/crypto/hash.ts');
    await table.update({
      Key: keys.credential(sha256(api_key)),
      UpdateExpression: 'REMOVE org_name, org_name_rev',
    });

    const info = await api.get('/get-api-key-info');
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({ workspace_id, org_name: 'Old Record Inc' });
  });
});
