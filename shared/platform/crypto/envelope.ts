import { config } from '../config.ts';
import { loadOnce } from '../lazy.ts';
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

/** A key manager tests and tools put in place (useKeyManagement); otherwise the configured one. */
let swapped: KeyManagement | undefined;

/**
 * Created once per process on first use. aws-kms.ts (the KMS client, about 30 KiB) loads
 * then, only with `KMS_KEY_ID`: with code splitting it is a chunk and nothing is wrapped, so
 * the objection of the single-file bundles ("Dynamic imports that cost more than they save", docs/performance.md) no
 * longer applies, and every function that stores a secret (numbers, webhooks' signing
 * keys, ...) starts without it (docs/performance.md, "Heavy packages on first use").
 * A creation that fails (the chunk unreadable, the local key file missing) is tried again by
 * the next secret rather than failing every one after it (loadOnce).
 */
const configured = loadOnce(async (): Promise<KeyManagement> => {
  const keyId = config.KMS_KEY_ID;
  if (!keyId) return LocalKeyManagement.fromDataDir(config.DATA_DIR);
  const { AwsKeyManagement } = await import('./aws-kms.ts');
  return new AwsKeyManagement(keyId, config.AWS_REGION);
});

const kms = (): Promise<KeyManagement> => (swapped ? Promise.resolve(swapped) : configured());

/** Tests and tools may swap the key manager (for example to a second local master key). */
export function useKeyManagement(manager: KeyManagement): void {
  swapped = manager;
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
