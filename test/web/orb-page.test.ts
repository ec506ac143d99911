import { mkdirSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { builtWebAssets, cspViolations, newPage, readBody, seriousAxeViolations, serve } from '../support/web-browser.ts';

/**
 * The Voice Orb page, `GET /orb/{token}`, served by the meta function from a build of the
 * browser files made for this file, and opened in headless Chromium.
 *
 * The page calls the app's own `GET /public/share/{token}` and `POST /public/share/{token}/web-call`
 * through a front server on another port, which records the web-call answers it passes on.
 * Without a LiveKit server the web call's livekit_url is `livekit-server --dev`'s address, where
 * nothing listens, so the page must end in its "cannot reach the media server" state.
 * PARLEY_SCREENSHOTS=<folder> saves the screenshots docs/browser.md shows.
 */
let app: TestApp;
let front: string;
let agentId: string;
let token: string;
let revokedToken: string;
const webCallStatuses: number[] = [];
const screenshots = process.env.PARLEY_SCREENSHOTS;

const SHARE_PATH = /^\/public\/share\/([^/?]+)(\/web-call)?$/;

beforeAll(async () => {
  const { dir } = await builtWebAssets();
  app = await startTestApp({ WEB_ASSETS_DIR: dir });
  agentId = (await newAgent(app.api, { agent: { agent_name: 'Front desk' } })).agent.agent_id;
  token = (await app.api.post(`/agents/${agentId}/share-links`)).body.token;
  const revoked = (await app.api.post(`/agents/${agentId}/share-links`)).body;
  revokedToken = revoked.token;
  expect((await app.api.delete(`/share-links/${revoked.share_link_id}`)).status).toBe(204);

  front = await serve(async (req, res) => {
    const body = await readBody(req);
    const headers = Object.fromEntries(
      Object.entries(req.headers).filter(([name, value]) => typeof value === 'string' && !['host', 'connection', 'content-length'].includes(name)),
    ) as Record<string, string>;
    const upstream = await fetch(`${app.url}${req.url}`, { method: req.method, headers, body: body === '' ? undefined : body });
    const bytes = Buffer.from(await upstream.arrayBuffer());
    const match = (req.url ?? '').match(SHARE_PATH);
    if (match?.[2]) webCallStatuses.push(upstream.status);
    const passed: Record<string, string> = {};
    upstream.headers.forEach((value, name) => {
      if (!['content-encoding', 'content-length', 'transfer-encoding', 'connection', 'keep-alive'].includes(name)) passed[name] = value;
    });
    res.writeHead(upstream.status, passed).end(bytes);
  });
  if (screenshots) mkdirSync(screenshots, { recursive: true });
}, 90_000);

async function open(pageToken: string, viewport = { width: 1024, height: 768 }): Promise<Page> {
  const page = await newPage();
  await page.setViewportSize(viewport);
  await page.goto(`${front}/orb/${pageToken}`);
  return page;
}

const state = (page: Page) => page.getAttribute('main', 'data-state');

describe('GET /orb/{token}', () => {
  it('answers the page uncached with a strict policy, and its files under hashed names, immutable', async () => {
    const page = await app.api.get(`/orb/${token}`);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['content-security-policy']).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' blob:; " +
        "connect-src 'self' ws://127.0.0.1:7880 http://127.0.0.1:7880; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(page.headers['referrer-policy']).toBe('no-referrer');
    expect(page.text).not.toContain(token);
    const files = [...page.text.matchAll(/(?:src|href)="\.\.\/static\/([^"]+)" integrity="sha384-[\w+/=]+"/g)].map((match) => match[1]!);
    expect(files).toHaveLength(3);
    for (const file of files) {
      expect(file).toMatch(/^(orb|parley-web-sdk)\.[0-9a-f]{16}\.(js|css)$/);
      const asset = await app.api.get(`/static/${file}`);
      expect(asset.status).toBe(200);
      expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(asset.headers['content-type']).toBe(file.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8');
    }
    const manifest = await app.api.get('/static/manifest.json');
    expect(manifest.status).toBe(200);
    expect(manifest.headers['cache-control']).toBe('no-cache');
    expect(Object.keys(manifest.body.files).sort()).toEqual(['dashboard.css', 'dashboard.js', 'orb.css', 'orb.js', 'parley-web-sdk.js', 'parley-web-sdk.mjs']);
    expect((await app.api.get('/static/orb.js')).body).toEqual({ status: 404, message: 'Asset orb.js not found' });
    expect((await app.api.get('/static/..%2F..%2Fpackage.json')).status).toBe(404);
  });

  it("allows the media server web calls name: LiveKit's origin, or livekit-server --dev's without LIVEKIT_URL", async () => {
    // Imported after startTestApp: the settings (WEB_ASSETS_DIR) are read from the environment as the config module loads.
    const [{ LOCAL_MEDIA_URL, orbContentSecurityPolicy }, { LOCAL_LIVEKIT_URL }] = await Promise.all([
      import('../../shared/meta/orb-page.ts'),
      import('../../shared/vendors/media/web-call.ts'),
    ]);
    expect(LOCAL_MEDIA_URL).toBe(LOCAL_LIVEKIT_URL);
    expect(orbContentSecurityPolicy('wss://parley-abc.livekit.cloud')).toContain(
      "connect-src 'self' wss://parley-abc.livekit.cloud https://parley-abc.livekit.cloud wss://*.livekit.cloud https://*.livekit.cloud;",
    );
    expect(orbContentSecurityPolicy('wss://media.example.com:7443/rtc')).toContain("connect-src 'self' wss://media.example.com:7443 https://media.example.com:7443;");
  });

  it('says clearly that an unknown or revoked link is not available', async () => {
    for (const pageToken of ['no-such-token', revokedToken]) {
      const page = await open(pageToken);
      await expect.poll(() => state(page), { timeout: 15_000 }).toBe('unavailable');
      expect(await page.textContent('h1')).toBe('This link is not available');
      expect(await page.textContent('#status')).toBe('This share link is unknown or has been revoked. Ask whoever sent it for a new one.');
      expect(await page.isVisible('#call')).toBe(false);
      if (pageToken === revokedToken) expect(await seriousAxeViolations(page)).toEqual([]);
      expect(await cspViolations(page)).toEqual([]);
      if (screenshots && pageToken === revokedToken) await page.screenshot({ path: `${screenshots}/orb-unavailable.png` });
      await page.context().close();
    }
  });

  it("starts a web call (201), then says it cannot reach the media server when none runs", async () => {
    const page = await open(token);
    await expect.poll(() => state(page), { timeout: 15_000 }).toBe('ready');
    expect(await page.textContent('h1')).toBe('Front desk');
    expect(await page.title()).toBe('Talk to Front desk');
    expect(await page.textContent('#call')).toBe('Start call');
    expect(await seriousAxeViolations(page)).toEqual([]);
    if (screenshots) await page.screenshot({ path: `${screenshots}/orb-ready.png` });

    const created = page.waitForResponse((response) => response.url().endsWith(`/public/share/${token}/web-call`));
    await page.getByRole('button', { name: 'Start call' }).click();
    const response = await created;
    expect(response.status()).toBe(201);
    const call = (await response.json()) as { call_id: string; access_token: string; livekit_url: string };
    expect(call.livekit_url).toBe('ws://127.0.0.1:7880');
    expect(typeof call.access_token).toBe('string');
    expect((await app.api.get(`/v2/get-call/${call.call_id}`)).body).toMatchObject({ call_type: 'web_call', metadata: { source: 'voice_orb' } });

    await expect.poll(() => state(page), { timeout: 25_000 }).toBe('unreachable');
    expect(await page.textContent('#status')).toBe('Cannot reach the media server, so the call could not connect. Try again later.');
    expect(await page.textContent('#call')).toBe('Try again');
    expect(await page.isEnabled('#call')).toBe(true);
    expect(await seriousAxeViolations(page)).toEqual([]);
    // The attempt to reach the media server was allowed by the page's policy: it failed for want of a server.
    expect(await cspViolations(page)).toEqual([]);
    if (screenshots) await page.screenshot({ path: `${screenshots}/orb-unreachable.png` });
    await page.context().close();
    expect(webCallStatuses).toEqual([201]);
  }, 60_000);

  it('fits a phone screen without sideways scrolling', async () => {
    const page = await open(token, { width: 360, height: 740 });
    await expect.poll(() => state(page), { timeout: 15_000 }).toBe('ready');
    expect(await page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')).toBe(true);
    if (screenshots) await page.screenshot({ path: `${screenshots}/orb-phone.png` });
    await page.context().close();
  });
});
