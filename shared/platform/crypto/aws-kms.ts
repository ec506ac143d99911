import type * as KmsSdk from '@aws-sdk/client-kms';
import type { KMSClient } from '@aws-sdk/client-kms';
import { awsClientOptions } from '../aws/client-options.ts';
import { tagAwsClient } from '../aws/unavailable.ts';
import { DecryptionFailed, type DataKey, type EncryptionContext, type KeyManagement } from './kms.ts';

/**
 * The KMS client's package, loaded on the first data key generated or unwrapped (as the
 * Secrets Manager and SQS clients are, secrets.ts, queue.ts): a cold start that encrypts and
 * decrypts nothing (most requests, and every request without KMS_KEY_ID) does not load it
 * (docs/performance.md, "2026-11-24, margin under 700 KiB"). With code splitting the package
 * goes to a lazy chunk with no `__esm` wrappers, so the objection of the older sections
 * ("Tried and dropped") no longer applies.
 */
let kmsSdk: Promise<typeof KmsSdk> | undefined;
const loadKmsSdk = () => (kmsSdk ??= import('@aws-sdk/client-kms'));

/**
 * AWS KMS behind the KeyManagement adapter. envelope.ts creates it on first use (only when
 * KMS_KEY_ID is set); the client itself is made on the first request, once its package loads.
 */
export class AwsKeyManagement implements KeyManagement {
  private client?: Promise<{ client: KMSClient; sdk: typeof KmsSdk }>;

  constructor(
    private readonly keyId: string,
    private readonly region: string,
    /** Only for tests against a KMS-compatible endpoint on 127.0.0.1. */
    private readonly endpoint?: string,
  ) {}

  private kms(): Promise<{ client: KMSClient; sdk: typeof KmsSdk }> {
    this.client ??= loadKmsSdk().then((sdk) => ({
      sdk,
      client: tagAwsClient(
        new sdk.KMSClient({
          region: this.region,
          ...awsClientOptions(),
          ...(this.endpoint ? { endpoint: this.endpoint, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } } : {}),
        }),
        'KMS',
      ),
    }));
    return this.client;
  }

  async generateDataKey(context: EncryptionContext): Promise<DataKey> {
    const { client, sdk } = await this.kms();
    const out = await client.send(
      new sdk.GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: 'AES_256', EncryptionContext: context }),
    );
    if (!out.Plaintext || !out.CiphertextBlob) throw new Error('KMS returned no data key');
    return { plaintext: Buffer.from(out.Plaintext), wrapped: Buffer.from(out.CiphertextBlob) };
  }

  async decryptDataKey(wrapped: Buffer, context: EncryptionContext): Promise<Buffer> {
    const { client, sdk } = await this.kms();
    try {
      const out = await client.send(
        new sdk.DecryptCommand({ KeyId: this.keyId, CiphertextBlob: wrapped, EncryptionContext: context }),
      );
      if (!out.Plaintext) throw new DecryptionFailed();
      return Buffer.from(out.Plaintext);
    } catch (error) {
      if (error instanceof Error && error.name === 'InvalidCiphertextException') throw new DecryptionFailed();
      throw error;
    }
  }
}
