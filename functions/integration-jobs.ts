import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runQueueSteps } from '../shared/platform/aws/queue-steps.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';
import { callHistoryPage, getCall } from '../shared/calls/records/index.ts';
import { CreateContactBody, getContactByPhone, listContactsPage, updateContact, type Contact } from '../shared/contacts/index.ts';
import { badRequest, NotFound } from '../shared/platform/errors.ts';
import { IntegrationJobMessage, runCallPush, runScheduledSync, runSyncStep, syncStepFailed, type CallForCrm, type ParleyContact, type SyncReaders } from '../shared/integrations/index.ts';

const E164 = /^\+[1-9]\d{6,14}$/;

/** A call view as the CRM side reads it (the call log's fields, the other party, the analysis data). */
function callForCrm(call: unknown): CallForCrm {
  const view = call as {
    call_id: string;
    call_status?: string;
    direction?: string;
    from_number?: string;
    to_number?: string;
    start_timestamp?: number;
    duration_ms?: number;
    call_analysis?: { call_summary?: string; custom_analysis_data?: Record<string, unknown> };
    transcript?: unknown;
  };
  const party = view.direction === 'inbound' ? view.from_number : view.to_number;
  return {
    call_id: String(view.call_id),
    call_status: String(view.call_status ?? ''),
    ...(view.direction ? { direction: String(view.direction) } : {}),
    ...(view.from_number ? { from_number: String(view.from_number) } : {}),
    ...(view.to_number ? { to_number: String(view.to_number) } : {}),
    ...(typeof view.start_timestamp === 'number' ? { start_timestamp: view.start_timestamp } : {}),
    ...(typeof view.duration_ms === 'number' ? { duration_ms: view.duration_ms } : {}),
    ...(view.call_analysis?.call_summary ? { summary: String(view.call_analysis.call_summary) } : {}),
    ...(typeof view.transcript === 'string' ? { transcript: view.transcript.slice(0, 60_000) } : {}),
    ...(party && E164.test(party) ? { party_number: party } : {}),
    ...(view.call_analysis?.custom_analysis_data ? { analysis_data: view.call_analysis.custom_analysis_data } : {}),
  };
}

const parleyContact = (contact: Contact): ParleyContact => ({
  contact_id: contact.contact_id,
  phone_number: contact.phone_number,
  ...(contact.first_name ? { first_name: contact.first_name } : {}),
  ...(contact.last_name ? { last_name: contact.last_name } : {}),
  ...(contact.email ? { email: contact.email } : {}),
  ...(contact.external_id ? { external_id: contact.external_id } : {}),
  do_not_call: contact.do_not_call,
  custom_fields: contact.custom_fields,
});

const notFoundAsUndefined = <T>(promise: Promise<T>): Promise<T | undefined> =>
  promise.catch((error: unknown) => {
    if (error instanceof NotFound) return undefined;
    throw error;
  });

/** The contacts and calls the CRM jobs read and write, as the integrations domain sees them (the job sits above all three). */
const readers: SyncReaders = {
  async contacts(workspaceId, after, limit) {
    const page = await listContactsPage(workspaceId, { limit, sort_order: 'asc', ...(after ? { pagination_key: after } : {}) });
    return { items: page.items.map(parleyContact), ...(page.has_more && page.pagination_key ? { next: page.pagination_key } : {}) };
  },
  async endedCalls(workspaceId, after, limit) {
    const page = await callHistoryPage(workspaceId, { after, limit });
    const ended = page.calls.map(callForCrm).filter((call) => call.call_status === 'ended');
    return {
      items: ended.map(({ call_status: _status, party_number: _party, analysis_data: _data, ...log }) => log),
      ...(page.next ? { next: page.next } : {}),
    };
  },
  async call(workspaceId, callId) {
    const call = await notFoundAsUndefined(getCall(workspaceId, callId));
    return call ? callForCrm(call) : undefined;
  },
  async contactByPhone(workspaceId, phoneNumber) {
    const contact = await notFoundAsUndefined(getContactByPhone(workspaceId, phoneNumber));
    return contact ? parleyContact(contact) : undefined;
  },
  async updateContact(workspaceId, contact, change) {
    // The analysis data is checked as create-contact's fields are (an email that is not one is refused).
    const checked = CreateContactBody.safeParse({ phone_number: contact.phone_number, ...change });
    if (!checked.success) throw badRequest(checked.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; '));
    return parleyContact(await updateContact(workspaceId, contact.contact_id, change));
  },
};

/** Receives after which a failing step stops its job (the queue's dead-letter redrive is at five). */
const LAST_RECEIVE = 5;

/**
 * The integration-jobs queue's consumer: each message is one step of a CRM sync (a page of
 * contacts or ended calls), the CRM push of one analysed call, or a scheduled sync to start. A step that throws is reported alone, so SQS redelivers only
 * it; on its last receive the job is marked failed. A malformed message is logged and dropped.
 */
async function handle(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  return runQueueSteps(event, {
    job: 'integration-jobs',
    schema: IntegrationJobMessage,
    run: (message) =>
      message.kind === 'crm-sync' ? runSyncStep(message, readers) : message.kind === 'crm-call' ? runCallPush(message, readers) : runScheduledSync(message),
    failed: async (message, error, receives) => {
      if (message.kind === 'crm-sync' && receives >= LAST_RECEIVE) await syncStepFailed(message, error);
    },
  });
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
