import { randomUUID } from 'node:crypto';
import { acquireJobLease, releaseJobLease } from '../platform/store/job-lease.ts';

export interface OAuthRefreshResult {
  refreshed: number;
}

/**
 * Refreshes OAuth connections whose access tokens expire soon. No feature stores OAuth
 * connections yet (integrations come later), so there is nothing to refresh.
 */
export async function refreshExpiringConnections(): Promise<OAuthRefreshResult> {
  return { refreshed: 0 };
}

export const OAUTH_REFRESH_JOB = 'oauth-refresh';
/** The schedule's period: one slot a minute. */
export const OAUTH_REFRESH_PERIOD_MS = 60_000;
/**
 * Longer than the function's 60 s timeout, so only a crashed holder's lease expires on its
 * own; a finished run releases it at once.
 */
export const OAUTH_REFRESH_LEASE_MS = 120_000;

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
    const result = await (options.refresh ?? refreshExpiringConnections)();
    return { slot, ran: true, ...result };
  } finally {
    await releaseJobLease(job, slot, holder);
  }
}
