import { ScanCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { checkClientUrl } from '../../shared/integrations/app-clients.ts';
import { refreshExpiringConnections } from '../../shared/integrations/oauth-refresh.ts';
import { db, tableName } from '../../shared/platform/store/db.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { fakeOAuth } from '../support/fake-oauth.ts';
import { call, cookiesFrom, type ApiClient } from '../support/http.ts';
import { retellClient } from '../support/sdk.ts';

// retell-sdk's `oauth2` auth_config: an app with the caller's own OAuth client. No
// <PREFIX>_OAUTH_CLIENT_ID is set here, so without the app's client every provider is the mock.
const BASE = vi.hoisted(() => (process.env.PUBLIC_BASE_URL = 'https://api.parley.test'));
const app = await startTestApp();
const fake = await fakeOAuth();

afterEach(() => {
  fake.expiresIn = 3600;
});

const localPath = (url: string) => new URL(url).pathname + new URL(url).search;

const ownClient = (overrides: Record<string, unknown> = {}) => ({
  type: 'oauth2',
  client_id: fake.clientId,
  client_secret: fake.clientSecret,
  authorize_url: `${fake.url}/authorize`,
  token_url: `${fake.url}/token`,
  scopes: ['crm.objects.contacts.read', 'crm.objects.contacts.write'],
  ...overrides,
});

async function createWithClient(api: ApiClient, provider = 'hubspot') {
  const created = await api.post('/create-app', { body: { provider, type: 'crm', name: 'Own client', auth_config: ownClient() } });
  expect(created.status).toBe(201);
  return created.body.app_id as string;
}

/** start → the fake's authorize redirect → the callback; answers the dashboard redirect's parameters. */
async function connect(api: ApiClient, appId: string, provider = 'hubspot') {
  const start = await api.post('/oauth/start', { body: { target: 'app', provider, app_id: appId } });
  expect(start.status).toBe(200);
  const answer = await fetch(start.body.authorize_url, { redirect: 'manual' });
  expect(answer.status).toBe(302);
  const done = await call(app.url, 'GET', localPath(answer.headers.get('location')!), { headers: { cookie: cookiesFrom(start) } });
  expect(done.status).toBe(302);
  return { start: start.body, result: Object.fromEntries(new URL(done.headers.location!).searchParams) };
}

describe('an app with its own OAuth client (auth_config oauth2)', () => {
  it('is created with the client sealed, answers everything but the secret, and authorizes with it', async () => {
    const ws = await app.newWorkspace();
    const created = await ws.api.post('/create-app', { body: { provider: 'hubspot', type: 'crm', name: 'Own client', auth_config: ownClient() } });
    expect(created.status).toBe(201);
    const appId = created.body.app_id;
    const expectedAuth = {
      type: 'oauth2',
      client_id: fake.clientId,
      authorize_url: `${fake.url}/authorize`,
      token_url: `${fake.url}/token`,
      scopes: ['crm.objects.contacts.read', 'crm.objects.contacts.write'],
    };
    expect(created.body).toMatchObject({ provider: 'hubspot', connection_status: 'not_connected', mock: false, auth_config: expectedAuth });
    expect(created.body.auth_config).toEqual(expectedAuth);
    // Never answered back: create, get, list, retell-sdk's list.
    const answers = [created.body, (await ws.api.get(`/get-app/${appId}`)).body, (await ws.api.get('/list-apps')).body, await retellClient(app.url, ws.api_key).app.list()];
    for (const answer of answers) expect(JSON.stringify(answer)).not.toContain(fake.clientSecret);
    const stored = await table.get<Record<string, any>>(keys.integrationApp(ws.workspace_id, appId));
    expect(JSON.stringify(stored)).not.toContain(fake.clientSecret);
    expect(stored!.oauth_client.secret).toMatch(/^env1\./);

    const before = fake.tokenRequests.length;
    const { start, result } = await connect(ws.api, appId);
    expect(start).toMatchObject({ mock: false, pkce: false, provider: 'hubspot' });
    const authorize = new URL(start.authorize_url);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${fake.url}/authorize`);
    expect(authorize.searchParams.get('client_id')).toBe(fake.clientId);
    expect(authorize.searchParams.get('scope')).toBe('crm.objects.contacts.read crm.objects.contacts.write');
    expect(authorize.searchParams.get('redirect_uri')).toBe(`${BASE}/oauth/callback`);
    expect(result).toEqual({ oauth: 'success', provider: 'hubspot', app_id: appId });
    const exchange = fake.tokenRequests.slice(before);
    expect(exchange).toHaveLength(1);
    expect(exchange[0]!.form).toMatchObject({ grant_type: 'authorization_code', client_id: fake.clientId, client_secret: fake.clientSecret, redirect_uri: `${BASE}/oauth/callback` });

    const got = await ws.api.get(`/get-app/${appId}`);
    expect(got.body).toMatchObject({ app_id: appId, connection_status: 'connected', status: 'connected', mock: false, auth_config: expectedAuth });
    expect(got.body.token_expires_at).toBeGreaterThan(Date.now() + 50 * 60_000);
    const connection = await table.get<Record<string, unknown>>(keys.integrationConnection(ws.workspace_id, appId));
    expect(connection).toMatchObject({ mode: 'oauth', client: 'app', status: 'connected' });
    for (const token of fake.issued.slice(-2)) expect(JSON.stringify(connection)).not.toContain(token);
    expect((await ws.api.get('/list-apps')).body.items).toHaveLength(1);
  });

  it('refreshes with the app\'s client, forced and by the minute job', async () => {
    const ws = await app.newWorkspace();
    const appId = await createWithClient(ws.api);
    fake.expiresIn = 540;
    expect((await connect(ws.api, appId)).result.oauth).toBe('success');
    fake.expiresIn = 3600;
    const expiring = (await ws.api.get(`/get-app/${appId}`)).body.token_expires_at;
    expect(expiring).toBeLessThan(Date.now() + 10 * 60_000);

    const before = fake.refreshUses();
    const job = await refreshExpiringConnections();
    expect(job.refreshed).toBeGreaterThanOrEqual(1);
    expect(fake.refreshUses() - before).toBe(1);
    const refresh = fake.tokenRequests.filter((request) => request.grant_type === 'refresh_token').at(-1)!;
    expect(refresh.form).toMatchObject({ client_id: fake.clientId, client_secret: fake.clientSecret });
    expect((await ws.api.get(`/get-app/${appId}`)).body.token_expires_at).toBeGreaterThan(Date.now() + 50 * 60_000);

    const forced = await ws.api.post('/oauth/refresh', { body: { target: 'app', app_id: appId } });
    expect(forced.status).toBe(200);
    expect(forced.body.refreshed).toBe(true);
    expect(fake.refreshUses() - before).toBe(2);
  });

  it('a new client drops the old client\'s tokens; a client changed between start and callback stores nothing', async () => {
    const ws = await app.newWorkspace();
    const appId = await createWithClient(ws.api);
    expect((await connect(ws.api, appId)).result.oauth).toBe('success');

    const updated = await ws.api.patch(`/update-app/${appId}`, { body: { auth_config: ownClient({ client_secret: 'another-secret', scopes: undefined }) } });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ connection_status: 'not_connected', status: 'not_connected' });
    expect(updated.body.auth_config).toEqual({ type: 'oauth2', client_id: fake.clientId, authorize_url: `${fake.url}/authorize`, token_url: `${fake.url}/token` });
    expect(JSON.stringify(updated.body)).not.toContain('another-secret');
    expect(await table.get(keys.integrationConnection(ws.workspace_id, appId))).toBeUndefined();
    const refresh = await ws.api.post('/oauth/refresh', { body: { target: 'app', app_id: appId } });
    expect(refresh.status).toBe(409);
    expect(refresh.body.message).toBe(`App ${appId} has no connection yet; connect it first`);

    // Started with one client, the app's client replaced before the callback: refused, nothing stored.
    await ws.api.patch(`/update-app/${appId}`, { body: { auth_config: ownClient({ scopes: undefined }) } });
    const start = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'hubspot', app_id: appId } });
    // No scopes given: the provider table's.
    expect(new URL(start.body.authorize_url).searchParams.get('scope')).toBe('oauth crm.objects.contacts.read crm.objects.contacts.write crm.schemas.contacts.read');
    await ws.api.patch(`/update-app/${appId}`, { body: { auth_config: ownClient({ client_id: 'other-client' }) } });
    const answer = await fetch(start.body.authorize_url, { redirect: 'manual' });
    const done = await call(app.url, 'GET', localPath(answer.headers.get('location')!), { headers: { cookie: cookiesFrom(start) } });
    expect(Object.fromEntries(new URL(done.headers.location!).searchParams)).toEqual({
      oauth: 'error',
      provider: 'hubspot',
      message: 'The app\'s OAuth client changed meanwhile; start again',
    });
    expect(await table.get(keys.integrationConnection(ws.workspace_id, appId))).toBeUndefined();
  });

  it('refuses bad client URLs, oauth2 for pasted providers and other credential types for OAuth providers', async () => {
    const ws = await app.newWorkspace();
    const cases: [Record<string, unknown>, string][] = [
      [{ token_url: 'http://169.254.169.254/token' }, 'auth_config.token_url: Destination not allowed: 169.254.169.254 is a link-local address'],
      [{ token_url: 'http://10.0.0.5/token' }, 'auth_config.token_url: Destination not allowed: 10.0.0.5 is a private address'],
      [{ authorize_url: 'javascript:alert(1)' }, 'auth_config.authorize_url: Destination not allowed: javascript: URLs are not allowed (http: or https: only)'],
      [{ token_url: 'https://user:pw@login.example.com/token' }, 'auth_config.token_url: Destination not allowed: URLs with credentials are not allowed; send them in a header'],
      [{ token_url: 'not a url' }, 'auth_config.token_url: Destination not allowed: not a valid URL'],
      [{ authorize_url: `${fake.url}/authorize#x` }, 'auth_config.authorize_url: must not have a fragment'],
    ];
    for (const [overrides, message] of cases) {
      const created = await ws.api.post('/create-app', { body: { provider: 'hubspot', type: 'crm', auth_config: ownClient(overrides) } });
      expect(created.status, message).toBe(400);
      expect(created.body).toEqual({ status: 400, message });
    }
    const appId = await createWithClient(ws.api);
    const update = await ws.api.patch(`/update-app/${appId}`, { body: { auth_config: ownClient({ token_url: 'http://[::1]:22/token' }) } });
    expect(update.status).toBe(400);
    expect(update.body.message).toBe('auth_config.token_url: Destination not allowed: port 22 is not allowed');
    const scopes = await ws.api.post('/create-app', { body: { provider: 'hubspot', type: 'crm', auth_config: ownClient({ scopes: ['a b'] }) } });
    expect(scopes.status).toBe(400);
    expect(scopes.body.message).toBe('auth_config.scopes.0: Must be an OAuth scope token (no spaces or quotes)');
    const pasted = await ws.api.post('/create-app', { body: { provider: 'zendesk', type: 'support', tenant_url: fake.url, auth_config: ownClient() } });
    expect(pasted.body).toEqual({ status: 400, message: 'auth_config.type oauth2 is not accepted for zendesk (basic or api_key)' });
    // The document stores serve apps too (search_documents), so they take a client of their own; its secret is never answered.
    const documents = await ws.api.post('/create-app', { body: { provider: 'google_drive', type: 'knowledge_base', auth_config: ownClient() } });
    expect(documents.status).toBe(201);
    expect(documents.body.auth_config).toEqual({ type: 'oauth2', client_id: fake.clientId, authorize_url: `${fake.url}/authorize`, token_url: `${fake.url}/token`, scopes: ['crm.objects.contacts.read', 'crm.objects.contacts.write'] });
    expect((await ws.api.get('/list-apps')).body.items.map((item: { provider: string }) => item.provider).sort()).toEqual(['google_drive', 'hubspot']);
  });

  it('retell-sdk creates one unchanged; without URLs the provider table\'s endpoints are used', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const created = await client.app.create({ provider: 'salesforce', type: 'crm', auth_config: { type: 'oauth2', client_id: 'my-sf-client', client_secret: 'my-sf-secret' } });
    expect(created.auth_config).toEqual({ type: 'oauth2', client_id: 'my-sf-client' });
    expect(created.connection_status).toBe('not_connected');
    expect(JSON.stringify(await client.app.get(created.app_id))).not.toContain('my-sf-secret');
    const start = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'salesforce', app_id: created.app_id } });
    expect(start.body).toMatchObject({ mock: false, pkce: true });
    const authorize = new URL(start.body.authorize_url);
    expect(`${authorize.origin}${authorize.pathname}`).toBe('https://login.salesforce.com/services/oauth2/authorize');
    expect(authorize.searchParams.get('client_id')).toBe('my-sf-client');
    expect(authorize.searchParams.get('scope')).toBe('api refresh_token');
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  });

  it('a client secret moved to another app does not open there', async () => {
    const ws = await app.newWorkspace();
    const first = await createWithClient(ws.api);
    const second = await createWithClient(ws.api);
    const source = await table.get<Record<string, any>>(keys.integrationApp(ws.workspace_id, first));
    const target = await table.get<Record<string, any>>(keys.integrationApp(ws.workspace_id, second));
    await table.put({ Item: { ...target!, oauth_client: { ...target!.oauth_client, secret: source!.oauth_client.secret } } });
    const start = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'hubspot', app_id: second } });
    expect(start.status).toBe(422);
    expect(start.body).toEqual({ status: 422, message: `The stored OAuth client of app ${second} cannot be opened; give its auth_config again` });
    expect((await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'hubspot', app_id: first } })).status).toBe(200);
  });

  it('leaves no client secret or token in plaintext anywhere in the table', async () => {
    const dump = JSON.stringify((await db.send(new ScanCommand({ TableName: tableName }))).Items);
    expect(fake.issued.length).toBeGreaterThan(4);
    for (const secret of [fake.clientSecret, 'my-sf-secret', 'another-secret', ...fake.issued]) expect(dump).not.toContain(secret);
  });

  it('in production only https URLs are taken', async () => {
    await expect(checkClientUrl('token_url', `${fake.url}/token`, true)).rejects.toThrow('auth_config.token_url: Destination not allowed: http: URLs are not allowed (https: only)');
    await expect(checkClientUrl('token_url', `${fake.url}/token`, false)).resolves.toBe(`${fake.url}/token`);
  });
});
