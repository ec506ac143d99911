import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { AwsKeyManagement } from '../../shared/platform/crypto/aws-kms.ts';
import { canonicalContext, DecryptionFailed } from '../../shared/platform/crypto/kms.ts';
import { decryptSecret, encryptSecret, useKeyManagement } from '../../shared/platform/crypto/envelope.ts';

/**
 * A KMS-compatible endpoint on 127.0.0.1 speaking the AWS JSON 1.1 protocol for
 * GenerateDataKey and Decrypt, binding each wrapped key to its encryption context as KMS
 * does, so the AWS adapter is exercised through the real SDK client.
 */
const masterKey = randomBytes(32);
const calls: { target: string; body: Record<string, unknown> }[] = [];
const server = createServer((req, res) => {
  let raw = '';
  req.on('data', (chunk) => (raw += chunk));
  req.on('end', () => {
    const target = String(req.headers['x-amz-target']);
    const body = JSON.parse(raw) as Record<string, unknown>;
    calls.push({ target, body });
    const context = canonicalContext((body.EncryptionContext ?? {}) as Record<string, string>);
    const reply = (status: number, payload: object) => {
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' }).end(JSON.stringify(payload));
    };
    if (target === 'TrentService.GenerateDataKey') {
      const plaintext = randomBytes(32);
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', masterKey, iv).setAAD(context);
      const sealed = Buffer.concat([iv, cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      reply(200, { KeyId: body.KeyId, Plaintext: plaintext.toString('base64'), CiphertextBlob: sealed.toString('base64') });
    } else if (target === 'TrentService.Decrypt') {
      const blob = Buffer.from(String(body.CiphertextBlob), 'base64');
      try {
        const decipher = createDecipheriv('aes-256-gcm', masterKey, blob.subarray(0, 12)).setAAD(context);
        decipher.setAuthTag(blob.subarray(blob.length - 16));
        const plaintext = Buffer.concat([decipher.update(blob.subarray(12, blob.length - 16)), decipher.final()]);
        reply(200, { KeyId: body.KeyId, Plaintext: plaintext.toString('base64') });
      } catch {
        reply(400, { __type: 'InvalidCiphertextException', message: 'context mismatch' });
      }
    } else {
      reply(400, { __type: 'UnsupportedOperationException', message: target });
    }
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

describe('AWS KMS adapter', () => {
  const kms = new AwsKeyManagement('alias/parley', 'us-east-1', endpoint);
  const context = { workspace_id: 'ws_aaaaaaaaaaaaaaaaaaaaaaaa', record: 'credential/key_bbbbbbbbbbbbbbbbbbbbbbbb' };

  it('asks KMS for an AES-256 data key bound to the encryption context', async () => {
    calls.length = 0;
    useKeyManagement(kms);
    const stored = await encryptSecret('vendor-token', context);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({
      target: 'TrentService.GenerateDataKey',
      body: { KeyId: 'alias/parley', KeySpec: 'AES_256', EncryptionContext: context },
    });
    expect(await decryptSecret(stored, context)).toBe('vendor-token');
    expect(calls[1]).toMatchObject({ target: 'TrentService.Decrypt', body: { EncryptionContext: context } });
  });

  it('turns KMS refusing another context into DecryptionFailed', async () => {
    useKeyManagement(kms);
    const stored = await encryptSecret('vendor-token', context);
    await expect(decryptSecret(stored, { ...context, record: 'credential/key_cccccccccccccccccccccccc' })).rejects.toBeInstanceOf(
      DecryptionFailed,
    );
  });
});
