import { createHash } from 'node:crypto';
import { MediaResponse } from '../platform/http/handler.ts';

/*
 * GET /widget.js (docs/browser.md): the chat widget's script, built from web/widget/ into a
 * checked-in file (scripts/build-widget.ts; a test holds it to its source). Its URL has no
 * hash (customers paste one script tag), so browsers keep it five minutes and then ask again
 * with If-None-Match: the ETag is the content's SHA-256, and an unchanged script is a 304.
 */

const CACHE_CONTROL = 'public, max-age=300, stale-while-revalidate=86400';

const etags = new Map<string, string>();
const etagOf = (script: string) => {
  let etag = etags.get(script);
  if (!etag) {
    etag = `"${createHash('sha256').update(script, 'utf8').digest('base64url')}"`;
    etags.set(script, etag);
  }
  return etag;
};

/** The script, or a 304 when the browser's copy (If-None-Match) is this one. */
export function widgetResponse(script: string, ifNoneMatch: string | undefined): MediaResponse {
  const etag = etagOf(script);
  const headers = { etag, 'cache-control': CACHE_CONTROL, 'x-content-type-options': 'nosniff' };
  const matches = (ifNoneMatch ?? '').split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag || tag.trim() === '*');
  if (matches) return new MediaResponse('text/javascript; charset=utf-8', '', headers, 304);
  return new MediaResponse('text/javascript; charset=utf-8', script, headers);
}
