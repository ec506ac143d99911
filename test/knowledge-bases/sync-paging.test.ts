import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { JOBS } from '../../shared/jobs.ts';
import { runSyncStep } from '../../shared/knowledge-bases/syncs.ts';
import { startTestApp } from '../support/app.ts';
import { fakeDocuments, type FakeFile } from '../support/fake-documents.ts';
import { fakeOAuth } from '../support/fake-oauth.ts';
import { call, cookiesFrom, type ApiClient } from '../support/http.ts';

/*
 * Synced locations past one listing page: a Drive folder of 600 tiny documents (more than 500,
 * and six steps' fetches) listed in three pages of 200, each
 * page read by its own job step (the cursor kept on the run), every
 * document imported, a second run fetching only what changed; and Notion databases, as the
 * location and inside a synced page, queried page by page.
 */

const app = await startTestApp();
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'kb-jobs'));
afterAll(() => background.stop());
const oauth = await fakeOAuth();
const docs = await fakeDocuments((token) => oauth.issued.includes(token));
for (const [prefix, base] of [
  ['GOOGLE_DRIVE', '/drive/v3'],
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

async function newKb(api: ApiClient) {
  const created = await api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Synced' } });
  expect(created.status).toBe(201);
  return created.body.knowledge_base_id as string;
}

const syncsOf = async (api: ApiClient, kbId: string) => (await api.get(`/list-knowledge-base-syncs/${kbId}`)).body as any[];

/** Polls every half second (a knowledge base of 600 sources is a large answer: polling it faster slows the sync it waits for). */
async function settled<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not settled within 120 s; last value: ${JSON.stringify(value)?.slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

async function settledSync(api: ApiClient, kbId: string, syncId: string, runs = 1) {
  const sync = await settled(
    async () => (await syncsOf(api, kbId)).find((entry) => entry.sync_id === syncId),
    (entry: any) => entry?.status !== 'in_progress' && entry?.recent_runs.length >= runs && entry.recent_runs[0].status !== 'in_progress',
  );
  const kb = await settled(async () => (await api.get(`/get-knowledge-base/${kbId}`)).body, (body: any) => body.status === 'complete' || body.status === 'error');
  return { sync, kb };
}

const contentOf = async (api: ApiClient, kbId: string, sourceId: string) => (await api.get(`/get-knowledge-base-source-content/${kbId}/${sourceId}`)).body.content as string;

const tiny = (n: number): FakeFile => {
  const id = `big-${String(n).padStart(4, '0')}`;
  return { id, name: `${id}.txt`, content: `Note ${n}: the code is ${n * 7}.`, mimeType: 'text/plain', modified: '2026-01-01T00:00:00Z' };
};

describe('a location of more than one listing page', () => {
  it('syncs 600 documents listed in three pages, one page a step, and a second run fetches only what changed', async () => {
    const ws = await app.newWorkspace();
    const kbId = await newKb(ws.api);
    docs.pageSize = 200;
    try {
      const files = Array.from({ length: 600 }, (_, i) => tiny(i + 1));
      docs.folders.set('big-folder', files);
      const mark = docs.requests.length;
      const syncId = await connect(ws.api, 'google_drive', kbId, { folder_id: 'big-folder' });
      const first = await settledSync(ws.api, kbId, syncId);
      expect(first.sync).toMatchObject({ status: 'complete', document_count: 600 });
      expect(first.sync.recent_runs[0]).toMatchObject({ status: 'complete', listed: 600, added: 600, updated: 0, removed: 0, unchanged: 0, skipped: 0, failed: 0, errors: [] });
      const listings = docs.requests.slice(mark).filter((request) => request.path.startsWith('/drive/v3/files?'));
      expect(listings.map((request) => new URL(request.path, 'http://x').searchParams.get('pageToken'))).toEqual([null, '200', '400']);
      expect(docs.fetchedSince(mark)).toHaveLength(600);
      expect(first.kb).toMatchObject({ status: 'complete', chunk_count: 600 });
      const sources = first.kb.knowledge_base_sources as any[];
      expect(sources).toHaveLength(600);
      expect(new Set(sources.map((source) => source.source_id)).size).toBe(600);
      const last = sources.find((source) => source.filename === 'big-0600.txt');
      expect(await contentOf(ws.api, kbId, last.source_id)).toBe('Note 600: the code is 4200.');

      // One document changes, one goes: three listing pages again, one download.
      Object.assign(files[299]!, { content: 'Note 300: the code changed.', modified: '2026-02-01T00:00:00Z' });
      docs.folders.set('big-folder', files.slice(0, 599));
      const again = docs.requests.length;
      expect((await ws.api.post(`/sync-knowledge-base-source/${syncId}`)).status).toBe(202);
      const second = await settledSync(ws.api, kbId, syncId, 2);
      expect(second.sync.recent_runs[0]).toMatchObject({ trigger: 'manual', status: 'complete', listed: 599, added: 0, updated: 1, removed: 1, unchanged: 598, failed: 0 });
      expect(second.sync.document_count).toBe(599);
      expect(docs.fetchedSince(again)).toEqual(['/drive/v3/files/big-0300?alt=media&supportsAllDrives=true']);
      expect(docs.requests.slice(again).filter((request) => request.path.startsWith('/drive/v3/files?'))).toHaveLength(3);
      const changed = (second.kb.knowledge_base_sources as any[]).find((source) => source.filename === 'big-0300.txt');
      await settled(() => contentOf(ws.api, kbId, changed.source_id), (text) => text === 'Note 300: the code changed.');
      expect((second.kb.knowledge_base_sources as any[]).some((source) => source.filename === 'big-0600.txt')).toBe(false);
    } finally {
      docs.pageSize = undefined;
    }
  }, 120_000);
});

describe('replayed and duplicate step messages', () => {
  it('applies each step of a run once: a duplicate delivered during the run and replays of every step after it change nothing', async () => {
    const ws = await app.newWorkspace();
    const kbId = await newKb(ws.api);
    docs.pageSize = 10;
    try {
      docs.folders.set('replay-folder', Array.from({ length: 30 }, (_, i) => tiny(5000 + i)));
      const syncId = await connect(ws.api, 'google_drive', kbId, { folder_id: 'replay-folder' });
      // The callback hands the connection to kb-jobs, which creates the sync and starts its run: wait for the run to exist.
      const started = await settled(async () => (await syncsOf(ws.api, kbId)).find((entry) => entry.sync_id === syncId), (entry: any) => entry?.recent_runs?.length >= 1);
      const runId = started.recent_runs[0].run_id as string;
      const step = (n: number) => runSyncStep({ kind: 'sync', workspace_id: ws.workspace_id, sync_id: syncId, run_id: runId, step: n });
      // SQS's rare duplicate: the first step once more, at once, beside the queue's own delivery.
      await step(0);
      const first = await settledSync(ws.api, kbId, syncId);
      expect(first.sync).toMatchObject({ status: 'complete', document_count: 30 });
      expect(first.sync.recent_runs).toHaveLength(1);
      expect(first.sync.recent_runs[0]).toMatchObject({ run_id: runId, status: 'complete', listed: 30, added: 30, updated: 0, removed: 0, unchanged: 0, failed: 0 });
      const sources = first.kb.knowledge_base_sources as any[];
      expect(sources).toHaveLength(30);
      expect(new Set(sources.map((source) => source.source_id)).size).toBe(30);

      // Every step of the finished run delivered again (a redrive, a replayed message): no listing, no download, no count moves.
      const mark = docs.requests.length;
      for (let n = 0; n < 12; n++) await step(n);
      expect(docs.requests.slice(mark)).toEqual([]);
      const after = await settledSync(ws.api, kbId, syncId);
      expect(after.sync.recent_runs).toEqual(first.sync.recent_runs);
      expect(after.sync.document_count).toBe(30);
      expect((after.kb.knowledge_base_sources as any[]).map((source) => source.source_id).sort()).toEqual(sources.map((source) => source.source_id).sort());
      // A step of a run that never was is dropped too.
      await runSyncStep({ kind: 'sync', workspace_id: ws.workspace_id, sync_id: syncId, run_id: 'run_not_this_one', step: 0 });
      expect(docs.requests.slice(mark)).toEqual([]);
    } finally {
      docs.pageSize = undefined;
    }
  }, 120_000);
});

describe('Notion databases', () => {
  it('syncs a database\'s pages (queried page by page, properties as text), and databases inside a synced page', async () => {
    const ws = await app.newWorkspace();
    const kbId = await newKb(ws.api);
    docs.notionPageSize = 2;
    try {
      const row = (id: string, title: string, text: string, properties: Record<string, unknown> = {}) =>
        docs.notion.set(id, { id, title, edited: '2026-01-01T00:00:00.000Z', blocks: [{ text }], properties });
      row('row-1', 'Basic plan', 'The basic plan includes email support.', {
        Price: { type: 'number', number: 12 },
        Tags: { type: 'multi_select', multi_select: [{ name: 'starter' }, { name: 'monthly' }] },
        Active: { type: 'checkbox', checkbox: true },
        Owner: { type: 'people', people: [] },
      });
      row('row-2', 'Pro plan', 'The pro plan includes phone support.', { Price: { type: 'number', number: 40 } });
      row('row-3', 'Team plan', 'The team plan includes a manager.');
      docs.notionDatabases.set('db-plans', ['row-1', 'row-2', 'row-3']);
      const syncId = await connect(ws.api, 'notion', kbId, { database_id: 'db-plans' });
      const { sync, kb } = await settledSync(ws.api, kbId, syncId);
      expect(sync).toMatchObject({ provider: 'notion', database_id: 'db-plans', status: 'complete', document_count: 3 });
      expect(sync.page_id).toBeUndefined();
      expect(sync.recent_runs[0]).toMatchObject({ listed: 3, added: 3, failed: 0 });
      const sources = kb.knowledge_base_sources as any[];
      expect(sources.map((source) => source.filename).sort()).toEqual(['Basic plan.md', 'Pro plan.md', 'Team plan.md']);
      const basic = sources.find((source) => source.filename === 'Basic plan.md');
      expect(await contentOf(ws.api, kbId, basic.source_id)).toBe('# Basic plan\n\nPrice: 12\nTags: starter, monthly\nActive: yes\n\nThe basic plan includes email support.');
      // Two rows a query page: the second query carried the first's cursor.
      const queries = docs.requests.filter((request) => request.path === '/notion/v1/databases/db-plans/query');
      expect(queries.length).toBeGreaterThanOrEqual(2);

      // A page with a database inside: the page, its child page and the database's rows.
      docs.notion.set('wiki', { id: 'wiki', title: 'Wiki', edited: '2026-01-01T00:00:00.000Z', blocks: [{ text: 'Welcome.' }, { database: 'db-faq' }, { child: 'wiki-child' }] });
      docs.notion.set('wiki-child', { id: 'wiki-child', title: 'Office', edited: '2026-01-01T00:00:00.000Z', blocks: [{ text: 'The office is in Lisbon.' }] });
      row('faq-1', 'Refunds', 'Refunds take five days.');
      docs.notionDatabases.set('db-faq', ['faq-1']);
      const wikiKb = await newKb(ws.api);
      const added = await ws.api.post(`/add-knowledge-base-synced-source/${wikiKb}`, { body: { connection_id: syncId, page_id: 'wiki' } });
      expect(added.status).toBe(201);
      expect(added.body).toMatchObject({ provider: 'notion', page_id: 'wiki' });
      expect(added.body.database_id).toBeUndefined();
      const wiki = await settledSync(ws.api, wikiKb, added.body.sync_id);
      expect((wiki.kb.knowledge_base_sources as any[]).map((source) => source.filename).sort()).toEqual(['Office.md', 'Refunds.md', 'Wiki.md']);
      const page = (wiki.kb.knowledge_base_sources as any[]).find((source) => source.filename === 'Wiki.md');
      expect(await contentOf(ws.api, wikiKb, page.source_id)).toBe('# Wiki\n\nWelcome.');

      const both = await ws.api.post(`/add-knowledge-base-synced-source/${wikiKb}`, { body: { connection_id: syncId, page_id: 'wiki', database_id: 'db-faq' } });
      expect(both.status).toBe(400);
      expect(both.body.message).toBe('page_id: Give page_id or database_id for a notion synced source, not both');
      const missing = await ws.api.post(`/add-knowledge-base-synced-source/${wikiKb}`, { body: { connection_id: syncId, database_id: 'db-none' } });
      expect(missing.status).toBe(201);
      const failed = await settledSync(ws.api, wikiKb, missing.body.sync_id);
      expect(failed.sync).toMatchObject({ status: 'error', error_message: 'Listing the documents failed: Database db-none not found (HTTP 404)' });
    } finally {
      docs.notionPageSize = undefined;
    }
  });
});
