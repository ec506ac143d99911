import { deleteRetrievals } from '../knowledge-bases/records.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { releaseSlot } from './concurrency.ts';
import { batchDialKey, scrubIdempotencyClaim } from './idempotency.ts';
import { deleteCallArtifacts } from './scrubbing.ts';
import { deleteCallItem } from './store.ts';

/*
 * Deleting a call (delete-call, a privacy erase, retention), beside scrubbing: the item,
 * its knowledge-base retrievals (the user's words), its artifacts (recordings, the
 * unscrubbed copy), its idempotent answer's link to it, and a running call's concurrency
 * slot. Out of calls.ts so that what erases calls (account data, through erasure.ts) never
 * reaches the engine, media or the conversation runtime.
 */
export async function deleteCall(workspaceId: string, callId: string): Promise<void> {
  // Retrievals first: a failure leaves the call in place, so the same request can be retried
  // (once the item is gone, every path that deletes answers 404 or no longer finds the call).
  await deleteRetrievals(workspaceId, callId);
  const old = await deleteCallItem(workspaceId, callId);
  // A turn still running when a live call was deleted may have recorded one since.
  if (old.call_status === 'registered' || old.call_status === 'ongoing') await deleteRetrievals(workspaceId, callId);
  await deleteCallArtifacts(old);
  // A stored idempotent answer with the call (create-phone-call, register-phone-call, a batch dial) keeps only its ID.
  const claim = old.idempotency_claim ?? (old.engine?.batch ? sha256(batchDialKey(old.engine.batch.batch_call_id, old.engine.batch.task_index)) : undefined);
  if (claim) await scrubIdempotencyClaim(workspaceId, claim, callId);
  // A call deleted while still running gives its slot back (the release is once-only).
  if (old.engine?.slot && (old.call_status === 'registered' || old.call_status === 'ongoing')) await releaseSlot(workspaceId, callId);
}
