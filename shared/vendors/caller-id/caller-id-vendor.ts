import { vendorSetting } from '../../platform/aws/secrets.ts';
import { badGateway, badRequest } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { traced } from '../../platform/observability/tracing.ts';
import { mockCallerIdVendor } from './mock.ts';
import {
  BRANDED_CALLER_ID_STATUSES,
  VERIFIED_NUMBER_STATUSES,
  type BrandedCallerIdRequest,
  type CallerIdVendor,
  type CallerIdVendorKind,
  type VendorBrandedCallerId,
  type VendorVerifiedNumber,
} from './types.ts';

/*
 * The caller-ID vendor adapter: branded caller ID registrations (display name, reason and
 * logo shown on the called phone) and verified numbers (proving the workspace controls a
 * number it wants to present as caller ID), behind one interface.
 *
 * A real vendor is reached over HTTP when the vendor setting `CALLER_ID_VENDOR_BASE_URL` is
 * set (`CALLER_ID_VENDOR_API_KEY` is sent as a bearer token, read per request so a rotated
 * key is picked up). The wire protocol is ours, small and documented here, so an operator
 * can put a thin bridge in front of whichever carrier or registry they use:
 *
 *   POST   /v1/branded-caller-ids        {phone_number, display_name, call_reason, logo_url, business}
 *   GET    /v1/branded-caller-ids/{id}
 *   DELETE /v1/branded-caller-ids/{id}
 *     → {id, status: pending|approved|rejected, status_reason?}
 *   POST   /v1/verified-numbers          {phone_number, friendly_name}
 *   GET    /v1/verified-numbers/{id}
 *   DELETE /v1/verified-numbers/{id}
 *     → {id, status: pending|verified|failed, validation_code?, status_reason?}
 *
 * Vendor 400/422 → 400 with the vendor's message; a DELETE answered 404 is already done;
 * anything else (unreachable, 401/403, 404 on a read, 429, 5xx, a body we cannot read) → 502
 * `Caller ID vendor <kind> …`. Without the setting, the built-in offline vendor answers
 * (shared/vendors/caller-id/mock.ts).
 */

export type { CallerIdVendor } from './types.ts';

const VENDOR_TIMEOUT_MS = 10_000;

/** The vendor for new registrations: the HTTP client when configured, else the offline vendor. */
export async function callerIdVendor(): Promise<CallerIdVendor> {
  const http = await configuredHttpVendor();
  return http ?? mockCallerIdVendor;
}

/** The vendor a stored record was made with; a record of an HTTP vendor needs it still configured. */
export async function callerIdVendorOf(kind: CallerIdVendorKind): Promise<CallerIdVendor> {
  if (kind === 'mock') return mockCallerIdVendor;
  const http = await configuredHttpVendor();
  if (!http) throw badGateway('Caller ID vendor http is not configured (CALLER_ID_VENDOR_BASE_URL)');
  return http;
}

async function configuredHttpVendor(): Promise<HttpCallerIdVendor | undefined> {
  const baseUrl = await vendorSetting('CALLER_ID_VENDOR_BASE_URL');
  if (!baseUrl) return undefined;
  return new HttpCallerIdVendor({ baseUrl, apiKey: () => vendorSetting('CALLER_ID_VENDOR_API_KEY') });
}

interface HttpOptions {
  baseUrl: string;
  apiKey: () => Promise<string | undefined>;
  timeoutMs?: number;
}

interface WireRecord {
  id?: unknown;
  status?: unknown;
  status_reason?: unknown;
  validation_code?: unknown;
}

class HttpCallerIdVendor implements CallerIdVendor {
  readonly kind = 'http' as const;

  constructor(private readonly options: HttpOptions) {}

  async registerBrandedCallerId(input: BrandedCallerIdRequest): Promise<VendorBrandedCallerId> {
    return this.branded(await this.request('POST', '/v1/branded-caller-ids', input));
  }

  async getBrandedCallerId(reference: string): Promise<VendorBrandedCallerId> {
    return this.branded(await this.request('GET', `/v1/branded-caller-ids/${encodeURIComponent(reference)}`));
  }

  async deleteBrandedCallerId(reference: string): Promise<void> {
    await this.request('DELETE', `/v1/branded-caller-ids/${encodeURIComponent(reference)}`);
  }

  async startNumberVerification(input: { phone_number: string; friendly_name: string | null }): Promise<VendorVerifiedNumber> {
    return this.verified(await this.request('POST', '/v1/verified-numbers', input));
  }

  async getVerifiedNumber(reference: string): Promise<VendorVerifiedNumber> {
    return this.verified(await this.request('GET', `/v1/verified-numbers/${encodeURIComponent(reference)}`));
  }

  async deleteVerifiedNumber(reference: string): Promise<void> {
    await this.request('DELETE', `/v1/verified-numbers/${encodeURIComponent(reference)}`);
  }

  private branded(record: WireRecord): VendorBrandedCallerId {
    return {
      vendor_reference: this.reference(record),
      status: this.status(record, BRANDED_CALLER_ID_STATUSES),
      status_reason: optionalText(record.status_reason),
    };
  }

  private verified(record: WireRecord): VendorVerifiedNumber {
    return {
      vendor_reference: this.reference(record),
      status: this.status(record, VERIFIED_NUMBER_STATUSES),
      validation_code: optionalText(record.validation_code),
      status_reason: optionalText(record.status_reason),
    };
  }

  private reference(record: WireRecord): string {
    if (typeof record.id !== 'string' || record.id === '' || record.id.length > 200) throw this.failure('answered without an id');
    return record.id;
  }

  private status<S extends string>(record: WireRecord, allowed: readonly S[]): S {
    if (typeof record.status !== 'string' || !allowed.includes(record.status as S)) {
      throw this.failure(`answered an unknown status ${JSON.stringify(record.status)}`.slice(0, 200));
    }
    return record.status as S;
  }

  private async request(method: 'GET' | 'POST' | 'DELETE', path: string, json?: unknown): Promise<WireRecord> {
    const apiKey = await this.options.apiKey();
    const headers: Record<string, string> = { accept: 'application/json' };
    if (apiKey) headers.authorization = `Bearer ${apiKey}`;
    if (json !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await traced('caller-id', () => fetch(new URL(path, this.options.baseUrl), {
        method,
        headers,
        body: json === undefined ? undefined : JSON.stringify(json),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? VENDOR_TIMEOUT_MS),
        redirect: 'error',
      }));
    } catch (error) {
      const reason = ((error as Error).cause as { code?: string } | undefined)?.code ?? (error as Error).name;
      throw this.failure(`was unreachable (${reason})`);
    }
    const text = await response.text();
    if (response.ok) {
      if (method === 'DELETE') return {};
      try {
        const parsed: unknown = JSON.parse(text);
        if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
        return parsed as WireRecord;
      } catch {
        throw this.failure('answered with invalid JSON');
      }
    }
    if (method === 'DELETE' && response.status === 404) return {};
    if (response.status === 400 || response.status === 422) {
      throw badRequest(`Caller ID vendor rejected the request: ${vendorMessage(text)}`);
    }
    logger.warn('Caller ID vendor request failed', { vendor: this.kind, method, status: response.status });
    throw this.failure(`answered HTTP ${response.status}`);
  }

  private failure(what: string) {
    return badGateway(`Caller ID vendor ${this.kind} ${what}`);
  }
}

const optionalText = (value: unknown): string | null =>
  typeof value === 'string' && value !== '' ? value.slice(0, 500) : null;

function vendorMessage(text: string): string {
  let message: unknown = text;
  try {
    const parsed = JSON.parse(text) as { message?: unknown; error?: unknown };
    message = parsed.message ?? parsed.error ?? text;
  } catch {
    // Not JSON: the text as is.
  }
  const flat = (typeof message === 'string' ? message : JSON.stringify(message)).replace(/\s+/g, ' ').trim();
  return (flat || 'no detail').slice(0, 300);
}
