import { randomUUID } from 'node:crypto';
import { logger } from '../platform/logger.ts';
import { keys } from '../platform/store/keys.ts';
import { acquireJobLease, readJobCursor, releaseJobLease, saveJobCursor } from '../platform/store/job-lease.ts';
import { REFRESH_AHEAD_MS, refreshConnection } from './connections.ts';
import { queueDueCrmSyncs } from './scheduled-sync.ts';
import { queryExpiringConnections, type ExpiringConnection } from './store.ts';

export interface OAuthRefreshResult {
  refreshed: number;
  /** Connections the pass could not refresh (a revoked grant marks needs_reconnect; a failing provider is retried next minute). */
  failed?: number;
  /** Scheduled CRM syncs queued by this pass (shared/integrations/scheduled-sync.ts). */
  crm_syncs_queued?: number;
}

/** The minute's work: refresh expiring tokens, then queue the CRM syncs that came due (one schedule for both). */
async function minuteWork(nowMs = Date.now()): Promise<OAuthRefreshResult> {
  const refreshed = await refreshExpiringConnections(nowMs);
  const syncs = await queueDueCrmSyncs(nowMs);
  return { ...refreshed, ...(syncs.queued.length ? { crm_syncs_queued: syncs.queued.length } : {}) };
}

/**
 * What one pass may do: the function has 60 s and the CRM syncs follow the refreshes, so it
 * stops taking connections after `budgetMs`; `parallel` refreshes run at once (each a
 * provider round trip, a KMS seal and two writes: about a second), so a pass refreshes up to
 * some 500 connections and an hour some 30,000. What a pass leaves, the next goes on with
 * from its cursor.
 */
interface RefreshLimits {
  perPass: number;
  parallel: number;
  budgetMs: number;
  /** Entries read from the expiry index at a time. */
  page: number;
}

const REFRESH_LIMITS: RefreshLimits = { perPass: 2_000, parallel: 16, budgetMs: 40_000, page: 100 };

export interface RefreshPassOptions {
  limits?: RefreshLimits;
  /** The pass's clock for its budget (tests pass a fake one). */
  clock?: () => number;
  /** The refresh of one connection (tests stand in a provider's latency). */
  refresh?: (workspaceId: string, connectionId: string) => Promise<{ refreshed: boolean }>;
  /** The cursor's job name (tests use their own). */
  job?: string;
}

/**
 * Refreshes OAuth connections whose access tokens expire within 10 minutes (spec: OAuth
 * refresh), found through the expiry index (gsi1 `OAUTHEXPIRY`, soonest first), not a
 * scan, a page at a time, `parallel` at once, until the pass's budget or count is spent.
 * The pass starts where the previous one stopped (keys.jobCursor: the last entry it took)
 * and clears the cursor when it reaches the end, so the next starts from the front again:
 * connections a failing provider left due are retried once a round, and never hold back
 * the others. A refreshed connection moves past the bound (its new expiry). Each refresh
 * takes the connection's own lease too, so a refresh before use running at the same moment
 * on another instance never uses the same refresh token twice.
 */
export async function refreshExpiringConnections(nowMs = Date.now(), options: RefreshPassOptions = {}): Promise<OAuthRefreshResult> {
  const limits = options.limits ?? REFRESH_LIMITS;
  const clock = options.clock ?? Date.now;
  const job = options.job ?? OAUTH_REFRESH_JOB;
  const refresh = options.refresh ?? ((workspaceId: string, connectionId: string) => refreshConnection(workspaceId, connectionId, { withinMs: REFRESH_AHEAD_MS }));
  const started = clock();
  const before = nowMs + REFRESH_AHEAD_MS;

  let startKey = await readJobCursor(job);
  // A cursor past the bound (a clock moved back) would be refused by the query: start from the front.
  if (startKey && String(startKey.gsi1sk) >= keys.oauthExpiring(before).gsi1skBefore) startKey = undefined;
  const buffer: ExpiringConnection[] = [];
  let end = false;
  let taken = 0;
  let position: Record<string, unknown> | undefined = startKey;
  let reading: Promise<void> | undefined;
  const fill = async () => {
    const page = await queryExpiringConnections(before, limits.page, startKey);
    buffer.push(...page.connections);
    startKey = page.next;
    end = !page.next;
  };
  /** The next connection to refresh, or undefined when the pass is done (budget, count or the end). */
  const next = async (): Promise<ExpiringConnection | undefined> => {
    for (;;) {
      if (taken >= limits.perPass || clock() - started >= limits.budgetMs) return undefined;
      const connection = buffer.shift();
      if (connection) {
        taken++;
        position = connection.position;
        return connection;
      }
      if (end) {
        position = undefined;
        return undefined;
      }
      reading ??= fill().finally(() => (reading = undefined));
      await reading;
    }
  };

  let refreshed = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: limits.parallel }, async () => {
      for (let connection = await next(); connection; connection = await next()) {
        const { workspaceId, connectionId } = connection;
        try {
          if ((await refresh(workspaceId, connectionId)).refreshed) refreshed++;
        } catch (error) {
          failed++;
          logger.warn('oauth refresh: connection not refreshed', { workspace_id: workspaceId, connection_id: connectionId, error: error instanceof Error ? error.message : String(error) });
        }
      }
    }),
  );
  await saveJobCursor(job, position);
  return { refreshed, ...(failed ? { failed } : {}) };
}

export const OAUTH_REFRESH_JOB = 'oauth-refresh';
/** The schedule's period: one slot a minute. */
export const OAUTH_REFRESH_PERIOD_MS = 60_000;
/**
 * Longer than the function's 60 s timeout, so only a crashed holder's lease expires on its
 * own; a finished run releases it at once.
 */
const OAUTH_REFRESH_LEASE_MS = 120_000;

export interface OAuthRefreshRun extends OAuthRefreshResult {
  /** The minute this run was for (epoch ms). */
  slot: number;
  /** False when another run holds the lease or has already done this minute. */
  ran: boolean;
}

export interface OAuthRefreshOptions {
  refresh?: () => Promise<OAuthRefreshResult>;
  now?: number;
  leaseMs?: number;
  /** The lease's job name (tests use their own). */
  job?: string;
}

/**
 * One refresh pass under the job lease (shared/platform/store/job-lease.ts), as the batch passes run: a
 * refresh exchanges a refresh token, and some providers rotate it on use, so two passes
 * refreshing the same connection at once would leave one holding a revoked token. The
 * slot is the minute, so a duplicate EventBridge delivery, a Lambda retry or a slow run
 * overlapping the next minute's never refreshes twice at once or runs a minute twice.
 */
export async function runOAuthRefresh(options: OAuthRefreshOptions = {}): Promise<OAuthRefreshRun> {
  const job = options.job ?? OAUTH_REFRESH_JOB;
  const slot = Math.floor((options.now ?? Date.now()) / OAUTH_REFRESH_PERIOD_MS) * OAUTH_REFRESH_PERIOD_MS;
  const holder = randomUUID();
  if (!(await acquireJobLease(job, slot, holder, options.leaseMs ?? OAUTH_REFRESH_LEASE_MS))) {
    return { slot, ran: false, refreshed: 0 };
  }
  try {
    const result = await (options.refresh ?? (() => minuteWork(options.now)))();
    return { slot, ran: true, ...result };
  } finally {
    await releaseJobLease(job, slot, holder);
  }
}
