import { toFile } from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { newLlm } from '../support/factories.ts';
import { call } from '../support/http.ts';
import { docxOf, html, pdfOf, startSite } from '../support/kb-fixtures.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Knowledge bases through HTTP (retell-sdk's knowledgeBase methods where it has them):
 * multipart create with texts, files of every type and a URL served on 127.0.0.1, the
 * background ingestion's status, limits, SSRF refusals, crawl preview, refresh, deletes and
 * tenant isolation.
 */

const app = await startTestApp();
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'kb-jobs'));
afterAll(() => background.stop());

const site = await startSite({
  '/robots.txt': ['text/plain', 'User-agent: *\nDisallow: /docs/private/\n'],
  '/docs/index.html': [
    'text/html',
    html(
      'Help centre',
      '<h1>Help centre</h1><p>Our shop ships to Iceland and Norway.</p><a href="/docs/shipping.html">Shipping</a> <a href="/docs/private/keys.html">Keys</a> <a href="/blog/">Blog</a> <a href="https://example.com/">Elsewhere</a>',
    ),
  ],
  '/docs/shipping.html': ['text/html', html('Shipping', '<p>Parcels leave the warehouse every Tuesday.</p>')],
  '/docs/private/keys.html': ['text/html', html('Keys', '<p>secret</p>')],
  '/blog/': ['text/html', html('Blog', '<p>news</p>')],
});

async function setup() {
  const ws = await app.newWorkspace();
  return { ws, client: retellClient(app.url, ws.api_key) };
}

const settled = (ws: { api: any }, id: string) =>
  eventually(
    async () => (await ws.api.get(`/get-knowledge-base/${id}`)).body,
    (kb: any) => kb.status === 'complete' || kb.status === 'error',
    30_000,
  );

const content = async (ws: { api: any }, kbId: string, sourceId: string) => (await ws.api.get(`/get-knowledge-base-source-content/${kbId}/${sourceId}`)).body;

describe('create with retell-sdk (multipart)', () => {
  it('indexes texts, every file type and a crawled URL in the background', async () => {
    const { ws, client } = await setup();
    const created = await client.knowledgeBase.create({
      knowledge_base_name: 'Shop help',
      knowledge_base_texts: [{ title: 'Opening hours', text: 'The shop opens at nine and closes at five on weekdays.' }],
      knowledge_base_urls: [`${site.url}/docs/index.html`],
      knowledge_base_files: [
        await toFile(pdfOf(['The warranty lasts two years from purchase.']), 'warranty.pdf', { type: 'application/pdf' }),
        await toFile(await docxOf(['Returns are accepted within 30 days.']), 'returns.docx'),
        await toFile(Buffer.from('<html><body><p>Gift cards never expire.</p></body></html>'), 'gifts.html', { type: 'text/html' }),
        await toFile(Buffer.from('# Loyalty\n\nMembers earn one point per euro.'), 'loyalty.md'),
        await toFile(Buffer.from('Delivery takes three working days.'), 'delivery.txt', { type: 'text/plain' }),
        await toFile(Buffer.from('store,phone\nOslo,+4722000000\n'), 'stores.csv', { type: 'text/csv' }),
      ],
      enable_auto_refresh: true,
    });
    expect(created.knowledge_base_id).toMatch(/^knowledge_base_[0-9a-f]{24}$/);
    expect(created).toMatchObject({ knowledge_base_name: 'Shop help', status: 'in_progress', enable_auto_refresh: true, max_chunk_size: 2000, min_chunk_size: 400 });
    expect(created.knowledge_base_sources).toHaveLength(8);

    const kb = await settled(ws, created.knowledge_base_id);
    expect(kb.status).toBe('complete');
    expect(kb.error_messages).toEqual([]);
    const sources = kb.knowledge_base_sources as any[];
    expect(sources.map((source) => source.status)).toEqual(Array(8).fill('complete'));
    const text = sources.find((source) => source.type === 'text');
    expect(text).toMatchObject({ title: 'Opening hours', content_url: expect.stringMatching(/^http/) });
    const pdf = sources.find((source) => source.filename === 'warranty.pdf');
    expect(pdf).toMatchObject({ type: 'document', file_size: expect.any(Number), file_url: expect.stringMatching(/^http/) });
    // The stored original downloads from its signed URL.
    const original = await fetch(pdf.file_url);
    expect(original.status).toBe(200);
    expect(Buffer.from(await original.arrayBuffer()).subarray(0, 5).toString()).toBe('%PDF-');

    const expected: Record<string, string> = {
      'warranty.pdf': 'The warranty lasts two years from purchase.',
      'returns.docx': 'Returns are accepted within 30 days.',
      'gifts.html': 'Gift cards never expire.',
      'loyalty.md': '# Loyalty\n\nMembers earn one point per euro.',
      'delivery.txt': 'Delivery takes three working days.',
      'stores.csv': 'store: Oslo\nphone: +4722000000',
    };
    for (const [filename, textOf] of Object.entries(expected)) {
      const source = sources.find((s) => s.filename === filename);
      const read = await content(ws, kb.knowledge_base_id, source.source_id);
      expect(read.content, filename).toBe(textOf);
      expect(read.chunks, filename).toEqual([{ chunk_id: `${source.source_id}_0`, content: textOf }]);
    }

    // The URL: the page and the linked page under /docs/, never the robots-disallowed or out-of-scope ones.
    const url = sources.find((source) => source.type === 'url');
    expect(url.pages).toEqual([`${site.url}/docs/index.html`, `${site.url}/docs/shipping.html`]);
    const crawled = await content(ws, kb.knowledge_base_id, url.source_id);
    expect(crawled.content).toContain('Our shop ships to Iceland and Norway.');
    expect(crawled.content).toContain('Parcels leave the warehouse every Tuesday.');
    expect(crawled.content).not.toContain('Menu Home');
    expect(crawled.content).not.toContain('var x');
    expect(crawled.content).not.toContain('doctype');
    expect(site.hits).not.toContain('/docs/private/keys.html');
    expect(site.hits).not.toContain('/blog/');
    expect(kb.chunk_count).toBe(8);

    const listed = await client.knowledgeBase.list();
    expect(listed.map((entry) => entry.knowledge_base_id)).toEqual([created.knowledge_base_id]);
    const retrieved = await client.knowledgeBase.retrieve(created.knowledge_base_id);
    expect(retrieved.status).toBe('complete');
  });

  it('takes JSON too, and answers sources by their API shape; a knowledge base without sources completes empty', async () => {
    const { ws } = await setup();
    const res = await ws.api.post('/create-knowledge-base', {
      body: { knowledge_base_name: 'JSON', knowledge_base_texts: [{ title: 'A', text: 'Alpha text.' }], max_chunk_size: 1000, min_chunk_size: 100 },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ max_chunk_size: 1000, min_chunk_size: 100, enable_auto_refresh: false });
    const empty = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Empty' } });
    expect(empty.status).toBe(201);
    expect((await settled(ws, empty.body.knowledge_base_id)).status).toBe('complete');
    const list = await ws.api.get('/list-knowledge-bases');
    expect(list.body.map((kb: any) => kb.knowledge_base_name)).toEqual(['Empty', 'JSON']);
  });

  it('keeps a file name that is not ASCII as sent (UTF-8), in the answer and once stored', async () => {
    const { ws, client } = await setup();
    const created = await client.knowledgeBase.create({
      knowledge_base_name: 'Accents',
      knowledge_base_files: [await toFile(Buffer.from('<html><body><p>Les colis partent en été.</p></body></html>'), 'été.html', { type: 'text/html' })],
    });
    expect(created.knowledge_base_sources?.map((source: any) => source.filename)).toEqual(['été.html']);
    const kb = await settled(ws, created.knowledge_base_id);
    expect(kb.status).toBe('complete');
    expect(kb.knowledge_base_sources.map((source: any) => source.filename)).toEqual(['été.html']);
  });

  it('marks a knowledge base whose only source failed as error, with the reason', async () => {
    const { ws, client } = await setup();
    const created = await client.knowledgeBase.create({ knowledge_base_name: 'Broken', knowledge_base_urls: [`${site.url}/docs/missing.html`] });
    const kb = await settled(ws, created.knowledge_base_id);
    expect(kb.status).toBe('error');
    expect(kb.knowledge_base_sources[0]).toMatchObject({ status: 'error', error_message: 'No page could be read (answered 404)' });
    expect(kb.error_messages).toEqual([`${site.url}/docs/missing.html: No page could be read (answered 404)`]);
  });
});

describe('limits and bad input', () => {
  it('refuses more than 25 files (400) and a file over 50 MB (413) before storing anything', async () => {
    const { ws, client } = await setup();
    const many = await Promise.all(Array.from({ length: 26 }, (_, i) => toFile(Buffer.from(`file ${i}`), `f${i}.txt`)));
    const tooMany = await sdkFailure(client.knowledgeBase.create({ knowledge_base_name: 'Many', knowledge_base_files: many }));
    expect(tooMany).toEqual({ status: 400, body: { status: 400, message: 'Too many files: at most 25 per request' } });

    const big = await toFile(Buffer.alloc(50 * 1024 * 1024 + 1, 'a'), 'big.txt');
    const tooBig = await sdkFailure(client.knowledgeBase.create({ knowledge_base_name: 'Big', knowledge_base_files: [big] }));
    expect(tooBig).toEqual({ status: 413, body: { status: 413, message: 'File "big.txt" exceeds the 50 MB limit per file' } });
    expect((await ws.api.get('/list-knowledge-bases')).body).toEqual([]);
  }, 60_000);

  it("takes retell-sdk's empty list of files (sent as the text field \"[]\") and refuses other text in the files field", async () => {
    const { ws, client } = await setup();
    const created = await client.knowledgeBase.create({ knowledge_base_name: 'No files', knowledge_base_texts: [{ title: 'a', text: 'Some text.' }], knowledge_base_files: [] });
    expect(created.knowledge_base_sources).toEqual([expect.objectContaining({ type: 'text', title: 'a' })]);
    const form = new FormData();
    form.append('knowledge_base_name', 'Text files');
    form.append('knowledge_base_files', 'not a file');
    const refused = await fetch(`${app.url}/create-knowledge-base`, { method: 'POST', headers: { authorization: `Bearer ${ws.api_key}` }, body: form });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toEqual({ status: 400, message: 'knowledge_base_files: Expected array, received string' });
  });

  it('refuses unsupported files, bad names and bad chunk sizes with 400 naming the field', async () => {
    const { ws, client } = await setup();
    const png = await sdkFailure(
      client.knowledgeBase.create({ knowledge_base_name: 'Img', knowledge_base_files: [await toFile(Buffer.from('x'), 'photo.png', { type: 'image/png' })] }),
    );
    expect(png).toEqual({
      status: 400,
      body: { status: 400, message: 'knowledge_base_files: "photo.png" is not a supported document (PDF, DOCX, HTML, Markdown, TXT or CSV)' },
    });
    const long = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'x'.repeat(40) } });
    expect(long.status).toBe(400);
    expect(long.body.message).toBe('knowledge_base_name: Must be less than 40 characters');
    const sizes = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'S', max_chunk_size: 500, min_chunk_size: 500 } });
    expect(sizes.body).toEqual({ status: 400, message: 'min_chunk_size: Must be less than max_chunk_size' });
    const url = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'U', knowledge_base_urls: ['ftp://x.com/'] } });
    expect(url.body).toEqual({ status: 400, message: 'knowledge_base_urls.0: Must be an http:// or https:// URL' });
    const nothing = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'N' } });
    const add = await ws.api.post(`/add-knowledge-base-sources/${nothing.body.knowledge_base_id}`, { body: {} });
    expect(add.body).toEqual({ status: 400, message: 'Add at least one of knowledge_base_texts, knowledge_base_urls, knowledge_base_files or knowledge_base_upload_ids' });
  });

  it('refuses URLs the production SSRF rules refuse, at add time and in crawl preview', async () => {
    const { ws, client } = await setup();
    const metadata = await sdkFailure(
      client.knowledgeBase.create({ knowledge_base_name: 'SSRF', knowledge_base_urls: ['http://169.254.169.254/latest/meta-data/'] }),
    );
    expect(metadata.status).toBe(400);
    expect(metadata.body.message).toMatch(/^knowledge_base_urls\.0: Destination not allowed: 169\.254\.169\.254 is a link-local/);
    const privateNet = await ws.api.post('/knowledge-base-crawl-preview', { body: { url: 'http://10.1.2.3/' } });
    expect(privateNet.status).toBe(400);
    expect(privateNet.body.message).toMatch(/^url: Destination not allowed: 10\.1\.2\.3 is a private/);
    const ownApi = await ws.api.post('/knowledge-base-crawl-preview', { body: { url: `${app.url}/list-knowledge-bases` } });
    expect(ownApi.status).toBe(400);
    expect(ownApi.body.message).toMatch(/^url: Destination not allowed: .*the local runtime's own API/);
    expect((await ws.api.get('/list-knowledge-bases')).body).toEqual([]);
  });

  it('needs the kb scope', async () => {
    const { ws } = await setup();
    const key = await ws.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } });
    const res = await call(app.url, 'GET', '/list-knowledge-bases', { key: key.body.api_key });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "kb" scope' });
    const kbKey = await ws.api.post('/api-keys', { body: { name: 'kb', scopes: ['kb'] } });
    expect((await call(app.url, 'GET', '/list-knowledge-bases', { key: kbKey.body.api_key })).status).toBe(200);
  });
});

describe('crawl preview', () => {
  it('lists what a crawl would fetch (same site and path, robots.txt, limits) without indexing', async () => {
    const { ws } = await setup();
    const res = await ws.api.post('/knowledge-base-crawl-preview', { body: { url: `${site.url}/docs/index.html` } });
    expect(res.status).toBe(200);
    expect(res.body.pages).toEqual([
      { url: `${site.url}/docs/index.html`, depth: 0, title: 'Help centre' },
      { url: `${site.url}/docs/shipping.html`, depth: 1, title: 'Shipping' },
    ]);
    expect(res.body.skipped).toEqual(
      expect.arrayContaining([
        { url: `${site.url}/docs/private/keys.html`, reason: 'disallowed by robots.txt' },
        { url: `${site.url}/blog/`, reason: `outside ${site.url}/docs/` },
        { url: 'https://example.com/', reason: `outside ${site.url}/docs/` },
      ]),
    );
    const one = await ws.api.post('/knowledge-base-crawl-preview', { body: { url: `${site.url}/docs/index.html`, max_pages: 1 } });
    expect(one.body.pages).toHaveLength(1);
    expect(one.body.skipped).toContainEqual({ url: `${site.url}/docs/shipping.html`, reason: 'over the 1-page limit' });
    expect((await ws.api.get('/list-knowledge-bases')).body).toEqual([]);
  });
});

describe('changing sources', () => {
  it('adds sources (refreshing_in_progress), deletes one, and refresh replaces only changed URL sources', async () => {
    const { ws, client } = await setup();
    site.pages.set('/faq/a.html', ['text/html', html('A', '<p>Version one of page A.</p>')]);
    site.pages.set('/faq2/b.html', ['text/html', html('B', '<p>Page B stays the same.</p>')]);
    const created = await client.knowledgeBase.create({
      knowledge_base_name: 'Refresh',
      knowledge_base_urls: [`${site.url}/faq/a.html`, `${site.url}/faq2/b.html`],
    });
    let kb = await settled(ws, created.knowledge_base_id);
    const a = kb.knowledge_base_sources.find((source: any) => source.url.endsWith('/faq/a.html'));
    const b = kb.knowledge_base_sources.find((source: any) => source.url.endsWith('/faq2/b.html'));
    const before = await content(ws, kb.knowledge_base_id, b.source_id);

    const added = await client.knowledgeBase.addSources(created.knowledge_base_id, { knowledge_base_texts: [{ title: 'Extra', text: 'Extra words.' }] });
    expect(added.status).toBe('refreshing_in_progress');
    expect(added.knowledge_base_sources).toHaveLength(3);
    kb = await settled(ws, created.knowledge_base_id);
    expect(kb.chunk_count).toBe(3);

    const extra = kb.knowledge_base_sources.find((source: any) => source.type === 'text');
    const afterDelete = await client.knowledgeBase.deleteSource(extra.source_id, { knowledge_base_id: created.knowledge_base_id });
    expect(afterDelete.knowledge_base_sources).toHaveLength(2);
    kb = await settled(ws, created.knowledge_base_id);
    expect(kb.chunk_count).toBe(2);
    const gone = await ws.api.get(`/get-knowledge-base-source-content/${created.knowledge_base_id}/${extra.source_id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.message).toBe(`Source ${extra.source_id} not found`);

    site.pages.set('/faq/a.html', ['text/html', html('A', '<p>Version two of page A.</p>')]);
    const refreshing = await ws.api.post(`/refresh-knowledge-base/${created.knowledge_base_id}`);
    expect(refreshing.status).toBe(202);
    expect(refreshing.body.status).toBe('refreshing_in_progress');
    kb = await settled(ws, created.knowledge_base_id);
    expect(kb.last_refreshed_timestamp).toEqual(expect.any(Number));
    expect((await content(ws, kb.knowledge_base_id, a.source_id)).content).toContain('Version two of page A.');
    // B did not change: its stored text and chunks are the ones of the first crawl.
    expect(await content(ws, kb.knowledge_base_id, b.source_id)).toEqual(before);

    const noUrls = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'T', knowledge_base_texts: [{ title: 't', text: 'x' }] } });
    const refuse = await ws.api.post(`/refresh-knowledge-base/${noUrls.body.knowledge_base_id}`);
    expect(refuse.body).toEqual({ status: 400, message: `Knowledge base ${noUrls.body.knowledge_base_id} has no URL sources to refresh` });

    const renamed = await ws.api.patch(`/update-knowledge-base/${created.knowledge_base_id}`, { body: { knowledge_base_name: 'Renamed', enable_auto_refresh: true } });
    expect(renamed.status).toBe(200);
    expect(renamed.body).toMatchObject({ knowledge_base_name: 'Renamed', enable_auto_refresh: true });
  });
});

describe('deleting and isolation', () => {
  it('refuses to delete a knowledge base an LLM uses (409 naming it) unless forced, then removes everything', async () => {
    const { ws, client } = await setup();
    const created = await client.knowledgeBase.create({ knowledge_base_name: 'Used', knowledge_base_texts: [{ title: 'a', text: 'Some text.' }] });
    const kb = await settled(ws, created.knowledge_base_id);
    const llm = await newLlm(ws.api, { knowledge_base_ids: [created.knowledge_base_id] });
    const refused = await ws.api.delete(`/delete-knowledge-base/${created.knowledge_base_id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.message).toBe(
      `Knowledge base ${created.knowledge_base_id} is used by ${llm.llm_id}; remove it from them first, or delete with ?force=true`,
    );
    const forced = await ws.api.delete(`/delete-knowledge-base/${created.knowledge_base_id}?force=true`);
    expect(forced.status).toBe(204);
    expect((await ws.api.get(`/get-knowledge-base/${created.knowledge_base_id}`)).status).toBe(404);
    // Its objects are gone: the text's signed URL no longer finds the original.
    const url = kb.knowledge_base_sources[0].content_url;
    expect((await fetch(url)).status).toBe(404);

    const plain = await client.knowledgeBase.create({ knowledge_base_name: 'Plain' });
    await client.knowledgeBase.delete(plain.knowledge_base_id);
    expect((await sdkFailure(client.knowledgeBase.retrieve(plain.knowledge_base_id))).status).toBe(404);
  });

  it('answers 404 for every ID of another workspace', async () => {
    const { ws, client } = await setup();
    const created = await client.knowledgeBase.create({ knowledge_base_name: 'Mine', knowledge_base_texts: [{ title: 'a', text: 'Private text.' }] });
    const kb = await settled(ws, created.knowledge_base_id);
    const sourceId = kb.knowledge_base_sources[0].source_id;
    const other = await app.newWorkspace();
    const id = created.knowledge_base_id;
    const attempts = [
      other.api.get(`/get-knowledge-base/${id}`),
      other.api.patch(`/update-knowledge-base/${id}`, { body: { knowledge_base_name: 'Theirs' } }),
      other.api.delete(`/delete-knowledge-base/${id}`),
      other.api.post(`/add-knowledge-base-sources/${id}`, { body: { knowledge_base_texts: [{ title: 'x', text: 'y' }] } }),
      other.api.delete(`/delete-knowledge-base-source/${id}/source/${sourceId}`),
      other.api.get(`/get-knowledge-base-source-content/${id}/${sourceId}`),
      other.api.post(`/refresh-knowledge-base/${id}`),
    ];
    for (const res of await Promise.all(attempts)) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Knowledge base ${id} not found` });
    }
    expect((await other.api.get('/list-knowledge-bases')).body).toEqual([]);
    const still = await ws.api.get(`/get-knowledge-base/${id}`);
    expect(still.body).toMatchObject({ knowledge_base_name: 'Mine', knowledge_base_sources: [{ source_id: sourceId }] });
  });
});
