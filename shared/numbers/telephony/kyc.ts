import { isProduction } from '../../platform/config.ts';
import { conflict, forbidden } from '../../platform/errors.ts';
import type { Kyc, KycDecisionInput, KycSubmissionInput } from './schemas.ts';
import { ConditionFailed, table } from '../../platform/store/table.ts';
import { kycRecords, type KycItem } from '../store.ts';

/*
 * Business verification (KYC). Some telephony actions (branded caller IDs, and buying
 * numbers where the phone-numbers feature asks) need it approved (spec: Authentication 14,
 * Errors 403). One item per workspace (`WS#<ws>`, `KYC`):
 *
 *   not_submitted ──POST /kyc (details)──▶ pending ──decision──▶ approved | rejected
 *                                            ▲                           │
 *                                            └──── resubmit (rejected) ──┘
 *
 * A submission can be replaced while pending or after a rejection; once approved it is
 * final through the API (409), so an approved workspace never silently loses its approval.
 *
 * Decisions: Parley has no human reviewer. Outside production (`PARLEY_ENV` other than
 * `production`) an admin key stands in for the reviewer with `POST /kyc {"decision":
 * "approved" | "rejected", "reason"?}` on a pending submission, so local runs and tests can
 * reach every state. In production that body is refused (403): decisions there are written
 * by the operator (for example with the CLI against the table), never by the workspace itself.
 */

const NOT_SUBMITTED: Kyc = {
  status: 'not_submitted',
  legal_name: null,
  registration_number: null,
  country: null,
  address: null,
  contact_email: null,
  submitted_timestamp: null,
  reviewed_timestamp: null,
  rejection_reason: null,
};

const toKyc = (item: KycItem): Kyc => ({
  status: item.status,
  legal_name: item.legal_name,
  registration_number: item.registration_number,
  country: item.country,
  address: item.address,
  contact_email: item.contact_email,
  submitted_timestamp: item.submitted_timestamp,
  reviewed_timestamp: item.reviewed_timestamp ?? null,
  rejection_reason: item.rejection_reason ?? null,
});

async function readItem(workspaceId: string): Promise<KycItem | undefined> {
  return table.get<KycItem>(kycRecords.key(workspaceId));
}

export async function getKyc(workspaceId: string): Promise<Kyc> {
  const item = await readItem(workspaceId);
  return item ? toKyc(item) : NOT_SUBMITTED;
}

/**
 * 403 unless the workspace's business verification is approved. `action` completes the
 * sentence "approved verification is required to <action>", e.g. `create a branded caller ID`.
 */
export async function assertKycApproved(workspaceId: string, action: string): Promise<void> {
  await approvedKyc(workspaceId, action);
}

/** The approved verification (its details go to vendors that register on the business's behalf), else the same 403. */
export async function approvedKyc(workspaceId: string, action: string): Promise<Kyc & { status: 'approved' }> {
  const kyc = await getKyc(workspaceId);
  if (kyc.status !== 'approved') {
    throw forbidden(`Business verification is ${kyc.status}; approved verification is required to ${action}`);
  }
  return kyc as Kyc & { status: 'approved' };
}

async function write(workspaceId: string, previous: KycItem | undefined, next: Omit<KycItem, 'pk' | 'sk' | 'revision'>) {
  const item: KycItem = { ...kycRecords.key(workspaceId), ...next, revision: (previous?.revision ?? 0) + 1 };
  try {
    await table.put({
      Item: item,
      ...(previous
        ? { ConditionExpression: 'revision = :revision', ExpressionAttributeValues: { ':revision': previous.revision } }
        : { ConditionExpression: 'attribute_not_exists(pk)' }),
    });
  } catch (error) {
    if (error instanceof ConditionFailed) throw conflict('Business verification changed meanwhile; read it and try again');
    throw error;
  }
  return toKyc(item);
}

export async function submitKyc(workspaceId: string, input: KycSubmissionInput, nowMs = Date.now()): Promise<Kyc> {
  const previous = await readItem(workspaceId);
  if (previous?.status === 'approved') throw conflict('Business verification is already approved');
  return write(workspaceId, previous, {
    status: 'pending',
    legal_name: input.legal_name,
    registration_number: input.registration_number,
    country: input.country,
    address: input.address,
    contact_email: input.contact_email,
    submitted_timestamp: nowMs,
    reviewed_timestamp: null,
    rejection_reason: null,
  });
}

/** The reviewer's decision on a pending submission (the local stand-in for a reviewer; see above). */
export async function decideKyc(workspaceId: string, input: KycDecisionInput, nowMs = Date.now()): Promise<Kyc> {
  if (isProduction) {
    throw forbidden('Business verification decisions are made by the reviewer, not through the API');
  }
  const previous = await readItem(workspaceId);
  if (previous?.status !== 'pending') {
    throw conflict(`Business verification is ${previous?.status ?? 'not_submitted'}; only a pending submission can be decided`);
  }
  return write(workspaceId, previous, {
    ...toKyc(previous),
    status: input.decision,
    reviewed_timestamp: nowMs,
    rejection_reason: input.decision === 'rejected' ? (input.reason ?? null) : null,
  });
}
