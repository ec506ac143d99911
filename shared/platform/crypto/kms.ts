import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The keys an encryption context may have. The deployed key's IAM grants allow
 * GenerateDataKey and Decrypt only with a context of these keys and `record` present
 * (lib/parley-function.ts), so a new key here must be added there too (test/cdk checks).
 */
export const ENCRYPTION_CONTEXT_KEYS = ['workspace_id', 'record'] as const;

/** What the spec calls the encryption context: it names the record and, for a workspace's record, the workspace. */
export type EncryptionContext = { record: string; workspace_id?: string };

export interface DataKey {
  plaintext: Buffer;
  /** The data key wrapped under the master key, bound to the encryption context. */
  wrapped: Buffer;
}

/** The two KMS operations envelope encryption needs. AWS KMS in the cloud, a local master key otherwise. */
export interface KeyManagement {
  generateDataKey(context: EncryptionContext): Promise<DataKey>;
  decryptDataKey(wrapped: Buffer, context: EncryptionContext): Promise<Buffer>;
}

export class DecryptionFailed extends Error {
  constructor() {
    super('Ciphertext cannot be decrypted with this encryption context');
    this.name = 'DecryptionFailed';
  }
}

/**
 * KMS stand-in: a 256-bit master key kept in the data folder wraps data keys with
 * AES-256-GCM, the canonical encryption context as additional authenticated data, so a
 * wrapped key only opens with the context it was made for, as in KMS.
 */
export class LocalKeyManagement implements KeyManagement {
  constructor(private readonly masterKey: Buffer) {
    if (masterKey.length !== 32) throw new Error('Local master key must be 32 bytes');
  }

  static fromDataDir(dataDir: string): LocalKeyManagement {
    const file = join(dataDir, 'master.key');
    try {
      return new LocalKeyManagement(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    // Private like the rest of the data folder (local/private-files.ts): it holds the master key.
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const key = randomBytes(32);
    try {
      writeFileSync(file, key.toString('base64'), { mode: 0o600, flag: 'wx' });
      return new LocalKeyManagement(key);
    } catch (error) {
      // Another process created it between our read and write: use theirs.
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      return new LocalKeyManagement(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64'));
    }
  }

  async generateDataKey(context: EncryptionContext): Promise<DataKey> {
    const plaintext = randomBytes(32);
    return { plaintext, wrapped: sealAesGcm(this.masterKey, plaintext, canonicalContext(context)) };
  }

  async decryptDataKey(wrapped: Buffer, context: EncryptionContext): Promise<Buffer> {
    return openAesGcm(this.masterKey, wrapped, canonicalContext(context));
  }
}

/** Context order never matters to KMS, so it must not matter here either. */
export function canonicalContext(context: EncryptionContext | Record<string, string>): Buffer {
  const entries = context as Record<string, string | undefined>;
  const sorted = Object.keys(entries)
    .sort()
    .map((name) => [name, entries[name]]);
  return Buffer.from(JSON.stringify(sorted), 'utf8');
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** AES-256-GCM; output is iv ‖ tag ‖ ciphertext. */
export function sealAesGcm(key: Buffer, plaintext: Buffer, aad: Buffer): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(aad);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

export function openAesGcm(key: Buffer, sealed: Buffer, aad: Buffer): Buffer {
  if (sealed.length < IV_BYTES + TAG_BYTES) throw new DecryptionFailed();
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, IV_BYTES));
  decipher.setAAD(aad);
  decipher.setAuthTag(sealed.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  try {
    return Buffer.concat([decipher.update(sealed.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
  } catch {
    throw new DecryptionFailed();
  }
}
