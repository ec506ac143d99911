import { vendorSetting } from '../../platform/aws/secrets.ts';
import { isProduction } from '../../platform/config.ts';
import { VendorFailed } from '../../platform/errors.ts';

/**
 * The LiveKit API key and secret: vendor settings, so the `VENDOR_SECRET_ID` secret in AWS
 * and the environment locally. Locally they default to what `livekit-server --dev` uses
 * (`devkey` / `secret`), so web call tokens and the report route work with no setup.
 *
 * With PARLEY_ENV=production the defaults are never used: they are public, and anything
 * signed with them (web call tokens, webhook checks, worker report tokens) would be forgeable
 * by anyone. A missing or default value there is a 502 naming the setting, never its value.
 */
const DEV_API_KEY = 'devkey';
const DEV_API_SECRET = 'secret';

export interface LiveKitCredentials {
  apiKey: string;
  apiSecret: string;
}

type ReadSetting = (name: string) => Promise<string | undefined>;

export interface CredentialOptions {
  read?: ReadSetting;
  production?: boolean;
}

export async function readLiveKitCredentials(options: CredentialOptions = {}): Promise<LiveKitCredentials> {
  const read = options.read ?? vendorSetting;
  const production = options.production ?? isProduction;
  const [rawKey, rawSecret] = await Promise.all([read('LIVEKIT_API_KEY'), read('LIVEKIT_API_SECRET')]);
  const apiKey = rawKey?.trim() || undefined;
  const apiSecret = rawSecret?.trim() || undefined;
  if (!production) return { apiKey: apiKey ?? DEV_API_KEY, apiSecret: apiSecret ?? DEV_API_SECRET };
  const problems = [
    !apiKey && 'LIVEKIT_API_KEY not set',
    !apiSecret && 'LIVEKIT_API_SECRET not set',
    apiKey === DEV_API_KEY && `LIVEKIT_API_KEY is the development key`,
    apiSecret === DEV_API_SECRET && `LIVEKIT_API_SECRET is the development secret`,
  ].filter((problem): problem is string => typeof problem === 'string');
  if (problems.length) {
    throw new VendorFailed(`LiveKit is not configured for production: ${problems.join(', ')} (vendor secret)`);
  }
  return { apiKey: apiKey!, apiSecret: apiSecret! };
}
