import type { Principal } from '../../platform/auth/gate.ts';
import { cookieValue, SESSION_COOKIE, verifySessionToken } from '../../platform/auth/sessions.ts';
import type { MediaResponse } from '../../platform/http/handler.ts';
import { APP_PAGE_HEAD, appPage, appPageContentSecurityPolicy, escapeAttribute, scriptTag, stylesheetTag } from '../../platform/http/html-page.ts';
import type { RequestInfo } from '../../platform/http/route.ts';
import { webManifest } from '../../meta/index.ts';
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

/** The app page policy (html-page.ts): only the page's own origin, which the queries are posted to. */
const DASHBOARD_CONTENT_SECURITY_POLICY = appPageContentSecurityPolicy();

function pageHtml(csrfToken: string | undefined): string {
  const { files } = webManifest();
  const css = files['dashboard.css']!;
  const js = files['dashboard.js']!;
  return `<!doctype html>
<html lang="en">
<head>
${APP_PAGE_HEAD}
${csrfToken ? `<meta name="parley-csrf-token" content="${escapeAttribute(csrfToken)}">\n` : ''}<title>Dashboard</title>
${stylesheetTag(ASSETS_PATH, css)}
${scriptTag(ASSETS_PATH, js)}
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
  return appPage(pageHtml(await cookieCsrfToken(principal, request)), {
    cacheControl: 'no-store',
    contentSecurityPolicy: DASHBOARD_CONTENT_SECURITY_POLICY,
    permissionsPolicy: 'camera=(), microphone=(), geolocation=()',
  });
}
