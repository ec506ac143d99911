import type { MemberAuthItem, SessionAuthItem } from '../platform/auth/sessions.ts';
import type { Role } from '../platform/auth/roles.ts';
import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query.ts';
import { defineEntity, table, type TransactOp } from '../platform/store/table.ts';

/*
 * The members domain's items, declared once (keys from shared/platform/store/keys.ts).
 * Member and session items carry what the gate reads on every session request
 * (MemberAuthItem, SessionAuthItem in shared/platform/auth/sessions.ts).
 */

type Keyed = { pk: string; sk: string };

export type MemberSource = 'api' | 'invite' | 'sso' | 'saml' | 'scim' | 'cli';

export type MemberItem = MemberAuthItem & {
  name?: string;
  source: MemberSource;
  created_timestamp: number;
  /** SCIM's `externalId` and name parts, kept as sent. */
  external_id?: string;
  given_name?: string;
  family_name?: string;
};

export const members = defineEntity<MemberItem, [workspaceId: string, memberId: string]>({
  key: keys.member,
  notFound: () => notFound('Member not found'),
});
export const listMemberItems = (workspaceId: string) => queryAll<MemberItem>(keys.members(workspaceId));

export type MemberEmailItem = Keyed & { member_id: string };
export const memberEmails = defineEntity<MemberEmailItem, [workspaceId: string, email: string]>({
  key: keys.memberEmail,
  notFound: () => notFound('Member not found'),
});

/** Counters of active admins and members, and the owner: the last-admin guard's conditions. */
export type RosterItem = Keyed & { admin_count?: number; member_count?: number; owner_member_id?: string };
export const rosterKey = keys.memberRoster;
export const getRoster = (workspaceId: string) => table.get<RosterItem>(keys.memberRoster(workspaceId));

export type SessionItem = SessionAuthItem & {
  refresh_hash: string;
  /** Refresh tokens already exchanged (their hashes): presenting one again is reuse. */
  used_hashes: string[];
  created_timestamp: number;
  refreshed_timestamp?: number;
  expires_at: number;
};
export const sessions = defineEntity<SessionItem, [workspaceId: string, sessionId: string]>({
  key: keys.memberSession,
  notFound: () => notFound('Session not found'),
});
export const listSessionItems = (workspaceId: string) => queryAll<SessionItem>(keys.memberSessions(workspaceId));

export type InviteItem = Keyed & {
  invite_id: string;
  workspace_id: string;
  email: string;
  role: Role;
  token_hash: string;
  created_timestamp: number;
  expires_timestamp: number;
  expires_at: number;
};
export const invites = defineEntity<InviteItem, [workspaceId: string, inviteId: string]>({
  key: keys.invite,
  notFound: () => notFound('Invite not found'),
});
export const listInviteItems = (workspaceId: string) => queryAll<InviteItem>(keys.invites(workspaceId));

export type SsoConfigItem = Keyed & {
  issuer: string;
  client_id: string;
  client_secret_sealed: string;
  allowed_domains: string[];
  default_role: Role;
  updated_timestamp: number;
};
export const ssoConfigs = defineEntity<SsoConfigItem, [workspaceId: string]>({
  key: keys.ssoConfig,
  notFound: () => notFound('SSO is not configured'),
});

export type SamlConfigItem = Keyed & {
  idp_entity_id: string;
  sso_url: string;
  certificate: string;
  certificate_fingerprint: string;
  allowed_domains: string[];
  default_role: Role;
  /** Absent (configured before it existed): allowed, as it was. */
  allow_idp_initiated?: boolean;
  updated_timestamp: number;
};
export const samlConfigs = defineEntity<SamlConfigItem, [workspaceId: string]>({
  key: keys.samlConfig,
  notFound: () => notFound('SAML is not configured'),
});

export type ScimConfigItem = Keyed & { token_hash: string; masked_token: string; created_timestamp: number };
export const scimConfigs = defineEntity<ScimConfigItem, [workspaceId: string]>({
  key: keys.scimConfig,
  notFound: () => notFound('SCIM is not enabled'),
});
export type ScimTokenItem = Keyed & { workspace_id: string; created_timestamp: number };
export const scimTokens = defineEntity<ScimTokenItem, [tokenSha256: string]>({
  key: keys.scimToken,
  notFound: () => notFound('SCIM token not found'),
});

export type SsoStateItem = Keyed & {
  workspace_id: string;
  code_verifier: string;
  nonce: string;
  /** How the callback answers: JSON (an API client started it) or a 302 to the dashboard. */
  respond?: 'json' | 'redirect';
  /** The dashboard path the browser returns to (a same-site path, checked at the start). */
  return_to?: string;
  expires_timestamp: number;
  expires_at: number;
};

/** Records an assertion ID as used; false when it was already (a replay). */
const samlAssertions = defineEntity<{ expires_at: number }, [workspaceId: string, assertionId: string]>({
  key: keys.samlAssertion,
  notFound: (_workspaceId, assertionId) => notFound(`Assertion ${assertionId} was not seen`),
});

export function recordSamlAssertion(workspaceId: string, assertionId: string, expiresAtSeconds: number): Promise<boolean> {
  return samlAssertions.putIf({ expires_at: expiresAtSeconds }, [workspaceId, assertionId]);
}

export type { TransactOp };

/** A deleted workspace's purge: where it is (shared/members/purge.ts). */
type PurgePhase = 'numbers' | 'objects' | 'items' | 'done';
export type PurgeItem = Keyed & {
  workspace_id: string;
  phase: PurgePhase;
  /** Advanced by one, conditionally, at the end of every step: a redelivered step finds it moved and stops. */
  step: number;
  /** The objects phase: the index of the prefix being emptied. */
  prefix_index?: number;
  /** The items phase: where its walk of the purge sources is (purge-sources.ts `PurgeCursor`) as JSON; absent: from the start. */
  cursor?: string;
  numbers_released: number;
  objects_deleted: number;
  /** Deletions sent (a key named by a record may already be gone). */
  items_deleted: number;
  /** Items read by the walk (its work: the workspace's items, not the table's). */
  items_scanned: number;
  started_timestamp: number;
  updated_timestamp: number;
  completed_timestamp?: number;
  expires_at?: number;
  /** The step a run has taken (claimPurgeStep), and until when; gone with the step's advance. */
  claimed_step?: number;
  claimed_until?: number;
};
export const purges = defineEntity<PurgeItem, [workspaceId: string]>({
  key: keys.workspacePurge,
  notFound: () => notFound('No purge of this workspace'),
});

/** The first step of a purge, in deleteWorkspace's transaction; a repeated delete keeps the one under way. */
export function purgeStartOp(workspaceId: string, nowMs: number): TransactOp {
  return {
    Update: {
      Key: keys.workspacePurge(workspaceId),
      UpdateExpression:
        'SET workspace_id = :ws, phase = if_not_exists(phase, :phase), step = if_not_exists(step, :zero), numbers_released = if_not_exists(numbers_released, :zero), ' +
        'objects_deleted = if_not_exists(objects_deleted, :zero), items_deleted = if_not_exists(items_deleted, :zero), items_scanned = if_not_exists(items_scanned, :zero), ' +
        'started_timestamp = if_not_exists(started_timestamp, :now), updated_timestamp = :now',
      ExpressionAttributeValues: { ':ws': workspaceId, ':phase': 'numbers', ':zero': 0, ':now': nowMs },
    },
  };
}

/**
 * Takes the run of `item`'s step until `nowMs + leaseMs`; false when another run of the same
 * step holds it. A step's work has effects outside the table (a number released at its
 * carrier) and counts that only the run saving the step keeps, so a duplicate delivery must
 * not do it at all. A run that died keeps the step until its lease ends; the step's
 * redelivery, which comes later, then takes it.
 */
export async function claimPurgeStep(item: PurgeItem, nowMs: number, leaseMs: number): Promise<boolean> {
  const claimed = await purges.setFields([item.workspace_id], {
    set: { claimed_step: item.step, claimed_until: nowMs + leaseMs },
    condition: '#step = :step AND (attribute_not_exists(#claimedStep) OR #claimedStep <> :step OR #claimedUntil < :now)',
    names: { '#step': 'step', '#claimedStep': 'claimed_step', '#claimedUntil': 'claimed_until' },
    values: { ':step': item.step, ':now': nowMs },
  });
  return claimed !== undefined;
}

/**
 * Saves a step's progress if no other run of the same step saved first (`step` as read);
 * false when one did (this run was a redelivery or a duplicate: it must not continue).
 */
export function advancePurge(item: PurgeItem, next: PurgeItem): Promise<boolean> {
  return purges.putIf({ ...next, step: item.step + 1 }, [item.workspace_id], { expression: 'step = :step', values: { ':step': item.step } });
}

/** An AuthnRequest we sent (SP-initiated SAML): the ACS takes it once when a response names it. */
export type SamlRequestItem = Keyed & { respond: 'json' | 'redirect'; return_to: string; issue_instant: string; expires_timestamp: number; expires_at: number };

export async function recordSamlRequest(workspaceId: string, requestIdSha256: string, item: Omit<SamlRequestItem, 'pk' | 'sk'>): Promise<void> {
  await table.put({ Item: { ...keys.samlRequest(workspaceId, requestIdSha256), ...item }, ConditionExpression: 'attribute_not_exists(pk)' });
}

/** Takes (deletes) the request once; undefined when it is unknown, spent or expired. */
export async function takeSamlRequest(workspaceId: string, requestIdSha256: string, nowMs: number): Promise<SamlRequestItem | undefined> {
  const taken = await table.delete<SamlRequestItem>({ Key: keys.samlRequest(workspaceId, requestIdSha256), ReturnValues: 'ALL_OLD' });
  return taken && taken.expires_timestamp > nowMs ? taken : undefined;
}

/** An IdP-initiated SAML sign-in the assertion verified, waiting for the user's Continue. */
export type SamlConfirmationItem = Keyed & { workspace_id: string; email: string; expires_timestamp: number; expires_at: number };

export async function recordSamlConfirmation(workspaceId: string, tokenSha256: string, item: Omit<SamlConfirmationItem, 'pk' | 'sk'>): Promise<void> {
  await table.put({ Item: { ...keys.samlConfirmation(workspaceId, tokenSha256), ...item }, ConditionExpression: 'attribute_not_exists(pk)' });
}

/** Takes (deletes) the waiting sign-in once; undefined when it is unknown, spent or expired. */
export async function takeSamlConfirmation(workspaceId: string, tokenSha256: string, nowMs: number): Promise<SamlConfirmationItem | undefined> {
  const taken = await table.delete<SamlConfirmationItem>({ Key: keys.samlConfirmation(workspaceId, tokenSha256), ReturnValues: 'ALL_OLD' });
  return taken && taken.expires_timestamp > nowMs ? taken : undefined;
}
