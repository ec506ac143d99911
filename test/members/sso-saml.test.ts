import { createHash } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import { generateKeyPair } from 'jose';
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { SAML_IDP_ENTITY, samlKeyPair, samlResponse, startFakeOidc, type Verified } from '../support/fake-idp.ts';
import { call, cookiesFrom, type ApiResponse } from '../support/http.ts';

const DASHBOARD = 'https://dash.example.com';
/** A start the user made (the address bar, a bookmark), which no other site sent: no confirmation page. */
const TYPED = { 'sec-fetch-site': 'none' };
const app = await startTestApp({ DASHBOARD_URL: DASHBOARD });
const { api, workspace } = app;
await api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } });

// ── A fake OIDC provider on 127.0.0.1 ───────────────────────────────────────────────

const oidc = await startFakeOidc();
const { issuer } = oidc;

/**
 * The provider "signs the user in" (test/support/fake-idp.ts). Given the start's answer
 * (JSON or a 302), it also answers the Cookie header of the browser that started: the
 * start's binding cookie.
 */
function authorize(start: ApiResponse, email: string, verified: Verified = true) {
  const url = new URL(start.status === 302 ? start.headers.location! : start.body.authorization_url);
  expect(url.origin).toBe(issuer);
  expect(url.searchParams.get('code_challenge_method')).toBe('S256');
  return { ...oidc.grant(url, email, verified), cookie: cookiesFrom(start) };
}

/** The identity provider's redirect back, in the browser holding `cookie`. */
const callback = (grant: { code: string; state: string }, cookie?: string) =>
  call(app.url, 'GET', `/auth/sso/callback?code=${grant.code}&state=${grant.state}`, cookie === undefined ? {} : { headers: { cookie } });

describe('OIDC single sign-on', () => {
  it('configures SSO with a sealed secret and signs members in just in time, in allowed domains only', async () => {
    const put = await api.put('/workspace/sso', { body: { issuer, client_id: 'parley-client', client_secret: 'shh', allowed_domains: ['example.com'], default_role: 'developer' } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ enabled: true, issuer, client_secret: '********', default_role: 'developer' });
    expect(put.body.redirect_uri).toMatch(/\/auth\/sso\/callback$/);

    const start = await call(app.url, 'GET', `/auth/sso/${workspace.workspace_id}/start`, { headers: { accept: 'application/json' } });
    expect(start.status).toBe(200);
    const grant = authorize(start, 'Sso.User@Example.com');
    const signedIn = await callback(grant, grant.cookie);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.member).toMatchObject({ email: 'sso.user@example.com', role: 'developer', source: 'sso' });
    expect((await call(app.url, 'GET', '/workspace', { headers: { authorization: `Bearer ${signedIn.body.session_token}` } })).status).toBe(200);

    // The state is single use (even with the binding cookie copied before the callback cleared it).
    const replay = await callback(grant, grant.cookie);
    expect(replay.status).toBe(400);
    expect(replay.body.message).toBe('Sign-in state is invalid, expired or already used');

    // Another domain is refused.
    const other = authorize(await call(app.url, 'GET', `/auth/sso/${workspace.workspace_id}/start?format=json`), 'eve@evil.test');
    const refused = await callback(other, other.cookie);
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('evil.test is not an allowed email domain for this workspace');
  });

  it('redirects a browser to the identity provider and back to the dashboard with the cookie; return_to stays on the dashboard', async () => {
    // From the dashboard (another host of the same site).
    const start = await call(app.url, 'GET', `/auth/sso/${workspace.workspace_id}/start?return_to=/agents?tab=voice`, {
      headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-site': 'same-site' },
    });
    expect(start.status).toBe(302);
    expect(start.headers['cache-control']).toBe('no-store');
    const grant = authorize(start, 'browser.user@example.com');
    const back = await callback(grant, grant.cookie);
    expect(back.status).toBe(302);
    expect(back.headers.location).toBe(`${DASHBOARD}/agents?tab=voice`);
    // The session cookie, and the sign-in's binding cookie cleared.
    const [cookie, cleared] = back.headers['set-cookie']!.split(',');
    expect(cookie).toMatch(/^parley_session=[\w-]+\.[\w-]+\.[\w-]+; Path=\/; Max-Age=900; HttpOnly; Secure; SameSite=Strict$/);
    expect(cleared).toBe('parley_sso_flow=; Path=/auth/sso/callback; Max-Age=0; HttpOnly; Secure; SameSite=Lax');
    const token = cookie!.slice('parley_session='.length, cookie!.indexOf(';'));
    const me = await call(app.url, 'GET', '/workspace/members', { headers: { cookie: `parley_session=${token}` } });
    expect(me.status).toBe(200);
    expect(me.body.map((m: { email: string }) => m.email)).toContain('browser.user@example.com');

    // A refusal after the state goes back to the dashboard too, with the reason and no cookie.
    const other = authorize(await call(app.url, 'GET', `/auth/sso/${workspace.workspace_id}/start`, { headers: TYPED }), 'eve@evil.test');
    const refused = await callback(other, other.cookie);
    expect(refused.status).toBe(302);
    expect(refused.headers['set-cookie']).toBe('parley_sso_flow=; Path=/auth/sso/callback; Max-Age=0; HttpOnly; Secure; SameSite=Lax');
    const location = new URL(refused.headers.location!);
    expect(location.origin + location.pathname).toBe(`${DASHBOARD}/`);
    expect(location.searchParams.get('sso')).toBe('error');
    expect(location.searchParams.get('message')).toBe('evil.test is not an allowed email domain for this workspace');

    // No open redirect: return_to is a path on the dashboard only.
    for (const target of ['//evil.example/x', 'https://evil.example/', '/\\evil.example', 'evil.example', '/a b']) {
      const res = await call(app.url, 'GET', `/auth/sso/${workspace.workspace_id}/start?return_to=${encodeURIComponent(target)}`);
      expect(res.status, target).toBe(400);
      expect(res.body, target).toEqual({ status: 400, message: 'return_to: Must be a path on the dashboard starting with a single /' });
    }
  });

  it('refuses an ID token signed by another key', async () => {
    const forged = authorize(await call(app.url, 'GET', `/auth/sso/${workspace.workspace_id}/start?format=json`), 'mallory@example.com');
    oidc.useSigningKey((await generateKeyPair('RS256')).privateKey);
    try {
      const res = await callback(forged, forged.cookie);
      expect(res.status).toBe(401);
      expect(res.body.message).toMatch(/^SSO sign-in failed: /);
    } finally {
      oidc.useSigningKey();
    }
    const members = (await api.get('/workspace/members')).body.map((m: { email: string }) => m.email);
    expect(members).not.toContain('mallory@example.com');
  });
});

describe('OIDC sign-in is bound to the browser that started it', () => {
  const NOT_THIS_BROWSER = 'Sign-in was not started in this browser (its cookie is missing or belongs to another sign-in); start again here';
  const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');
  const start = (format = 'redirect') => call(app.url, 'GET', `/auth/sso/${workspace.workspace_id}/start?format=${format}`, { headers: TYPED });

  it('the start sets a cookie holding the state\'s hash, sent to the callback only, with the 302 and with the JSON answer', async () => {
    for (const format of ['redirect', 'json']) {
      const started = await start(format);
      const { state } = authorize(started, 'any@example.com');
      expect(started.headers['set-cookie'], format).toBe(`parley_sso_flow=${sha256Hex(state)}; Path=/auth/sso/callback; Max-Age=600; HttpOnly; Secure; SameSite=Lax`);
    }
  });

  it('an attacker\'s sign-in opened in a victim\'s browser is refused: no cookie, or another sign-in\'s; the starting browser signs in', async () => {
    // The attacker starts, signs in at the provider as themselves and sends the victim the callback link.
    const attacker = authorize(await start(), 'attacker@example.com');
    const bare = await callback(attacker);
    expect(bare.status).toBe(400);
    expect(bare.body).toEqual({ status: 400, message: NOT_THIS_BROWSER });
    expect(bare.headers['set-cookie']).toBeUndefined();

    // The victim's browser holds the cookie of a sign-in it started itself.
    const victim = authorize(await start(), 'victim@example.com');
    const crossed = await callback(attacker, victim.cookie);
    expect(crossed.status).toBe(400);
    expect(crossed.body).toEqual({ status: 400, message: NOT_THIS_BROWSER });
    expect(crossed.headers['set-cookie']).toBeUndefined();
    const members = (await api.get('/workspace/members')).body.map((m: { email: string }) => m.email);
    expect(members).not.toContain('attacker@example.com');

    // Neither refusal spent the state: each browser finishes its own sign-in.
    const own = await callback(attacker, attacker.cookie);
    expect(own.status).toBe(302);
    expect(own.headers.location).toBe(`${DASHBOARD}/`);
    expect(own.headers['set-cookie']).toMatch(/^parley_session=[^;]+; Path=\/; Max-Age=900; HttpOnly; Secure; SameSite=Strict,parley_sso_flow=; Path=\/auth\/sso\/callback; Max-Age=0; HttpOnly; Secure; SameSite=Lax$/);
    expect((await callback(victim, victim.cookie)).status).toBe(302);
  });

  it('refuses an ID token whose email is not verified (false, or not said) before matching a member by email', async () => {
    for (const verified of [false, 'absent'] as const) {
      // owner@example.com is an existing admin: an unverified claim of that address must not sign in as them.
      const grant = authorize(await start('json'), 'owner@example.com', verified);
      const res = await callback(grant, grant.cookie);
      expect(res.status, String(verified)).toBe(401);
      expect(res.body, String(verified)).toEqual({ status: 401, message: 'The ID token\'s email is not verified (email_verified must be true)' });
      expect(res.headers['set-cookie'], String(verified)).toBe('parley_sso_flow=; Path=/auth/sso/callback; Max-Age=0; HttpOnly; Secure; SameSite=Lax');
    }
    // Nor joins just in time.
    const newcomer = authorize(await start('json'), 'unverified.newcomer@example.com', 'absent');
    expect((await callback(newcomer, newcomer.cookie)).status).toBe(401);
    const members = (await api.get('/workspace/members')).body.map((m: { email: string }) => m.email);
    expect(members).not.toContain('unverified.newcomer@example.com');
  });
});

// ── SAML with a self-signed certificate made here ────────────────────────────────────

const idp = samlKeyPair('idp');
const attacker = samlKeyPair('attacker');
const IDP_ENTITY = SAML_IDP_ENTITY;

describe('SAML', () => {
  it('signs in with a signed assertion, and refuses a forged signature, a replay, another audience or recipient', async () => {
    const put = await api.put('/workspace/saml', { body: { idp_entity_id: IDP_ENTITY, sso_url: 'https://idp.example.com/sso', certificate: idp.cert, allowed_domains: ['example.com'], default_role: 'member' } });
    expect(put.status).toBe(200);
    const { acs_url: acs, sp_entity_id: audience } = put.body;
    const path = new URL(acs).pathname;

    const good = samlResponse({ key: idp.key, acs, audience, email: 'saml.user@example.com' });
    // Posted as JSON (no browser's form: a browser's IdP-initiated sign-in is asked to confirm, below).
    const signedIn = await call(app.url, 'POST', path, { body: { SAMLResponse: good } });
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.member).toMatchObject({ email: 'saml.user@example.com', role: 'member', source: 'saml' });

    const replay = await call(app.url, 'POST', path, { body: { SAMLResponse: good } });
    expect(replay.status).toBe(401);
    expect(replay.body.message).toBe('SAML sign-in refused: this assertion was already used');

    const forged = await call(app.url, 'POST', path, { body: { SAMLResponse: samlResponse({ key: attacker.key, acs, audience, email: 'saml.user@example.com' }) } });
    expect(forged.status).toBe(401);
    expect(forged.body.message).toMatch(/^SAML sign-in refused: /);

    const tampered = Buffer.from(samlResponse({ key: idp.key, acs, audience, email: 'saml.user@example.com' }), 'base64').toString().replace('saml.user@example.com', 'owner@example.com');
    const tamperedRes = await call(app.url, 'POST', path, { body: { SAMLResponse: Buffer.from(tampered).toString('base64') } });
    expect(tamperedRes.status).toBe(401);

    const wrongAudience = await call(app.url, 'POST', path, { body: { SAMLResponse: samlResponse({ key: idp.key, acs, audience: 'https://other.example/sp', email: 'saml.user@example.com' }) } });
    expect(wrongAudience.status).toBe(401);
    const wrongRecipient = await call(app.url, 'POST', path, { body: { SAMLResponse: samlResponse({ key: idp.key, acs: 'https://other.example/acs', audience, email: 'saml.user@example.com' }) } });
    expect(wrongRecipient.status).toBe(401);
    expect(wrongRecipient.body.message).toBe('SAML sign-in refused: the recipient is not this ACS URL');

    expect((await api.get('/workspace/saml')).body).toMatchObject({ enabled: true, idp_entity_id: IDP_ENTITY });
    expect((await api.delete('/workspace/saml')).status).toBe(204);
    const off = await call(app.url, 'POST', path, { body: { SAMLResponse: good } });
    expect(off.status).toBe(400);
  });

  it('SP-initiated: an AuthnRequest whose ID the response must answer, once; IdP-initiated only where allowed', async () => {
    const put = await api.put('/workspace/saml', { body: { idp_entity_id: IDP_ENTITY, sso_url: 'https://idp.example.com/sso', certificate: idp.cert, allowed_domains: ['example.com'], allow_idp_initiated: false } });
    expect(put.status).toBe(200);
    expect(put.body.allow_idp_initiated).toBe(false);
    const { acs_url: acs, sp_entity_id: audience } = put.body;
    const path = new URL(acs).pathname;
    const requestId = async (query: string, headers: Record<string, string> = {}) => {
      const start = await call(app.url, 'GET', `/auth/saml/${workspace.workspace_id}/start${query}`, { headers });
      const target = new URL(start.status === 302 ? start.headers.location! : start.body.authorization_url);
      expect(target.origin + target.pathname).toBe('https://idp.example.com/sso');
      const xml = inflateRawSync(Buffer.from(target.searchParams.get('SAMLRequest')!, 'base64')).toString();
      expect(xml).toContain(`AssertionConsumerServiceURL="${acs}"`);
      return { status: start.status, id: /ID="([^"]+)"/.exec(xml)![1]!, cookie: cookiesFrom(start) };
    };

    const json = await requestId('?format=json');
    expect(json.status).toBe(200);
    const answered = await call(app.url, 'POST', path, { body: { SAMLResponse: samlResponse({ key: idp.key, acs, audience, email: 'sp.user@example.com', inResponseTo: json.id }) }, headers: { cookie: json.cookie } });
    expect(answered.status).toBe(200);
    expect(answered.body.member).toMatchObject({ email: 'sp.user@example.com', source: 'saml' });
    // The request is answered once: another assertion naming it is refused.
    const again = await call(app.url, 'POST', path, { body: { SAMLResponse: samlResponse({ key: idp.key, acs, audience, email: 'sp.user@example.com', inResponseTo: json.id }) } });
    expect(again.status).toBe(401);
    expect(again.body.message).toBe('SAML sign-in refused: InResponseTo is not valid');
    const unknown = await call(app.url, 'POST', path, { body: { SAMLResponse: samlResponse({ key: idp.key, acs, audience, email: 'sp.user@example.com', inResponseTo: '_never_sent' }) } });
    expect(unknown.status).toBe(401);
    expect(unknown.body.message).toBe('SAML sign-in refused: InResponseTo is not valid');
    const unsolicited = await call(app.url, 'POST', path, { body: { SAMLResponse: samlResponse({ key: idp.key, acs, audience, email: 'sp.user@example.com' }) } });
    expect(unsolicited.status).toBe(401);
    expect(unsolicited.body.message).toBe('SAML sign-in refused: this workspace accepts only answers to its own sign-in requests (IdP-initiated sign-in is off)');

    // A browser's start: a 302 to the IdP, and the ACS sends it back to the dashboard with the cookie.
    const browser = await requestId('?return_to=/calls', TYPED);
    expect(browser.status).toBe(302);
    const posted = await call(app.url, 'POST', path, {
      rawBody: new URLSearchParams({ SAMLResponse: samlResponse({ key: idp.key, acs, audience, email: 'sp.user@example.com', inResponseTo: browser.id }) }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: browser.cookie },
    });
    expect(posted.status).toBe(302);
    expect(posted.headers.location).toBe(`${DASHBOARD}/calls`);
    expect(posted.headers['set-cookie']).toMatch(/^parley_session=/);
    expect((await api.delete('/workspace/saml')).status).toBe(204);
  });

  it('SP-initiated: the answer is accepted only in the browser that sent the AuthnRequest', async () => {
    const put = await api.put('/workspace/saml', { body: { idp_entity_id: IDP_ENTITY, sso_url: 'https://idp.example.com/sso', certificate: idp.cert, allowed_domains: ['example.com'] } });
    const { acs_url: acs, sp_entity_id: audience } = put.body;
    const path = new URL(acs).pathname;
    const start = async () => {
      const res = await call(app.url, 'GET', `/auth/saml/${workspace.workspace_id}/start`, { headers: TYPED });
      const xml = inflateRawSync(Buffer.from(new URL(res.headers.location!).searchParams.get('SAMLRequest')!, 'base64')).toString();
      return { id: /ID="([^"]+)"/.exec(xml)![1]!, cookie: cookiesFrom(res), setCookie: res.headers['set-cookie'] };
    };
    const post = (inResponseTo: string, cookie?: string) =>
      call(app.url, 'POST', path, {
        rawBody: new URLSearchParams({ SAMLResponse: samlResponse({ key: idp.key, acs, audience, email: 'bound.user@example.com', inResponseTo }) }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie === undefined ? {} : { cookie }) },
      });
    const refusal = { status: 401, message: 'SAML sign-in refused: the sign-in was not started in this browser (its cookie is missing or belongs to another sign-in); start again here' };

    const first = await start();
    expect(first.setCookie).toBe(`parley_saml_flow=${createHash('sha256').update(first.id).digest('hex')}; Path=${path}; Max-Age=600; HttpOnly; Secure; SameSite=None`);
    // An answer to the attacker's request, posted from a browser without its cookie.
    const bare = await post(first.id);
    expect([bare.status, bare.body]).toEqual([401, refusal]);
    // ... or holding the cookie of another sign-in it started.
    const second = await start();
    const third = await start();
    const crossed = await post(second.id, third.cookie);
    expect([crossed.status, crossed.body]).toEqual([401, refusal]);
    const members = (await api.get('/workspace/members')).body.map((m: { email: string }) => m.email);
    expect(members).not.toContain('bound.user@example.com');

    // The browser that sent the request signs in; its binding cookie is cleared.
    const own = await post(third.id, third.cookie);
    expect(own.status).toBe(302);
    expect(own.headers['set-cookie']).toMatch(new RegExp(`^parley_session=[^;]+; Path=/; Max-Age=900; HttpOnly; Secure; SameSite=Strict,parley_saml_flow=; Path=${path}; Max-Age=0; HttpOnly; Secure; SameSite=None$`));
    expect((await api.delete('/workspace/saml')).status).toBe(204);
  });
});

// ── A sign-in another site sent the browser to ───────────────────────────────────────

/*
 * Login CSRF through a whole flow: the attacker configures a workspace of their own with an
 * identity provider that approves at once, and a page of theirs sends the victim's browser
 * to its start (or posts it an IdP-initiated assertion). The binding cookie is then the
 * victim's own, so only asking on Parley's origin stops it.
 */
const EVIL_NAME = 'Acme <script>alert(1)</script> & "Co"';
const EVIL_NAME_HTML = 'Acme &lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;Co&quot;';
/** A navigation a page of another site made (a link, or a script setting location). */
const FROM_ANOTHER_SITE = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document' };
const PAGE_HEADERS = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
const sha256Of = (text: string) => createHash('sha256').update(text).digest('hex');

const evil = await app.newWorkspace();
expect((await evil.api.patch('/workspace', { body: { name: EVIL_NAME } })).status).toBe(200);
expect((await evil.api.post('/workspace/members', { body: { email: 'owner@evil.test', role: 'admin' } })).status).toBe(201);
expect((await evil.api.put('/workspace/sso', { body: { issuer, client_id: 'parley-client', client_secret: 'shh', allowed_domains: ['evil.test', 'example.com'], default_role: 'member' } })).status).toBe(200);
const evilSaml = (await evil.api.put('/workspace/saml', { body: { idp_entity_id: IDP_ENTITY, sso_url: 'https://idp.example.com/sso', certificate: idp.cert, allowed_domains: ['evil.test', 'example.com'] } })).body;
const evilMembers = async () => (await evil.api.get('/workspace/members')).body.map((m: { email: string }) => m.email);

const startPath = (method: 'sso' | 'saml', query = '') => `/auth/${method}/${evil.workspace_id}/start${query}`;

/** The confirmation page's Continue link, as the browser resolves it (against the start's path), and its token. */
function continueOf(page: ApiResponse) {
  const href = /<a id="continue" href="([^"]+)">Continue<\/a>/.exec(page.text)![1]!.replaceAll('&amp;', '&');
  return { href, token: new URLSearchParams(href.slice(1)).get('confirm')! };
}

/** The victim's browser, sent by another site's page to a start: it follows the 302s, the attacker's identity provider approving at once as attacker@evil.test. */
async function forcedSignIn(method: 'sso' | 'saml') {
  const start = await call(app.url, 'GET', startPath(method), { headers: FROM_ANOTHER_SITE });
  if (start.status !== 302) return { start, session: undefined };
  let back: ApiResponse;
  if (method === 'sso') {
    const grant = authorize(start, 'attacker@evil.test');
    back = await callback(grant, grant.cookie);
  } else {
    const xml = inflateRawSync(Buffer.from(new URL(start.headers.location!).searchParams.get('SAMLRequest')!, 'base64')).toString();
    const assertion = samlResponse({ key: idp.key, acs: evilSaml.acs_url, audience: evilSaml.sp_entity_id, email: 'attacker@evil.test', inResponseTo: /ID="([^"]+)"/.exec(xml)![1]! });
    back = await call(app.url, 'POST', new URL(evilSaml.acs_url).pathname, {
      rawBody: new URLSearchParams({ SAMLResponse: assertion }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookiesFrom(start) },
    });
  }
  return { start, session: /parley_session=([^;]+)/.exec(back.headers['set-cookie'] ?? '')?.[1] };
}

describe('A sign-in another site sent the browser to asks first', () => {
  it('answers a start from another site with a confirmation page on Parley\'s origin, not a 302 to the identity provider', async () => {
    for (const method of ['sso', 'saml'] as const) {
      const page = await call(app.url, 'GET', startPath(method, '?return_to=/agents'), { headers: FROM_ANOTHER_SITE });
      expect(page.status, method).toBe(200);
      expect(page.headers, method).toMatchObject(PAGE_HEADERS);
      expect(page.headers['content-security-policy'], method).toMatch(/^default-src 'none'; style-src 'sha256-[\w+/]{43}='; form-action 'none'; frame-ancestors 'none'; base-uri 'none'$/);
      expect(page.headers.location, method).toBeUndefined();
      // The workspace's name (the attacker's to choose) escaped; the identity provider's host.
      const host = method === 'sso' ? new URL(issuer).host : 'idp.example.com';
      expect(page.text, method).toContain(`<h1>Sign in to workspace <strong id="workspace">${EVIL_NAME_HTML}</strong> with ${host}?</h1>`);
      expect(page.text, method).not.toMatch(/<script|<iframe|<img|src=/i);
      // Continue: this start again, with a token whose hash the page's cookie holds (Strict, this path only).
      const { href, token } = continueOf(page);
      expect(href, method).toBe(`?return_to=%2Fagents&confirm=${token}`);
      expect(token, method).toMatch(/^[\w-]{43}$/);
      expect(page.headers['set-cookie'], method).toBe(`parley_signin_confirm=${sha256Of(token)}; Path=/auth/${method}/${evil.workspace_id}/start; Max-Age=600; HttpOnly; Secure; SameSite=Strict`);
    }

    // A browser too old to send Sec-Fetch-Site cannot be told from one another site sent: asked too.
    const old = await call(app.url, 'GET', startPath('sso'), { headers: { accept: 'text/html' } });
    expect(old.status).toBe(200);
    expect(old.text).toContain(EVIL_NAME_HTML);

    // The user's own starts (address bar or bookmark, Parley's pages, the dashboard's site) are not asked.
    for (const site of ['none', 'same-origin', 'same-site']) {
      const direct = await call(app.url, 'GET', startPath('sso'), { headers: { accept: 'text/html', 'sec-fetch-site': site } });
      expect(direct.status, site).toBe(302);
      expect(new URL(direct.headers.location!).origin, site).toBe(issuer);
    }
    // Nor is a script's JSON start: its URL is of no use without the binding cookie, which a
    // page of another site can set only through a request whose answer it cannot read.
    const json = await call(app.url, 'GET', startPath('sso', '?format=json'), { headers: { 'sec-fetch-site': 'cross-site' } });
    expect(json.status).toBe(200);
    expect(new URL(json.body.authorization_url).origin).toBe(issuer);

    // A workspace without SSO is refused before any page.
    const bare = await app.newWorkspace();
    const unconfigured = await call(app.url, 'GET', `/auth/sso/${bare.workspace_id}/start`, { headers: FROM_ANOTHER_SITE });
    expect([unconfigured.status, unconfigured.body]).toEqual([400, { status: 400, message: 'SSO is not configured for this workspace' }]);
  });

  it('Continue, pressed on the page, starts the sign-in in that browser and it completes; the token without its cookie is asked again', async () => {
    const page = await call(app.url, 'GET', startPath('sso', '?return_to=/agents'), { headers: FROM_ANOTHER_SITE });
    // Pressing Continue: a navigation from Parley's own page, with the page's cookie.
    const continued = await call(app.url, 'GET', startPath('sso', continueOf(page).href), { headers: { accept: 'text/html', 'sec-fetch-site': 'same-origin', cookie: cookiesFrom(page) } });
    expect(continued.status).toBe(302);
    expect(new URL(continued.headers.location!).origin).toBe(issuer);
    const [binding, cleared] = continued.headers['set-cookie']!.split(',');
    expect(binding).toMatch(/^parley_sso_flow=[0-9a-f]{64}; Path=\/auth\/sso\/callback; Max-Age=600; HttpOnly; Secure; SameSite=Lax$/);
    expect(cleared).toBe(`parley_signin_confirm=; Path=/auth/sso/${evil.workspace_id}/start; Max-Age=0; HttpOnly; Secure; SameSite=Strict`);
    const grant = authorize(continued, 'confirmed.user@example.com');
    const back = await callback(grant, grant.cookie);
    expect(back.status).toBe(302);
    expect(back.headers.location).toBe(`${DASHBOARD}/agents`);
    expect(back.headers['set-cookie']).toMatch(/^parley_session=[^;]+; Path=\/; Max-Age=900; HttpOnly; Secure; SameSite=Strict,/);
    expect(await evilMembers()).toContain('confirmed.user@example.com');

    // A browser that sends no Sec-Fetch-Site continues by the token and its cookie.
    const oldPage = await call(app.url, 'GET', startPath('saml'), { headers: { accept: 'text/html' } });
    const oldContinued = await call(app.url, 'GET', startPath('saml', continueOf(oldPage).href), { headers: { accept: 'text/html', cookie: cookiesFrom(oldPage) } });
    expect(oldContinued.status).toBe(302);
    expect(oldContinued.headers.location).toMatch(/^https:\/\/idp\.example\.com\/sso\?SAMLRequest=/);

    // The attacker's own page's Continue, sent from another site to a browser without its
    // cookie, or holding another page's: asked again, nothing started.
    const attackers = await call(app.url, 'GET', startPath('sso'), { headers: FROM_ANOTHER_SITE });
    const victims = await call(app.url, 'GET', startPath('sso'), { headers: FROM_ANOTHER_SITE });
    for (const cookie of [undefined, cookiesFrom(victims)]) {
      const forced = await call(app.url, 'GET', startPath('sso', continueOf(attackers).href), { headers: { ...FROM_ANOTHER_SITE, ...(cookie === undefined ? {} : { cookie }) } });
      expect(forced.status, String(cookie)).toBe(200);
      expect(forced.headers.location, String(cookie)).toBeUndefined();
      expect(forced.headers['set-cookie'], String(cookie)).toMatch(/^parley_signin_confirm=[0-9a-f]{64}; /);
      expect(forced.text, String(cookie)).toContain('<a id="continue"');
    }
  });

  it('a sign-in forced from another site, its identity provider approving at once, signs no one in without Continue', async () => {
    for (const method of ['sso', 'saml'] as const) {
      const forced = await forcedSignIn(method);
      expect(forced.start.status, method).toBe(200);
      expect(forced.start.text, method).toContain(EVIL_NAME_HTML);
      expect(forced.session, method).toBeUndefined();
    }
    expect(await evilMembers()).not.toContain('attacker@evil.test');
  });

  it('an IdP-initiated assertion posted by a browser asks before signing in; Continue in that browser signs in once', async () => {
    const acsPath = new URL(evilSaml.acs_url).pathname;
    const confirmPath = `/auth/saml/${evil.workspace_id}/confirm`;
    const unsolicited = () => samlResponse({ key: idp.key, acs: evilSaml.acs_url, audience: evilSaml.sp_entity_id, email: 'attacker@evil.test' });
    const postForm = (path: string, fields: Record<string, string>, cookie?: string) =>
      call(app.url, 'POST', path, { rawBody: new URLSearchParams(fields).toString(), headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie === undefined ? {} : { cookie }) } });

    const page = await postForm(acsPath, { SAMLResponse: unsolicited() });
    expect(page.status).toBe(200);
    expect(page.headers).toMatchObject(PAGE_HEADERS);
    // Its form posts here and is redirected to the dashboard: nowhere else.
    expect(page.headers['content-security-policy']).toMatch(/^default-src 'none'; style-src 'sha256-[\w+/]{43}='; form-action 'self' https:\/\/dash\.example\.com; frame-ancestors 'none'; base-uri 'none'$/);
    expect(page.text).toContain(`<h1>Sign in to workspace <strong id="workspace">${EVIL_NAME_HTML}</strong> as attacker@evil.test?</h1>`);
    const token = /<form method="post" action="confirm"><input type="hidden" name="confirm" value="([\w-]{43})"><button id="continue" type="submit">Continue<\/button><\/form>/.exec(page.text)![1]!;
    expect(page.headers['set-cookie']).toBe(`parley_saml_confirm=${sha256Of(token)}; Path=${confirmPath}; Max-Age=600; HttpOnly; Secure; SameSite=Strict`);
    expect(await evilMembers()).not.toContain('attacker@evil.test');

    // Continue posted without the page's cookie (another site's form), or with another page's: refused, the sign-in left waiting.
    const other = await postForm(acsPath, { SAMLResponse: unsolicited() });
    const notShown = { status: 401, message: 'SAML sign-in refused: the sign-in was not confirmed in the browser it was shown to (its cookie is missing or belongs to another sign-in); sign in again' };
    for (const cookie of [undefined, cookiesFrom(other)]) {
      const refused = await postForm(confirmPath, { confirm: token }, cookie);
      expect([refused.status, refused.body], String(cookie)).toEqual([401, notShown]);
    }
    expect(await evilMembers()).not.toContain('attacker@evil.test');

    // Continue in the browser shown the page: the session cookie and the dashboard.
    const confirmed = await postForm(confirmPath, { confirm: token }, cookiesFrom(page));
    expect(confirmed.status).toBe(302);
    expect(confirmed.headers.location).toBe(`${DASHBOARD}/`);
    expect(confirmed.headers['set-cookie']).toMatch(new RegExp(`^parley_session=[^;]+; Path=/; Max-Age=900; HttpOnly; Secure; SameSite=Strict,parley_saml_confirm=; Path=${confirmPath}; Max-Age=0; HttpOnly; Secure; SameSite=Strict$`));
    expect(await evilMembers()).toContain('attacker@evil.test');
    // Once.
    const again = await postForm(confirmPath, { confirm: token }, cookiesFrom(page));
    expect([again.status, again.body]).toEqual([401, { status: 401, message: 'SAML sign-in refused: the confirmation is invalid, expired or already used; sign in again' }]);

    // IdP-initiated sign-in turned off while a page waits: its Continue is refused.
    const waiting = await postForm(acsPath, { SAMLResponse: unsolicited() });
    const waitingToken = /name="confirm" value="([\w-]{43})"/.exec(waiting.text)![1]!;
    expect((await evil.api.put('/workspace/saml', { body: { idp_entity_id: IDP_ENTITY, sso_url: 'https://idp.example.com/sso', certificate: idp.cert, allowed_domains: ['evil.test', 'example.com'], allow_idp_initiated: false } })).status).toBe(200);
    const off = await postForm(confirmPath, { confirm: waitingToken }, cookiesFrom(waiting));
    expect([off.status, off.body]).toEqual([401, { status: 401, message: 'SAML sign-in refused: this workspace accepts only answers to its own sign-in requests (IdP-initiated sign-in is off)' }]);
    expect((await evil.api.put('/workspace/saml', { body: { idp_entity_id: IDP_ENTITY, sso_url: 'https://idp.example.com/sso', certificate: idp.cert, allowed_domains: ['evil.test', 'example.com'] } })).status).toBe(200);
  });
});
