import { deleteRetrievals } from '../../knowledge-bases/records/index.ts';
import { deleteCallResults } from '../../qa/erasure/index.ts';
import { sha256 } from '../../platform/crypto/hash.ts';
import { releaseSlot } from '../concurrency.ts';
import { batchDialKey, scrubIdempotencyClaim } from '../idempotency.ts';
import { deleteLines } from '../line-store.ts';
import { deleteCallArtifacts } from '../artifacts/scrubbing.ts';
import { deleteCallItem, getCallItem } from '../store.ts';

/*
 * Deleting a call (delete-call, a privacy erase, retention), beside scrubbing: the item,
 * its transcript lines and live controls, its knowledge-base retrievals (the user's words),
 * its QA results in every cohort (they quote it),
 * its artifacts (recordings, the unscrubbed copy), its idempotent answer's link to it, and a
 * running call's concurrency slot. Out of calls.ts so that what erases calls (account data,
 * through erasure/index.ts) never reaches the engine, media or the conversation runtime.
 */
export async function deleteCall(workspaceId: string, callId: string): Promise<void> {
  // What lives beside the call goes first (the call is checked to be this workspace's), so a
  // delete cut short is finished by its retry, which still finds the call.
  const current = await getCallItem(workspaceId, callId);
  await Promise.all([deleteRetrievals(workspaceId, callId), deleteLines(callId), deleteCallResults(workspaceId, callId)]);
  const old = await deleteCallItem(workspaceId, callId);
  // QA results quote the call: one claimed between the first pass and the item's delete goes
  // now; none is claimed after it (a claim checks that the call exists).
  await deleteCallResults(workspaceId, callId);
  // A running call's worker may have reported in between, a control been written (each moves
  // its count) or a turn recorded a retrieval; once the item is gone no write can add a line
  // or a control (each is conditional on it).
  if (old.line_count !== current.line_count || old.control_count !== current.control_count) await deleteLines(callId);
  if (old.call_status === 'registered' || old.call_status === 'ongoing') await deleteRetrievals(workspaceId, callId);
  await deleteCallArtifacts(old);
  // A stored idempotent answer with the call (create-phone-call, register-phone-call, a batch dial) keeps only its ID.
  const claim = old.idempotency_claim ?? (old.engine?.batch ? sha256(batchDialKey(old.engine.batch.batch_call_id, old.engine.batch.task_index)) : undefined);
  if (claim) await scrubIdempotencyClaim(workspaceId, claim, callId);
  // A call deleted while still running gives its slot back (the release is once-only).
  if (old.engine?.slot && (old.call_status === 'registered' || old.call_status === 'ongoing')) await releaseSlot(workspaceId, callId);
}
