import { notFound } from '../platform/errors.ts';
import { cpsTokenAttribute, keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query.ts';
import { defineEntity } from '../platform/store/table.ts';
import type { Trunk } from '../vendors/telephony/index.ts';
import type { PhoneNumber, VersionReference } from './phone-numbers/schemas.ts';
import type { BrandedCallerId, Kyc, KycStatus, SipTrunk, VerifiedNumber } from './telephony/schemas.ts';

/*
 * The numbers domain's items, each declared once with its key (the keys themselves are
 * built in shared/platform/store/keys.ts). Domain modules reach the table through these
 * and `table` (shared/platform/store/table.ts), never through key strings of their own.
 */

// Type aliases, not interfaces: an item must be assignable to the table's `Record<string, unknown>`.
type Keyed = { pk: string; sk: string };

// ── Phone numbers ───────────────────────────────────────────────────────────────────

export interface AgentEntry {
  agent_id: string;
  weight: number;
  agent_version?: VersionReference;
}

/** What is stored: the wire fields Parley keeps, plus bookkeeping. Absent means unset. */
export type NumberItem = Keyed & {
  workspace_id: string;
  phone_number: string;
  phone_number_type: PhoneNumber['phone_number_type'];
  provider: PhoneNumber['provider'];
  number_provider?: 'twilio' | 'telnyx';
  /** Bought numbers: which adapter holds it and the carrier's ID for it. */
  carrier?: 'twilio' | 'mock';
  provider_sid?: string;
  nickname?: string;
  inbound_agents?: AgentEntry[];
  outbound_agents?: AgentEntry[];
  /** Chat agents for the number's SMS chats (shared/chats/sms/sms.ts picks one by weight). */
  inbound_sms_agents?: AgentEntry[];
  outbound_sms_agents?: AgentEntry[];
  inbound_agent_version?: VersionReference;
  outbound_agent_version?: VersionReference;
  inbound_webhook_url?: string;
  allowed_inbound_country_list?: string[];
  allowed_outbound_country_list?: string[];
  allowed_inbound_addresses?: string[];
  cps_limit?: number;
  fallback_number?: string;
  area_code?: number;
  termination_uri?: string;
  auth_username?: string;
  /** The SIP trunk password, envelope-encrypted (shared/platform/crypto/envelope.ts); never answered. */
  auth_password_encrypted?: string;
  transport?: string;
  provisioning_status: 'provisioned' | 'failed';
  revision: number;
  created_timestamp: number;
  last_modification_timestamp: number;
};

/** A number in its workspace's partition; another workspace's number is as missing as an unknown one. */
export const phoneNumbers = defineEntity<NumberItem, [workspaceId: string, phoneNumber: string]>({
  key: keys.phoneNumber,
  notFound: (_workspaceId, phoneNumber) => notFound(`Phone number ${phoneNumber} not found`),
});

export const listNumberItems = (workspaceId: string) => queryAll<NumberItem>(keys.phoneNumbers(workspaceId));

/** The global claim on a number: one per number across all workspaces, written with the number. */
export type NumberClaimItem = Keyed & { workspace_id: string; phone_number: string };

export const phoneNumberClaims = defineEntity<NumberClaimItem, [phoneNumber: string]>({
  key: keys.phoneNumberClaim,
  notFound: (phoneNumber) => notFound(`Phone number ${phoneNumber} not found`),
});

/** The workspace's trunk at a carrier (telephony rule 7), as the provider answered it. */
export type ProviderTrunkItem = Keyed & Trunk & { provider: string; created_timestamp: number };

export const providerTrunks = { key: keys.providerTrunk };

/** A SIP digest nonce of a challenge: single use, bound to the called number, expiring by TTL. */
export type DigestNonceItem = Keyed & { called_number: string; issued_at: number; expires_at: number };

export const digestNonces = { key: keys.sipDigestNonce };

/** A number's calls-per-second bucket: token i is `tokenAttribute(i)`, the epoch ms it may be taken again. */
export const cpsBuckets = { key: keys.cpsBucket, tokenAttribute: cpsTokenAttribute };

// ── Business verification ───────────────────────────────────────────────────────────

export type KycItem = Keyed &
  Omit<Kyc, 'status'> & {
    status: Exclude<KycStatus, 'not_submitted'>;
    /** Bumped by every write; each write is conditional on the one it read. */
    revision: number;
  };

/** One per workspace; a workspace without one has not submitted. */
export const kycRecords = { key: keys.kyc };

// ── SIP trunks ──────────────────────────────────────────────────────────────────────

export type SipTrunkItem = Keyed &
  Omit<SipTrunk, 'auth_password'> & {
    /** The sealed password (`env1.…`), absent without credentials. */
    auth_password_sealed?: string;
    /** Bumped by every write; updates are conditional on the revision they read. */
    revision: number;
  };

export const sipTrunks = defineEntity<SipTrunkItem, [workspaceId: string, sipTrunkId: string]>({
  key: keys.sipTrunk,
  notFound: (_workspaceId, sipTrunkId) => notFound(`SIP trunk ${sipTrunkId} not found`),
});

export const listSipTrunkItems = <T = SipTrunkItem>(workspaceId: string, projection?: string) =>
  queryAll<T>(keys.sipTrunks(workspaceId), projection);

// ── Caller IDs ──────────────────────────────────────────────────────────────────────

/** What a caller-ID record keeps beside its wire fields: the vendor's reference for it. */
export type CallerIdStored = Keyed & { vendor_reference: string };

export type BrandedItem = BrandedCallerId & CallerIdStored;
export type VerifiedItem = VerifiedNumber & CallerIdStored;

export const brandedCallerIdNotFound = (_workspaceId: string, id: string) => notFound(`Branded caller ID ${id} not found`);

export const brandedCallerIds = defineEntity<BrandedItem, [workspaceId: string, brandedCallerId: string]>({
  key: keys.brandedCallerId,
  notFound: brandedCallerIdNotFound,
});

export const listBrandedItems = (workspaceId: string) => queryAll<BrandedItem>(keys.brandedCallerIds(workspaceId));

/** Holds one branded caller ID per number and workspace; names its record (`record_sk`). */
export const brandedCallerIdLocks = { key: keys.brandedCallerIdNumber };

export const verifiedNumberNotFound = (_workspaceId: string, id: string) => notFound(`Verified number ${id} not found`);

export const verifiedNumbers = defineEntity<VerifiedItem, [workspaceId: string, verifiedNumberId: string]>({
  key: keys.verifiedNumber,
  notFound: verifiedNumberNotFound,
});

export const listVerifiedItems = (workspaceId: string) => queryAll<VerifiedItem>(keys.verifiedNumbers(workspaceId));

/** Holds one verified-number record per number and workspace; names its record (`record_sk`). */
export const verifiedNumberLocks = { key: keys.verifiedNumberNumber };
