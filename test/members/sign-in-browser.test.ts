import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { launchBrowser, servePages } from '../support/browser.ts';
import { OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, SAML_IDP_ENTITY, samlKeyPair, samlResponse, startFakeOidc } from '../support/fake-idp.ts';

/*
 * Login CSRF through a whole sign-in, in headless Chromium: a page of another site (served
 * as `localhost`, another site than the API's 127.0.0.1) sends the victim's browser to the
 * start of the attacker's workspace, whose identity provider approves at once, or posts it
 * an IdP-initiated assertion. Chromium says `Sec-Fetch-Site: cross-site`, so the browser
 * stops at the confirmation page and is signed in only once the user presses Continue,
 * after which the whole sign-in completes (the page's Strict cookie, its link or form, the
 * redirects its policy allows). The page cannot be framed.
 */

/** A port free now, for the API to listen on so the redirects it builds from its address lead back to it. */
const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });

const pages = await servePages();
// The dashboard: on the page server's 127.0.0.1 origin (the API's site).
pages.page('/', '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Dashboard</title></head><body><p id="dashboard">Dashboard</p></body></html>');
const app = await startTestApp({ PORT: String(await freePort()), DASHBOARD_URL: pages.url });
const browser = await launchBrowser();
afterAll(async () => {
  await browser.close();
  await pages.close();
});
/** The attacker's site: the same page server by another host name, so another site than 127.0.0.1. */
const attackerSite = `http://localhost:${pages.port}`;

const EVIL_NAME = 'Acme <script>alert(1)</script> & "Co"';
const oidc = await startFakeOidc();
oidc.approveAs = 'attacker@evil.test';
const idp = samlKeyPair('idp');
const evil = await app.newWorkspace();
expect((await evil.api.patch('/workspace', { body: { name: EVIL_NAME } })).status).toBe(200);
expect((await evil.api.post('/workspace/members', { body: { email: 'owner@evil.test', role: 'admin' } })).status).toBe(201);
expect((await evil.api.put('/workspace/sso', { body: { issuer: oidc.issuer, client_id: OIDC_CLIENT_ID, client_secret: OIDC_CLIENT_SECRET, allowed_domains: ['evil.test'] } })).status).toBe(200);
const saml = (await evil.api.put('/workspace/saml', { body: { idp_entity_id: SAML_IDP_ENTITY, sso_url: 'https://idp.example.com/sso', certificate: idp.cert, allowed_domains: ['evil.test'] } })).body;
const evilMembers = async () => (await evil.api.get('/workspace/members')).body.map((m: { email: string }) => m.email);

const sessionCookieIn = async (context: Awaited<ReturnType<typeof browser.newContext>>) =>
  (await context.cookies(app.url)).find((cookie) => cookie.name === 'parley_session');

describe('a sign-in another site sends a browser into, in Chromium', () => {
  it('OIDC: stops at the confirmation page (no identity provider, no session) until Continue, then signs in', async () => {
    const start = `${app.url}/auth/sso/${evil.workspace_id}/start`;
    pages.page('/sso.html', `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Win a prize</title></head><body><script>location.href = ${JSON.stringify(start)};</script></body></html>`);
    const context = await browser.newContext();
    const page = await context.newPage();
    const sent: string[] = [];
    page.on('request', async (request) => {
      if (request.url().startsWith(start)) sent.push((await request.allHeaders())['sec-fetch-site'] ?? '(none)');
    });
    await page.goto(`${attackerSite}/sso.html`);
    // Where the navigation ends: the confirmation page, or (signed in) the dashboard.
    await page.waitForURL((url) => url.href === start || url.href === `${pages.url}/`);
    expect(page.url()).toBe(start);
    expect(await page.locator('#continue').count()).toBe(1);
    expect(await page.locator('h1').textContent()).toBe(`Sign in to workspace ${EVIL_NAME} with ${new URL(oidc.issuer).host}?`);
    expect(sent).toEqual(['cross-site']);
    expect(oidc.authorizeRequests).toBe(0);
    expect(await sessionCookieIn(context)).toBeUndefined();
    expect(await evilMembers()).not.toContain('attacker@evil.test');

    // Continue: Parley's own page starts; the provider approves; the callback signs in and sends the browser to the dashboard.
    await page.locator('#continue').click();
    await page.waitForURL(`${pages.url}/`);
    expect(sent).toEqual(['cross-site', 'same-origin']);
    expect(oidc.authorizeRequests).toBe(1);
    expect(await sessionCookieIn(context)).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict' });
    expect(await evilMembers()).toContain('attacker@evil.test');
    await context.close();
  });

  it('SAML, IdP-initiated: an assertion another site posts waits at the confirmation page until Continue', async () => {
    const assertion = samlResponse({ key: idp.key, acs: saml.acs_url, audience: saml.sp_entity_id, email: 'posted@evil.test' });
    pages.page(
      '/saml.html',
      `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Win a prize</title></head><body><form method="post" action="${saml.acs_url}"><input type="hidden" name="SAMLResponse" value="${assertion}"></form><script>document.forms[0].submit();</script></body></html>`,
    );
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${attackerSite}/saml.html`);
    await page.waitForURL(saml.acs_url);
    expect(await page.locator('#continue').count()).toBe(1);
    expect(await page.locator('h1').textContent()).toBe(`Sign in to workspace ${EVIL_NAME} as posted@evil.test?`);
    expect(await sessionCookieIn(context)).toBeUndefined();
    expect(await evilMembers()).not.toContain('posted@evil.test');

    await page.locator('#continue').click();
    await page.waitForURL(`${pages.url}/`);
    expect(await sessionCookieIn(context)).toMatchObject({ httpOnly: true, secure: true, sameSite: 'Strict' });
    expect(await evilMembers()).toContain('posted@evil.test');
    await context.close();
  });

  it('the confirmation page cannot be framed by another site', async () => {
    const start = `${app.url}/auth/sso/${evil.workspace_id}/start`;
    pages.page('/frame.html', `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Click here</title></head><body><iframe title="prize" src="${start}"></iframe></body></html>`);
    const context = await browser.newContext();
    const page = await context.newPage();
    const answered = page.waitForResponse((response) => response.url() === start);
    await page.goto(`${attackerSite}/frame.html`);
    expect((await answered).status()).toBe(200);
    const frame = page.frames().find((candidate) => candidate !== page.mainFrame())!;
    await expect.poll(() => frame.url()).toBe('chrome-error://chromewebdata/');
    expect(await frame.locator('#continue').count()).toBe(0);
    await context.close();
  });
});
