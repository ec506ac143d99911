import { queueNamed } from '../platform/aws/queue.ts';
import { newId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { upsertContactByNumber } from './contacts.ts';
import { contactByPhone } from './lookups/index.ts';
import { callParty } from './memory.ts';
import type { BackfillInput, BackfillJobMessage, BackfillStatus, CustomFieldValue } from './schemas.ts';
import { getBackfillJob, recordBackfillStep, startBackfillJob, type BackfillJobItem } from './store.ts';

/*
 * The contacts backfill (docs/contacts.md): a contact for every number in the workspace's
 * call history. POST answers 202 at once; the work runs on the contact-jobs queue, one page
 * of calls (oldest first) per message, each message queueing the next, so no invocation
 * runs long and a failed page is retried alone. Idempotent: a number that has a contact is
 * skipped (or, with backfill_attributes, only has those custom fields set again), so running
 * it twice creates nothing new. One job per workspace at a time.
 */

/** Calls read per queue message. */
const BACKFILL_PAGE = 200;
/** A queued or running job whose last step is older than this is taken as dead: a new start replaces it. */
const BACKFILL_LEASE_MS = 15 * 60_000;

/** A page of the workspace's calls, oldest first (the calls domain's callHistoryPage, handed in by the job). */
export type CallPageReader = (
  workspaceId: string,
  input: { after?: string; limit: number },
) => Promise<{ calls: BackfillCall[]; next?: string }>;

interface BackfillCall {
  call_id: string;
  call_type?: string;
  direction?: string | null;
  from_number?: string | null;
  to_number?: string | null;
  agent_id?: string;
  agent_version?: number;
  start_timestamp?: number | null;
  call_analysis?: unknown;
}

const toStatus = (job: BackfillJobItem | undefined): BackfillStatus =>
  job
    ? {
        status: job.status,
        succeeded: job.succeeded,
        skipped: job.skipped,
        failed: job.failed,
        start_timestamp: job.start_timestamp,
        ...(job.end_timestamp !== undefined ? { end_timestamp: job.end_timestamp } : {}),
        triggered_by: job.triggered_by,
      }
    : { status: 'idle' };

export async function getBackfillStatus(workspaceId: string): Promise<BackfillStatus> {
  return toStatus(await getBackfillJob(workspaceId));
}

/** Queues a backfill (202); while one is queued or running, answers that one's status instead. */
export async function startBackfill(workspaceId: string, input: BackfillInput): Promise<BackfillStatus> {
  const nowMs = Date.now();
  const job: BackfillJobItem = {
    job_id: newId('request'),
    status: 'queued',
    triggered_by: 'manual',
    backfill_attributes: input.backfill_attributes ?? [],
    ...(input.backfill_call_filter ? { call_filter: input.backfill_call_filter } : {}),
    succeeded: 0,
    skipped: 0,
    failed: 0,
    start_timestamp: nowMs,
    heartbeat_timestamp: nowMs,
  };
  if (!(await startBackfillJob(workspaceId, job, nowMs - BACKFILL_LEASE_MS))) return getBackfillStatus(workspaceId);
  const message: BackfillJobMessage = { kind: 'backfill', workspace_id: workspaceId, job_id: job.job_id };
  await queueNamed('contact-jobs').send(message);
  return toStatus(job);
}

type CallFilter = BackfillInput['backfill_call_filter'];

function callSelected(call: BackfillCall, filter: CallFilter): boolean {
  if (!filter) return true;
  if (filter.agent?.length) {
    const agent = filter.agent.find((entry) => entry.agent_id === call.agent_id);
    if (!agent) return false;
    if (agent.version?.length && !agent.version.includes(call.agent_version ?? -1)) return false;
  }
  const range = filter.start_timestamp;
  if (range) {
    const at = call.start_timestamp;
    if (at === undefined || at === null) return false;
    if (range.type === 'range') return at >= range.value[0]! && at <= range.value[1]!;
    const { op, value } = range;
    return op === 'eq' ? at === value : op === 'ne' ? at !== value : op === 'gt' ? at > value : op === 'ge' ? at >= value : op === 'lt' ? at < value : at <= value;
  }
  return true;
}

/** The backfilled custom fields a call's analysis gives (its custom_analysis_data, scalar values only). */
function analysisFields(call: BackfillCall, attributes: readonly string[]): Record<string, CustomFieldValue> {
  const data = (call.call_analysis as { custom_analysis_data?: Record<string, unknown> } | undefined)?.custom_analysis_data ?? {};
  const fields: Record<string, CustomFieldValue> = {};
  for (const name of attributes) {
    const value = data[name];
    if (typeof value === 'string') fields[name] = value.slice(0, 1000);
    else if (typeof value === 'number' || typeof value === 'boolean') fields[name] = value;
  }
  return fields;
}

/**
 * One step of a backfill job (a contact-jobs message): a page of calls, a contact per new
 * number, the counts recorded on the job, then the next page queued. A message of a job
 * that was replaced or has finished changes nothing.
 */
export async function runBackfillStep(message: BackfillJobMessage, readCalls: CallPageReader): Promise<void> {
  const workspaceId = message.workspace_id;
  const job = await getBackfillJob(workspaceId);
  if (!job || job.job_id !== message.job_id || job.status === 'idle') return;
  const page = await readCalls(workspaceId, { after: message.after, limit: BACKFILL_PAGE });

  // The latest call of each number on this page (calls come oldest first).
  const latest = new Map<string, BackfillCall>();
  for (const call of page.calls) {
    const party = callParty(call);
    if (party && callSelected(call, job.call_filter as CallFilter)) latest.set(party, call);
  }
  const counts = { succeeded: 0, skipped: 0, failed: 0 };
  for (const [number, call] of latest) {
    try {
      const fields = analysisFields(call, job.backfill_attributes);
      const hasFields = Object.keys(fields).length > 0;
      if (!hasFields && (await contactByPhone(workspaceId, number))) {
        counts.skipped++;
        continue;
      }
      await upsertContactByNumber(workspaceId, { phone_number: number, ...(hasFields ? { custom_fields: fields } : {}) });
      counts.succeeded++;
    } catch (error) {
      counts.failed++;
      logger.warn('contact backfill: a number failed', { workspaceId, callId: call.call_id, error: error instanceof Error ? error.message : String(error) });
    }
  }
  const done = page.next === undefined;
  const recorded = await recordBackfillStep(workspaceId, message.job_id, { ...counts, done, nowMs: Date.now() });
  if (recorded && !done) await queueNamed('contact-jobs').send({ ...message, after: page.next } satisfies BackfillJobMessage);
}
