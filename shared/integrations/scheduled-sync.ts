import { queueNamed } from '../platform/aws/queue.ts';
import { logger } from '../platform/logger.ts';
import type { CrmScheduledSyncMessage } from './schemas.ts';
import { advanceCrmSync, getCrmProvider, queryDueCrmSyncs } from './store.ts';

/*
 * Scheduled (`cron`) CRM syncs, run by the every-minute OAuth refresh schedule rather than
 * a rule of their own (functions/oauth-refresh.ts). A provider config with
 * `sync_interval_minutes` carries its next sync's time in gsi1 `CRMSYNCDUE`; each minute
 * the due ones are read with one query (not a scan), each is claimed by moving its next
 * time one interval on (conditional on the time read, so a sync is claimed once), and a
 * `crm-sync-due` message goes to the integration-jobs queue, whose consumer starts the
 * job as run-crm-sync-job does (triggered_by `cron`). Kept small: this module is in the
 * oauth-refresh bundle, which must not carry the CRM sync code.
 */

/** At most this many scheduled syncs started per minute (the rest come next minute, soonest first). */
const MAX_PER_PASS = 100;

export interface ScheduledSyncResult {
  queued: { workspace_id: string; provider: string }[];
}

/** Queues every scheduled CRM sync due at `nowMs`, moving each one's next time on by its interval. */
export async function queueDueCrmSyncs(nowMs = Date.now()): Promise<ScheduledSyncResult> {
  const due = await queryDueCrmSyncs(nowMs + 1, MAX_PER_PASS);
  const queued: ScheduledSyncResult['queued'] = [];
  for (const { workspaceId, provider, nextSyncAt } of due) {
    try {
      const interval = (await getCrmProvider(workspaceId, provider))?.sync_interval_minutes;
      if (!interval) continue;
      // Never behind: a schedule missed for a while runs once, then keeps its period from now.
      let next = nextSyncAt + interval * 60_000;
      if (next <= nowMs) next = nowMs + interval * 60_000;
      if (!(await advanceCrmSync(workspaceId, provider, nextSyncAt, next))) continue;
      const message: CrmScheduledSyncMessage = { kind: 'crm-sync-due', workspace_id: workspaceId, provider };
      await queueNamed('integration-jobs').send(message);
      queued.push({ workspace_id: workspaceId, provider });
    } catch (error) {
      logger.warn('crm: scheduled sync not queued', { workspace_id: workspaceId, provider, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return { queued };
}
