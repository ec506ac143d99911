import { createHash } from 'node:crypto';
import { MediaResponse } from './handler.ts';

export { escapeHtml } from '../text/text.ts';

/*
 * The HTML pages Parley serves itself on the API's origin, of two kinds:
 * - small pages (the payments mock's checkout, the sign-in confirmations; `htmlPage`): no
 *   script and nothing loaded from anywhere, one inline style allowed by its hash, forms only
 *   to the origins named, never framed (a framed Continue or Pay button could be clicked
 *   through a page laid over it), never cached, no referrer;
 * - app pages (the Voice Orb, the dashboard page; `appPage`): static HTML naming the built,
 *   hashed page files (web/, served at `/static/…`), each with its integrity hash, under a
 *   policy allowing only the page's own origin and the sources the page names.
 */

export interface HtmlPage {
  /** Already escaped. */
  title: string;
  /** The inside of `<body>`, already escaped. */
  body: string;
  style: string;
  /** Where the page's forms may go (and be redirected): CSP `form-action` sources; none: `'none'`. */
  formAction?: readonly string[];
  /** Set-Cookie values, one cookie each. */
  cookies?: readonly string[];
}

const styleHash = (style: string) => createHash('sha256').update(style).digest('base64');

function pageContentSecurityPolicy(style: string, formAction: readonly string[] = []): string {
  const forms = formAction.length > 0 ? formAction.join(' ') : "'none'";
  return `default-src 'none'; style-src 'sha256-${styleHash(style)}'; form-action ${forms}; frame-ancestors 'none'; base-uri 'none'`;
}

export function htmlPage(page: HtmlPage): MediaResponse {
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${page.title}</title><style>${page.style}</style></head>
<body>${page.body}</body></html>
`;
  return new MediaResponse(
    'text/html; charset=utf-8',
    html,
    {
      'cache-control': 'no-store',
      'content-security-policy': pageContentSecurityPolicy(page.style, page.formAction),
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      // A page's URL may hold a token: never sent on to the next page.
      'referrer-policy': 'no-referrer',
    },
    undefined,
    page.cookies ?? [],
  );
}

/** A value made safe inside a double-quoted HTML attribute. */
export const escapeAttribute = (value: string): string => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

/** A built page file as the web manifest names it (shared/meta/web-assets.ts). */
interface PageFile {
  file: string;
  integrity: string;
}

/** A stylesheet's `<link>`, its URL under `assetsPath` (relative to the page) and its integrity hash. */
export const stylesheetTag = (assetsPath: string, asset: PageFile): string =>
  `<link rel="stylesheet" href="${assetsPath}${escapeAttribute(asset.file)}" integrity="${escapeAttribute(asset.integrity)}">`;

/** A script's deferred `<script>`, its URL under `assetsPath` and its integrity hash. */
export const scriptTag = (assetsPath: string, asset: PageFile): string =>
  `<script src="${assetsPath}${escapeAttribute(asset.file)}" integrity="${escapeAttribute(asset.integrity)}" defer></script>`;

/**
 * An app page's policy: only the page's own origin (no inline script or style, no other
 * host), no plugins, no `<base>`, no forms, never framed. `media` and `connect` add the
 * sources the page also needs (the Orb's audio elements and media server).
 */
export function appPageContentSecurityPolicy(extra: { media?: readonly string[]; connect?: readonly string[] } = {}): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    ...(extra.media ? [`media-src 'self' ${extra.media.join(' ')}`] : []),
    `connect-src ${["'self'", ...(extra.connect ?? [])].join(' ')}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The `<head>` lines every app page starts with: UTF-8, the viewport, no referrer, not indexed. */
export const APP_PAGE_HEAD = `<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">`;

/**
 * An app page's answer: its policy, `nosniff`, no referrer (a page's address may hold a
 * token), and the caching and permissions the page names (`no-store` for a page carrying a
 * session's CSRF token, `no-cache` for one naming the current build's files).
 */
export function appPage(html: string, page: { contentSecurityPolicy: string; cacheControl: 'no-store' | 'no-cache'; permissionsPolicy: string }): MediaResponse {
  return new MediaResponse('text/html; charset=utf-8', html, {
    'cache-control': page.cacheControl,
    'content-security-policy': page.contentSecurityPolicy,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'permissions-policy': page.permissionsPolicy,
  });
}
