import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { runRefreshSweep } from '../../shared/knowledge-bases/auto-refresh.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { fakeDocuments, type FakeFile } from '../support/fake-documents.ts';
import { fakeOAuth } from '../support/fake-oauth.ts';
import { call, cookiesFrom, type ApiClient } from '../support/http.ts';
import { html, startSite } from '../support/kb-fixtures.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Synced sources through HTTP: Google Drive, SharePoint (Graph) and Notion connections made
 * through a fake OAuth server, their documents served by a fake of each API on 127.0.0.1;
 * syncs add, update and remove sources and record their runs; the mock provider; tenant
 * isolation and the connection checks; the daily auto-refresh sweep.
 */

const app = await startTestApp();
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'kb-jobs'));
afterAll(() => background.stop());
const oauth = await fakeOAuth();
const docs = await fakeDocuments((token) => oauth.issued.includes(token));
for (const [prefix, base] of [
  ['GOOGLE_DRIVE', '/drive/v3'],
  ['SHAREPOINT', '/graph/v1.0'],
  ['NOTION', '/notion/v1'],
] as const) {
  Object.assign(process.env, {
    [`${prefix}_OAUTH_CLIENT_ID`]: oauth.clientId,
    [`${prefix}_OAUTH_CLIENT_SECRET`]: oauth.clientSecret,
    [`${prefix}_OAUTH_AUTHORIZE_URL`]: `${oauth.url}/authorize`,
    [`${prefix}_OAUTH_TOKEN_URL`]: `${oauth.url}/token`,
    [`${prefix}_API_BASE_URL`]: `${docs.url}${base}`,
  });
}

const file = (id: string, name: string, content: string, mimeType = 'text/plain', modified = '2026-01-01T00:00:00Z'): FakeFile => ({ id, name, content, mimeType, modified });

/** Starts a kb_sync connection, approves it at the fake server and answers the callback's sync_id. */
async function connect(api: ApiClient, provider: string, knowledgeBaseId: string, syncConfig: Record<string, string>): Promise<string> {
  const start = await api.post('/oauth/start', { body: { target: 'kb_sync', provider, knowledge_base_id: knowledgeBaseId, sync_config: syncConfig } });
  expect(start.status).toBe(200);
  const approved = await fetch(start.body.authorize_url, { redirect: 'manual' });
  const callback = new URL(approved.headers.get('location')!);
  const answer = await call(app.url, 'GET', callback.pathname + callback.search, { headers: { cookie: cookiesFrom(start) } });
  const location = new URL(answer.headers.location!);
  expect(location.searchParams.get('message') ?? location.searchParams.get('oauth')).toBe('success');
  return location.searchParams.get('sync_id')!;
}

async function newKb(api: ApiClient, body: Record<string, unknown> = {}) {
  const created = await api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Synced', ...body } });
  expect(created.status).toBe(201);
  return created.body.knowledge_base_id as string;
}

const syncsOf = async (api: ApiClient, kbId: string) => (await api.get(`/list-knowledge-base-syncs/${kbId}`)).body as any[];

/** Waits until the sync's latest run finished and the knowledge base settled. */
async function settledSync(api: ApiClient, kbId: string, syncId: string, runs = 1) {
  const sync = await eventually(
    async () => (await syncsOf(api, kbId)).find((entry) => entry.sync_id === syncId),
    (entry: any) => entry?.status !== 'in_progress' && entry?.recent_runs.length >= runs && entry.recent_runs[0].status !== 'in_progress',
    30_000,
  );
  const kb = await eventually(async () => (await api.get(`/get-knowledge-base/${kbId}`)).body, (body: any) => body.status === 'complete' || body.status === 'error', 30_000);
  return { sync, kb };
}

const contentOf = async (api: ApiClient, kbId: string, sourceId: string) => (await api.get(`/get-knowledge-base-source-content/${kbId}/${sourceId}`)).body.content as string;

describe('Google Drive', () => {
  it('the callback starts the first sync; a sync imports only changed documents and removes deleted ones', async () => {
    const ws = await app.newWorkspace();
    const kbId = await newKb(ws.api);
    docs.folders.set('drive-folder-1', [
      file('doc-1', 'Handbook', 'Refunds are paid within five days.', 'application/vnd.google-apps.document'),
      file('md-1', 'faq.md', '# FAQ\n\nThe office opens at eight.', 'text/markdown'),
      file('img-1', 'logo.png', 'PNG', 'image/png'),
      { folder: 'drive-folder-2', name: 'More' },
    ]);
    docs.folders.set('drive-folder-2', [file('txt-1', 'parking.txt', 'Parking is free on Sundays.')]);
    const syncId = await connect(ws.api, 'google_drive', kbId, { folder_id: 'drive-folder-1' });
    expect(syncId).toMatch(/^sync_[0-9a-f]{24}$/);

    const first = await settledSync(ws.api, kbId, syncId);
    expect(first.sync).toMatchObject({ sync_id: syncId, knowledge_base_id: kbId, provider: 'google_drive', connection_id: syncId, folder_id: 'drive-folder-1', status: 'complete', document_count: 3 });
    expect(first.sync.recent_runs[0]).toMatchObject({ trigger: 'connected', status: 'complete', listed: 4, added: 3, updated: 0, removed: 0, skipped: 1, failed: 0, errors: [] });
    const sources = first.kb.knowledge_base_sources as any[];
    expect(sources.map((source) => [source.filename, source.type, source.status, source.sync_id]).sort()).toEqual([
      ['Handbook.txt', 'document', 'complete', syncId],
      ['faq.md', 'document', 'complete', syncId],
      ['parking.txt', 'document', 'complete', syncId],
    ]);
    const handbook = sources.find((source) => source.filename === 'Handbook.txt');
    expect(await contentOf(ws.api, kbId, handbook.source_id)).toBe('Refunds are paid within five days.');
    // Every API request carried a token the OAuth server issued.
    expect(docs.requests.filter((request) => request.path.startsWith('/drive/')).every((request) => oauth.issued.includes(request.authorization!.slice(7)))).toBe(true);

    // The Doc changes, the Markdown file goes, a new file arrives; parking.txt stays as it was.
    const doc = docs.folders.get('drive-folder-1')![0] as FakeFile;
    Object.assign(doc, { content: 'Refunds are paid within three days.', modified: '2026-02-01T00:00:00Z' });
    docs.folders.set('drive-folder-1', [doc, file('new-1', 'hours.txt', 'Support answers until six.'), { folder: 'drive-folder-2', name: 'More' }]);
    const mark = docs.requests.length;
    const again = await ws.api.post(`/sync-knowledge-base-source/${syncId}`);
    expect(again.status).toBe(202);
    expect(again.body).toMatchObject({ sync_id: syncId, status: 'in_progress' });
    const second = await settledSync(ws.api, kbId, syncId, 2);
    expect(second.sync.recent_runs[0]).toMatchObject({ trigger: 'manual', status: 'complete', listed: 3, added: 1, updated: 1, removed: 1, unchanged: 1, skipped: 0 });
    expect(second.sync.document_count).toBe(3);
    expect(docs.fetchedSince(mark).sort()).toEqual(['/drive/v3/files/doc-1/export?mimeType=text%2Fplain', '/drive/v3/files/new-1?alt=media&supportsAllDrives=true']);
    const after = second.kb.knowledge_base_sources as any[];
    expect(after.map((source) => source.filename).sort()).toEqual(['Handbook.txt', 'hours.txt', 'parking.txt']);
    // The same source, its text replaced.
    expect(after.find((source) => source.filename === 'Handbook.txt').source_id).toBe(handbook.source_id);
    await eventually(() => contentOf(ws.api, kbId, handbook.source_id), (text) => text === 'Refunds are paid within three days.', 30_000);

    // A second knowledge base syncs through the same connection.
    const otherKb = await newKb(ws.api);
    const added = await ws.api.post(`/add-knowledge-base-synced-source/${otherKb}`, { body: { connection_id: syncId, folder_id: 'drive-folder-2' } });
    expect(added.status).toBe(201);
    const otherSyncId = added.body.sync_id as string;
    await settledSync(ws.api, otherKb, otherSyncId);

    // Deleting the sync removes its documents; the connection stays while another sync uses it.
    const deleted = await ws.api.delete(`/delete-knowledge-base-sync/${syncId}`);
    expect(deleted.status).toBe(204);
    expect(await syncsOf(ws.api, kbId)).toEqual([]);
    expect((await ws.api.get(`/get-knowledge-base/${kbId}`)).body.knowledge_base_sources).toEqual([]);
    expect((await ws.api.post(`/sync-knowledge-base-source/${syncId}`)).status).toBe(404);
    expect((await ws.api.post(`/sync-knowledge-base-source/${otherSyncId}`)).status).toBe(202);
    await settledSync(ws.api, otherKb, otherSyncId, 2);

    // The last sync using it goes: so does the connection, with its tokens.
    expect((await ws.api.delete(`/delete-knowledge-base-sync/${otherSyncId}`)).status).toBe(204);
    const reuse = await ws.api.post(`/add-knowledge-base-synced-source/${kbId}`, { body: { connection_id: syncId, folder_id: 'drive-folder-1' } });
    expect(reuse.status).toBe(404);
    expect(reuse.body.message).toBe(`Connection ${syncId} not found (connect Google Drive, SharePoint or Notion with POST /oauth/start, target kb_sync)`);
  });
});

describe('SharePoint and Notion', () => {
  it('syncs a Graph drive folder (pages, the pre-authenticated download) and a Notion page with its child page', async () => {
    const ws = await app.newWorkspace();
    const kbId = await newKb(ws.api);
    docs.folders.set('drive-a/root-f', [
      file('sp-1', 'policy.txt', 'Laptops are replaced every three years.'),
      file('sp-2', 'travel.md', 'Trains are preferred over planes.', 'text/markdown'),
      file('sp-3', 'notes.txt', 'Meeting rooms are booked online.'),
      { folder: 'drive-a/sub', name: 'Sub' },
    ]);
    docs.folders.set('drive-a/sub', [file('sp-4', 'badge.txt', 'Badges are collected at reception.')]);
    const syncId = await connect(ws.api, 'sharepoint', kbId, { drive_id: 'drive-a', folder_id: 'root-f' });
    const { sync, kb } = await settledSync(ws.api, kbId, syncId);
    expect(sync).toMatchObject({ provider: 'sharepoint', drive_id: 'drive-a', folder_id: 'root-f', status: 'complete', document_count: 4 });
    expect((kb.knowledge_base_sources as any[]).map((source) => source.filename).sort()).toEqual(['badge.txt', 'notes.txt', 'policy.txt', 'travel.md']);
    // Graph's next page was followed, and the downloads carried no token.
    expect(docs.requests.some((request) => request.path.includes('$skiptoken=2'))).toBe(true);
    expect(docs.requests.filter((request) => request.path.startsWith('/download/sp-')).every((request) => !request.authorization)).toBe(true);

    docs.notion.set('page-root', { id: 'page-root', title: 'Company wiki', edited: '2026-01-01T00:00:00.000Z', blocks: [{ text: 'Lunch is served at noon.' }, { child: 'page-child' }] });
    docs.notion.set('page-child', { id: 'page-child', title: 'Holidays', edited: '2026-01-01T00:00:00.000Z', blocks: [{ text: 'Everyone has 25 days off.' }] });
    const notionKb = await newKb(ws.api);
    const notionSync = await connect(ws.api, 'notion', notionKb, { page_id: 'page-root' });
    const notion = await settledSync(ws.api, notionKb, notionSync);
    expect(notion.sync).toMatchObject({ provider: 'notion', page_id: 'page-root', status: 'complete', document_count: 2 });
    const pages = notion.kb.knowledge_base_sources as any[];
    const child = pages.find((source) => source.filename === 'Holidays.md');
    expect(await contentOf(ws.api, notionKb, child.source_id)).toBe('# Holidays\n\nEveryone has 25 days off.');
    const root = pages.find((source) => source.filename === 'Company wiki.md');
    expect(await contentOf(ws.api, notionKb, root.source_id)).toBe('# Company wiki\n\nLunch is served at noon.');

    // The same SharePoint connection, another folder, into another knowledge base: a new sync ID.
    docs.folders.set('drive-a/other', [file('sp-5', 'other.txt', 'Other folder.')]);
    const third = await newKb(ws.api);
    const added = await ws.api.post(`/add-knowledge-base-synced-source/${third}`, { body: { connection_id: syncId, folder_id: 'other' } });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ knowledge_base_id: third, connection_id: syncId, provider: 'sharepoint', drive_id: 'drive-a', folder_id: 'other', status: 'in_progress' });
    expect(added.body.sync_id).not.toBe(syncId);
    expect((await settledSync(ws.api, third, added.body.sync_id)).sync.document_count).toBe(1);
    const twin = await ws.api.post(`/add-knowledge-base-synced-source/${third}`, { body: { connection_id: syncId, folder_id: 'other' } });
    expect(twin.status).toBe(409);
  });

  it('does not follow a next page on another origin, and a download redirected to a refused address fails that document only', async () => {
    const ws = await app.newWorkspace();
    const kbId = await newKb(ws.api);
    docs.folders.set('drive-b/f', [file('sb-1', 'a.txt', 'Alpha.'), file('sb-2', 'b.txt', 'Beta.'), file('sb-3', 'c.txt', 'Gamma.')]);
    docs.graphNextLinkOrigin = 'http://169.254.169.254';
    docs.graphDownloadOrigin = 'http://169.254.169.254';
    try {
      const syncId = await connect(ws.api, 'sharepoint', kbId, { drive_id: 'drive-b', folder_id: 'f' });
      const { sync } = await settledSync(ws.api, kbId, syncId);
      expect(sync.recent_runs[0]).toMatchObject({ status: 'complete', listed: 2, added: 0, failed: 2 });
      expect(sync.recent_runs[0].errors[0]).toMatch(/^a\.txt: Destination not allowed: /);
      expect(docs.requests.some((request) => request.path.includes('169.254'))).toBe(false);
    } finally {
      docs.graphNextLinkOrigin = undefined;
      docs.graphDownloadOrigin = undefined;
    }
  });
});

describe('connections: the mock provider, tenant isolation, the wrong kind, revoked', () => {
  it('a connection made through the mock provider syncs the mock documents', async () => {
    const ws = await app.newWorkspace();
    const kbId = await newKb(ws.api);
    const saved = process.env.NOTION_OAUTH_CLIENT_ID;
    delete process.env.NOTION_OAUTH_CLIENT_ID;
    let syncId: string;
    try {
      const start = await ws.api.post('/oauth/start', { body: { target: 'kb_sync', provider: 'notion', knowledge_base_id: kbId, sync_config: { page_id: 'any-page' } } });
      expect(start.body.mock).toBe(true);
      const page = await call(app.url, 'GET', new URL(start.body.authorize_url).pathname + new URL(start.body.authorize_url).search);
      const approve = /id="approve" href="([^"]+)"/.exec(page.text)![1]!.replaceAll('&amp;', '&');
      const callback = new URL(approve);
      const answer = await call(app.url, 'GET', callback.pathname + callback.search, { headers: { cookie: cookiesFrom(start) } });
      syncId = new URL(answer.headers.location!).searchParams.get('sync_id')!;
    } finally {
      process.env.NOTION_OAUTH_CLIENT_ID = saved;
    }
    const { sync, kb } = await settledSync(ws.api, kbId, syncId);
    expect(sync).toMatchObject({ provider: 'notion', status: 'complete', document_count: 2 });
    expect((kb.knowledge_base_sources as any[]).map((source) => source.filename).sort()).toEqual(['FAQ.txt', 'Welcome.md']);
  });

  it('refuses another workspace\'s connection, sync and knowledge base, a connection of another kind, and a revoked one', async () => {
    const owner = await app.newWorkspace();
    const other = await app.newWorkspace();
    const kbId = await newKb(owner.api);
    const otherKb = await newKb(other.api);
    docs.folders.set('drive-folder-iso', [file('iso-1', 'iso.txt', 'Isolated.')]);
    const syncId = await connect(owner.api, 'google_drive', kbId, { folder_id: 'drive-folder-iso' });
    await settledSync(owner.api, kbId, syncId);

    const foreign = await other.api.post(`/add-knowledge-base-synced-source/${otherKb}`, { body: { connection_id: syncId, folder_id: 'drive-folder-iso' } });
    expect(foreign.status).toBe(404);
    expect(foreign.body.message).toBe(`Connection ${syncId} not found (connect Google Drive, SharePoint or Notion with POST /oauth/start, target kb_sync)`);
    expect((await other.api.get(`/list-knowledge-base-syncs/${kbId}`)).status).toBe(404);
    expect((await other.api.post(`/sync-knowledge-base-source/${syncId}`)).body).toEqual({ status: 404, message: `Sync ${syncId} not found` });
    expect((await other.api.delete(`/delete-knowledge-base-sync/${syncId}`)).status).toBe(404);
    expect((await other.api.post(`/add-knowledge-base-synced-source/${kbId}`, { body: { connection_id: syncId } })).status).toBe(404);

    // A CRM connection (the mock hubspot) is not a document store.
    const crm = await owner.api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
    const page = await call(app.url, 'GET', new URL(crm.body.authorize_url).pathname + new URL(crm.body.authorize_url).search);
    const approve = new URL(/id="approve" href="([^"]+)"/.exec(page.text)![1]!.replaceAll('&amp;', '&'));
    await call(app.url, 'GET', approve.pathname + approve.search, { headers: { cookie: cookiesFrom(crm) } });
    const wrong = await owner.api.post(`/add-knowledge-base-synced-source/${kbId}`, { body: { connection_id: 'crm_hubspot' } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.message).toBe('connection_id: crm_hubspot is a hubspot crm connection; synced sources use kb_sync connections of google_drive, sharepoint or notion');
    const badId = await owner.api.post(`/add-knowledge-base-synced-source/${kbId}`, { body: { connection_id: syncId, folder_id: "x' or 1=1" } });
    expect(badId.status).toBe(400);
    expect(badId.body.message).toBe('folder_id: Must be an ID of the provider (letters, digits, _ ! . -)');

    // The provider revokes the grant: a forced refresh finds out, and the connection can no longer sync.
    oauth.revokeAll();
    expect((await owner.api.post('/oauth/refresh', { body: { target: 'kb_sync', sync_id: syncId } })).status).toBe(400);
    const revoked = await owner.api.post(`/sync-knowledge-base-source/${syncId}`);
    expect(revoked.status).toBe(400);
    expect(revoked.body.message).toBe('The google_drive connection needs to be reconnected: the provider revoked its authorization');
  });
});

describe('the daily auto refresh', () => {
  it('refreshes only the knowledge bases whose refresh is due, once, re-crawling URLs and re-running syncs', async () => {
    const site = await startSite({ '/kb/page.html': ['text/html', html('Page', '<p>Tea is served at four.</p>')] });
    const ws = await app.newWorkspace();
    const due = await newKb(ws.api, { enable_auto_refresh: true, knowledge_base_urls: [`${site.url}/kb/page.html`] });
    const off = await newKb(ws.api, { knowledge_base_urls: [`${site.url}/kb/page.html`] });
    const synced = await newKb(ws.api, { enable_auto_refresh: true });
    docs.folders.set('drive-folder-auto', [file('auto-1', 'auto.txt', 'Auto refreshed.')]);
    // Access tokens stay valid after the earlier test revoked the refresh tokens.
    const syncId = await connect(ws.api, 'google_drive', synced, { folder_id: 'drive-folder-auto' });
    await settledSync(ws.api, synced, syncId);
    for (const id of [due, off]) await eventually(async () => (await ws.api.get(`/get-knowledge-base/${id}`)).body.status, (status) => status === 'complete', 30_000);

    const mine = (names: string[]) => names.filter((name) => name.startsWith(`${ws.workspace_id}/`)).map((name) => name.split('/')[1]).sort();
    // Not due yet: nothing happens.
    expect(mine((await runRefreshSweep({ kind: 'refresh-sweep' })).refreshed)).toEqual([]);
    // A day later: the two with auto refresh, not the other.
    const later = Date.now() + 25 * 3_600_000;
    const sweep = await runRefreshSweep({ kind: 'refresh-sweep' }, () => later);
    expect(mine(sweep.refreshed)).toEqual([due, synced].sort());
    // Claimed: a second sweep at the same time refreshes neither again.
    expect(mine((await runRefreshSweep({ kind: 'refresh-sweep' }, () => later)).refreshed)).toEqual([]);

    const refreshed = await eventually(async () => (await ws.api.get(`/get-knowledge-base/${due}`)).body, (kb: any) => kb.status === 'complete', 30_000);
    expect(refreshed.knowledge_base_sources[0].status).toBe('complete');
    expect(site.hits.filter((hit) => hit === '/kb/page.html').length).toBeGreaterThanOrEqual(3);
    const { sync } = await settledSync(ws.api, synced, syncId, 2);
    expect(sync.recent_runs[0]).toMatchObject({ trigger: 'auto_refresh', status: 'complete', unchanged: 1, added: 0 });
  });
});
