import { AppVendorFailed, call, type AppTarget, type Json } from './core.ts';

/*
 * The `search_documents` tool of the knowledge apps: a full-text search in the document
 * store the app is connected to, answered as one list of documents (ID, name, link, last
 * change and, where the vendor gives one, a snippet). Google Drive: files.list with
 * `fullText contains`; SharePoint and OneDrive: the Microsoft Search API over drive items;
 * Notion: the search endpoint over the pages shared with the integration. The base URL is
 * the provider's API base (`<PREFIX>_API_BASE_URL` overrides it), every request through the
 * egress guard as every app call.
 */

const SEARCH_LIMIT = 10;

interface FoundDocument {
  id: string;
  name: string;
  url?: string;
  modified?: string;
  snippet?: string;
  mime_type?: string;
}

export interface DocumentSearchResult {
  query: string;
  documents: FoundDocument[];
}

/** A Drive query string literal: backslashes and single quotes escaped. */
const driveLiteral = (value: string) => `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;

const text = (value: unknown) => (typeof value === 'string' && value ? value : undefined);

function document(fields: { id: unknown; name: unknown; url?: unknown; modified?: unknown; snippet?: unknown; mime_type?: unknown }): FoundDocument | undefined {
  const id = text(fields.id);
  if (!id) return undefined;
  return {
    id,
    name: text(fields.name) ?? id,
    ...(text(fields.url) ? { url: text(fields.url) } : {}),
    ...(text(fields.modified) ? { modified: text(fields.modified) } : {}),
    ...(text(fields.snippet) ? { snippet: text(fields.snippet) } : {}),
    ...(text(fields.mime_type) ? { mime_type: text(fields.mime_type) } : {}),
  };
}

const notionTitle = (page: Json): string | undefined => {
  for (const property of Object.values(page?.properties ?? {}) as Json[]) {
    if (property?.type === 'title' && Array.isArray(property.title)) return property.title.map((part: Json) => String(part?.plain_text ?? '')).join('');
  }
  return undefined;
};

/** Searches the store behind a knowledge app for `query` (at most SEARCH_LIMIT documents). */
export async function searchDocuments(target: AppTarget, query: string): Promise<DocumentSearchResult> {
  let found: (FoundDocument | undefined)[];
  switch (target.provider) {
    case 'google_drive': {
      const params = new URLSearchParams({
        q: `fullText contains ${driveLiteral(query)} and trashed = false`,
        fields: 'files(id,name,mimeType,modifiedTime,webViewLink)',
        pageSize: String(SEARCH_LIMIT),
        supportsAllDrives: 'true',
        includeItemsFromAllDrives: 'true',
      });
      const answer = await call(target, 'GET', `/files?${params.toString()}`);
      found = ((answer.files ?? []) as Json[]).map((file) =>
        document({ id: file?.id, name: file?.name, url: file?.webViewLink, modified: file?.modifiedTime, mime_type: file?.mimeType }),
      );
      break;
    }
    case 'sharepoint': {
      const answer = await call(target, 'POST', '/search/query', {
        requests: [{ entityTypes: ['driveItem'], query: { queryString: query }, from: 0, size: SEARCH_LIMIT }],
      });
      const hits = ((answer.value?.[0]?.hitsContainers ?? []) as Json[]).flatMap((container) => (container?.hits ?? []) as Json[]);
      found = hits.map((hit) =>
        document({
          id: hit?.resource?.id ?? hit?.hitId,
          name: hit?.resource?.name,
          url: hit?.resource?.webUrl,
          modified: hit?.resource?.lastModifiedDateTime,
          snippet: typeof hit?.summary === 'string' ? hit.summary.replace(/<\/?c0>|<ddd\/>/g, '') : undefined,
        }),
      );
      break;
    }
    case 'notion': {
      const answer = await call(
        target,
        'POST',
        '/search',
        { query, filter: { property: 'object', value: 'page' }, page_size: SEARCH_LIMIT },
        { 'notion-version': '2022-06-28' },
      );
      found = ((answer.results ?? []) as Json[]).map((page) => document({ id: page?.id, name: notionTitle(page), url: page?.url, modified: page?.last_edited_time }));
      break;
    }
    default:
      throw new AppVendorFailed(target.provider, 'not a document store');
  }
  return { query, documents: found.filter((entry): entry is FoundDocument => entry !== undefined).slice(0, SEARCH_LIMIT) };
}

/** What the mock provider's knowledge apps find: the mock store's two documents, when the query names them. */
export function mockSearch(provider: string, query: string): DocumentSearchResult {
  const documents = [
    { id: 'mock-welcome', name: 'Welcome.md', snippet: `A mock ${provider} document: no real account is read.` },
    { id: 'mock-faq', name: 'FAQ.txt', snippet: `Mock ${provider} FAQ.` },
  ];
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return { query, documents: documents.filter((entry) => words.length === 0 || words.some((word) => `${entry.name} ${entry.snippet}`.toLowerCase().includes(word))) };
}

/** One minimal authenticated call to the document store (test-app-auth of a knowledge app). */
export async function testDocumentAuth(target: AppTarget): Promise<void> {
  switch (target.provider) {
    case 'google_drive':
      await call(target, 'GET', '/about?fields=user');
      return;
    case 'sharepoint':
      await call(target, 'GET', '/me?$select=id');
      return;
    case 'notion':
      await call(target, 'GET', '/users/me', undefined, { 'notion-version': '2022-06-28' });
      return;
    default:
      throw new AppVendorFailed(target.provider, 'not a document store');
  }
}
