import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

/*
 * A fake of the three document stores knowledge bases sync from, on 127.0.0.1, under one
 * origin: Google Drive v3 at /drive/v3 (files.list with `'<folder>' in parents`, two files
 * a page; files.export; files.get?alt=media), Microsoft Graph at /graph/v1.0 (children with
 * an absolute @odata.nextLink, two items a page; /content answering 302 to a
 * pre-authenticated /download URL) and Notion at /notion/v1 (pages, block children and
 * database queries, `notionPageSize` a page). The
 * API paths check the bearer token with `tokenValid`; /download must come without one. Every
 * request is recorded, so a test sees which documents were fetched.
 */

export interface FakeFile {
  id: string;
  name: string;
  mimeType: string;
  modified: string;
  content: string;
}

interface FakeNotionPage {
  id: string;
  title: string;
  edited: string;
  /** Paragraphs, child pages by ID, and databases inside the page by ID. */
  blocks: ({ text: string } | { child: string } | { database: string })[];
  /** A database row's properties besides its title (Notion property objects). */
  properties?: Record<string, unknown>;
}

export interface FakeDocuments {
  url: string;
  requests: { path: string; authorization?: string }[];
  /** Drive folders and Graph folders (`<drive>/<folder>`, `me/root` for the user's drive root) → their files and subfolders. */
  folders: Map<string, (FakeFile | { folder: string; name: string })[]>;
  notion: Map<string, FakeNotionPage>;
  /** Notion databases → the IDs of their pages (rows), each a page of `notion`. */
  notionDatabases: Map<string, string[]>;
  /** Entries a listing page holds: Drive files, Graph items, Notion blocks and database rows (default 2; Notion 100). */
  pageSize?: number;
  notionPageSize?: number;
  /** Where Graph's next page points (to test that another origin is not followed). */
  graphNextLinkOrigin?: string;
  /** Where Graph's /content redirects (default this server's /download). */
  graphDownloadOrigin?: string;
  fetchedSince(mark: number): string[];
}

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(typeof body === 'string' ? body : JSON.stringify(body));
};

const isFile = (entry: FakeFile | { folder: string; name: string }): entry is FakeFile => 'id' in entry;

export async function fakeDocuments(tokenValid: (token: string) => boolean): Promise<FakeDocuments> {
  const fake: FakeDocuments = {
    url: '',
    requests: [],
    folders: new Map(),
    notion: new Map(),
    notionDatabases: new Map(),
    fetchedSince: (mark) =>
      fake.requests
        .slice(mark)
        .map((request) => request.path)
        .filter((path) => /\/export|alt=media|\/download\//.test(path)),
  };
  const allFiles = () => [...fake.folders.values()].flat().filter(isFile);
  /** A Notion list answer: `notionPageSize` results from the cursor (an index), with has_more and next_cursor. */
  const notionList = (all: unknown[], cursor: string | null) => {
    const size = fake.notionPageSize ?? 100;
    const start = Number(cursor ?? 0);
    const more = start + size < all.length;
    return { object: 'list', results: all.slice(start, start + size), has_more: more, next_cursor: more ? String(start + size) : null };
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    fake.requests.push({ path: url.pathname + url.search, authorization: req.headers.authorization });
    if (url.pathname.startsWith('/download/')) {
      if (req.headers.authorization) return send(res, 400, { error: 'pre-authenticated URLs take no token' });
      const file = allFiles().find((entry) => entry.id === url.pathname.slice('/download/'.length));
      return file ? send(res, 200, file.content, { 'content-type': file.mimeType }) : send(res, 404, {});
    }
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !tokenValid(auth.slice(7))) return send(res, 401, { error: 'invalid token' });

    // Google Drive v3
    if (url.pathname === '/drive/v3/files') {
      const folder = /^'([^']+)' in parents and trashed = false$/.exec(url.searchParams.get('q') ?? '')?.[1];
      if (!folder || !fake.folders.has(folder)) return send(res, 404, { error: { message: 'File not found' } });
      const entries = fake.folders.get(folder)!;
      const size = fake.pageSize ?? 2;
      const start = Number(url.searchParams.get('pageToken') ?? 0);
      const page = entries.slice(start, start + size).map((entry) =>
        isFile(entry)
          ? { id: entry.id, name: entry.name, mimeType: entry.mimeType, modifiedTime: entry.modified, ...(entry.mimeType.startsWith('application/vnd.google-apps') ? {} : { size: String(entry.content.length), md5Checksum: `md5-${entry.modified}` }) }
          : { id: entry.folder, name: entry.name, mimeType: 'application/vnd.google-apps.folder' },
      );
      return send(res, 200, { files: page, ...(start + size < entries.length ? { nextPageToken: String(start + size) } : {}) });
    }
    const driveFile = /^\/drive\/v3\/files\/([^/]+)(\/export)?$/.exec(url.pathname);
    if (driveFile) {
      const file = allFiles().find((entry) => entry.id === decodeURIComponent(driveFile[1]!));
      if (!file) return send(res, 404, {});
      if (driveFile[2]) return send(res, 200, file.content, { 'content-type': url.searchParams.get('mimeType') ?? 'text/plain' });
      if (url.searchParams.get('alt') === 'media') return send(res, 200, file.content, { 'content-type': file.mimeType });
      return send(res, 400, {});
    }

    // Microsoft Graph v1.0
    const children = /^\/graph\/v1\.0\/(?:drives\/([^/]+)\/items\/([^/]+)|me\/drive\/root)\/children$/.exec(url.pathname);
    if (children) {
      const key = children[1] ? `${children[1]}/${children[2]}` : 'me/root';
      const drive = children[1] ?? 'me';
      const entries = fake.folders.get(key);
      if (!entries) return send(res, 404, { error: { code: 'itemNotFound' } });
      const size = fake.pageSize ?? 2;
      const start = Number(url.searchParams.get('$skiptoken') ?? 0);
      const value = entries.slice(start, start + size).map((entry) =>
        isFile(entry)
          ? { id: entry.id, name: entry.name, cTag: `c-${entry.modified}`, size: entry.content.length, file: { mimeType: entry.mimeType }, parentReference: { driveId: drive } }
          : { id: entry.folder.split('/')[1], name: entry.name, folder: { childCount: 1 }, parentReference: { driveId: drive } },
      );
      const more = start + size < entries.length;
      const nextOrigin = fake.graphNextLinkOrigin ?? fake.url;
      return send(res, 200, { value, ...(more ? { '@odata.nextLink': `${nextOrigin}${url.pathname}?$skiptoken=${start + size}` } : {}) });
    }
    const content = /^\/graph\/v1\.0\/drives\/[^/]+\/items\/([^/]+)\/content$/.exec(url.pathname);
    if (content) {
      const file = allFiles().find((entry) => entry.id === content[1]);
      if (!file) return send(res, 404, {});
      res.writeHead(302, { location: `${fake.graphDownloadOrigin ?? fake.url}/download/${file.id}` }).end();
      return;
    }

    // Notion
    if (req.headers['notion-version'] !== '2022-06-28' && url.pathname.startsWith('/notion/')) return send(res, 400, { message: 'Notion-Version missing' });
    const notionPage = /^\/notion\/v1\/pages\/([^/]+)$/.exec(url.pathname);
    if (notionPage) {
      const page = fake.notion.get(notionPage[1]!);
      if (!page) return send(res, 404, { object: 'error', code: 'object_not_found' });
      return send(res, 200, { object: 'page', id: page.id, last_edited_time: page.edited, properties: { Name: { type: 'title', title: [{ plain_text: page.title }] } } });
    }
    const blocks = /^\/notion\/v1\/blocks\/([^/]+)\/children$/.exec(url.pathname);
    if (blocks) {
      const page = fake.notion.get(blocks[1]!);
      if (!page) return send(res, 404, { object: 'error', code: 'object_not_found' });
      const all = page.blocks.map((block, i) => {
        if ('child' in block) {
          const child = fake.notion.get(block.child)!;
          return { object: 'block', id: child.id, type: 'child_page', has_children: true, last_edited_time: child.edited, child_page: { title: child.title } };
        }
        if ('database' in block) return { object: 'block', id: block.database, type: 'child_database', has_children: false, child_database: { title: block.database } };
        return { object: 'block', id: `${page.id}-b${i}`, type: 'paragraph', has_children: false, paragraph: { rich_text: [{ plain_text: block.text }] } };
      });
      return send(res, 200, notionList(all, url.searchParams.get('start_cursor')));
    }
    const database = /^\/notion\/v1\/databases\/([^/]+)\/query$/.exec(url.pathname);
    if (database && req.method === 'POST') {
      const rows = fake.notionDatabases.get(database[1]!);
      if (!rows) return send(res, 404, { object: 'error', code: 'object_not_found' });
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        const body = JSON.parse(text || '{}') as { start_cursor?: string; page_size?: number };
        const results = rows.map((id) => {
          const row = fake.notion.get(id)!;
          return {
            object: 'page',
            id: row.id,
            last_edited_time: row.edited,
            properties: { Name: { type: 'title', title: [{ plain_text: row.title }] }, ...row.properties },
          };
        });
        send(res, 200, notionList(results, body.start_cursor ?? null));
      });
      return;
    }
    return send(res, 404, { error: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return fake;
}
