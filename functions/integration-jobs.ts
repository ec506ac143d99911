import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { runQueueSteps } from '../shared/platform/aws/queue-steps.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/telemetry.ts';
import { callHistoryPage } from '../shared/calls/index.ts';
import { listContactsPage } from '../shared/contacts/index.ts';
import { IntegrationJobMessage, runSyncStep, syncStepFailed, type SyncReaders } from '../shared/integrations/index.ts';

/** The contacts and calls a CRM sync pushes, as the integrations domain reads them (the job sits above all three). */
const readers: SyncReaders = {
  async contacts(workspaceId, after, limit) {
    const page = await listContactsPage(workspaceId, { limit, sort_order: 'asc', ...(after ? { pagination_key: after } : {}) });
    return {
      items: page.items.map((contact) => ({
        contact_id: contact.contact_id,
        phone_number: contact.phone_number,
        ...(contact.first_name ? { first_name: contact.first_name } : {}),
        ...(contact.last_name ? { last_name: contact.last_name } : {}),
        ...(contact.email ? { email: contact.email } : {}),
        ...(Object.keys(contact.custom_fields).length ? { fields: contact.custom_fields } : {}),
      })),
      ...(page.has_more && page.pagination_key ? { next: page.pagination_key } : {}),
    };
  },
  async endedCalls(workspaceId, after, limit) {
    const page = await callHistoryPage(workspaceId, { after, limit });
    const ended = page.calls.filter((call) => (call as { call_status?: string }).call_status === 'ended');
    return {
      items: ended.map((call) => {
        const view = call as unknown as { call_id: string; direction?: string; from_number?: string; to_number?: string; start_timestamp?: number; duration_ms?: number; call_analysis?: { call_summary?: string }; transcript?: unknown };
        return {
          call_id: String(view.call_id),
          ...(view.direction ? { direction: String(view.direction) } : {}),
          ...(view.from_number ? { from_number: String(view.from_number) } : {}),
          ...(view.to_number ? { to_number: String(view.to_number) } : {}),
          ...(typeof view.start_timestamp === 'number' ? { start_timestamp: view.start_timestamp } : {}),
          ...(typeof view.duration_ms === 'number' ? { duration_ms: view.duration_ms } : {}),
          ...(view.call_analysis?.call_summary ? { summary: String(view.call_analysis.call_summary) } : {}),
          ...(typeof view.transcript === 'string' ? { transcript: view.transcript.slice(0, 60_000) } : {}),
        };
      }),
      ...(page.next ? { next: page.next } : {}),
    };
  },
};

/** Receives after which a failing step stops its job (the queue's dead-letter redrive is at five). */
const LAST_RECEIVE = 5;

/**
 * The integration-jobs queue's consumer: each message is one step of a CRM sync (a page of
 * contacts or ended calls). A step that throws is reported alone, so SQS redelivers only
 * it; on its last receive the job is marked failed. A malformed message is logged and dropped.
 */
async function handle(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  return runQueueSteps(event, {
    job: 'integration-jobs',
    schema: IntegrationJobMessage,
    run: (message) => runSyncStep(message, readers),
    failed: async (message, error, receives) => {
      if (receives >= LAST_RECEIVE) await syncStepFailed(message, error);
    },
  });
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/telemetry.ts). */
export const handler = instrumented(handle);
