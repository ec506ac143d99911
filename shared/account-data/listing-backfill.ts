import { randomBytes } from 'node:crypto';
import { registeredWorkspaceIds } from '../account/index.ts';
import { countedCallListing } from '../calls/records/index.ts';
import { countedChatListing } from '../chats/records/index.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { logger } from '../platform/logger.ts';
import { countListingPage, type CountedListing, type ListingBackfillPosition } from '../platform/store/listing-count.ts';
import type { AccountDataJobMessage } from './messages.ts';
import { listingBackfillState, type ListingBackfillCursor, markWorkspaceListingsCounted, workspaceListingsCounted } from './store.ts';

/*
 * The listing counters' backfill (docs/scale.md, "Scheduled jobs as data grows"): list-calls'
 * and list-chats' unfiltered `include_total` come from per-workspace counters, which hold a
 * workspace's whole history only once every call and chat stored before them is counted. A
 * workspace created since has its marker from its creation; one from before is counted here,
 * page by page, then marked. Until then its totals are counted on the index (never short).
 *
 * The `listing-backfill` message on export-jobs: the schedule sends one an hour, and a run
 * that runs out of budget queues the next itself, so once it starts (half an hour after its
 * first run, when the deploy's traffic shift is over) an upgrade is counted through in one go. A run holds the job's lease, so the hourly message
 * and a run's own continuation never count side by side; counting is idempotent anyway (each
 * item marked once, conditionally), so a page replayed after a crash counts nothing twice.
 * Once a whole round finds every workspace marked, the cursor records it and every later run
 * is one read: workspaces created from then on are marked at creation.
 */

const JOB = 'listing-backfill';

interface ListingBackfillLimits {
  /** Index pages (of up to 500 entries) a run counts before it queues its continuation. */
  pages: number;
  /** Stop starting pages after this long (the job's timeout is 900 s). */
  ms: number;
  /**
   * How long after its first run the job starts counting: a deploy's traffic shift (a canary's
   * 5 minutes, a linear one's 10) keeps the previous release writing calls without counting
   * them, and a workspace marked before that ends would be left short.
   */
  rolloutMs: number;
}

const BACKFILL_LIMITS: ListingBackfillLimits = { pages: 400, ms: 5 * 60_000, rolloutMs: 30 * 60_000 };
/** The lease covers a run; a run that died is taken over once it expires (SQS redelivers its message later). */
const LEASE_MS = 900_000;

export interface ListingBackfillOptions {
  limits?: ListingBackfillLimits;
  /** The run's clock for its budget (tests pass a fake one). */
  clock?: () => number;
}

export interface ListingBackfillResult {
  outcome: 'complete' | 'continued' | 'skipped';
  workspaces_marked: number;
  calls_counted: number;
  chats_counted: number;
}

const LISTINGS: Record<'calls' | 'chats', (workspaceId: string) => CountedListing> = { calls: countedCallListing, chats: countedChatListing };

/** Runs one budgeted stretch of the backfill from the saved cursor (the export-jobs consumer calls it). */
export async function runListingBackfill(options: ListingBackfillOptions = {}): Promise<ListingBackfillResult> {
  const limits = options.limits ?? BACKFILL_LIMITS;
  const clock = options.clock ?? Date.now;
  const result: ListingBackfillResult = { outcome: 'skipped', workspaces_marked: 0, calls_counted: 0, chats_counted: 0 };
  const state = listingBackfillState(JOB);
  const started = clock();
  const holder = randomBytes(12).toString('hex');
  // The lease's slot is the wall clock's (slots only increase); the budget is `clock`'s.
  const slot = Date.now();
  const saved = await state.cursor();
  const waiting = (first: number | undefined) => first === undefined || started - first < limits.rolloutMs;
  if (saved?.done || (saved?.first_run_timestamp !== undefined && waiting(saved.first_run_timestamp))) return result;
  if (!(await state.lease(slot, holder, LEASE_MS))) return result;
  let cursor: ListingBackfillCursor = (await state.cursor()) ?? {};
  try {
    if (cursor.done) return result;
    if (cursor.first_run_timestamp === undefined) {
      cursor = { first_run_timestamp: started };
      await state.save(cursor);
    }
    const firstRun = cursor.first_run_timestamp!;
    if (waiting(firstRun)) return result;
    const workspaces = (await registeredWorkspaceIds()).sort();
    let pages = 0;
    const within = () => pages < limits.pages && clock() - started < limits.ms;
    while (within()) {
      if (!cursor.current) {
        const next = workspaces.find((id) => cursor.workspace_after === undefined || id > cursor.workspace_after);
        if (next === undefined) {
          // A round ends done only when it marked nothing: a workspace the previous release
          // created while the deploy rolled out has no marker, and only a round that finds
          // none left shows there is none.
          cursor = cursor.marked_this_round ? { first_run_timestamp: firstRun } : { done: true };
          if (cursor.done) {
            result.outcome = 'complete';
            await state.save(cursor);
            logger.info('listing counters backfilled', { ...result });
            return result;
          }
          continue;
        }
        cursor = (await workspaceListingsCounted(next))
          ? { ...cursor, workspace_after: next }
          : { ...cursor, current: { workspace_id: next, listing: 'calls', position: { shard: 0 } } };
        continue;
      }
      const { workspace_id: workspaceId, listing, position } = cursor.current;
      const page = await countListingPage(LISTINGS[listing](workspaceId), position);
      pages++;
      if (listing === 'calls') result.calls_counted += page.counted;
      else result.chats_counted += page.counted;
      cursor = { ...cursor, current: nextPosition(workspaceId, listing, page.next) };
      if (!cursor.current) {
        // From here its totals come from the counters; until now they were counted on the index.
        await markWorkspaceListingsCounted(workspaceId, clock());
        result.workspaces_marked++;
        cursor = { first_run_timestamp: firstRun, workspace_after: workspaceId, marked_this_round: true };
      }
      await state.save(cursor);
    }
    await state.save(cursor);
  } finally {
    await state.release(slot, holder);
  }
  // Out of budget with the lease given back: the continuation. A crash before this send leaves
  // the message undeleted; SQS redelivers it and it goes on from the saved cursor.
  await queueNamed('export-jobs').send({ kind: 'listing-backfill' } satisfies AccountDataJobMessage);
  result.outcome = 'continued';
  logger.info('listing counters backfill continues', { ...result });
  return result;
}

function nextPosition(workspaceId: string, listing: 'calls' | 'chats', next: ListingBackfillPosition | undefined): ListingBackfillCursor['current'] {
  if (next) return { workspace_id: workspaceId, listing, position: next };
  return listing === 'calls' ? { workspace_id: workspaceId, listing: 'chats', position: { shard: 0 } } : undefined;
}
