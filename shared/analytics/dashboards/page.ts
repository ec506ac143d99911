import type { Principal } from '../../platform/auth/gate.ts';
import { cookieValue, SESSION_COOKIE, verifySessionToken } from '../../platform/auth/sessions.ts';
import { MediaResponse } from '../../platform/http/handler.ts';
import type { RequestInfo } from '../../platform/http/route.ts';
import { webManifest, type WebAsset } from '../../meta/index.ts';
import { getDashboardItem } from './store.ts';

/**
 * The dashboard page, `GET /dashboards/{dashboard_id}/page` (docs/browser.md, "The dashboard
 * page"): static HTML naming the hashed page files (web/dashboard/, served at `/static/…` by
 * the meta function), with a strict Content-Security-Policy. The script reads the dashboard
 * and runs its widgets' queries with the member's session cookie, and draws them. Nothing of
 * the dashboard is written into the HTML; the one value that is, the session's CSRF token,
 * is what the script echoes in `x-csrf-token` on the query's POST (the cookie is HttpOnly,
 * so the page cannot read it from there). The dashboard is read first, so an unknown ID or
 * another workspace's answers 404 like the API.
 */

/** Where the page's files are, relative to `/dashboards/{id}/page` (so any base path works). */
const ASSETS_PATH = '../../static/';

/** Only the page's own origin: no inline script or style, no other host, no framing, forms or plugins. */
const DASHBOARD_CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const escapeAttribute = (value: string) => value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

const assetUrl = (asset: WebAsset) => `${ASSETS_PATH}${escapeAttribute(asset.file)}`;

function pageHtml(csrfToken: string | undefined): string {
  const { files } = webManifest();
  const css = files['dashboard.css']!;
  const js = files['dashboard.js']!;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
${csrfToken ? `<meta name="parley-csrf-token" content="${escapeAttribute(csrfToken)}">\n` : ''}<title>Dashboard</title>
<link rel="stylesheet" href="${assetUrl(css)}" integrity="${escapeAttribute(css.integrity)}">
<script src="${assetUrl(js)}" integrity="${escapeAttribute(js.integrity)}" defer></script>
</head>
<body>
<main id="dashboard" data-state="loading" aria-labelledby="dashboard-name">
<header>
<h1 id="dashboard-name">Dashboard</h1>
<p id="description" hidden></p>
</header>
<p id="status" role="status" aria-live="polite">Loading…</p>
<div id="widgets" class="widgets"></div>
<noscript><p>This page needs JavaScript to draw the dashboard.</p></noscript>
</main>
</body>
</html>
`;
}

/** The CSRF token of the session cookie the request came with (none for a bearer credential: it needs none). */
async function cookieCsrfToken(principal: Principal, request: RequestInfo): Promise<string | undefined> {
  if (!principal.member?.viaCookie) return undefined;
  const token = cookieValue(request.cookie, SESSION_COOKIE);
  return token ? (await verifySessionToken(token))?.csrf : undefined;
}

/** The page, once the dashboard is found in the caller's workspace; never stored by caches (it carries the CSRF token). */
export async function dashboardPage(principal: Principal, dashboardId: string, request: RequestInfo): Promise<MediaResponse> {
  await getDashboardItem(principal.workspaceId, dashboardId);
  return new MediaResponse('text/html; charset=utf-8', pageHtml(await cookieCsrfToken(principal, request)), {
    'cache-control': 'no-store',
    'content-security-policy': DASHBOARD_CONTENT_SECURITY_POLICY,
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'permissions-policy': 'camera=(), microphone=(), geolocation=()',
  });
}
