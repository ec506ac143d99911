import { egressFetch, EgressRefused, EgressResponseTooLarge } from '../../platform/egress/egress.ts';

/*
 * Document stores a knowledge base syncs from (docs/knowledge-bases.md, Synced sources):
 * Google Drive (Drive API v3: files.list, files.export, files.get?alt=media), SharePoint
 * and OneDrive (Microsoft Graph: driveItem children and content) and Notion (pages and
 * their blocks). A client lists the documents under a folder, drive or page with a version
 * each (Drive's modifiedTime and md5, Graph's cTag, Notion's last_edited_time), so a sync
 * fetches only what changed, and fetches one document's bytes. Every request goes through
 * the egress guard with the connection's access token; the base URL is the caller's
 * (`<PREFIX>_API_BASE_URL` or the vendor's), so tests point it at a fake on 127.0.0.1. A
 * connection made through the built-in mock OAuth provider gets the mock store: a fixed
 * pair of documents, nothing leaves Parley.
 */

export type DocumentProvider = 'google_drive' | 'sharepoint' | 'notion';
export const DOCUMENT_PROVIDERS: readonly DocumentProvider[] = ['google_drive', 'sharepoint', 'notion'];

/** Where the documents are: Drive's folder, Graph's drive and folder, Notion's page or database. */
export interface DocumentLocation {
  folder_id?: string;
  drive_id?: string;
  page_id?: string;
  database_id?: string;
}

export interface RemoteDocument {
  /** The vendor's ID of the document (stable across renames). */
  id: string;
  /** A file name whose extension says the type of what `fetch` answers. */
  name: string;
  /** Changes whenever the document does (a sync re-fetches only then). */
  version: string;
  mimeType?: string;
  size?: number;
  /** What `fetch` needs besides the ID (Graph's drive ID, Drive's native type, a Notion page's title). */
  hint?: string;
  /** Text put before the document's own (a Notion database page's properties, `Name: value` lines). */
  preface?: string;
}

interface FetchedDocument {
  body: Buffer;
  contentType: string;
}

/** One page of a listing: its documents, and the cursor of the next page (none after the last). */
interface ListedPage {
  documents: RemoteDocument[];
  next?: string;
}

export interface DocumentStore {
  /**
   * One page of the documents under the location (folders walked to MAX_DEPTH): exactly one
   * vendor request. `cursor` is the previous page's `next` (undefined for the first page);
   * it is opaque JSON text to keep between job messages, at most a few KB.
   */
  listPage(location: DocumentLocation, cursor?: string): Promise<ListedPage>;
  fetch(document: RemoteDocument): Promise<FetchedDocument>;
}

/** The vendor failed or refused; `auth` when it refused the token (401/403), `notFound` for a missing folder or page. */
export class DocumentVendorFailed extends Error {
  constructor(
    readonly provider: string,
    readonly detail: string,
    readonly kind: 'auth' | 'not_found' | 'too_large' | 'refused' | 'failed' = 'failed',
  ) {
    super(`${provider}: ${detail}`);
    this.name = 'DocumentVendorFailed';
  }
}

/** Folders (or Notion pages and databases) a listing may still have to walk at once: more fails the listing. */
const MAX_PENDING_FOLDERS = 500;
/** Folders (Drive, Graph) and child pages (Notion) are walked this deep below the location. */
const MAX_DEPTH = 3;
const LIST_TIMEOUT_MS = 15_000;
const FETCH_TIMEOUT_MS = 60_000;
const LIST_MAX_BYTES = 5 * 1024 * 1024;

export interface DocumentStoreTarget {
  provider: DocumentProvider;
  /** The vendor API base, no trailing slash. */
  baseUrl: string;
  accessToken: string;
  mock: boolean;
  /** Cap on one document's bytes (the knowledge bases' 50 MB per file). */
  maxDocumentBytes: number;
}

export function documentStore(target: DocumentStoreTarget): DocumentStore {
  if (target.mock) return mockStore(target.provider);
  if (target.provider === 'google_drive') return googleDrive(target);
  if (target.provider === 'sharepoint') return microsoftGraph(target);
  return notion(target);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- vendor JSON of many shapes, read field by field
type Json = any;

interface RequestOptions {
  accept?: string;
  maxBytes?: number;
  timeoutMs?: number;
  headers?: Record<string, string>;
  /** Send the bearer token (not to a pre-authenticated download URL). */
  auth?: boolean;
  method?: 'GET' | 'POST';
  /** A JSON body (POST). */
  body?: unknown;
}

async function request(target: DocumentStoreTarget, url: string, options: RequestOptions = {}): Promise<Response> {
  try {
    return await egressFetch(url, {
      ...(options.method ? { method: options.method } : {}),
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
      headers: {
        ...(options.auth === false ? {} : { authorization: `Bearer ${target.accessToken}` }),
        accept: options.accept ?? 'application/json',
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...options.headers,
      },
      timeoutMs: options.timeoutMs ?? LIST_TIMEOUT_MS,
      maxResponseBytes: options.maxBytes ?? LIST_MAX_BYTES,
    });
  } catch (error) {
    if (error instanceof EgressRefused) throw new DocumentVendorFailed(target.provider, error.message, 'refused');
    throw new DocumentVendorFailed(target.provider, error instanceof Error ? error.message : String(error));
  }
}

function failure(target: DocumentStoreTarget, status: number, what: string): DocumentVendorFailed {
  if (status === 401 || status === 403) return new DocumentVendorFailed(target.provider, `the provider refused the access token (HTTP ${status})`, 'auth');
  if (status === 404) return new DocumentVendorFailed(target.provider, `${what} not found (HTTP 404)`, 'not_found');
  return new DocumentVendorFailed(target.provider, `${what}: HTTP ${status}`);
}

async function json(target: DocumentStoreTarget, url: string, what: string, headers: Record<string, string> = {}, body?: unknown): Promise<Json> {
  const response = await request(target, url, { headers, ...(body !== undefined ? { method: 'POST', body } : {}) });
  const text = await readText(target, response);
  if (response.status !== 200) throw failure(target, response.status, what);
  try {
    return JSON.parse(text);
  } catch {
    throw new DocumentVendorFailed(target.provider, `${what}: the answer is not JSON`);
  }
}

async function readText(target: DocumentStoreTarget, response: Response): Promise<string> {
  try {
    return await response.text();
  } catch (error) {
    throw new DocumentVendorFailed(target.provider, error instanceof Error ? error.message : String(error));
  }
}

async function readBytes(target: DocumentStoreTarget, response: Response, what: string): Promise<Buffer> {
  try {
    return Buffer.from(await response.arrayBuffer());
  } catch (error) {
    if (error instanceof EgressResponseTooLarge) {
      throw new DocumentVendorFailed(target.provider, `${what} exceeds the ${target.maxDocumentBytes / 1024 / 1024} MB limit per file`, 'too_large');
    }
    throw new DocumentVendorFailed(target.provider, error instanceof Error ? error.message : String(error));
  }
}

/** A vendor ID as a path segment or a query literal: the characters vendors use, nothing that escapes. */
const SAFE_ID = /^[A-Za-z0-9_!.-]{1,200}$/;
function safeId(target: DocumentStoreTarget, field: string, value: string): string {
  if (!SAFE_ID.test(value)) throw new DocumentVendorFailed(target.provider, `${field} is not a valid ID`, 'not_found');
  return value;
}

const tooManyFolders = (target: DocumentStoreTarget) =>
  new DocumentVendorFailed(target.provider, `more than ${MAX_PENDING_FOLDERS} folders to walk under this location; sync a smaller folder`);

/** A listing's cursor: the folders (or pages, databases) still to walk, the first one in progress. */
interface Walk<E> {
  queue: E[];
}

function readCursor<E>(target: DocumentStoreTarget, cursor: string | undefined): Walk<E> | undefined {
  if (cursor === undefined) return undefined;
  try {
    const walk = JSON.parse(cursor) as Walk<E>;
    if (Array.isArray(walk?.queue)) return walk;
  } catch {
    // Falls through to the error below.
  }
  throw new DocumentVendorFailed(target.provider, 'the listing cursor is not valid');
}

/** The next page's cursor: the same queue (its head's next page) or the rest of it. */
function nextCursor<E>(target: DocumentStoreTarget, queue: E[]): string | undefined {
  if (queue.length > MAX_PENDING_FOLDERS) throw tooManyFolders(target);
  return queue.length ? JSON.stringify({ queue } satisfies Walk<E>) : undefined;
}

// ---------------------------------------------------------------------------------------
// Google Drive (API v3)

const GOOGLE_EXPORTS: Record<string, { mimeType: string; extension: string }> = {
  'application/vnd.google-apps.document': { mimeType: 'text/plain', extension: 'txt' },
  'application/vnd.google-apps.presentation': { mimeType: 'text/plain', extension: 'txt' },
  'application/vnd.google-apps.spreadsheet': { mimeType: 'text/csv', extension: 'csv' },
};
const GOOGLE_FOLDER = 'application/vnd.google-apps.folder';

type DriveEntry = { id: string; depth: number; token?: string };

function googleDrive(target: DocumentStoreTarget): DocumentStore {
  return {
    async listPage(location, cursor) {
      const queue = readCursor<DriveEntry>(target, cursor)?.queue ?? [{ id: safeId(target, 'folder_id', location.folder_id ?? ''), depth: 0 }];
      const head = queue[0]!;
      const folder = safeId(target, 'folder_id', head.id);
      const query = new URLSearchParams({
        q: `'${folder}' in parents and trashed = false`,
        fields: 'nextPageToken,files(id,name,mimeType,modifiedTime,md5Checksum,size)',
        pageSize: '100',
        supportsAllDrives: 'true',
        includeItemsFromAllDrives: 'true',
        ...(head.token ? { pageToken: head.token } : {}),
      });
      const page = await json(target, `${target.baseUrl}/files?${query.toString()}`, `Folder ${folder}`);
      const documents: RemoteDocument[] = [];
      const rest = queue.slice(1);
      for (const file of (page.files ?? []) as Json[]) {
        if (typeof file?.id !== 'string' || typeof file.name !== 'string') continue;
        if (file.mimeType === GOOGLE_FOLDER) {
          if (SAFE_ID.test(file.id) && head.depth < MAX_DEPTH) rest.push({ id: file.id, depth: head.depth + 1 });
          continue;
        }
        const exported = GOOGLE_EXPORTS[file.mimeType];
        if (String(file.mimeType ?? '').startsWith('application/vnd.google-apps.') && !exported) continue;
        documents.push({
          id: file.id,
          name: exported ? `${file.name}.${exported.extension}` : file.name,
          version: `${file.modifiedTime ?? ''}${file.md5Checksum ? `#${file.md5Checksum}` : ''}`,
          mimeType: exported ? exported.mimeType : file.mimeType,
          ...(file.size !== undefined ? { size: Number(file.size) } : {}),
          ...(exported ? { hint: file.mimeType } : {}),
        });
      }
      const token = typeof page.nextPageToken === 'string' && page.nextPageToken ? page.nextPageToken : undefined;
      // The folder's next page first (its subfolders wait behind it), else the next folder.
      return { documents, next: nextCursor(target, token ? [{ ...head, token }, ...rest] : rest) };
    },
    async fetch(document) {
      const id = encodeURIComponent(safeId(target, 'file id', document.id));
      const exported = document.hint ? GOOGLE_EXPORTS[document.hint] : undefined;
      const url = exported
        ? `${target.baseUrl}/files/${id}/export?mimeType=${encodeURIComponent(exported.mimeType)}`
        : `${target.baseUrl}/files/${id}?alt=media&supportsAllDrives=true`;
      const response = await request(target, url, { accept: '*/*', maxBytes: target.maxDocumentBytes, timeoutMs: FETCH_TIMEOUT_MS });
      const body = await readBytes(target, response, document.name);
      if (response.status !== 200) throw failure(target, response.status, `Document ${document.name}`);
      return { body, contentType: exported?.mimeType ?? document.mimeType ?? response.headers.get('content-type') ?? 'application/octet-stream' };
    },
  };
}

// ---------------------------------------------------------------------------------------
// SharePoint and OneDrive (Microsoft Graph v1.0)

type GraphEntry = { url: string; depth: number };
const GRAPH_SELECT = '$select=id,name,file,folder,eTag,cTag,lastModifiedDateTime,size,parentReference&$top=200';

function microsoftGraph(target: DocumentStoreTarget): DocumentStore {
  const origin = new URL(target.baseUrl).origin;
  return {
    async listPage(location, cursor) {
      const drive = location.drive_id ? `/drives/${encodeURIComponent(safeId(target, 'drive_id', location.drive_id))}` : '/me/drive';
      const folder = location.folder_id ? `/items/${encodeURIComponent(safeId(target, 'folder_id', location.folder_id))}` : '/root';
      const queue = readCursor<GraphEntry>(target, cursor)?.queue ?? [{ url: `${target.baseUrl}${drive}${folder}/children?${GRAPH_SELECT}`, depth: 0 }];
      const head = queue[0]!;
      // Every URL walked is on the API's own origin (next links are checked when followed; a kept cursor again here).
      if (new URL(head.url).origin !== origin) throw new DocumentVendorFailed(target.provider, 'the listing cursor is not valid');
      const page = await json(target, head.url, 'Folder');
      const documents: RemoteDocument[] = [];
      const rest = queue.slice(1);
      for (const item of (page.value ?? []) as Json[]) {
        if (typeof item?.id !== 'string' || typeof item.name !== 'string') continue;
        const driveId = String(item.parentReference?.driveId ?? location.drive_id ?? '');
        if (item.folder) {
          if (SAFE_ID.test(item.id) && SAFE_ID.test(driveId) && head.depth < MAX_DEPTH) {
            rest.push({ url: `${target.baseUrl}/drives/${encodeURIComponent(driveId)}/items/${encodeURIComponent(item.id)}/children?${GRAPH_SELECT}`, depth: head.depth + 1 });
          }
          continue;
        }
        if (!item.file) continue;
        documents.push({
          id: item.id,
          name: item.name,
          version: String(item.cTag ?? item.eTag ?? item.lastModifiedDateTime ?? ''),
          mimeType: item.file.mimeType,
          ...(item.size !== undefined ? { size: Number(item.size) } : {}),
          hint: driveId,
        });
      }
      // Graph's next page is an absolute URL: followed only on the API's own origin.
      const nextLink: unknown = page['@odata.nextLink'];
      const next = typeof nextLink === 'string' && URL.canParse(nextLink) && new URL(nextLink).origin === origin ? nextLink : undefined;
      return { documents, next: nextCursor(target, next ? [{ url: next, depth: head.depth }, ...rest] : rest) };
    },
    async fetch(document) {
      const item = encodeURIComponent(safeId(target, 'item id', document.id));
      const drive = document.hint && SAFE_ID.test(document.hint) ? `/drives/${encodeURIComponent(document.hint)}` : '/me/drive';
      let response = await request(target, `${target.baseUrl}${drive}/items/${item}/content`, { accept: '*/*', maxBytes: target.maxDocumentBytes, timeoutMs: FETCH_TIMEOUT_MS });
      // Graph answers 302 to a short-lived pre-authenticated download URL: one hop, without the token, through the guard.
      const location = response.headers.get('location');
      if (response.status >= 300 && response.status < 400 && location) {
        await response.arrayBuffer().catch(() => undefined);
        response = await request(target, new URL(location, target.baseUrl).toString(), { accept: '*/*', auth: false, maxBytes: target.maxDocumentBytes, timeoutMs: FETCH_TIMEOUT_MS });
      }
      const body = await readBytes(target, response, document.name);
      if (response.status !== 200) throw failure(target, response.status, `Document ${document.name}`);
      return { body, contentType: document.mimeType ?? response.headers.get('content-type') ?? 'application/octet-stream' };
    },
  };
}

// ---------------------------------------------------------------------------------------
// Notion (API version 2022-06-28)

const NOTION_VERSION = '2022-06-28';
const NOTION_TEXT_BLOCKS: Record<string, string> = {
  paragraph: '',
  heading_1: '# ',
  heading_2: '## ',
  heading_3: '### ',
  bulleted_list_item: '- ',
  numbered_list_item: '1. ',
  to_do: '- ',
  quote: '> ',
  callout: '',
  toggle: '',
  code: '',
};

const plainText = (richText: unknown): string =>
  Array.isArray(richText) ? richText.map((part: Json) => (typeof part?.plain_text === 'string' ? part.plain_text : '')).join('') : '';

type NotionEntry = { kind: 'blocks' | 'database'; id: string; depth: number; cursor?: string };
/** A database page's properties kept as text, at most. */
const MAX_PREFACE_CHARS = 4000;

/** A Notion property's value as text (the types a knowledge base can use); '' for the others and the title. */
function propertyValue(property: Json): string {
  switch (property?.type) {
    case 'rich_text':
      return plainText(property.rich_text);
    case 'number':
      return typeof property.number === 'number' ? String(property.number) : '';
    case 'select':
    case 'status':
      return typeof property[property.type]?.name === 'string' ? property[property.type].name : '';
    case 'multi_select':
      return Array.isArray(property.multi_select) ? property.multi_select.map((option: Json) => option?.name).filter((name: unknown) => typeof name === 'string').join(', ') : '';
    case 'checkbox':
      return property.checkbox === true ? 'yes' : property.checkbox === false ? 'no' : '';
    case 'date':
      return typeof property.date?.start === 'string' ? property.date.start + (typeof property.date.end === 'string' ? ` to ${property.date.end}` : '') : '';
    case 'url':
    case 'email':
    case 'phone_number':
      return typeof property[property.type] === 'string' ? property[property.type] : '';
    default:
      return '';
  }
}

function notion(target: DocumentStoreTarget): DocumentStore {
  const headers = { 'notion-version': NOTION_VERSION };
  const children = async (blockId: string): Promise<Json[]> => {
    const blocks: Json[] = [];
    let cursor: string | undefined;
    do {
      const query = new URLSearchParams({ page_size: '100', ...(cursor ? { start_cursor: cursor } : {}) });
      const page = await json(target, `${target.baseUrl}/blocks/${encodeURIComponent(safeId(target, 'block id', blockId))}/children?${query.toString()}`, `Page ${blockId}`, headers);
      blocks.push(...((page.results ?? []) as Json[]));
      cursor = page.has_more && typeof page.next_cursor === 'string' ? page.next_cursor : undefined;
      if (blocks.length > 5000) break;
    } while (cursor);
    return blocks;
  };
  const titleOf = (page: Json): string => {
    for (const property of Object.values(page?.properties ?? {}) as Json[]) {
      if (property?.type === 'title') return plainText(property.title);
    }
    return '';
  };
  const fileName = (title: string, id: string) => `${(title || id).replace(/[\\/\n\r]+/g, ' ').slice(0, 150)}.md`;
  /** A database page's properties other than its title, as `Name: value` lines (what a row holds). */
  const propertiesText = (page: Json): string => {
    const lines: string[] = [];
    for (const [name, property] of Object.entries((page?.properties ?? {}) as Record<string, Json>)) {
      const value = propertyValue(property);
      if (value) lines.push(`${name}: ${value}`);
      if (lines.join('\n').length > MAX_PREFACE_CHARS) break;
    }
    return lines.join('\n').slice(0, MAX_PREFACE_CHARS);
  };
  const pageDocument = (id: string, title: string, edited: unknown, preface?: string): RemoteDocument => ({
    id,
    name: fileName(title, id),
    version: String(edited ?? ''),
    mimeType: 'text/markdown',
    hint: title,
    ...(preface ? { preface } : {}),
  });
  return {
    async listPage(location, cursor) {
      const walk = readCursor<NotionEntry>(target, cursor);
      let queue: NotionEntry[];
      const documents: RemoteDocument[] = [];
      if (!walk) {
        if (location.database_id) {
          queue = [{ kind: 'database', id: safeId(target, 'database_id', location.database_id), depth: 0 }];
        } else {
          // The first page of a page location is the page itself; its blocks come next.
          const root = safeId(target, 'page_id', location.page_id ?? '');
          const page = await json(target, `${target.baseUrl}/pages/${encodeURIComponent(root)}`, `Page ${root}`, headers);
          documents.push(pageDocument(root, titleOf(page), page.last_edited_time));
          return { documents, next: nextCursor<NotionEntry>(target, MAX_DEPTH > 0 ? [{ kind: 'blocks', id: root, depth: 0 }] : []) };
        }
      } else queue = walk.queue;
      const head = queue[0]!;
      const rest = queue.slice(1);
      const id = encodeURIComponent(safeId(target, 'block id', head.id));
      let page: Json;
      if (head.kind === 'database') {
        page = await json(target, `${target.baseUrl}/databases/${id}/query`, `Database ${head.id}`, headers, { page_size: 100, ...(head.cursor ? { start_cursor: head.cursor } : {}) });
        for (const row of (page.results ?? []) as Json[]) {
          if (row?.object !== 'page' || typeof row.id !== 'string' || !SAFE_ID.test(row.id) || row.archived || row.in_trash) continue;
          documents.push(pageDocument(row.id, titleOf(row), row.last_edited_time, propertiesText(row)));
          if (head.depth + 1 < MAX_DEPTH) rest.push({ kind: 'blocks', id: row.id, depth: head.depth + 1 });
        }
      } else {
        const query = new URLSearchParams({ page_size: '100', ...(head.cursor ? { start_cursor: head.cursor } : {}) });
        page = await json(target, `${target.baseUrl}/blocks/${id}/children?${query.toString()}`, `Page ${head.id}`, headers);
        for (const block of (page.results ?? []) as Json[]) {
          if (typeof block?.id !== 'string' || !SAFE_ID.test(block.id)) continue;
          if (block.type === 'child_page') {
            const childTitle = String(block.child_page?.title ?? '');
            documents.push(pageDocument(block.id, childTitle, block.last_edited_time));
            if (head.depth + 1 < MAX_DEPTH) rest.push({ kind: 'blocks', id: block.id, depth: head.depth + 1 });
          } else if (block.type === 'child_database') {
            // A database inside the page: its pages are documents one level down, like child pages.
            rest.push({ kind: 'database', id: block.id, depth: head.depth });
          }
        }
      }
      const more = page.has_more && typeof page.next_cursor === 'string' ? page.next_cursor : undefined;
      return { documents, next: nextCursor(target, more ? [{ ...head, cursor: more }, ...rest] : rest) };
    },
    async fetch(document) {
      const lines: string[] = [...(document.hint ? [`# ${document.hint}`, ''] : []), ...(document.preface ? [document.preface, ''] : [])];
      let size = 0;
      const walk = async (blockId: string, depth: number) => {
        for (const block of await children(blockId)) {
          const prefix = NOTION_TEXT_BLOCKS[block?.type];
          if (prefix !== undefined) {
            const text = plainText(block[block.type]?.rich_text);
            if (text) {
              lines.push(`${'  '.repeat(depth)}${prefix}${text}`);
              size += text.length;
              if (size > target.maxDocumentBytes) {
                throw new DocumentVendorFailed(target.provider, `${document.name} exceeds the ${target.maxDocumentBytes / 1024 / 1024} MB limit per file`, 'too_large');
              }
            }
          }
          // Child pages are documents of their own; other nested blocks are part of this one.
          if (block?.has_children && block.type !== 'child_page' && block.type !== 'child_database' && depth < MAX_DEPTH) await walk(block.id, depth + 1);
        }
      };
      await walk(document.id, 0);
      return { body: Buffer.from(lines.join('\n'), 'utf8'), contentType: 'text/markdown' };
    },
  };
}

// ---------------------------------------------------------------------------------------
// The mock store (connections made through the built-in mock OAuth provider)

const MOCK_NAMES: Record<DocumentProvider, string> = { google_drive: 'Google Drive', sharepoint: 'SharePoint', notion: 'Notion' };

function mockStore(provider: DocumentProvider): DocumentStore {
  const documents: RemoteDocument[] = [
    { id: 'mock-welcome', name: 'Welcome.md', version: 'mock-1', mimeType: 'text/markdown' },
    { id: 'mock-faq', name: 'FAQ.txt', version: 'mock-1', mimeType: 'text/plain' },
  ];
  return {
    async listPage() {
      return { documents };
    },
    async fetch(document) {
      const text =
        document.id === 'mock-welcome'
          ? `# Welcome\n\nThis is a mock ${MOCK_NAMES[provider]} document: the connection was made through Parley's built-in mock provider, so no real account is read.`
          : `Mock ${MOCK_NAMES[provider]} FAQ: configure the provider's OAuth client to sync real documents.`;
      return { body: Buffer.from(text, 'utf8'), contentType: document.mimeType ?? 'text/plain' };
    },
  };
}
