import { randomUUID } from 'node:crypto';
import { logger } from '../platform/logger.ts';
import { acquireJobLease, releaseJobLease } from '../platform/store/job-lease.ts';
import { REFRESH_AHEAD_MS, refreshConnection } from './connections.ts';
import { queueDueCrmSyncs } from './scheduled-sync.ts';
import { queryExpiringConnections } from './store.ts';

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

/** At most this many connections per pass (the function has 60 s; the rest come next minute, soonest first). */
const MAX_PER_PASS = 200;
const PARALLEL = 4;

/**
 * Refreshes OAuth connections whose access tokens expire within 10 minutes (spec: OAuth
 * refresh), found through the expiry index (gsi1 `OAUTHEXPIRY`, soonest first), not a
 * scan. Each refresh takes the connection's own lease too, so a refresh before use
 * running at the same moment on another instance never uses the same refresh token twice.
 */
export async function refreshExpiringConnections(nowMs = Date.now()): Promise<OAuthRefreshResult> {
  const due = await queryExpiringConnections(nowMs + REFRESH_AHEAD_MS, MAX_PER_PASS);
  let refreshed = 0;
  let failed = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(PARALLEL, due.length) }, async () => {
      while (next < due.length) {
        const { workspaceId, connectionId } = due[next++]!;
        try {
          const outcome = await refreshConnection(workspaceId, connectionId, { withinMs: REFRESH_AHEAD_MS });
          if (outcome.refreshed) refreshed++;
        } catch (error) {
          failed++;
          logger.warn('oauth refresh: connection not refreshed', { workspace_id: workspaceId, connection_id: connectionId, error: error instanceof Error ? error.message : String(error) });
        }
      }
    }),
  );
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
