import { DecryptCommand, GenerateDataKeyCommand, KMSClient } from '@aws-sdk/client-kms';
import { awsClientOptions } from '../aws/client-options.ts';
import { tagAwsClient } from '../aws/unavailable.ts';
import { DecryptionFailed, type DataKey, type EncryptionContext, type KeyManagement } from './kms.ts';

/**
 * AWS KMS behind the KeyManagement adapter. envelope.ts loads this module and creates the
 * client on first use, only when KMS_KEY_ID is set (a chunk of its own in the bundles).
 */
export class AwsKeyManagement implements KeyManagement {
  private readonly client: KMSClient;

  constructor(
    private readonly keyId: string,
    region: string,
    /** Only for tests against a KMS-compatible endpoint on 127.0.0.1. */
    endpoint?: string,
  ) {
    this.client = tagAwsClient(
      new KMSClient({
        region,
        ...awsClientOptions(),
        ...(endpoint ? { endpoint, credentials: { accessKeyId: 'test', secretAccessKey: 'test' } } : {}),
      }),
      'KMS',
    );
  }

  async generateDataKey(context: EncryptionContext): Promise<DataKey> {
    const out = await this.client.send(
      new GenerateDataKeyCommand({ KeyId: this.keyId, KeySpec: 'AES_256', EncryptionContext: context }),
    );
    if (!out.Plaintext || !out.CiphertextBlob) throw new Error('KMS returned no data key');
    return { plaintext: Buffer.from(out.Plaintext), wrapped: Buffer.from(out.CiphertextBlob) };
  }

  async decryptDataKey(wrapped: Buffer, context: EncryptionContext): Promise<Buffer> {
    try {
      const out = await this.client.send(
        new DecryptCommand({ KeyId: this.keyId, CiphertextBlob: wrapped, EncryptionContext: context }),
      );
      if (!out.Plaintext) throw new DecryptionFailed();
      return Buffer.from(out.Plaintext);
    } catch (error) {
      if (error instanceof Error && error.name === 'InvalidCiphertextException') throw new DecryptionFailed();
      throw error;
    }
  }
}
