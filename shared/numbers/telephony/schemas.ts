import { MASKED_SECRET } from '../../platform/text/masking.ts';
import * as z from 'zod';
import { epochMs, idOf, lazySchema } from '../../platform/http/schemas.ts';
import { addressList, e164, isoCountry, sipUri } from '../validation.ts';

/*
 * Telephony: SIP origination, SIP trunks, branded caller IDs, verified numbers, KYC and
 * the provider operation log (scope `numbers`; KYC is an account matter and needs
 * `admin`). Schemas are built on first use (lazySchema).
 */

const text = (max: number) => z.string().trim().min(1).max(max);

// ── KYC ─────────────────────────────────────────────────────────────────────────────

const KYC_STATUS_VALUES = ['not_submitted', 'pending', 'approved', 'rejected'] as const;

const kycAddress = () =>
  z.object({
    line1: text(200),
    line2: text(200).optional(),
    city: text(100),
    region: text(100).optional(),
    postal_code: text(20).optional(),
  });

const kycSubmissionFields = () => ({
  legal_name: text(200),
  registration_number: text(100),
  country: isoCountry(),
  address: kycAddress(),
  contact_email: z.string().trim().max(254).pipe(z.email({ error: 'Must be an email address' })),
});

export type KycSubmissionInput = z.infer<z.ZodObject<ReturnType<typeof kycSubmissionFields>>>;

/** A reviewer's decision on a pending submission (outside production). */
export interface KycDecisionInput {
  decision: 'approved' | 'rejected';
  reason?: string;
}

/**
 * Either the business details (a submission) or, outside production, a reviewer decision
 * on a pending submission (`{decision, reason?}`); never both.
 */
export const PostKycBody = lazySchema(() =>
  z
    .object({
      decision: z.enum(['approved', 'rejected']).optional().describe('Non-production only: decide a pending submission'),
      reason: text(500).optional().describe('With decision rejected: why'),
      ...Object.fromEntries(Object.entries(kycSubmissionFields()).map(([name, schema]) => [name, schema.optional()])),
    })
    .superRefine((body, ctx) => {
      const details = Object.keys(kycSubmissionFields());
      if (body.decision !== undefined) {
        if (details.some((name) => (body as Record<string, unknown>)[name] !== undefined)) {
          ctx.addIssue({ code: 'custom', path: ['decision'], message: 'Send either a decision or the business details, not both' });
        }
        return;
      }
      for (const name of details) {
        if ((body as Record<string, unknown>)[name] === undefined) ctx.addIssue({ code: 'custom', path: [name], message: 'Required' });
      }
    }),
);

export const Kyc = lazySchema(() =>
  z.object({
    status: z.enum(KYC_STATUS_VALUES),
    legal_name: z.string().nullable(),
    registration_number: z.string().nullable(),
    country: z.string().nullable(),
    address: kycAddress().nullable(),
    contact_email: z.string().nullable(),
    submitted_timestamp: epochMs().nullable(),
    reviewed_timestamp: epochMs().nullable(),
    rejection_reason: z.string().nullable(),
  }),
);
export type Kyc = z.infer<typeof Kyc>;
export type KycStatus = Kyc['status'];

// ── SIP origination ─────────────────────────────────────────────────────────────────

export const SipOrigination = lazySchema(() =>
  z.object({
    origination_uri: z.string().describe('Where carrier trunks send calls: sip:<sip_host>;transport=tcp'),
    ip_ranges: z.array(z.string()).describe('CIDR blocks the platform sends SIP from; allow these on your trunk'),
  }),
);

// ── SIP trunks ──────────────────────────────────────────────────────────────────────

const SIP_TRUNK_TRANSPORTS = ['TCP', 'TLS', 'UDP'] as const;

/** What a stored password is answered as: its presence, never a character of it (sent back on update: unchanged). */
export const MASKED_PASSWORD = MASKED_SECRET;

const sipTransport = () =>
  z
    .string()
    .transform((value) => value.toUpperCase())
    .pipe(z.enum(SIP_TRUNK_TRANSPORTS, { error: 'Must be TCP, TLS or UDP' }));

/** SIP digest user names: printable ASCII without spaces, `:` or `@`. */
const sipUsername = () => z.string().min(1).max(128).regex(/^[\x21-\x7e]+$/, 'Must be printable ASCII without spaces').refine((v) => !/[:@]/.test(v), 'Must not contain : or @');
const sipPassword = () => z.string().min(1).max(128).regex(/^[\x20-\x7e]+$/, 'Must be printable ASCII');

const sipTrunkFields = () => ({
  name: text(200),
  termination_uri: sipUri().describe('Where outbound calls are sent: sip:host[:port][;params] or host[:port]'),
  auth_username: sipUsername().nullable(),
  auth_password: sipPassword().nullable().describe('Stored encrypted; answered only as ' + MASKED_PASSWORD),
  allowed_addresses: addressList().describe('IPs or CIDR blocks this trunk accepts INVITEs from (empty: the carrier default)'),
  transport: sipTransport(),
});

export const CreateSipTrunkBody = lazySchema(() => {
  const fields = sipTrunkFields();
  return z
    .object({
      ...fields,
      auth_username: fields.auth_username.optional(),
      auth_password: fields.auth_password.optional(),
      allowed_addresses: fields.allowed_addresses.default([]),
      transport: fields.transport.default('TCP'),
    })
    .superRefine((body, ctx) => credentialPairing(body, ctx));
});
export type CreateSipTrunkInput = z.infer<typeof CreateSipTrunkBody>;

/** Update: any field; `null` clears the credentials (both together, checked against the stored trunk). */
export const UpdateSipTrunkBody = lazySchema(() => z.object(sipTrunkFields()).partial());
export type UpdateSipTrunkInput = z.infer<typeof UpdateSipTrunkBody>;

function credentialPairing(body: { auth_username?: string | null; auth_password?: string | null }, ctx: z.RefinementCtx) {
  const hasUser = typeof body.auth_username === 'string';
  const hasPassword = typeof body.auth_password === 'string';
  if (hasUser && !hasPassword) ctx.addIssue({ code: 'custom', path: ['auth_password'], message: 'Required when auth_username is set' });
  if (hasPassword && !hasUser) ctx.addIssue({ code: 'custom', path: ['auth_username'], message: 'Required when auth_password is set' });
}

export const SipTrunk = lazySchema(() =>
  z.object({
    sip_trunk_id: z.string(),
    name: z.string(),
    termination_uri: z.string(),
    auth_username: z.string().nullable(),
    auth_password: z.literal(MASKED_PASSWORD).nullable().describe('Masked; null when no password is stored'),
    allowed_addresses: z.array(z.string()),
    transport: z.enum(SIP_TRUNK_TRANSPORTS),
    created_timestamp: epochMs(),
    last_modification_timestamp: epochMs(),
  }),
);
export type SipTrunk = z.infer<typeof SipTrunk>;

export const sipTrunkIdParams = lazySchema(() => z.object({ id: idOf('sipTrunk', 'a SIP trunk ID') }));

// ── Branded caller IDs and verified numbers ─────────────────────────────────────────

const httpsUrl = () =>
  z
    .string()
    .max(2048)
    .refine((value) => {
      try {
        const url = new URL(value);
        return url.protocol === 'https:' && url.hostname !== '';
      } catch {
        return false;
      }
    }, 'Must be an https:// URL');

export const CreateBrandedCallerIdBody = lazySchema(() =>
  z.object({
    phone_number: e164(),
    display_name: text(32).describe('Shown on the called phone (at most 32 characters)'),
    call_reason: text(64).nullable().default(null).describe('Why you call, shown under the name'),
    logo_url: httpsUrl().nullable().default(null),
  }),
);
export type CreateBrandedCallerIdInput = z.infer<typeof CreateBrandedCallerIdBody>;

export const BrandedCallerId = lazySchema(() =>
  z.object({
    branded_caller_id: z.string(),
    phone_number: z.string(),
    display_name: z.string(),
    call_reason: z.string().nullable(),
    logo_url: z.string().nullable(),
    status: z.enum(['pending', 'approved', 'rejected']),
    status_reason: z.string().nullable(),
    vendor: z.enum(['http', 'mock']),
    created_timestamp: epochMs(),
    last_refreshed_timestamp: epochMs(),
  }),
);
export type BrandedCallerId = z.infer<typeof BrandedCallerId>;

export const CreateVerifiedNumberBody = lazySchema(() =>
  z.object({
    phone_number: e164(),
    friendly_name: text(200).nullable().default(null),
  }),
);
export type CreateVerifiedNumberInput = z.infer<typeof CreateVerifiedNumberBody>;

export const VerifiedNumber = lazySchema(() =>
  z.object({
    verified_number_id: z.string(),
    phone_number: z.string(),
    friendly_name: z.string().nullable(),
    status: z.enum(['pending', 'verified', 'failed']),
    status_reason: z.string().nullable(),
    validation_code: z.string().nullable().describe('Enter it on the verification call; null once verified'),
    vendor: z.enum(['http', 'mock']),
    created_timestamp: epochMs(),
    last_refreshed_timestamp: epochMs(),
  }),
);
export type VerifiedNumber = z.infer<typeof VerifiedNumber>;

export const brandedCallerIdParams = lazySchema(() => z.object({ id: idOf('brandedCallerId', 'a branded caller ID') }));
export const verifiedNumberParams = lazySchema(() => z.object({ id: idOf('verifiedNumber', 'a verified number ID') }));

// ── Provider operation log ──────────────────────────────────────────────────────────

export const ProviderOperation = lazySchema(() =>
  z.object({
    operation_id: z.string(),
    provider: z.string(),
    operation: z.string(),
    request: z.record(z.string(), z.unknown()),
    outcome: z.enum(['ok', 'error']),
    error: z.string().optional(),
    created_timestamp: epochMs(),
  }),
);
