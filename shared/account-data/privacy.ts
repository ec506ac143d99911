import { auditPut, maskAuditTargets } from '../account/index.ts';
import { eraseNumberFromBatchTasks } from '../batches/index.ts';
import { callStorageFacts, deleteCall } from '../calls/erasure/index.ts';
import { callIdsWithNumber } from '../calls/records/index.ts';
import { deleteChat, deleteSmsThreadOf, getChat, smsChatIdsWithParty } from '../chats/records/index.ts';
import { deleteContact, getContactByPhone } from '../contacts/index.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { objectStore } from '../platform/aws/object-store.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { NotFound } from '../platform/errors.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { deleteProviderOperationsMentioning } from '../vendors/telephony/operation-log.ts';
import { deleteDeliveriesMentioning } from '../webhooks/index.ts';
import type { AccountDataJobMessage } from './messages.ts';
import { applyRetention } from './retention.ts';
import type { ErasureReport, PrivacyRequest } from './schemas.ts';
import {
  allExports,
  deleteExportItem,
  finishPrivacyRequest,
  markPrivacyRunning,
  privacyRequests,
  putPrivacyRequest,
  type PrivacyRequestItem,
} from './store.ts';

/*
 * Privacy requests (docs/privacy.md). `delete-phone-number` erases one person's number from
 * the workspace in the background: every call with that number as its other party (the
 * item, transcripts, recordings, the unscrubbed copy, the listing and party index entries:
 * deleteCall), the contact with that number (its claim and memory: deleteContact), and
 * every export file of the workspace (an export may hold the number). Running it again
 * finds nothing left and reports zeros. The request keeps the number only while it runs;
 * its report and the audit entry name the last four digits. `run-retention` applies each
 * agent's data_storage_retention_days to its calls and each chat agent's to its chats.
 */

const mask = (e164: string) => `***${e164.slice(-4)}`;

function toPrivacyRequest(item: PrivacyRequestItem): PrivacyRequest {
  return {
    request_id: item.request_id,
    kind: item.kind,
    status: item.status,
    ...(item.phone_number_masked ? { phone_number_masked: item.phone_number_masked } : {}),
    ...(item.report ? { report: item.report } : {}),
    ...(item.failure_reason ? { failure_reason: item.failure_reason } : {}),
    created_timestamp: item.created_timestamp,
    ...(item.completed_timestamp !== undefined ? { completed_timestamp: item.completed_timestamp } : {}),
  };
}

async function startRequest(workspaceId: string, item: Omit<PrivacyRequestItem, 'type' | 'workspace_id' | 'request_id' | 'status' | 'created_timestamp'>, nowMs: number) {
  const request: PrivacyRequestItem = {
    type: 'privacy_request',
    request_id: newTimeOrderedId('privacyRequest', nowMs),
    workspace_id: workspaceId,
    status: 'pending',
    created_timestamp: nowMs,
    ...item,
  };
  await putPrivacyRequest(request);
  const kind = request.kind === 'delete_phone_number' ? 'erase' : 'retention';
  await queueNamed('export-jobs').send({ kind, workspace_id: workspaceId, request_id: request.request_id } satisfies AccountDataJobMessage);
  return toPrivacyRequest(request);
}

export const requestPhoneNumberErase = (workspaceId: string, phoneNumber: string, nowMs = Date.now()) =>
  startRequest(workspaceId, { kind: 'delete_phone_number', phone_number: phoneNumber, phone_number_masked: mask(phoneNumber) }, nowMs);

export const requestRetentionRun = (workspaceId: string, nowMs = Date.now()) => startRequest(workspaceId, { kind: 'run_retention' }, nowMs);

export async function getPrivacyRequest(workspaceId: string, requestId: string): Promise<PrivacyRequest> {
  return toPrivacyRequest(await privacyRequests.mustGet(workspaceId, requestId));
}

/** Deletes, counting what was there: a NotFound (deleted meanwhile, by a concurrent erase) counts as nothing. */
async function gone(remove: () => Promise<unknown>): Promise<boolean> {
  try {
    await remove();
    return true;
  } catch (error) {
    if (error instanceof NotFound) return false;
    throw error;
  }
}

/** Erases `e164` from the workspace now (the job's work; idempotent). */
async function erasePhoneNumber(workspaceId: string, e164: string): Promise<ErasureReport> {
  const report: ErasureReport = {
    calls_deleted: 0,
    recordings_deleted: 0,
    chats_deleted: 0,
    sms_deleted: 0,
    contacts_deleted: 0,
    exports_deleted: 0,
    batch_tasks_erased: 0,
    audit_entries_masked: 0,
    log_entries_deleted: 0,
  };
  for (const callId of await callIdsWithNumber(workspaceId, e164)) {
    const facts = await callStorageFacts(workspaceId, callId).catch((error: unknown) => {
      if (error instanceof NotFound) return undefined;
      throw error;
    });
    if (!facts) continue;
    if (await gone(() => deleteCall(workspaceId, callId))) {
      report.calls_deleted++;
      if (facts.recording) report.recordings_deleted++;
    }
  }
  // SMS chats with the number (the chat, its messages, and the thread whose key holds the number).
  for (const chatId of await smsChatIdsWithParty(workspaceId, e164)) {
    const chat = (await getChat(workspaceId, chatId).catch((error: unknown) => {
      if (error instanceof NotFound) return undefined;
      throw error;
    })) as { from_number?: string; to_number?: string; direction?: string } | undefined;
    if (!chat) continue;
    if (await gone(() => deleteChat(workspaceId, chatId))) report.sms_deleted++;
    const ours = chat.direction === 'inbound' ? chat.to_number : chat.from_number;
    if (ours) await deleteSmsThreadOf(workspaceId, ours, e164, chatId);
  }
  const contact = await getContactByPhone(workspaceId, e164).catch((error: unknown) => {
    if (error instanceof NotFound) return undefined;
    throw error;
  });
  if (contact && (await gone(() => deleteContact(workspaceId, contact.contact_id)))) report.contacts_deleted++;
  for (const item of await allExports(workspaceId)) {
    await objectStore().delete(item.object_key);
    await deleteExportItem(workspaceId, item.export_id);
    report.exports_deleted++;
  }
  // Records that quote the number without being about it: batch tasks, audit targets.
  report.batch_tasks_erased = await eraseNumberFromBatchTasks(workspaceId, e164, mask(e164));
  report.audit_entries_masked = await maskAuditTargets(workspaceId, e164, mask(e164));
  // Entries of the workspace's logs quoting the number go whole: webhook deliveries, provider operations.
  report.log_entries_deleted = (await deleteDeliveriesMentioning(workspaceId, e164)) + (await deleteProviderOperationsMentioning(workspaceId, e164));
  return report;
}

/** Runs a privacy request (an export-jobs message): pending or running → complete or failed, with its audit entry. */
export async function runPrivacyRequest(workspaceId: string, requestId: string, actor?: Principal): Promise<void> {
  const item = await privacyRequests.get(workspaceId, requestId);
  if (!item || item.status === 'complete' || item.status === 'failed') return;
  await markPrivacyRunning(workspaceId, requestId);
  try {
    const report =
      item.kind === 'delete_phone_number' ? await erasePhoneNumber(workspaceId, item.phone_number!) : await applyRetention(workspaceId);
    const nowMs = Date.now();
    const audit = auditPut(
      workspaceId,
      actor,
      {
        action: item.kind === 'delete_phone_number' ? 'privacy.delete_phone_number' : 'privacy.run_retention',
        target: item.kind === 'delete_phone_number' ? { type: 'phone_number', id: item.phone_number_masked! } : { type: 'workspace', id: workspaceId },
        changes: Object.entries(report)
          .filter(([, count]) => count > 0)
          .map(([name]) => name),
      },
      nowMs,
    );
    await finishPrivacyRequest(workspaceId, requestId, { status: 'complete', report }, nowMs, audit);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    logger.error('privacy request failed', { requestId, error: reason });
    await finishPrivacyRequest(workspaceId, requestId, { status: 'failed', reason: `Failed: ${reason.slice(0, 300)}` }, Date.now());
  }
}
