import { createHash } from 'node:crypto';
import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { freshAccessToken } from '../../shared/integrations/index.ts';
import { refreshExpiringConnections } from '../../shared/integrations/oauth-refresh.ts';
import { db, tableName } from '../../shared/platform/store/db.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { fakeOAuth } from '../support/fake-oauth.ts';
import { call, cookiesFrom, type ApiClient, type ApiResponse } from '../support/http.ts';

// Settings are read as they were when config.ts loaded, so before the imports above.
const BASE = vi.hoisted(() => (process.env.PUBLIC_BASE_URL = 'https://api.parley.test'));
const app = await startTestApp();
const fake = await fakeOAuth();
// Salesforce goes to the fake authorization server (the real-provider path, PKCE); every other provider is the mock.
Object.assign(process.env, {
  SALESFORCE_OAUTH_CLIENT_ID: fake.clientId,
  SALESFORCE_OAUTH_CLIENT_SECRET: fake.clientSecret,
  SALESFORCE_OAUTH_AUTHORIZE_URL: `${fake.url}/authorize`,
  SALESFORCE_OAUTH_TOKEN_URL: `${fake.url}/token`,
});

afterEach(() => {
  vi.useRealTimers();
  fake.refreshDelayMs = 0;
  fake.expiresIn = 3600;
});

/** A path on the local server from a URL that names the deployment's public base. */
const localPath = (url: string) => {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
};

const htmlHref = (html: string, id: string) => {
  const match = new RegExp(`id="${id}" href="([^"]+)"`).exec(html);
  return match![1]!.replaceAll('&amp;', '&');
};

/**
 * Follows the mock provider's consent page: Approve (or Deny) → the callback's redirect, in
 * the browser that made the start request (its binding cookie goes with the callback).
 */
async function approveMock(start: ApiResponse, choice: 'approve' | 'deny' = 'approve') {
  const page = await call(app.url, 'GET', localPath(start.body.authorize_url));
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toContain('text/html');
  expect(page.text).toContain('No real account is used');
  const callback = htmlHref(page.text, choice);
  expect(callback.startsWith(`${BASE}/oauth/callback?`)).toBe(true);
  return { callbackPath: localPath(callback), response: await call(app.url, 'GET', localPath(callback), { headers: { cookie: cookiesFrom(start) } }) };
}

/** Follows the fake provider's authorize redirect and hands the code to the callback (in the starting browser). */
async function approveFake(start: ApiResponse) {
  const answer = await fetch(start.body.authorize_url, { redirect: 'manual' });
  expect(answer.status).toBe(302);
  const callback = answer.headers.get('location')!;
  expect(callback.startsWith(`${BASE}/oauth/callback?`)).toBe(true);
  return { callbackPath: localPath(callback), response: await call(app.url, 'GET', localPath(callback), { headers: { cookie: cookiesFrom(start) } }) };
}

const redirectOf = (response: { status: number; headers: Record<string, string> }) => {
  expect(response.status).toBe(302);
  return new URL(response.headers.location!);
};

async function connectMockCrm(api: ApiClient, provider = 'hubspot') {
  const start = await api.post('/oauth/start', { body: { target: 'crm', provider } });
  expect(start.status).toBe(200);
  const { response } = await approveMock(start);
  expect(redirectOf(response).searchParams.get('oauth')).toBe('success');
}

async function connectFakeApp(api: ApiClient, name = 'Sales') {
  const start = await api.post('/oauth/start', { body: { target: 'app', provider: 'salesforce', name } });
  expect(start.status).toBe(200);
  const { response } = await approveFake(start);
  const location = redirectOf(response);
  expect(location.searchParams.get('oauth')).toBe('success');
  return location.searchParams.get('app_id')!;
}

describe('the OAuth flow with the built-in mock provider', () => {
  it('lists the providers with the redirect URI to register', async () => {
    const answer = await app.api.get('/oauth/providers');
    expect(answer.status).toBe(200);
    expect(answer.body.redirect_uri).toBe(`${BASE}/oauth/callback`);
    expect(answer.body.providers).toHaveLength(9);
    expect(answer.body.providers.find((p: any) => p.provider === 'hubspot')).toMatchObject({ mock: true, pkce: true, targets: ['crm', 'app'] });
    expect(answer.body.providers.find((p: any) => p.provider === 'salesforce')).toMatchObject({ mock: false, pkce: true });
    expect(answer.body.pasted_providers).toEqual(['cal_com', 'zendesk']);
  });

  it('start → consent page → callback stores a CRM connection; the state is single use', async () => {
    const ws = await app.newWorkspace();
    const start = await ws.api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
    expect(start.status).toBe(200);
    expect(start.body).toMatchObject({ mock: true, provider: 'hubspot', pkce: true });
    const authorize = new URL(start.body.authorize_url);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${BASE}/oauth/mock/authorize`);
    expect(Object.fromEntries(authorize.searchParams)).toMatchObject({
      response_type: 'code',
      client_id: 'parley-mock-hubspot',
      redirect_uri: `${BASE}/oauth/callback`,
      code_challenge_method: 'S256',
      scope: 'oauth crm.objects.contacts.read crm.objects.contacts.write crm.schemas.contacts.read',
    });
    expect(authorize.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);

    const { callbackPath, response } = await approveMock(start);
    const location = redirectOf(response);
    expect(`${location.origin}${location.pathname}`).toBe(`${BASE}/settings/integrations`);
    expect(Object.fromEntries(location.searchParams)).toEqual({ oauth: 'success', provider: 'hubspot' });

    const config = await ws.api.get('/get-crm-config');
    expect(config.body.providers).toHaveLength(1);
    expect(config.body.providers[0]).toMatchObject({ provider: 'hubspot', enabled: true, sync_calls: true, sync_contacts: true, connection_status: 'connected', mock: true });
    expect(config.body.providers[0].token_expires_at).toBeGreaterThan(Date.now() + 50 * 60_000);
    expect(JSON.stringify(config.body)).not.toMatch(/access_token|refresh_token|mock_at_/);

    // Replayed with the binding cookie still held (copied before the callback cleared it): refused by the single-use state.
    const replay = redirectOf(await call(app.url, 'GET', callbackPath, { headers: { cookie: cookiesFrom(start) } }));
    expect(Object.fromEntries(replay.searchParams)).toEqual({
      oauth: 'error',
      provider: 'hubspot',
      message: 'This authorization was already used or was not issued here; start again',
    });

    const refreshed = await ws.api.post('/oauth/refresh', { body: { target: 'crm', provider: 'hubspot' } });
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.refreshed).toBe(true);
    expect(refreshed.body.expires_at).toBeGreaterThanOrEqual(config.body.providers[0].token_expires_at);
    expect((await freshAccessToken(ws.workspace_id, 'crm_hubspot')).accessToken).toMatch(/^mock_at_/);
  });

  it('a denied consent, a tampered, expired or missing state redirect with an error and store nothing', async () => {
    const ws = await app.newWorkspace();
    const denied = await ws.api.post('/oauth/start', { body: { target: 'crm', provider: 'zoho' } });
    const deny = redirectOf((await approveMock(denied, 'deny')).response);
    expect(deny.searchParams.get('oauth')).toBe('error');
    expect(deny.searchParams.get('message')).toBe('The provider refused the authorization: The user denied access');

    const tamperedStart = await ws.api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
    const page = await call(app.url, 'GET', localPath(tamperedStart.body.authorize_url));
    const approve = new URL(htmlHref(page.text, 'approve'));
    const state = approve.searchParams.get('state')!;
    approve.searchParams.set('state', `${state.slice(0, -6)}${state.slice(-6) === 'AAAAAA' ? 'BBBBBB' : 'AAAAAA'}`);
    const tampered = redirectOf(await call(app.url, 'GET', localPath(approve.toString()), { headers: { cookie: cookiesFrom(tamperedStart) } }));
    expect(Object.fromEntries(tampered.searchParams)).toEqual({ oauth: 'error', provider: '', message: 'The state parameter is invalid' });

    const missing = redirectOf(await call(app.url, 'GET', '/oauth/callback?code=abc'));
    expect(missing.searchParams.get('message')).toBe('The state parameter is missing');

    const expiring = await ws.api.post('/oauth/start', { body: { target: 'crm', provider: 'gohighlevel', return_to: '/crm' } });
    const expiringPage = await call(app.url, 'GET', localPath(expiring.body.authorize_url));
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 10 * 60_000 + 1000);
    const expired = redirectOf(await call(app.url, 'GET', localPath(htmlHref(expiringPage.text, 'approve')), { headers: { cookie: cookiesFrom(expiring) } }));
    vi.useRealTimers();
    expect(`${expired.pathname}`).toBe('/crm');
    expect(Object.fromEntries(expired.searchParams)).toEqual({ oauth: 'error', provider: 'gohighlevel', message: 'This authorization has expired; start again' });

    expect((await ws.api.get('/get-crm-config')).body.providers).toEqual([]);
  });

  it('refuses redirect URI variants at the mock provider and a start outside admin', async () => {
    const start = await app.api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
    const authorize = new URL(start.body.authorize_url);
    for (const variant of [`${BASE}/oauth/callback/`, `${BASE}/oauth/callback?x=1`, 'https://API.parley.test/oauth/callback', 'https://evil.example/oauth/callback']) {
      authorize.searchParams.set('redirect_uri', variant);
      const page = await call(app.url, 'GET', localPath(authorize.toString()));
      expect(page.text, variant).toContain('This authorization request is invalid: redirect_uri is not the registered one');
      expect(page.text).not.toContain('id="approve"');
    }
    // A code redeemed with another redirect URI: RFC 6749 invalid_grant from the token endpoint.
    const page = await call(app.url, 'GET', localPath(start.body.authorize_url));
    const code = new URL(htmlHref(page.text, 'approve')).searchParams.get('code')!;
    const token = await call(app.url, 'POST', '/oauth/mock/token', {
      rawBody: new URLSearchParams({ grant_type: 'authorization_code', code, client_id: 'parley-mock-hubspot', redirect_uri: `${BASE}/oauth/callback/`, code_verifier: 'x'.repeat(43) }).toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(token.status).toBe(400);
    expect(token.body).toEqual({ error: 'invalid_grant', error_description: 'redirect_uri does not match' });

    const scoped = await app.api.post('/api-keys', { body: { name: 'agents only', scopes: ['agents'] } });
    const refused = await app.api.withKey(scoped.body.api_key).post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('This API key lacks the "admin" scope');

    const wrongTarget = await app.api.post('/oauth/start', { body: { target: 'crm', provider: 'notion' } });
    expect(wrongTarget.status).toBe(400);
    expect(wrongTarget.body.message).toBe('provider notion cannot be used for target crm (it serves kb_sync, app)');
    const badReturn = await app.api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot', return_to: '//evil.example' } });
    expect(badReturn.status).toBe(400);
    expect(badReturn.body.message).toBe('return_to: Must be a path on the dashboard starting with a single /');
  });

  it('kb_sync stores the connection for the knowledge base and notion tokens are never refreshed', async () => {
    const ws = await app.newWorkspace();
    const start = await ws.api.post('/oauth/start', { body: { target: 'kb_sync', provider: 'notion', knowledge_base_id: 'knowledge_base_1', sync_config: { page_id: 'p1' } } });
    expect(start.body).toMatchObject({ mock: true, pkce: true });
    const location = redirectOf((await approveMock(start)).response);
    expect(location.pathname).toBe('/knowledge-base');
    expect(location.searchParams.get('knowledge_base_id')).toBe('knowledge_base_1');
    const syncId = location.searchParams.get('sync_id')!;
    expect(syncId).toMatch(/^sync_[0-9a-f]{24}$/);
    const token = await freshAccessToken(ws.workspace_id, syncId);
    expect(token).toMatchObject({ provider: 'notion', mock: true, kept: { workspace_id: 'mock-notion-workspace' } });
    expect(token.expiresAt).toBeUndefined();
    const refresh = await ws.api.post('/oauth/refresh', { body: { target: 'kb_sync', sync_id: syncId } });
    expect(refresh.body).toEqual({ refreshed: false, expires_at: null });
  });
});

describe('a connection is finished only in the browser that started it', () => {
  const NOT_THIS_BROWSER = 'This connection was not started in this browser (its cookie is missing or belongs to another connection); start it again here';
  const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

  it('the start sets a cookie holding the state\'s hash, sent to the callback only', async () => {
    const start = await app.api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
    expect(start.status).toBe(200);
    const state = new URL(start.body.authorize_url).searchParams.get('state')!;
    expect(start.headers['set-cookie']).toBe(`parley_oauth_flow=${sha256Hex(state)}; Path=/oauth/callback; Max-Age=600; HttpOnly; Secure; SameSite=Lax`);
  });

  it('an attacker\'s started connection opened in a victim\'s browser is refused and stores nothing; the starting browser still finishes it', async () => {
    const attacker = await app.newWorkspace();
    const victim = await app.newWorkspace();
    // The attacker starts in their workspace and sends the consent link; the victim approves.
    const start = await attacker.api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
    const page = await call(app.url, 'GET', localPath(start.body.authorize_url));
    const callbackPath = localPath(htmlHref(page.text, 'approve'));

    // The victim's browser: no binding cookie at all.
    const bare = await call(app.url, 'GET', callbackPath);
    expect(Object.fromEntries(redirectOf(bare).searchParams)).toEqual({ oauth: 'error', provider: 'hubspot', message: NOT_THIS_BROWSER });
    expect(bare.headers['set-cookie']).toBeUndefined();

    // The victim's browser holding the cookie of a connection it started itself.
    const own = await victim.api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
    const other = await call(app.url, 'GET', callbackPath, { headers: { cookie: cookiesFrom(own) } });
    expect(Object.fromEntries(redirectOf(other).searchParams)).toEqual({ oauth: 'error', provider: 'hubspot', message: NOT_THIS_BROWSER });
    // Its own flow's cookie is left alone.
    expect(other.headers['set-cookie']).toBeUndefined();
    expect((await attacker.api.get('/get-crm-config')).body.providers).toEqual([]);

    // A refused callback does not take the state: the browser that started it still finishes, and the cookie is cleared.
    const done = await call(app.url, 'GET', callbackPath, { headers: { cookie: cookiesFrom(start) } });
    expect(Object.fromEntries(redirectOf(done).searchParams)).toEqual({ oauth: 'success', provider: 'hubspot' });
    expect(done.headers['set-cookie']).toBe('parley_oauth_flow=; Path=/oauth/callback; Max-Age=0; HttpOnly; Secure; SameSite=Lax');
    expect((await attacker.api.get('/get-crm-config')).body.providers).toHaveLength(1);
    expect((await victim.api.get('/get-crm-config')).body.providers).toEqual([]);
  });
});

describe('the OAuth flow with a real provider (a fake authorization server on 127.0.0.1)', () => {
  it('exchanges the code with the PKCE verifier, keeps instance_url and stores the tokens sealed', async () => {
    const ws = await app.newWorkspace();
    const start = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'salesforce', name: 'Sales' } });
    expect(start.body).toMatchObject({ mock: false, pkce: true, provider: 'salesforce' });
    const authorize = new URL(start.body.authorize_url);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${fake.url}/authorize`);
    expect(authorize.searchParams.get('client_id')).toBe(fake.clientId);
    const before = fake.tokenRequests.length;
    const { response } = await approveFake(start);
    const location = redirectOf(response);
    const appId = location.searchParams.get('app_id')!;
    expect(Object.fromEntries(location.searchParams)).toEqual({ oauth: 'success', provider: 'salesforce', app_id: appId });
    const exchange = fake.tokenRequests.slice(before);
    expect(exchange).toHaveLength(1);
    expect(exchange[0]!.form).toMatchObject({ grant_type: 'authorization_code', redirect_uri: `${BASE}/oauth/callback`, client_id: fake.clientId });
    expect(exchange[0]!.form.code_verifier).toMatch(/^[A-Za-z0-9_-]{43,128}$/);

    const got = await ws.api.get(`/get-app/${appId}`);
    expect(got.body).toMatchObject({ app_id: appId, provider: 'salesforce', type: 'crm', name: 'Sales', connection_status: 'connected', status: 'connected', mock: false, auth_config: { type: 'oauth2' } });
    const connection = await table.get<Record<string, unknown>>(keys.integrationConnection(ws.workspace_id, appId));
    expect(connection!.kept).toEqual({ instance_url: fake.url });
    const stored = JSON.stringify(connection);
    for (const token of fake.issued.slice(-2)) expect(stored).not.toContain(token);
    expect(String(connection!.secret)).toMatch(/^env1\./);
    // The access token works against the vendor at the kept instance URL.
    const test = await ws.api.post(`/test-app-auth/${appId}`);
    expect(test.body).toEqual({ success: true });
  });

  it('a code redeemed with another authorization\'s PKCE verifier is refused and stores nothing', async () => {
    const ws = await app.newWorkspace();
    const first = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'salesforce' } });
    const second = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'salesforce' } });
    const answer = await fetch(first.body.authorize_url, { redirect: 'manual' });
    const callback = new URL(answer.headers.get('location')!);
    callback.searchParams.set('state', new URL(second.body.authorize_url).searchParams.get('state')!);
    // The browser that started both holds the second start's cookie.
    const location = redirectOf(await call(app.url, 'GET', localPath(callback.toString()), { headers: { cookie: cookiesFrom(second) } }));
    expect(Object.fromEntries(location.searchParams)).toEqual({
      oauth: 'error',
      provider: 'salesforce',
      message: 'The code exchange failed: PKCE verification failed',
    });
    expect((await ws.api.get('/list-apps')).body.items).toEqual([]);
  });

  it('ten concurrent refreshes of one connection make one refresh-token use; the rotated token is kept', async () => {
    const ws = await app.newWorkspace();
    const appId = await connectFakeApp(ws.api);
    fake.refreshDelayMs = 500;
    const before = fake.refreshUses();
    const answers = await Promise.all(Array.from({ length: 10 }, () => ws.api.post('/oauth/refresh', { body: { target: 'app', app_id: appId } })));
    expect(answers.map((answer) => answer.status)).toEqual(Array(10).fill(200));
    expect(fake.refreshUses() - before).toBe(1);
    expect(new Set(answers.map((answer) => answer.body.expires_at)).size).toBe(1);
    expect(answers.every((answer) => answer.body.refreshed === true)).toBe(true);
    fake.refreshDelayMs = 0;
    // The rotated refresh token was stored: the next refresh uses it (the old one is invalid_grant now).
    const again = await ws.api.post('/oauth/refresh', { body: { target: 'app', app_id: appId } });
    expect(again.status).toBe(200);
    expect(fake.refreshUses() - before).toBe(2);
  });

  it('a token under 5 minutes from expiry is refreshed once before use, however many callers ask at once', async () => {
    const ws = await app.newWorkspace();
    fake.expiresIn = 120;
    const appId = await connectFakeApp(ws.api);
    fake.expiresIn = 3600;
    fake.refreshDelayMs = 300;
    const before = fake.refreshUses();
    const tokens = await Promise.all(Array.from({ length: 10 }, () => freshAccessToken(ws.workspace_id, appId)));
    expect(fake.refreshUses() - before).toBe(1);
    expect(new Set(tokens.map((token) => token.accessToken)).size).toBe(1);
    expect(tokens[0]!.expiresAt).toBeGreaterThan(Date.now() + 50 * 60_000);
  });

  it('the minute job refreshes tokens expiring within 10 minutes, found through the expiry index', async () => {
    const ws = await app.newWorkspace();
    fake.expiresIn = 540;
    const appId = await connectFakeApp(ws.api);
    fake.expiresIn = 3600;
    const before = (await ws.api.get(`/get-app/${appId}`)).body.token_expires_at;
    expect(before).toBeLessThan(Date.now() + 10 * 60_000);
    const result = await refreshExpiringConnections();
    expect(result.refreshed).toBeGreaterThanOrEqual(1);
    const after = (await ws.api.get(`/get-app/${appId}`)).body.token_expires_at;
    expect(after).toBeGreaterThan(Date.now() + 50 * 60_000);
  });

  it('a revoked grant marks the connection needs_reconnect and says so', async () => {
    const ws = await app.newWorkspace();
    const appId = await connectFakeApp(ws.api);
    fake.revokeAll();
    const refused = await ws.api.post('/oauth/refresh', { body: { target: 'app', app_id: appId } });
    expect(refused.status).toBe(400);
    expect(refused.body.message).toBe('The salesforce connection needs to be reconnected: the provider revoked its authorization');
    const got = await ws.api.get(`/get-app/${appId}`);
    expect(got.body).toMatchObject({ status: 'needs_reconnect', connection_status: 'error' });
  });
});

describe('connections across workspaces and records', () => {
  it('keeps each workspace to its own connections and refuses a ciphertext moved to another connection', async () => {
    const a = await app.newWorkspace();
    const b = await app.newWorkspace();
    await connectMockCrm(a.api, 'hubspot');
    await connectMockCrm(b.api, 'zoho');
    expect((await b.api.get('/get-crm-config')).body.providers.map((p: any) => p.provider)).toEqual(['zoho']);
    const notB = await b.api.post('/oauth/refresh', { body: { target: 'crm', provider: 'hubspot' } });
    expect(notB.status).toBe(404);
    expect(notB.body.message).toBe('No hubspot CRM connection in this workspace');

    // Move A's sealed tokens onto B's connection: they do not open there.
    const source = await table.get<Record<string, unknown>>(keys.integrationConnection(a.workspace_id, 'crm_hubspot'));
    const target = await table.get<Record<string, unknown>>(keys.integrationConnection(b.workspace_id, 'crm_zoho'));
    await table.put({ Item: { ...target!, secret: source!.secret } });
    const moved = await b.api.post('/test-crm-auth/zoho');
    expect(moved.status).toBe(422);
    expect(moved.body.message).toBe('The stored credentials of this zoho connection cannot be opened; reconnect it');
  });

  it('pasted credentials: 400 This connection does not use OAuth', async () => {
    const created = await app.api.post('/create-app', {
      body: { provider: 'zendesk', type: 'support', tenant_url: fake.url, auth_config: { type: 'basic', username: 'agent@example.com/token', password: 'zendesk-secret' } },
    });
    expect(created.status).toBe(201);
    const refresh = await app.api.post('/oauth/refresh', { body: { target: 'app', app_id: created.body.app_id } });
    expect(refresh.status).toBe(400);
    expect(refresh.body).toEqual({ status: 400, message: 'This connection does not use OAuth' });
  });

  it('leaves no plaintext token anywhere in the table', async () => {
    const out = await db.send(new ScanCommand({ TableName: tableName }));
    const dump = JSON.stringify(out.Items);
    expect(fake.issued.length).toBeGreaterThan(10);
    for (const token of fake.issued) expect(dump).not.toContain(token);
    expect(dump).not.toContain('zendesk-secret');
    expect(dump).not.toMatch(/mock_at_[0-9a-f]{32}/);
  });
});
