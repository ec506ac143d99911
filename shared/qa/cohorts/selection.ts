import { createHash } from 'node:crypto';
import { parseCallFilter, type CallItem } from '../../calls/records/index.ts';
import { badRequest, Invalid } from '../../platform/errors.ts';
import type { Selection } from './schemas.ts';

/*
 * Which calls a cohort holds (docs/qa.md, "Cohorts"): the selection as list-calls' filter
 * (a run walks the listing index with it), the same test on one call in memory (the
 * auto-scoring listener), and the sample: a call is in a cohort's sample when the first
 * 8 hex digits of the SHA-256 of its ID, read as a fraction of 2^32, are below the sample
 * rate, so the same calls are in it every time and a larger rate keeps every call a
 * smaller one had.
 */

type CallFilter = ReturnType<typeof parseCallFilter>;

/** The selection as list-calls' filter_criteria, checked as list-calls checks it (400 naming `selection.<field>`). */
export function callFilterOf(selection: Selection): CallFilter {
  const filter: Record<string, unknown> = { call_status: selection.call_status };
  if (selection.agent_ids) filter.agent = selection.agent_ids.map((agent_id) => ({ agent_id }));
  if (selection.direction) filter.direction = selection.direction;
  if (selection.call_type) filter.call_type = selection.call_type;
  if (selection.batch_call_id) filter.batch_call_id = selection.batch_call_id;
  if (selection.disconnection_reason) filter.disconnection_reason = selection.disconnection_reason;
  if (selection.start_timestamp !== undefined || selection.end_timestamp !== undefined) {
    filter.start_timestamp = {
      ...(selection.start_timestamp !== undefined ? { lower_threshold: selection.start_timestamp } : {}),
      ...(selection.end_timestamp !== undefined ? { upper_threshold: selection.end_timestamp } : {}),
    };
  }
  try {
    return parseCallFilter(filter, 'selection');
  } catch (error) {
    if (error instanceof Invalid) throw badRequest(`selection.${error.message}`);
    throw error;
  }
}

/** Whether a call matches the selection's filters (not the sample or the daily cap). */
export function matchesSelection(selection: Selection, call: Pick<CallItem, 'agent_id' | 'call_status' | 'call_type' | 'batch_call_id' | 'disconnection_reason' | 'start_timestamp'> & { direction?: string }): boolean {
  const within = (values: readonly string[] | undefined, value: string | null | undefined) => values === undefined || (value != null && values.includes(value));
  if (!within(selection.agent_ids, call.agent_id)) return false;
  if (!within(selection.call_status, call.call_status)) return false;
  if (!within(selection.direction, call.direction)) return false;
  if (!within(selection.call_type, call.call_type)) return false;
  if (!within(selection.batch_call_id, call.batch_call_id)) return false;
  if (!within(selection.disconnection_reason, call.disconnection_reason)) return false;
  if (selection.start_timestamp !== undefined || selection.end_timestamp !== undefined) {
    const start = call.start_timestamp;
    if (typeof start !== 'number') return false;
    if (selection.start_timestamp !== undefined && start < selection.start_timestamp) return false;
    if (selection.end_timestamp !== undefined && start > selection.end_timestamp) return false;
  }
  return true;
}

/** Whether the call is in a sample of `rate` (see above). */
export function inSample(callId: string, rate: number): boolean {
  if (rate >= 1) return true;
  if (rate <= 0) return false;
  const fraction = parseInt(createHash('sha256').update(callId).digest('hex').slice(0, 8), 16) / 2 ** 32;
  return fraction < rate;
}
