import { randomBytes } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { LocalKeyManagement } from '../../shared/platform/crypto/kms.ts';
import { startTestApp } from '../support/app.ts';

process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
const app = await startTestApp();
const { decryptSecret, encryptSecret, recordContext, DecryptionFailed, useKeyManagement } = await import(
  '../../shared/platform/crypto/envelope.ts'
);
const { db, tableName } = await import('../../shared/platform/store/db.ts');

describe('envelope encryption', () => {
  const context = recordContext('ws_aaaaaaaaaaaaaaaaaaaaaaaa', 'credential/key_bbbbbbbbbbbbbbbbbbbbbbbb');

  it('round-trips under the same context, whatever the key order', async () => {
    const stored = await encryptSecret('s3cret', context);
    expect(stored).toMatch(/^env1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    expect(stored).not.toContain('s3cret');
    expect(await decryptSecret(stored, { record: context.record!, workspace_id: context.workspace_id! })).toBe('s3cret');
  });

  it('fails when the ciphertext is moved to another record or workspace', async () => {
    const stored = await encryptSecret('s3cret', context);
    await expect(decryptSecret(stored, { ...context, record: 'credential/key_cccccccccccccccccccccccc' })).rejects.toBeInstanceOf(
      DecryptionFailed,
    );
    await expect(decryptSecret(stored, { ...context, workspace_id: 'ws_dddddddddddddddddddddddd' })).rejects.toBeInstanceOf(
      DecryptionFailed,
    );
  });

  it('fails when the data key of one record is spliced onto another', async () => {
    const [first, second] = await Promise.all([encryptSecret('one', context), encryptSecret('two', context)]);
    const spliced = [first.split('.')[0], first.split('.')[1], second.split('.')[2]].join('.');
    await expect(decryptSecret(spliced, context)).rejects.toBeInstanceOf(DecryptionFailed);
  });

  it('fails on tampering and on a different master key', async () => {
    const stored = await encryptSecret('s3cret', context);
    const [format, wrapped, sealed] = stored.split('.') as [string, string, string];
    const flipped = Buffer.from(sealed, 'base64url');
    flipped[flipped.length - 1]! ^= 1;
    await expect(decryptSecret([format, wrapped, flipped.toString('base64url')].join('.'), context)).rejects.toBeInstanceOf(
      DecryptionFailed,
    );
    useKeyManagement(new LocalKeyManagement(randomBytes(32)));
    await expect(decryptSecret(stored, context)).rejects.toBeInstanceOf(DecryptionFailed);
    useKeyManagement(LocalKeyManagement.fromDataDir(process.env.DATA_DIR!));
    expect(await decryptSecret(stored, context)).toBe('s3cret');
  });
});

describe('secrets at rest and in logs', () => {
  it('stores API keys only as a hash and an encrypted copy bound to the key record', async () => {
    const created = (await app.api.post('/api-keys', { body: { name: 'at rest' } })).body;
    const items = (await db.send(new ScanCommand({ TableName: tableName }))).Items ?? [];
    expect(JSON.stringify(items)).not.toContain(created.api_key);
    expect(JSON.stringify(items)).not.toContain(app.workspace.api_key);

    const record = items.find((item) => item.credential_id === created.api_key_id)!;
    const ownContext = recordContext(app.workspace.workspace_id, `credential/${created.api_key_id}`);
    expect(await decryptSecret(record.secret_ciphertext, ownContext)).toBe(created.api_key);

    const other = items.find((item) => item.kind === 'secret' && item.credential_id !== created.api_key_id)!;
    await expect(
      decryptSecret(other.secret_ciphertext, ownContext),
    ).rejects.toBeInstanceOf(DecryptionFailed);
  });

  it('never writes a key to the logs, even on failures', async () => {
    const writes: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      writes.push(String(chunk));
      return true;
    });
    try {
      const created = (await app.api.post('/api-keys', { body: { name: 'logged?' } })).body;
      await app.api.withKey(created.api_key).get('/get-api-key-info');
      await app.api.get('/workspace', { headers: { authorization: `Bearer key_${'f'.repeat(48)}` } });
      await app.api.post('/api-keys', { rawBody: `{"name":"${created.api_key}","name":"x"}` });
      const output = writes.join('');
      expect(output).toContain('"message":"request"');
      expect(output).not.toContain(created.api_key);
      expect(output).not.toContain(app.workspace.api_key);
      expect(output).not.toContain('f'.repeat(48));
    } finally {
      spy.mockRestore();
    }
  });
});
