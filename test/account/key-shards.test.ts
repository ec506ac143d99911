import { describe, expect, it } from 'vitest';
import { admit } from '../../shared/platform/auth/gate.ts';
import { sha256 } from '../../shared/platform/crypto/hash.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody } from '../support/factories.ts';
import { refusal } from '../support/refusal.ts';

const app = await startTestApp();

const shardsOf = async (value: string, count = 4) =>
  Promise.all(Array.from({ length: count - 1 }, (_, i) => table.get<Record<string, unknown>>(keys.credentialShard(sha256(value), i + 1))));

async function newKey(overrides: Record<string, unknown> = {}) {
  const res = await app.api.post('/api-keys', { body: apiKeyBody(overrides) });
  expect(res.status).toBe(201);
  return res.body as { api_key: string; api_key_id: string };
}

describe("a key's rate-window shards", () => {
  it('are copies of the record, kept with it through every change, and go with it', async () => {
    const key = await newKey({ rate_limit_per_minute: 100_000 });
    const record = await table.get<Record<string, unknown>>(keys.credential(sha256(key.api_key)));
    expect(record?.rate_shards).toBe(4);
    for (const shard of await shardsOf(key.api_key)) expect(shard).toMatchObject({ credential_id: key.api_key_id, rate_shards: 4 });

    expect((await app.api.patch(`/api-keys/${key.api_key_id}`, { body: { scopes: ['agents'] } })).status).toBe(200);
    for (const shard of await shardsOf(key.api_key)) expect(shard?.scopes).toEqual(['agents']);
    // Whichever shard a request lands on, the record's rules refuse it.
    for (let i = 0; i < 12; i++) {
      const refused = await refusal(admit({ access: 'admin' }, { sourceIp: '127.0.0.1', authorization: `Bearer ${key.api_key}` }));
      expect(refused.status).toBe(403);
    }

    expect((await app.api.delete(`/api-keys/${key.api_key_id}`)).status).toBe(204);
    expect(await shardsOf(key.api_key)).toEqual([undefined, undefined, undefined]);
    const unknown = await refusal(admit({ access: 'any-key' }, { sourceIp: '127.0.0.1', authorization: `Bearer ${key.api_key}` }));
    expect(unknown.status).toBe(401);
  });

  it('lose the webhook flag with the record when it moves to another key', async () => {
    const holder = await newKey({ rate_limit_per_minute: 100_000, is_webhook_key: true });
    for (const shard of await shardsOf(holder.api_key)) expect(shard?.is_webhook_key).toBe(true);
    await newKey({ is_webhook_key: true });
    for (const shard of await shardsOf(holder.api_key)) expect(shard?.is_webhook_key).toBe(false);
    // Whichever shard answers, the key describes itself as the record does.
    for (let i = 0; i < 8; i++) {
      const info = await app.api.withKey(holder.api_key).get('/get-api-key-info');
      expect(info.body.is_webhook_key).toBe(false);
    }
  });

  it('are added when a raised limit needs them, carrying the record as changed', async () => {
    const key = await newKey({ scopes: ['agents', 'calls'] });
    expect(await shardsOf(key.api_key)).toEqual([undefined, undefined, undefined]);
    const raised = await app.api.patch(`/api-keys/${key.api_key_id}`, { body: { rate_limit_per_minute: 100_000, name: 'busy' } });
    expect(raised.status).toBe(200);
    for (const shard of await shardsOf(key.api_key)) {
      expect(shard).toMatchObject({ name: 'busy', scopes: ['agents', 'calls'], rate_limit_per_minute: 100_000, rate_shards: 4 });
    }
    // Lowered again, it keeps them: their shares still add up to the limit.
    expect((await app.api.patch(`/api-keys/${key.api_key_id}`, { body: { rate_limit_per_minute: 10 } })).status).toBe(200);
    for (const shard of await shardsOf(key.api_key)) expect(shard).toMatchObject({ rate_limit_per_minute: 10, rate_shards: 4 });
    const nowMs = Math.floor(Date.now() / 60_000) * 60_000 + 120_000;
    const outcomes = await Promise.all(
      Array.from({ length: 25 }, () =>
        admit({ access: 'agents' }, { sourceIp: '127.0.0.1', authorization: `Bearer ${key.api_key}` }, nowMs).then(
          () => 200,
          (error: { status: number }) => error.status,
        ),
      ),
    );
    expect(outcomes.filter((status) => status === 200)).toHaveLength(10);
    expect(outcomes.filter((status) => status === 429)).toHaveLength(15);
  });
});
