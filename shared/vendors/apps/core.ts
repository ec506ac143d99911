import { egressFetch, EgressRefused } from '../../platform/egress/egress.ts';
import { traced } from '../../platform/observability/tracing.ts';

/*
 * What every vendor client of shared/vendors/apps shares: the target (base URL, credentials,
 * mock mode, kept token values), the typed failures the integrations domain maps to its
 * errors, the CRM shapes, and `call`: one JSON request through the egress guard with a
 * timeout and a response cap, a 401/403 as AppAuthRejected, any other failure as
 * AppVendorFailed.
 */

type AppCredentials =
  | { kind: 'bearer'; token: string }
  | { kind: 'api_key'; apiKey: string }
  | { kind: 'basic'; username: string; password: string };

export interface AppTarget {
  provider: string;
  /** The vendor API's base URL (no trailing slash). */
  baseUrl: string;
  credentials: AppCredentials;
  mock: boolean;
  /** Values the OAuth token answer carried (HighLevel's `location_id`, Zoho's `api_domain`). */
  kept?: Partial<Record<string, string>>;
}

/** The vendor refused the credentials (401/403). */
export class AppAuthRejected extends Error {
  constructor(readonly provider: string, readonly status: number) {
    super(`${provider} refused the credentials (HTTP ${status})`);
    this.name = 'AppAuthRejected';
  }
}

/** The vendor failed, answered an error, or could not be reached (the egress guard's refusals included). */
export class AppVendorFailed extends Error {
  constructor(readonly provider: string, readonly detail: string, readonly refused = false) {
    super(`${provider} failed: ${detail}`);
    this.name = 'AppVendorFailed';
  }
}

/** The provider has no adapter for this operation yet (docs/integrations.md, Not done yet). */
export class AppUnsupported extends Error {
  constructor(readonly provider: string, readonly operation: string) {
    super(`${operation} is not supported for ${provider} yet`);
    this.name = 'AppUnsupported';
  }
}

export interface CrmField {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'date' | 'datetime' | 'enum';
  label?: string;
  description?: string;
  options?: string[];
}

export interface CrmContact {
  contact_id: string;
  phone_number: string;
  first_name?: string;
  last_name?: string;
  email?: string;
  /** Extra CRM fields from the provider config's field mappings (CRM field → value). */
  fields?: Record<string, string | number | boolean>;
}

export interface CrmCall {
  call_id: string;
  direction?: string;
  from_number?: string;
  to_number?: string;
  start_timestamp?: number;
  duration_ms?: number;
  summary?: string;
  transcript?: string;
}

/** A vendor's JSON answer, read field by field (each read checked where it matters). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- vendor JSON of many shapes
export type Json = any;

/** The OAuth access token of a target (CRMs connect through OAuth only). */
export function bearerToken(target: AppTarget): string {
  if (target.credentials.kind !== 'bearer') throw new AppVendorFailed(target.provider, 'the connection holds no OAuth token');
  return target.credentials.token;
}

export const str = (value: unknown) => (typeof value === 'string' ? value : value === undefined || value === null ? undefined : String(value));

/** A vendor record ID as a path segment: the characters vendors use, nothing that escapes the path. */
export function pathId(provider: string, value: unknown): string {
  const id = String(value ?? '');
  if (!/^[\w.-]{1,128}$/.test(id)) throw new AppVendorFailed(provider, 'the answer holds no usable record ID');
  return encodeURIComponent(id);
}

function authHeader(credentials: AppCredentials): string {
  switch (credentials.kind) {
    case 'bearer':
      return `Bearer ${credentials.token}`;
    case 'api_key':
      return `Bearer ${credentials.apiKey}`;
    case 'basic':
      return `Basic ${Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64')}`;
  }
}

export async function call(target: AppTarget, method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<Json> {
  let response: Response;
  try {
    response = await traced('apps', () => egressFetch(`${target.baseUrl}${path}`, {
      method,
      headers: {
        authorization: authHeader(target.credentials),
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...extraHeaders,
      },
      body: body === undefined ? undefined : JSON.stringify(body),
      timeoutMs: 10_000,
      maxResponseBytes: 1024 * 1024,
    }));
  } catch (error) {
    if (error instanceof EgressRefused) throw new AppVendorFailed(target.provider, error.message, true);
    throw new AppVendorFailed(target.provider, error instanceof Error ? error.message : String(error));
  }
  const text = await response.text().catch(() => '');
  if (response.status === 401 || response.status === 403) throw new AppAuthRejected(target.provider, response.status);
  if (response.status >= 300) throw new AppVendorFailed(target.provider, `HTTP ${response.status}`);
  if (!text) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new AppVendorFailed(target.provider, 'the answer is not JSON');
  }
}

export interface PushResult {
  external_id: string;
  created: boolean;
}

/** One CRM's client: what a CRM app's tools, get-crm-schema, test-crm-auth and a sync job call. */
export interface CrmClient {
  /** One minimal authenticated call; resolves when the vendor accepted the token. */
  testAuth(target: AppTarget): Promise<void>;
  /** The contact object's fields. */
  schema(target: AppTarget): Promise<CrmField[]>;
  /** Creates or updates the contact with this phone number. */
  upsertContact(target: AppTarget, contact: CrmContact): Promise<PushResult>;
  /** Logs an ended call as an activity. */
  logCall(target: AppTarget, callRecord: CrmCall): Promise<PushResult>;
}

/** The text a CRM activity gets for a call: its summary, else its transcript. */
export const callBody = (callRecord: CrmCall) => callRecord.summary ?? callRecord.transcript ?? '';

/** The other party of a call: the callee of an outbound call, the caller of an inbound one. */
export const otherParty = (callRecord: CrmCall) =>
  (callRecord.direction === 'inbound' ? callRecord.from_number ?? callRecord.to_number : callRecord.to_number ?? callRecord.from_number) || undefined;
