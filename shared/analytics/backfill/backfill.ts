import { randomBytes } from 'node:crypto';
import * as z from 'zod';
import { registeredWorkspaceIds } from '../../account/index.ts';
import { storedCall, storedCallPage, type CallItem } from '../../calls/records/index.ts';
import { chatAnalysisFacts, chatFacts, storedChat, storedChatPage, type ChatItem } from '../../chats/records/index.ts';
import { queueNamed } from '../../platform/aws/queue.ts';
import { lazySchema } from '../../platform/http/schemas.ts';
import { logger } from '../../platform/logger.ts';
import { callAnalysisFacts, callFacts, ENDED_CALL_STATUSES } from '../recording/index.ts';
import { factCounted, recordConversation, type AnalysisFacts, type ConversationFacts } from '../rollups/index.ts';
import {
  deleteRepairRequest,
  leaseBackfill,
  readBackfillState,
  releaseBackfill,
  saveBackfillCursor,
  type BackfillPosition,
  type RepairRequest,
  type RollupBackfillCursor,
} from './store.ts';

/*
 * The rollup backfill (docs/analytics.md, "Backfill"): adds to the rollups the calls and
 * chats that ended before recording existed, and repairs phases whose recording failed.
 * For each ended conversation it finds a phase not counted (the rollups' fact items) and
 * records it; the fact's condition makes each phase count once, so a backfill racing a live
 * recording, or a page replayed after a crash, counts nothing twice.
 *
 * The `rollup-backfill` message on export-jobs: the schedule sends one an hour; a run out of
 * budget queues its continuation. A run of every workspace holds the job's lease, walks them
 * in rounds from its cursor (after the deploy's traffic shift: the previous release ends
 * calls without recording them) and, once a round is through, is done: from then on a run
 * reads the job's partition (one Query) and repairs what the failed recordings asked for.
 * A message naming a workspace walks that workspace alone from its start (an operator's
 * repair after an outage, and the tests'): no lease, the facts keep it exact.
 */

const CONVERSATIONS_PER_PAGE = 100;
/** Conversations looked at side by side within a page. */
const AT_ONCE = 10;

interface RollupBackfillLimits {
  /** Pages (of up to 100 conversations) a run walks before it queues its continuation. */
  pages: number;
  /** Stop starting pages after this long (the job's timeout is 900 s). */
  ms: number;
  /** How long after its first run the walk of every workspace starts (the deploy's traffic shift). */
  rolloutMs: number;
}

const BACKFILL_LIMITS: RollupBackfillLimits = { pages: 200, ms: 5 * 60_000, rolloutMs: 30 * 60_000 };
const LEASE_MS = 900_000;

/** A run of the backfill: from the schedule, a run's continuation, or for one workspace from `position`. */
export const RollupBackfillMessage = lazySchema(() =>
  z.object({
    kind: z.literal('rollup-backfill'),
    scheduled_at: z.string().optional(),
    workspace_id: z.string().optional(),
    table: z.enum(['calls', 'chats']).optional(),
    after: z.string().optional(),
  }),
);
export type RollupBackfillMessage = z.infer<typeof RollupBackfillMessage>;

export interface RollupBackfillOptions {
  /** Walk this workspace alone, from `position` (its calls' start by default). */
  workspaceId?: string;
  position?: Omit<BackfillPosition, 'workspace_id'>;
  limits?: RollupBackfillLimits;
  /** The run's clock for its budget (tests pass a fake one). */
  clock?: () => number;
}

export interface RollupBackfillResult {
  outcome: 'complete' | 'continued' | 'skipped';
  /** Phases recorded (ended, analyzed) of calls and chats, and repair requests handled. */
  calls_recorded: number;
  chats_recorded: number;
  repairs: number;
}

/** Records a conversation's phases not yet counted; answers how many it recorded. */
async function countConversation(facts: ConversationFacts, analysis: AnalysisFacts | undefined): Promise<number> {
  let recorded = 0;
  if (!(await factCounted(facts.workspace_id, facts.table, facts.id, 'ended')) && (await recordConversation(facts, 'ended'))) recorded++;
  if (analysis && !(await factCounted(facts.workspace_id, facts.table, facts.id, 'analyzed')) && (await recordConversation(facts, 'analyzed', analysis))) recorded++;
  return recorded;
}

const countCall = (call: CallItem) => (ENDED_CALL_STATUSES.has(call.call_status) ? countConversation(callFacts(call), callAnalysisFacts(call)) : Promise.resolve(0));
const countChat = (chat: ChatItem) => (chat.chat_status !== 'ongoing' ? countConversation(chatFacts(chat), chatAnalysisFacts(chat)) : Promise.resolve(0));

async function countAll<T>(items: readonly T[], count: (item: T) => Promise<number>): Promise<number> {
  let recorded = 0;
  for (let index = 0; index < items.length; index += AT_ONCE) {
    recorded += (await Promise.all(items.slice(index, index + AT_ONCE).map(count))).reduce((sum, n) => sum + n, 0);
  }
  return recorded;
}

/** One page of a workspace's walk: records what it finds, answers where the walk goes on (undefined: the workspace is done). */
async function walkPage(position: BackfillPosition, result: RollupBackfillResult): Promise<BackfillPosition | undefined> {
  const input = { after: position.after, limit: CONVERSATIONS_PER_PAGE };
  if (position.table === 'calls') {
    const page = await storedCallPage(position.workspace_id, input);
    result.calls_recorded += await countAll(page.calls, countCall);
    return page.next ? { ...position, after: page.next } : { workspace_id: position.workspace_id, table: 'chats' };
  }
  const page = await storedChatPage(position.workspace_id, input);
  result.chats_recorded += await countAll(page.chats, countChat);
  return page.next ? { ...position, after: page.next } : undefined;
}

/** A repair request: the conversation's phases not counted are recorded (nothing when it is gone), then the request goes. */
async function repair(request: RepairRequest, result: RollupBackfillResult): Promise<void> {
  if (request.table === 'calls') {
    const call = await storedCall(request.workspace_id, request.id);
    if (call) result.calls_recorded += await countCall(call);
  } else {
    const chat = await storedChat(request.workspace_id, request.id);
    if (chat) result.chats_recorded += await countChat(chat);
  }
  await deleteRepairRequest(request);
  result.repairs++;
}

const continuation = (message: RollupBackfillMessage) => queueNamed('export-jobs').send(message);

/** Runs one budgeted stretch of the backfill (the export-jobs consumer calls it with its message's fields). */
export async function runRollupBackfill(options: RollupBackfillOptions = {}): Promise<RollupBackfillResult> {
  const limits = options.limits ?? BACKFILL_LIMITS;
  const clock = options.clock ?? Date.now;
  const started = clock();
  const result: RollupBackfillResult = { outcome: 'skipped', calls_recorded: 0, chats_recorded: 0, repairs: 0 };
  let pages = 0;
  const within = () => pages < limits.pages && clock() - started < limits.ms;

  if (options.workspaceId) {
    let position: BackfillPosition | undefined = { workspace_id: options.workspaceId, table: 'calls', ...options.position };
    while (position && within()) {
      position = await walkPage(position, result);
      pages++;
    }
    if (!position) {
      result.outcome = 'complete';
      logger.info('rollup backfill of a workspace complete', { workspace_id: options.workspaceId, ...result });
      return result;
    }
    await continuation({ kind: 'rollup-backfill', workspace_id: position.workspace_id, table: position.table, ...(position.after ? { after: position.after } : {}) });
    result.outcome = 'continued';
    return result;
  }

  // One read when there is nothing to do: the cursor and the repair requests in one Query.
  const seen = await readBackfillState();
  const waiting = (first: number | undefined) => first === undefined || started - first < limits.rolloutMs;
  const firstRun = seen.cursor?.first_run_timestamp;
  if ((seen.cursor?.done || (firstRun !== undefined && waiting(firstRun))) && seen.repairs.length === 0) return result;
  const holder = randomBytes(12).toString('hex');
  const slot = Date.now();
  if (!(await leaseBackfill(slot, holder, LEASE_MS))) return result;
  // Read again under the lease: a run that held it meanwhile moved the cursor and took the repairs.
  const state = await readBackfillState();
  let cursor: RollupBackfillCursor = state.cursor ?? {};
  try {
    for (const request of state.repairs) {
      if (!within()) break;
      await repair(request, result);
    }
    if (!cursor.done && cursor.first_run_timestamp === undefined) {
      cursor = { first_run_timestamp: started };
      await saveBackfillCursor(cursor);
    }
    if (cursor.done || waiting(cursor.first_run_timestamp)) {
      if (result.repairs === state.repairs.length) {
        if (result.repairs > 0) result.outcome = 'complete';
        return result;
      }
    } else {
      const workspaces = (await registeredWorkspaceIds()).sort();
      while (within()) {
        if (!cursor.current) {
          const next = workspaces.find((id) => cursor.workspace_after === undefined || id > cursor.workspace_after);
          if (next === undefined) {
            cursor = { done: true };
            await saveBackfillCursor(cursor);
            result.outcome = 'complete';
            logger.info('rollups backfilled', { ...result });
            return result;
          }
          cursor = { ...cursor, current: { workspace_id: next, table: 'calls' } };
          continue;
        }
        const at: BackfillPosition = cursor.current;
        const next = await walkPage(at, result);
        pages++;
        cursor = next ? { ...cursor, current: next } : { first_run_timestamp: cursor.first_run_timestamp, workspace_after: at.workspace_id };
        await saveBackfillCursor(cursor);
      }
    }
  } finally {
    await releaseBackfill(slot, holder);
  }
  // Out of budget with the lease given back: the continuation. A crash before this send
  // leaves the message undeleted; SQS redelivers it and it goes on from the saved cursor.
  await continuation({ kind: 'rollup-backfill' });
  result.outcome = 'continued';
  logger.info('rollup backfill continues', { ...result });
  return result;
}

