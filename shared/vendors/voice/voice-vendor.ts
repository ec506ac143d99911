import { badGateway, badRequest, notFound } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { traced } from '../../platform/observability/tracing.ts';
import { mockVoiceVendor } from './mock.ts';
import type { AudioSample, CommunityVoice, VendorVoice, VoiceProvider, VoiceVendor } from './types.ts';

/**
 * The voice-vendor adapter: cloning, community (shared) voice search and adding, and
 * previews, behind one interface. ElevenLabs has a real HTTP client, configured by the
 * vendor settings `ELEVENLABS_API_KEY` and `ELEVENLABS_BASE_URL` (tests point it at a fake
 * server on 127.0.0.1). Any provider without a configured client gets the built-in
 * offline mock (shared/vendors/voice/mock.ts), so everything works locally and in
 * tests without network access or credentials.
 */

export { CLONE_PROVIDERS, COMMUNITY_PROVIDERS, VOICE_PROVIDERS } from './types.ts';
export type { CommunityProvider, Gender, VendorVoice, VoiceProvider } from './types.ts';

const ELEVENLABS_DEFAULT_BASE_URL = 'https://api.elevenlabs.io';
const VENDOR_TIMEOUT_MS = 30_000;
const MAX_SEARCH_RESULTS = 30;
/** How many of the library's search hits for an ID are checked for that exact ID. */
const MAX_LOOKUP_RESULTS = 100;

/** The adapter for one provider: the real client when its settings are present, else the mock. */
export async function voiceVendorFor(provider: VoiceProvider): Promise<VoiceVendor> {
  if (provider === 'elevenlabs') {
    // Loaded on first use: modules that only need the provider lists (route schemas, the
    // agents function through shared/voices/voices.ts) stay free of the Secrets Manager client.
    const { vendorSetting } = await import('../../platform/aws/secrets.ts');
    const apiKey = await vendorSetting('ELEVENLABS_API_KEY');
    if (apiKey) {
      const baseUrl = (await vendorSetting('ELEVENLABS_BASE_URL')) || ELEVENLABS_DEFAULT_BASE_URL;
      return new ElevenLabsVoiceVendor({ apiKey, baseUrl });
    }
  }
  return mockVoiceVendor;
}

interface ElevenLabsOptions {
  apiKey: string;
  baseUrl: string;
  timeoutMs?: number;
}

interface ElevenLabsSharedVoice {
  public_owner_id?: string;
  voice_id?: string;
  name?: string;
  description?: string | null;
}

interface ElevenLabsVoice {
  voice_id?: string;
  preview_url?: string | null;
  labels?: Record<string, string> | null;
}

/** ElevenLabs' REST API (api.elevenlabs.io/v1), authenticated with `xi-api-key`. */
class ElevenLabsVoiceVendor implements VoiceVendor {
  readonly kind = 'elevenlabs';

  constructor(private readonly options: ElevenLabsOptions) {}

  async clone(input: { voiceName: string; files: readonly AudioSample[] }): Promise<VendorVoice> {
    const form = new FormData();
    form.append('name', input.voiceName);
    for (const file of input.files) {
      form.append('files', new Blob([file.data], { type: file.contentType }), file.filename || 'sample');
    }
    const created = await this.request<{ voice_id?: string }>('POST', '/v1/voices/add', { body: form });
    if (!created.voice_id) throw this.failure('answered a clone without voice_id');
    return this.describe(created.voice_id);
  }

  async searchCommunity(input: { query: string }): Promise<CommunityVoice[]> {
    const query = new URLSearchParams({ search: input.query, page_size: String(MAX_SEARCH_RESULTS) });
    const found = await this.request<{ voices?: ElevenLabsSharedVoice[] }>('GET', `/v1/shared-voices?${query}`);
    return (found.voices ?? [])
      .filter((voice) => typeof voice.voice_id === 'string')
      .slice(0, MAX_SEARCH_RESULTS)
      .map((voice) => ({
        provider_voice_id: voice.voice_id!,
        name: voice.name ?? voice.voice_id!,
        ...(voice.description ? { description: voice.description } : {}),
        ...(voice.public_owner_id ? { public_user_id: voice.public_owner_id } : {}),
      }));
  }

  /**
   * The shared library has no lookup by ID: its search (which matches names, descriptions
   * and IDs) is asked for the ID, and only exact matches are kept.
   */
  async findCommunity(input: { providerVoiceId: string }): Promise<CommunityVoice[]> {
    const query = new URLSearchParams({ search: input.providerVoiceId, page_size: String(MAX_LOOKUP_RESULTS) });
    const found = await this.request<{ voices?: ElevenLabsSharedVoice[] }>('GET', `/v1/shared-voices?${query}`);
    return (found.voices ?? [])
      .filter((voice) => voice.voice_id === input.providerVoiceId)
      .map((voice) => ({
        provider_voice_id: voice.voice_id!,
        name: voice.name ?? voice.voice_id!,
        ...(voice.public_owner_id ? { public_user_id: voice.public_owner_id } : {}),
      }));
  }

  async addCommunity(input: { providerVoiceId: string; publicUserId?: string; voiceName: string }): Promise<VendorVoice> {
    if (!input.publicUserId) throw badRequest('public_user_id: Required for voice_provider elevenlabs');
    const path = `/v1/voices/add/${encodeURIComponent(input.publicUserId)}/${encodeURIComponent(input.providerVoiceId)}`;
    const added = await this.request<{ voice_id?: string }>('POST', path, {
      json: { new_name: input.voiceName },
      notFound: 'Community voice not found',
    });
    if (!added.voice_id) throw this.failure('answered an add without voice_id');
    return this.describe(added.voice_id);
  }

  async preview(input: { providerVoiceId: string }): Promise<string | undefined> {
    const voice = await this.request<ElevenLabsVoice>('GET', `/v1/voices/${encodeURIComponent(input.providerVoiceId)}`, {
      notFound: 'Voice not found at the vendor',
    });
    return voice.preview_url ?? undefined;
  }

  /** The new voice's labels and preview; a failed lookup still leaves a usable voice. */
  private async describe(providerVoiceId: string): Promise<VendorVoice> {
    let voice: ElevenLabsVoice = {};
    try {
      voice = await this.request<ElevenLabsVoice>('GET', `/v1/voices/${encodeURIComponent(providerVoiceId)}`);
    } catch (error) {
      logger.warn('Voice vendor lookup after create failed', { vendor: this.kind, error: (error as Error).message });
    }
    const labels = voice.labels ?? {};
    const gender = labels.gender?.toLowerCase();
    return {
      provider_voice_id: providerVoiceId,
      ...(gender === 'male' || gender === 'female' ? { gender } : {}),
      ...(labels.accent ? { accent: labels.accent } : {}),
      ...(labels.age ? { age: labels.age } : {}),
      ...(voice.preview_url ? { preview_audio_url: voice.preview_url } : {}),
    };
  }

  private async request<T>(
    method: string,
    path: string,
    options: { body?: FormData; json?: unknown; notFound?: string } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { 'xi-api-key': this.options.apiKey, accept: 'application/json' };
    if (options.json !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await traced('voice', () => fetch(new URL(path, this.options.baseUrl), {
        method,
        headers,
        body: options.body ?? (options.json === undefined ? undefined : JSON.stringify(options.json)),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? VENDOR_TIMEOUT_MS),
      }));
    } catch (error) {
      // fetch reports network failures as TypeError with the system error as its cause.
      const reason = ((error as Error).cause as { code?: string } | undefined)?.code ?? (error as Error).name;
      throw this.failure(`was unreachable (${reason})`);
    }
    const text = await response.text();
    if (response.ok) {
      try {
        return (text ? JSON.parse(text) : {}) as T;
      } catch {
        throw this.failure('answered with invalid JSON');
      }
    }
    if (response.status === 404 && options.notFound) throw notFound(options.notFound);
    if (response.status === 400 || response.status === 422) {
      throw badRequest(`Voice vendor ${this.kind} rejected the request: ${vendorDetail(text)}`);
    }
    // 401/403 (our credentials), 429 and 5xx are the vendor's or the operator's problem, not the caller's.
    logger.warn('Voice vendor request failed', { vendor: this.kind, method, path: path.split('?')[0], status: response.status });
    throw this.failure(`answered HTTP ${response.status}`);
  }

  private failure(what: string) {
    return badGateway(`Voice vendor ${this.kind} ${what}`);
  }
}

/** The vendor's own message from an error body (`{detail: {message}}`, `{detail: "…"}`, …), shortened. */
function vendorDetail(text: string): string {
  let detail: unknown = text;
  try {
    const parsed = JSON.parse(text) as { detail?: unknown; message?: unknown };
    detail = parsed.detail ?? parsed.message ?? text;
    if (typeof detail === 'object' && detail !== null && 'message' in detail) detail = (detail as { message: unknown }).message;
    if (Array.isArray(detail)) detail = detail.map((d) => (d as { msg?: string }).msg ?? JSON.stringify(d)).join('; ');
  } catch {
    // Not JSON: use the text as is.
  }
  const message = (typeof detail === 'string' ? detail : JSON.stringify(detail)).trim();
  return (message || 'no detail').slice(0, 300);
}
