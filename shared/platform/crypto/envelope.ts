import { config } from '../config.ts';
import { AwsKeyManagement } from './aws-kms.ts';
import {
  LocalKeyManagement,
  canonicalContext,
  openAesGcm,
  sealAesGcm,
  DecryptionFailed,
  type EncryptionContext,
  type KeyManagement,
} from './kms.ts';

export { DecryptionFailed, type EncryptionContext };

/**
 * Envelope encryption: each secret gets a fresh AES-256 data key from KMS (or the local
 * stand-in), both bound to an encryption context naming the workspace and the record.
 * Stored form: `env1.<wrapped data key>.<iv ‖ tag ‖ ciphertext>`, base64url parts.
 */
const FORMAT = 'env1';

let keyManagement: Promise<KeyManagement> | undefined;

/**
 * Created once per process on first use. aws-kms.ts is imported statically (it is small);
 * it loads the KMS client's package on its first request.
 */
function kms(): Promise<KeyManagement> {
  const keyId = config.KMS_KEY_ID;
  keyManagement ??= keyId
    ? Promise.resolve(new AwsKeyManagement(keyId, config.AWS_REGION))
    : Promise.resolve(LocalKeyManagement.fromDataDir(config.DATA_DIR));
  return keyManagement;
}

/** Tests and tools may swap the key manager (for example to a second local master key). */
export function useKeyManagement(manager: KeyManagement): void {
  keyManagement = Promise.resolve(manager);
}

export function recordContext(workspaceId: string, record: string): EncryptionContext {
  return { workspace_id: workspaceId, record };
}

export async function encryptSecret(plaintext: string, context: EncryptionContext): Promise<string> {
  const dataKey = await (await kms()).generateDataKey(context);
  try {
    const sealed = sealAesGcm(dataKey.plaintext, Buffer.from(plaintext, 'utf8'), canonicalContext(context));
    return [FORMAT, dataKey.wrapped.toString('base64url'), sealed.toString('base64url')].join('.');
  } finally {
    dataKey.plaintext.fill(0);
  }
}

export async function decryptSecret(stored: string, context: EncryptionContext): Promise<string> {
  const [format, wrapped, sealed, extra] = stored.split('.');
  if (format !== FORMAT || !wrapped || !sealed || extra !== undefined) throw new DecryptionFailed();
  const dataKey = await (await kms()).decryptDataKey(Buffer.from(wrapped, 'base64url'), context);
  try {
    return openAesGcm(dataKey, Buffer.from(sealed, 'base64url'), canonicalContext(context)).toString('utf8');
  } finally {
    dataKey.fill(0);
  }
}
