import * as z from 'zod';
import { vendorSetting } from '../../shared/platform/aws/secrets.ts';
import { config } from '../../shared/platform/config.ts';
import { readLiveKitCredentials, type LiveKitCredentials } from '../../shared/vendors/media/index.ts';

/*
 * The worker's settings. What Parley's functions also read keeps its one definition:
 * LIVEKIT_URL and LIVEKIT_AGENT_NAME come from shared/platform/config.ts, the LiveKit key and
 * secret and every vendor key from the vendor secret (VENDOR_SECRET_ID in AWS, the
 * environment locally) through the same readers the functions use. Only what the worker
 * alone reads is parsed here: its process settings (once, at start) and its speech vendors'
 * keys and addresses (per call, so a rotated key is picked up without a restart).
 */

const STT_VENDORS = ['deepgram', 'openai'] as const;
export type SttVendor = (typeof STT_VENDORS)[number];

const positiveInt = (fallback: number, max: number) => z.coerce.number().int().min(1).max(max).default(fallback);

const processSchema = () =>
  z.object({
    /** Which speech-to-text vendor listens to callers. */
    WORKER_STT_VENDOR: z.enum(STT_VENDORS).default('deepgram'),
    /** The worker's health endpoint (LiveKit Agents' HTTP server: `GET /` is 200 once registered, `GET /worker` its state). */
    WORKER_HEALTH_PORT: z.coerce.number().int().min(1).max(65535).default(8081),
    WORKER_HEALTH_HOST: z.string().trim().min(1).default('0.0.0.0'),
    /**
     * How long SIGTERM waits for calls in progress before the process exits anyway. The
     * framework's own default is an hour; a container is killed after its stop timeout
     * regardless, so the task's scale-in protection is what keeps calls alive, not this.
     */
    WORKER_DRAIN_TIMEOUT_MS: positiveInt(3_600_000, 24 * 3_600_000),
    /** Job processes kept warm for the next calls (the framework's production default is min(CPUs, 4)). */
    WORKER_IDLE_PROCESSES: z.coerce.number().int().min(1).max(64).optional(),
    /** CPU load (0 to 1) above which the worker tells LiveKit it is full (framework default 0.7). */
    WORKER_LOAD_THRESHOLD: z.coerce.number().gt(0).max(1).optional(),
  });

export type WorkerProcessSettings = z.infer<ReturnType<typeof processSchema>> & {
  LIVEKIT_URL: string;
  LIVEKIT_AGENT_NAME: string;
};

/**
 * The process settings, checked together: throws `Invalid worker settings: …` naming every
 * bad one (and LIVEKIT_URL when it is missing: without a media server there is nothing to
 * join). Parley's shared settings are validated by the same read.
 */
function loadWorkerSettings(env: NodeJS.ProcessEnv = process.env): WorkerProcessSettings {
  const parsed = processSchema().safeParse(env);
  const problems = parsed.success ? [] : parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`);
  const url = config.LIVEKIT_URL;
  if (!url) problems.push('LIVEKIT_URL: required (the LiveKit server the worker registers with)');
  if (!parsed.success || problems.length || !url) throw new Error(`Invalid worker settings: ${problems.join('; ')}`);
  return { ...parsed.data, LIVEKIT_URL: url, LIVEKIT_AGENT_NAME: config.LIVEKIT_AGENT_NAME };
}

let loaded: WorkerProcessSettings | undefined;

/** The process settings, parsed on first use and the same object after. */
export function workerSettings(): WorkerProcessSettings {
  loaded ??= loadWorkerSettings();
  return loaded;
}

/** The LiveKit key and secret the worker registers with (the vendor secret; production refuses the dev defaults). */
export function liveKitCredentials(): Promise<LiveKitCredentials> {
  return readLiveKitCredentials();
}

type ReadSetting = (name: string) => Promise<string | undefined>;

/** One speech vendor's access: its key (absent when not configured) and the root URL of its API. */
interface VendorAccess {
  apiKey?: string;
  baseUrl: string;
}

export interface SpeechVendorSettings {
  deepgram: VendorAccess;
  elevenlabs: VendorAccess;
  cartesia: VendorAccess;
  openai: VendorAccess;
}

/**
 * Where each vendor's API is by default, as its vendor setting `<VENDOR>_BASE_URL` names it:
 * the root of the vendor's API (ELEVENLABS_BASE_URL is the same setting the voices domain
 * reads; the worker adds `/v1` for the plugin).
 */
const DEFAULT_BASE_URLS = {
  deepgram: 'https://api.deepgram.com',
  elevenlabs: 'https://api.elevenlabs.io',
  cartesia: 'https://api.cartesia.ai',
  openai: 'https://api.openai.com/v1',
} as const;

const SETTING_PREFIX = { deepgram: 'DEEPGRAM', elevenlabs: 'ELEVENLABS', cartesia: 'CARTESIA', openai: 'OPENAI' } as const;

const httpUrl = () =>
  z
    .string()
    .trim()
    .refine((value) => /^https?:\/\/[^/]/.test(value), 'Must be an http:// or https:// URL')
    .transform((value) => value.replace(/\/+$/, ''));

/**
 * The speech vendors' keys and base URLs from the vendor secret: `<VENDOR>_API_KEY` and
 * `<VENDOR>_BASE_URL` for DEEPGRAM, ELEVENLABS, CARTESIA and OPENAI. A bad URL throws naming
 * the setting, never a key.
 */
export async function readSpeechVendorSettings(read: ReadSetting = vendorSetting): Promise<SpeechVendorSettings> {
  const vendors = Object.keys(SETTING_PREFIX) as (keyof typeof SETTING_PREFIX)[];
  const entries = await Promise.all(
    vendors.map(async (vendor) => {
      const prefix = SETTING_PREFIX[vendor];
      const [rawKey, rawUrl] = await Promise.all([read(`${prefix}_API_KEY`), read(`${prefix}_BASE_URL`)]);
      const apiKey = rawKey?.trim() || undefined;
      let baseUrl: string = DEFAULT_BASE_URLS[vendor];
      if (rawUrl?.trim()) {
        const parsed = httpUrl().safeParse(rawUrl);
        if (!parsed.success) throw new Error(`Invalid worker settings: ${prefix}_BASE_URL: ${parsed.error.issues[0]!.message}`);
        baseUrl = parsed.data;
      }
      return [vendor, { ...(apiKey ? { apiKey } : {}), baseUrl }] as const;
    }),
  );
  return Object.fromEntries(entries) as unknown as SpeechVendorSettings;
}
