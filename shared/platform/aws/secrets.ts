import type * as SecretsManagerSdk from '@aws-sdk/client-secrets-manager';
import type { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { config } from '../config.ts';
import { awsClientOptions } from './client-options.ts';
import { tagAwsClient } from './unavailable.ts';
import { loadOnce } from '../lazy.ts';

/**
 * Vendor credentials (telephony, model providers, payments). In AWS they live in one
 * Secrets Manager secret holding a JSON object; locally they are plain environment variables.
 */
export interface VendorSettingsOptions {
  /** The secret's ID or ARN; without it settings come from `env`. */
  secretId?: string;
  region?: string;
  /** Overrides the Secrets Manager endpoint (tests point it at a fake on 127.0.0.1). */
  endpoint?: string;
  /** How long a fetched secret is reused, so a rotated value is picked up soon after. */
  ttlMs?: number;
  env?: NodeJS.ProcessEnv;
  now?: () => number;
}

const VENDOR_SECRET_TTL_MS = 60_000;

/**
 * The Secrets Manager client's package, loaded on the first read of a secret (as the SQS
 * client is, queue.ts): most invocations read no vendor setting, or read them from the
 * environment, so a cold start does not load it (docs/performance.md, "Sizes: cold and lazy").
 */
const loadSecretsSdk = loadOnce((): Promise<typeof SecretsManagerSdk> => import('@aws-sdk/client-secrets-manager'));

export class VendorSettings {
  private client?: SecretsManagerClient;
  private cached?: { values: Promise<Record<string, unknown>>; expiresAt: number };

  constructor(private readonly options: VendorSettingsOptions) {}

  async get(name: string): Promise<string | undefined> {
    if (!this.options.secretId) return (this.options.env ?? process.env)[name];
    const value = (await this.values(this.options.secretId))[name];
    if (value === undefined || value === null) return undefined;
    return typeof value === 'string' ? value : JSON.stringify(value);
  }

  private values(secretId: string): Promise<Record<string, unknown>> {
    const now = (this.options.now ?? Date.now)();
    if (this.cached && now < this.cached.expiresAt) return this.cached.values;
    const values = this.fetch(secretId);
    const entry = { values, expiresAt: now + (this.options.ttlMs ?? VENDOR_SECRET_TTL_MS) };
    this.cached = entry;
    // A failed read is not cached: the next caller tries again.
    values.catch(() => {
      if (this.cached === entry) this.cached = undefined;
    });
    return values;
  }

  private async fetch(secretId: string): Promise<Record<string, unknown>> {
    const { GetSecretValueCommand, SecretsManagerClient } = await loadSecretsSdk();
    this.client ??= tagAwsClient(
      new SecretsManagerClient({
        region: this.options.region ?? config.AWS_REGION,
        ...awsClientOptions(),
        ...(this.options.endpoint
          ? { endpoint: this.options.endpoint, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
          : {}),
      }),
      'Secrets Manager',
    );
    const out = await this.client.send(new GetSecretValueCommand({ SecretId: secretId }));
    if (out.SecretString === undefined) throw new Error(`Secret ${secretId} has no SecretString`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(out.SecretString);
    } catch {
      // The message names the secret, never its contents.
      throw new Error(`Secret ${secretId} is not a JSON object`);
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new Error(`Secret ${secretId} is not a JSON object`);
    }
    return parsed as Record<string, unknown>;
  }
}

let defaultSettings: VendorSettings | undefined;

function settings(): VendorSettings {
  defaultSettings ??= new VendorSettings({ secretId: config.VENDOR_SECRET_ID });
  return defaultSettings;
}

/** One vendor setting by name: the secret's JSON key with VENDOR_SECRET_ID, else the env variable. */
export function vendorSetting(name: string): Promise<string | undefined> {
  return settings().get(name);
}

/** Points the process's vendor settings at another Secrets Manager endpoint (tests only). */
export function useSecretsManagerEndpoint(endpoint: string): void {
  defaultSettings = new VendorSettings({ secretId: config.VENDOR_SECRET_ID, endpoint });
}
