import { randomBytes } from 'node:crypto';
import { registeredWorkspaceIds } from '../account/index.ts';
import { getAgent, getChatAgent, workspaceHasRetentionSetting } from '../agents/index.ts';
import { deleteCall } from '../calls/erasure/index.ts';
import { callRetentionPage } from '../calls/records/index.ts';
import { chatRetentionPage, deleteChat } from '../chats/records/index.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { NotFound } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { eachLimited } from '../platform/parallel.ts';
import type { AccountDataJobMessage } from './messages.ts';
import type { RetentionReport } from './schemas.ts';
import {
  createRetentionSweep,
  getRetentionSweep,
  saveRetentionSweep,
  takeRetentionSweepLease,
  type RetentionCursor,
  type SweepProgress,
} from './store.ts';

/*
 * Retention (docs/privacy.md): a call is deleted once `created + data_storage_retention_days`
 * of its agent version has passed, a chat once `start + days` of its chat agent version has.
 * A workspace's pass goes page by page (RetentionPass.page), so the same steps serve
 * `POST /privacy/run-retention` (one workspace, to the end) and the daily sweep (every
 * workspace with a retention setting, a bounded number of pages per message, resumable).
 *
 * A page is index entries only (the listing index projects the agent version and the
 * times), oldest first, and the walk stops at the cutoff: nothing younger than the shortest
 * retention the settings allow (a day) can be due, so the newest calls are never read. The
 * deletes of a page run a few at a time.
 */

const DAY_MS = 86_400_000;
const PAGE = 500;
/** The shortest data_storage_retention_days the agent settings accept. */
const MIN_RETENTION_DAYS = 1;
/** Deletes of one page in flight at once. */
const DELETES_IN_FLIGHT = 8;

/** Deletes, counting what was there: a NotFound (deleted meanwhile) counts as nothing. */
async function gone(remove: () => Promise<unknown>): Promise<boolean> {
  try {
    await remove();
    return true;
  } catch (error) {
    if (error instanceof NotFound) return false;
    throw error;
  }
}

/** One workspace's retention at `nowMs`, a page at a time; agents' settings are read once a pass. */
class RetentionPass {
  readonly report: RetentionReport = { calls_deleted: 0, chats_deleted: 0, calls_examined: 0, chats_examined: 0 };
  private readonly days = new Map<string, Promise<number | undefined>>();

  constructor(
    private readonly workspaceId: string,
    private readonly nowMs: number,
  ) {}

  private retentionOf(key: string, read: () => Promise<{ data_storage_retention_days?: number | null }>) {
    let known = this.days.get(key);
    if (!known) {
      known = read().then(
        (agent) => agent.data_storage_retention_days ?? undefined,
        () => undefined,
      );
      this.days.set(key, known);
    }
    return known;
  }

  /** Applies one page at `cursor`; answers where the next page starts, or undefined when the workspace is done. */
  async page(cursor: RetentionCursor = { phase: 'calls' }): Promise<RetentionCursor | undefined> {
    const ws = this.workspaceId;
    // Due means created (or started) at or before now − days: the walk reads up to and including the cutoff's millisecond.
    const untilMs = this.nowMs - MIN_RETENTION_DAYS * DAY_MS + 1;
    if (cursor.phase === 'calls') {
      const page = await callRetentionPage(ws, { after: cursor.after, limit: PAGE, createdBeforeMs: untilMs });
      this.report.calls_examined += page.calls.length;
      await eachLimited(page.calls, DELETES_IN_FLIGHT, async (call) => {
        const keep = await this.retentionOf(`agent:${call.agent_id}:${call.agent_version ?? ''}`, () =>
          getAgent(ws, call.agent_id, call.agent_version) as Promise<{ data_storage_retention_days?: number | null }>,
        );
        if (keep !== undefined && call.created_timestamp + keep * DAY_MS <= this.nowMs && (await gone(() => deleteCall(ws, call.call_id)))) {
          this.report.calls_deleted++;
        }
      });
      return page.next ? { phase: 'calls', after: page.next } : { phase: 'chats' };
    }
    const page = await chatRetentionPage(ws, { after: cursor.after, limit: PAGE, startedBeforeMs: untilMs });
    this.report.chats_examined += page.chats.length;
    await eachLimited(page.chats, DELETES_IN_FLIGHT, async (chat) => {
      const keep = await this.retentionOf(`chat_agent:${chat.agent_id}:${chat.agent_version}`, () =>
        getChatAgent(ws, chat.agent_id, chat.agent_version) as Promise<{ data_storage_retention_days?: number | null }>,
      );
      if (keep !== undefined && chat.start_timestamp + keep * DAY_MS <= this.nowMs && (await gone(() => deleteChat(ws, chat.chat_id)))) {
        this.report.chats_deleted++;
      }
    });
    return page.next ? { phase: 'chats', after: page.next } : undefined;
  }
}

/** Applies the retention settings at `nowMs` to one workspace, to the end (the run-retention job; a fake clock in tests). */
export async function applyRetention(workspaceId: string, nowMs = Date.now()): Promise<RetentionReport> {
  const pass = new RetentionPass(workspaceId, nowMs);
  let cursor: RetentionCursor | undefined = { phase: 'calls' };
  while (cursor) cursor = await pass.page(cursor);
  return pass.report;
}

// ---------------------------------------------------------------------------------------
// The daily sweep

interface SweepLimits {
  /** Table pages (a workspace's check, or a page of its calls or chats) one message may take. */
  pages: number;
  /** Stop starting pages after this long (well inside the job's 900 s). */
  ms: number;
}

const SWEEP_LIMITS: SweepLimits = { pages: 60, ms: 5 * 60_000 };
/** A run's lease: the job's timeout, so a run that died is taken over by its redelivered message. */
const SWEEP_LEASE_MS = 900_000;

export const utcDay = (epochMs: number) => new Date(epochMs).toISOString().slice(0, 10);

export interface SweepOptions {
  /** The clock retention is applied at, and the lease's (tests pass a fake one). */
  nowMs?: () => number;
  limits?: SweepLimits;
  /** Called after each page is recorded (tests stop a run here). */
  afterPage?: () => Promise<void> | void;
}

/**
 * One message of the daily retention sweep (the `retention-sweep` message on export-jobs,
 * sent once a day by the schedule, then by each run for the next): takes the day's lease,
 * goes on from the recorded cursor through every registered workspace that has a retention
 * setting, at most `limits` a run, recording the cursor after every page; then either ends
 * the day's sweep or gives the lease back and queues the next run. A duplicate or stale
 * message finds the lease held (or the day complete) and does nothing; a run that died holds
 * its lease until it expires, and its message, redelivered by SQS after the visibility
 * timeout (longer than the lease), goes on from the last recorded page. Deleting is
 * idempotent, so a page replayed after a crash deletes nothing twice.
 */
export async function runRetentionSweep(day: string, options: SweepOptions = {}): Promise<'complete' | 'continued' | 'skipped'> {
  const now = options.nowMs ?? (() => Date.now());
  const limits = options.limits ?? SWEEP_LIMITS;
  const startedMs = Date.now();
  const existing =
    (await getRetentionSweep(day)) ??
    (await createRetentionSweep({
      type: 'retention_sweep',
      day,
      status: 'running',
      workspaces_examined: 0,
      workspaces_swept: 0,
      calls_deleted: 0,
      chats_deleted: 0,
      runs: 0,
      started_timestamp: now(),
      expires_at: Math.floor((now() + 30 * DAY_MS) / 1000),
    }));
  if (existing.status === 'complete') return 'skipped';
  const token = randomBytes(12).toString('hex');
  const leasedAt = now();
  const sweep = await takeRetentionSweepLease(day, token, leasedAt, leasedAt + SWEEP_LEASE_MS);
  if (!sweep) return 'skipped';

  const progress: SweepProgress = {
    workspace_after: sweep.workspace_after,
    current: sweep.current,
    workspaces_examined: sweep.workspaces_examined,
    workspaces_swept: sweep.workspaces_swept,
    calls_deleted: sweep.calls_deleted,
    chats_deleted: sweep.chats_deleted,
  };
  const workspaces = await registeredWorkspaceIds();
  let pages = 0;
  let pass: RetentionPass | undefined;
  const within = () => pages < limits.pages && Date.now() - startedMs < limits.ms;
  const recorded = async () => {
    pages++;
    await saveRetentionSweep(day, token, progress);
    await options.afterPage?.();
  };

  while (within()) {
    if (!progress.current) {
      const next = workspaces.find((id) => progress.workspace_after === undefined || id > progress.workspace_after);
      if (next === undefined) {
        await saveRetentionSweep(day, token, progress, { completeAt: now() });
        logger.info('retention sweep complete', { day, ...progress });
        return 'complete';
      }
      progress.workspaces_examined++;
      if (await workspaceHasRetentionSetting(next)) {
        progress.workspaces_swept++;
        progress.current = { workspace_id: next, cursor: { phase: 'calls' } };
      } else progress.workspace_after = next;
      await recorded();
      continue;
    }
    const { workspace_id: workspaceId, cursor } = progress.current;
    pass ??= new RetentionPass(workspaceId, now());
    const before = { calls: pass.report.calls_deleted, chats: pass.report.chats_deleted };
    const next = await pass.page(cursor);
    progress.calls_deleted += pass.report.calls_deleted - before.calls;
    progress.chats_deleted += pass.report.chats_deleted - before.chats;
    if (next) progress.current = { workspace_id: workspaceId, cursor: next };
    else {
      progress.current = undefined;
      progress.workspace_after = workspaceId;
      pass = undefined;
    }
    await recorded();
  }
  // Out of budget: give the lease back first, then queue the next run. A crash between the
  // two leaves this message undeleted; SQS redelivers it and it goes on from the cursor.
  await saveRetentionSweep(day, token, progress, { release: true });
  await queueNamed('export-jobs').send({ kind: 'retention-sweep', day } satisfies AccountDataJobMessage);
  return 'continued';
}
