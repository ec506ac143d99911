import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { runScheduledSync } from '../../shared/integrations/index.ts';
import { runOAuthRefresh } from '../../shared/integrations/oauth-refresh.ts';
import { queueDueCrmSyncs } from '../../shared/integrations/scheduled-sync.ts';
import { createSyncJob, getCrmProvider, replaceCrmProvider } from '../../shared/integrations/store.ts';
import { JOBS } from '../../shared/jobs.ts';
import { newTimeOrderedId } from '../../shared/platform/ids.ts';
import { startTestApp } from '../support/app.ts';
import { call, cookiesFrom, type ApiClient } from '../support/http.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Scheduled (`cron`) CRM syncs (docs/integrations.md, CRM): a provider config's
 * `sync_interval_minutes` puts its next sync in the due index; the every-minute OAuth
 * refresh schedule queues the due ones on integration-jobs, which starts the job.
 * The CRM is the built-in mock provider (no HUBSPOT_OAUTH_CLIENT_ID here).
 */

vi.hoisted(() => (process.env.PUBLIC_BASE_URL = 'https://api.parley.test'));
const app = await startTestApp();

let background: { stop(): Promise<void> };
beforeAll(() => {
  background = startBackgroundWork(JOBS.filter((job) => job.name === 'integration-jobs'));
});
afterAll(() => background.stop());

const MINUTE = 60_000;
const localPath = (url: string) => new URL(url).pathname + new URL(url).search;

async function connectMockCrm(api: ApiClient) {
  const start = await api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
  expect(start.body.mock).toBe(true);
  const page = await call(app.url, 'GET', localPath(start.body.authorize_url));
  const callback = /id="approve" href="([^"]+)"/.exec(page.text)![1]!.replaceAll('&amp;', '&');
  const done = await call(app.url, 'GET', localPath(callback), { headers: { cookie: cookiesFrom(start) } });
  expect(new URL(done.headers.location!).searchParams.get('oauth')).toBe('success');
}

const mine = (workspaceId: string, result: { queued: { workspace_id: string; provider: string }[] }) => result.queued.filter((entry) => entry.workspace_id === workspaceId);

describe('scheduled CRM syncs', () => {
  it('a config with sync_interval_minutes is synced by the minute schedule, once per period, triggered_by cron', async () => {
    const ws = await app.newWorkspace();
    await connectMockCrm(ws.api);
    const before = Date.now();
    const set = await ws.api.put('/update-crm-config/hubspot', { body: { sync_interval_minutes: 30 } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ provider: 'hubspot', enabled: true, sync_interval_minutes: 30 });
    const firstDue = set.body.next_sync_at as number;
    expect(firstDue).toBeGreaterThanOrEqual(before + 30 * MINUTE);
    expect(firstDue).toBeLessThanOrEqual(Date.now() + 30 * MINUTE);
    // Another field's update keeps the schedule's time.
    const other = await ws.api.put('/update-crm-config/hubspot', { body: { sync_calls: false } });
    expect(other.body).toMatchObject({ sync_interval_minutes: 30, next_sync_at: firstDue, sync_calls: false });

    // Not due yet.
    expect(mine(ws.workspace_id, await queueDueCrmSyncs(firstDue - 1))).toEqual([]);
    // Due: queued once, however often the minute's pass runs.
    expect(mine(ws.workspace_id, await queueDueCrmSyncs(firstDue + MINUTE))).toEqual([{ workspace_id: ws.workspace_id, provider: 'hubspot' }]);
    expect(mine(ws.workspace_id, await queueDueCrmSyncs(firstDue + MINUTE))).toEqual([]);
    const done = await eventually(() => ws.api.get('/list-crm-sync-jobs'), (answer) => answer.body[0]?.status === 'completed', 30_000);
    expect(done.body).toHaveLength(1);
    expect(done.body[0]).toMatchObject({ provider: 'hubspot', triggered_by: 'cron', status: 'completed' });
    const config = (await ws.api.get('/get-crm-config')).body.providers[0];
    expect(config).toMatchObject({ sync_interval_minutes: 30, next_sync_at: firstDue + 30 * MINUTE });
    expect(config.last_sync_timestamp).toBeGreaterThanOrEqual(before);

    // A schedule missed for hours runs once, then keeps its period from now.
    const late = firstDue + 10 * 60 * MINUTE;
    expect(mine(ws.workspace_id, await queueDueCrmSyncs(late))).toHaveLength(1);
    expect((await ws.api.get('/get-crm-config')).body.providers[0].next_sync_at).toBe(late + 30 * MINUTE);
    await eventually(() => ws.api.get('/list-crm-sync-jobs'), (answer) => answer.body.length === 2 && answer.body[0].status === 'completed', 30_000);
  });

  it('a config rewrite never brings back a claimed sync\'s time', async () => {
    const ws = await app.newWorkspace();
    await connectMockCrm(ws.api);
    const set = await ws.api.put('/update-crm-config/hubspot', { body: { sync_interval_minutes: 20 } });
    const due = set.body.next_sync_at as number;
    const stale = (await getCrmProvider(ws.workspace_id, 'hubspot'))!;
    // The minute job claims the sync between a rewrite's read and its write: the write is refused.
    expect(mine(ws.workspace_id, await queueDueCrmSyncs(due))).toHaveLength(1);
    expect(await replaceCrmProvider({ ...stale, sync_calls: false }, stale)).toBe(false);
    // The route reads again and keeps the claimed time.
    const put = await ws.api.put('/update-crm-config/hubspot', { body: { sync_calls: false } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ sync_calls: false, next_sync_at: due + 20 * MINUTE });
    await eventually(() => ws.api.get('/list-crm-sync-jobs'), (answer) => answer.body[0]?.status === 'completed', 30_000);
  });

  it('runs from the OAuth refresh schedule; off (null) or disabled configs are not synced', async () => {
    const ws = await app.newWorkspace();
    await connectMockCrm(ws.api);
    const set = await ws.api.put('/update-crm-config/hubspot', { body: { sync_interval_minutes: 15 } });
    const due = set.body.next_sync_at as number;
    const run = await runOAuthRefresh({ now: due + MINUTE, job: 'oauth-refresh-crm-schedule-test' });
    expect(run.ran).toBe(true);
    expect(run.crm_syncs_queued).toBeGreaterThanOrEqual(1);
    await eventually(() => ws.api.get('/list-crm-sync-jobs'), (answer) => answer.body[0]?.triggered_by === 'cron' && answer.body[0]?.status === 'completed', 30_000);

    const disabled = await ws.api.put('/update-crm-config/hubspot', { body: { enabled: false } });
    expect(disabled.body).toMatchObject({ enabled: false, sync_interval_minutes: 15 });
    expect(mine(ws.workspace_id, await queueDueCrmSyncs(Date.now() + 365 * 24 * 60 * MINUTE))).toEqual([]);
    const off = await ws.api.put('/update-crm-config/hubspot', { body: { enabled: true, sync_interval_minutes: null } });
    expect(off.body.sync_interval_minutes).toBeNull();
    expect(off.body.next_sync_at).toBeUndefined();
    expect(mine(ws.workspace_id, await queueDueCrmSyncs(Date.now() + 365 * 24 * 60 * MINUTE))).toEqual([]);
    expect((await ws.api.get('/list-crm-sync-jobs')).body).toHaveLength(1);
  });

  it('a sync already running or a CRM gone skips the scheduled one; bad intervals are 400', async () => {
    const ws = await app.newWorkspace();
    await connectMockCrm(ws.api);
    for (const [value, message] of [
      [5, 'sync_interval_minutes: Must be at least 15'],
      [20_000, 'sync_interval_minutes: Must be at most 10080'],
      [15.5, 'sync_interval_minutes: Must be a whole number'],
    ] as const) {
      const bad = await ws.api.put('/update-crm-config/hubspot', { body: { sync_interval_minutes: value } });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ status: 400, message });
    }
    const set = await ws.api.put('/update-crm-config/hubspot', { body: { sync_interval_minutes: 60 } });
    expect(set.status).toBe(200);
    // A job holding the workspace's sync (never stepped here, so it holds it for the whole test).
    const holding = { sync_job_id: newTimeOrderedId('crmSyncJob', Date.now()), workspace_id: ws.workspace_id, provider: 'hubspot', status: 'running' as const, triggered_by: 'manual' as const, succeeded: 0, failed: 0, skipped: 0, errors: [], cursor: 'contacts:', start_timestamp: Date.now() };
    expect(await createSyncJob(holding, Date.now(), 10 * MINUTE)).toBe(true);
    // The scheduled start is skipped, not failed (the queue would retry a throw).
    await expect(runScheduledSync({ kind: 'crm-sync-due', workspace_id: ws.workspace_id, provider: 'hubspot' })).resolves.toBeUndefined();
    const jobs = (await ws.api.get('/list-crm-sync-jobs')).body;
    expect(jobs.map((job: { sync_job_id: string }) => job.sync_job_id)).toEqual([holding.sync_job_id]);
    // A CRM no longer connected: skipped as well.
    expect((await ws.api.delete('/delete-crm-config/hubspot')).status).toBe(204);
    await expect(runScheduledSync({ kind: 'crm-sync-due', workspace_id: ws.workspace_id, provider: 'hubspot' })).resolves.toBeUndefined();
  });
});
