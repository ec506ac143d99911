import { queueNamed } from '../platform/aws/queue.ts';
import type { CrmCallMessage } from './schemas.ts';
import { getCrmSettings, queryCrmProviders } from './store.ts';

/*
 * What the call-steps function runs when a call's analysis lands (it registers this as a
 * call lifecycle listener, shared/calls/call-listeners.ts): only a queue message, never a
 * CRM request inside the call's step. Two reads of the workspace's integrations partition
 * decide whether anything is wanted at all, so a workspace without a CRM costs no message.
 * Kept apart from the CRM clients: this file imports the store and the queue only.
 */

/** A call lifecycle event, as the calls domain reports it (the fields this needs). */
export interface AnalysedCallEvent {
  event: string;
  workspace_id: string;
  call_id: string;
  call_status: string;
}

/**
 * Queues the CRM side of an analysed call: when the workspace maps analysis data into
 * contacts, or has an enabled CRM config with `sync_calls` on. The push itself
 * (functions/integration-jobs.ts, `runCallPush`) is idempotent by call ID, so an analysis
 * reported twice pushes once.
 */
export async function queueCrmCallPush(event: AnalysedCallEvent): Promise<void> {
  if (event.event !== 'call_analyzed' || event.call_status !== 'ended') return;
  const [settings, providers] = await Promise.all([getCrmSettings(event.workspace_id), queryCrmProviders(event.workspace_id)]);
  const wanted = (settings?.crm_analysis_data_mappings?.length ?? 0) > 0 || providers.some((item) => item.enabled && item.sync_calls);
  if (!wanted) return;
  const message: CrmCallMessage = { kind: 'crm-call', workspace_id: event.workspace_id, call_id: event.call_id };
  await queueNamed('integration-jobs').send(message);
}
