import { mkdirSync } from 'node:fs';
import type { Page, Route } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { queryRoutes } from '../../shared/analytics/query/routes.ts';
import { AnalyticsQueryBody, AnalyticsQueryResponse } from '../../shared/analytics/query/schemas.ts';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { builtWebAssets, cspViolations, newPage, seriousAxeViolations } from '../support/web-browser.ts';

/*
 * The dashboard page, `GET /dashboards/{dashboard_id}/page`, served by the analytics function
 * from a build of the browser files made for this file, opened in headless Chromium by a
 * signed-in member (the session cookie, as the dashboard app sets it). The page reads the
 * dashboard from the app and posts its widgets' queries to `POST /analytics/query`. The
 * browser answers that POST with fixed figures, so the drawing is checked against known
 * values; when the route exists, the page's request also goes to the app first and must be
 * answered 200 in the response's shape (a member's cookie and CSRF token). PARLEY_SCREENSHOTS=<folder>
 * saves the screenshot docs/analytics.md shows.
 */
let app: TestApp;
let workspace: Awaited<ReturnType<TestApp['newWorkspace']>>;
let dashboardId: string;
let session: { session_token: string };
const screenshots = process.env.PARLEY_SCREENSHOTS;
const queryRouteExists = Object.values(queryRoutes as Record<string, { method: string; path: string }>).some((route) => route.method === 'POST' && route.path === '/analytics/query');

const START = Date.UTC(2026, 10, 23);
const DAY = 86_400_000;
const RANGE = { start_timestamp: START, end_timestamp: START + 7 * DAY };
const AGENTS = ['agent_0a1b2c3d4e5f60718293a4b5', 'agent_9f8e7d6c5b4a39281706f5e4'];

const WIDGETS = [
  { title: 'Calls this week', type: 'number', query: { table: 'calls', time_range: RANGE, operations: [{ operation: 'count' }] } },
  { title: 'Calls a day by agent', type: 'line', query: { table: 'calls', time_range: { ...RANGE, step: 'day', timezone: 'UTC' }, group_by: ['agent_id'], operations: [{ operation: 'count', alias: 'calls' }] } },
  { title: 'Minutes a day', type: 'bar', query: { table: 'calls', time_range: { ...RANGE, step: 'day', timezone: 'UTC' }, operations: [{ operation: 'sum', column: 'duration_ms' }] } },
  { title: 'Sentiment', type: 'pie', query: { table: 'calls', time_range: RANGE, group_by: ['user_sentiment'], operations: [{ operation: 'count' }] } },
  { title: 'Latency by agent', type: 'table', query: { table: 'calls', time_range: RANGE, group_by: ['agent_id'], operations: [{ operation: 'p50', column: 'latency_ms' }, { operation: 'p90', column: 'latency_ms' }] } },
] as const;

const days = Array.from({ length: 7 }, (_, n) => ({ date: new Date(START + n * DAY).toISOString().slice(0, 10), bucket_start_timestamp: START + n * DAY }));

/** What POST /analytics/query answers here: one result per query, in order, with known figures. */
function fixedAnswer(): unknown {
  const range = (step?: string) => ({ start_timestamp: RANGE.start_timestamp, end_timestamp: RANGE.end_timestamp, ...(step ? { step } : {}), timezone: 'UTC' });
  const week = { date: days[0]!.date, bucket_start_timestamp: START };
  return {
    results: [
      { table: 'calls', time_range: range(), result: [{ ...week, count: 742 }] },
      { table: 'calls', time_range: range('day'), result: days.flatMap((day, n) => AGENTS.map((agent, a) => ({ ...day, agent_id: agent, calls: 40 + ((n * 17 + a * 29) % 45) }))) },
      { table: 'calls', time_range: range('day'), result: days.map((day, n) => ({ ...day, sum_duration_ms: 3_600_000 + n * 900_000 })) },
      {
        table: 'calls',
        time_range: range(),
        result: [
          { ...week, user_sentiment: 'Positive', count: 412 },
          { ...week, user_sentiment: 'Neutral', count: 221 },
          { ...week, user_sentiment: 'Negative', count: 109 },
        ],
      },
      { table: 'calls', time_range: range(), result: AGENTS.map((agent, a) => ({ ...week, agent_id: agent, p50_latency_ms: 420 + a * 95, p90_latency_ms: 760 + a * 110 })) },
    ],
  };
}

beforeAll(async () => {
  const { dir } = await builtWebAssets();
  app = await startTestApp({ WEB_ASSETS_DIR: dir });
  workspace = await app.newWorkspace();
  expect((await workspace.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } })).status).toBe(201);
  expect((await workspace.api.post('/workspace/members', { body: { email: 'viewer@example.com', role: 'member' } })).status).toBe(201);
  session = await createSessionFor(workspace.workspace_id, 'viewer@example.com');
  const created = await workspace.api.post('/dashboards', { body: { name: 'Front desk, this week', description: 'Calls, minutes, sentiment and latency of the two front-desk agents', widgets: WIDGETS } });
  expect(created.status).toBe(201);
  dashboardId = created.body.dashboard_id;
  if (screenshots) mkdirSync(screenshots, { recursive: true });
}, 90_000);

const csrfOf = (token: string) => (JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { csrf: string }).csrf;

/** A page signed in as the member: the session cookie as the dashboard app sets it (not Secure: the test app is plain HTTP). */
async function signedInPage(): Promise<Page> {
  const page = await newPage();
  await page.context().addCookies([{ name: 'parley_session', value: session.session_token, url: app.url, httpOnly: true, sameSite: 'Strict' }]);
  await page.setViewportSize({ width: 1280, height: 1100 });
  return page;
}

/** How many of a canvas's pixels something was drawn on. */
const paintedPixels = (page: Page, selector: string) =>
  page.$eval(selector, (canvas) => {
    const element = canvas as unknown as { width: number; height: number; getContext(kind: '2d'): { getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray } } };
    const { data } = element.getContext('2d').getImageData(0, 0, element.width, element.height);
    let painted = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i]! > 0) painted += 1;
    return painted;
  });

describe('GET /dashboards/{dashboard_id}/page', () => {
  it('answers the page uncached with a strict policy, naming its hashed files, and the CSRF token only for a cookie', async () => {
    const byCookie = await fetch(`${app.url}/dashboards/${dashboardId}/page`, { headers: { cookie: `parley_session=${session.session_token}` } });
    expect(byCookie.status).toBe(200);
    expect(byCookie.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(byCookie.headers.get('cache-control')).toBe('no-store');
    expect(byCookie.headers.get('content-security-policy')).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(byCookie.headers.get('access-control-allow-origin')).toBeNull();
    const html = await byCookie.text();
    expect(html).toContain(`<meta name="parley-csrf-token" content="${csrfOf(session.session_token)}">`);
    expect(html).not.toContain('Front desk');
    const files = [...html.matchAll(/(?:src|href)="\.\.\/\.\.\/static\/([^"]+)" integrity="sha384-[\w+/=]+"/g)].map((match) => match[1]!);
    expect(files.map((file) => file.replace(/\.[0-9a-f]{16}\./, '.'))).toEqual(['dashboard.css', 'dashboard.js']);
    for (const file of files) expect((await workspace.api.get(`/static/${file}`)).status).toBe(200);

    const byKey = await workspace.api.get(`/dashboards/${dashboardId}/page`);
    expect(byKey.status).toBe(200);
    expect(byKey.text).not.toContain('parley-csrf-token');
    const signedOut = await fetch(`${app.url}/dashboards/${dashboardId}/page`);
    expect(signedOut.status).toBe(401);
    expect(await signedOut.json()).toEqual({ status: 401, message: 'Missing or invalid API key / session' });
  });

  it("draws each widget for a signed-in member: the figure, the charts' canvases, the table, with no policy violation", async () => {
    const page = await signedInPage();
    const posted: { headers: Record<string, string>; body: unknown; upstream?: { status: number; shaped: boolean } }[] = [];
    await page.route('**/analytics/query', async (route: Route) => {
      const request = route.request();
      const sent: (typeof posted)[number] = { headers: request.headers(), body: request.postDataJSON() as unknown };
      if (queryRouteExists) {
        const upstream = await route.fetch();
        sent.upstream = { status: upstream.status(), shaped: AnalyticsQueryResponse.safeParse(await upstream.json().catch(() => undefined)).success };
      }
      posted.push(sent);
      await route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(fixedAnswer()) });
    });
    const dashboardRead = page.waitForResponse((response) => response.url().endsWith(`/dashboards/${dashboardId}`));
    await page.goto(`${app.url}/dashboards/${dashboardId}/page`);
    expect((await dashboardRead).status()).toBe(200);
    await expect.poll(() => page.getAttribute('main', 'data-state'), { timeout: 15_000 }).toBe('ready');

    expect(await page.textContent('h1')).toBe('Front desk, this week');
    expect(await page.title()).toBe('Front desk, this week');
    expect(await page.textContent('#description')).toBe('Calls, minutes, sentiment and latency of the two front-desk agents');
    expect(await page.textContent('#status')).toBe('');
    expect(await page.$$eval('.widget h2', (headings) => headings.map((heading) => heading.textContent))).toEqual(WIDGETS.map((widget) => widget.title));
    expect(await page.$$eval('.widget', (cards) => cards.map((card) => (card as unknown as { dataset: Record<string, string> }).dataset.state))).toEqual(WIDGETS.map(() => 'drawn'));

    // The request: every widget's query in one POST, with the session's CSRF token.
    expect(posted).toHaveLength(1);
    expect(posted[0]!.headers['x-csrf-token']).toBe(csrfOf(session.session_token));
    expect(posted[0]!.headers['content-type']).toBe('application/json');
    expect(AnalyticsQueryBody.parse(posted[0]!.body)).toEqual({ queries: WIDGETS.map((widget) => widget.query) });
    if (queryRouteExists) expect(posted[0]!.upstream).toEqual({ status: 200, shaped: true });

    expect(await page.textContent('.widget[data-type="number"] .figure')).toBe('742');
    for (const type of ['line', 'bar', 'pie']) {
      expect(await page.locator(`.widget[data-type="${type}"] canvas`).count()).toBe(1);
      expect(await paintedPixels(page, `.widget[data-type="${type}"] canvas`)).toBeGreaterThan(1000);
    }
    expect(await page.$$eval('.widget[data-type="table"] th', (cells) => cells.map((cell) => cell.textContent))).toEqual(['agent_id', 'p50_latency_ms', 'p90_latency_ms']);
    expect(await page.$$eval('.widget[data-type="table"] tbody tr', (rows) => rows.map((row) => [...(row as unknown as { cells: { textContent: string }[] }).cells].map((cell) => cell.textContent)))).toEqual([
      [AGENTS[0], '420', '760'],
      [AGENTS[1], '515', '870'],
    ]);

    expect(await cspViolations(page)).toEqual([]);
    expect(await seriousAxeViolations(page)).toEqual([]);
    if (screenshots) await page.screenshot({ path: `${screenshots}/dashboard.png`, fullPage: true });
    await page.context().close();
  }, 60_000);

  it('says so when the session has ended', async () => {
    const page = await signedInPage();
    await page.route(`**/dashboards/${dashboardId}`, (route) => route.fulfill({ status: 401, contentType: 'application/json', body: JSON.stringify({ status: 401, message: 'Missing or invalid API key / session' }) }));
    await page.goto(`${app.url}/dashboards/${dashboardId}/page`);
    await expect.poll(() => page.getAttribute('main', 'data-state'), { timeout: 15_000 }).toBe('failed');
    expect(await page.textContent('#status')).toBe('Your session has ended: sign in again, then reload this page.');
    expect(await page.locator('.widget').count()).toBe(0);
    expect(await cspViolations(page)).toEqual([]);
    await page.context().close();
  });
});
