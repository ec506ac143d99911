import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { fakeOAuth } from '../support/fake-oauth.ts';
import { call, cookiesFrom, type ApiClient } from '../support/http.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

const BASE = vi.hoisted(() => (process.env.PUBLIC_BASE_URL = 'https://api.parley.test'));
const app = await startTestApp();
const fake = await fakeOAuth();
// HubSpot is a real provider here (the fake server: OAuth and its CRM API); Calendly stays the mock.
Object.assign(process.env, {
  HUBSPOT_OAUTH_CLIENT_ID: fake.clientId,
  HUBSPOT_OAUTH_CLIENT_SECRET: fake.clientSecret,
  HUBSPOT_OAUTH_AUTHORIZE_URL: `${fake.url}/authorize`,
  HUBSPOT_OAUTH_TOKEN_URL: `${fake.url}/token`,
  HUBSPOT_API_BASE_URL: fake.url,
});

let background: { stop(): Promise<void> };
beforeAll(() => {
  background = startBackgroundWork(JOBS.filter((job) => job.name === 'integration-jobs'));
});
afterAll(() => background.stop());

const localPath = (url: string) => new URL(url).pathname + new URL(url).search;
const zendesk = (overrides: Record<string, unknown> = {}) => ({
  provider: 'zendesk',
  type: 'support',
  name: 'Help desk',
  tenant_url: fake.url,
  auth_config: { type: 'basic', username: 'agent@example.com/token', password: 'zendesk-secret' },
  ...overrides,
});

async function connectHubspotCrm(api: ApiClient) {
  const start = await api.post('/oauth/start', { body: { target: 'crm', provider: 'hubspot' } });
  expect(start.body).toMatchObject({ mock: false, pkce: false });
  expect(new URL(start.body.authorize_url).searchParams.get('code_challenge')).toBeNull();
  const answer = await fetch(start.body.authorize_url, { redirect: 'manual' });
  const done = await call(app.url, 'GET', localPath(answer.headers.get('location')!), { headers: { cookie: cookiesFrom(start) } });
  expect(new URL(done.headers.location!).searchParams.get('oauth')).toBe('success');
}

describe('the app catalogue', () => {
  it('lists app types with their providers, and the tools as JSON schema', async () => {
    const types = await app.api.get('/list-app-types');
    expect(types.status).toBe(200);
    expect(types.body.map((entry: any) => entry.type)).toEqual(['crm', 'calendar', 'knowledge_base', 'support', 'communication']);
    expect(types.body[3].providers).toEqual([
      { provider: 'zendesk', display_name: 'Zendesk', auth: 'pasted', auth_types: ['basic', 'api_key'], requires_tenant_url: true, tools: ['create_ticket', 'get_ticket'] },
    ]);
    const schema = await app.api.get('/get-app-tool-schema?provider=cal_com');
    expect(schema.body).toHaveLength(1);
    expect(schema.body[0].tools.map((tool: any) => tool.name)).toEqual(['check_availability', 'book_meeting']);
    expect(schema.body[0].tools[1].parameters).toMatchObject({ type: 'object', required: ['event_type_id', 'start', 'name', 'email'] });
  });
});

describe('apps through retell-sdk and over HTTP', () => {
  it('create, get, list, update, test auth, usages and delete work unchanged in retell-sdk', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const created = await client.app.create(zendesk() as never);
    expect(created).toMatchObject({ provider: 'zendesk', type: 'support', name: 'Help desk', connection_status: 'not_connected', org_id: ws.workspace_id });
    expect(created.auth_config).toEqual({ type: 'basic', username: 'agent@example.com/token' });
    expect(JSON.stringify(created)).not.toContain('zendesk-secret');
    expect((await client.app.get(created.app_id)).app_id).toBe(created.app_id);
    expect((await client.app.list()).items.map((item) => item.app_id)).toEqual([created.app_id]);
    expect(await client.app.testAuth(created.app_id)).toEqual({ success: true });
    expect(fake.apiRequests.at(-1)).toMatchObject({ method: 'GET', path: '/api/v2/users/me.json', authorization: fake.pasted.basic });
    expect((await client.app.get(created.app_id)).connection_status).toBe('connected');

    const renamed = await client.app.update(created.app_id, { name: 'Support' });
    expect(renamed.name).toBe('Support');
    expect(renamed.connection_status).toBe('connected');
    const wrong = await client.app.update(created.app_id, { auth_config: { type: 'basic', username: 'agent@example.com/token', password: 'wrong' } });
    expect(wrong.connection_status).toBe('not_connected');
    expect(await client.app.testAuth(created.app_id)).toEqual({ success: false, message: 'zendesk refused the app\'s credentials (HTTP 401)' });
    expect((await client.app.get(created.app_id)).connection_status).toBe('error');

    expect(await client.app.listUsages(created.app_id)).toEqual({ items: [], has_more: false });
    // Not in use (test/integrations/app-usages.test.ts has apps in use): deleted without force.
    await client.app.delete(created.app_id);
    expect((await sdkFailure(client.app.get(created.app_id))).status).toBe(404);
  });

  it('runs a tool through the vendor\'s API, and through the mock provider in mock mode', async () => {
    const ws = await app.newWorkspace();
    const desk = await ws.api.post('/create-app', { body: zendesk() });
    const ticket = await ws.api.post(`/apps/${desk.body.app_id}/execute`, {
      body: { tool: 'create_ticket', arguments: { subject: 'Refund', description: 'Caller wants a refund', requester_email: 'a@example.com' } },
    });
    expect(ticket.status).toBe(200);
    expect(ticket.body).toEqual({ app_id: desk.body.app_id, tool: 'create_ticket', result: { ticket: { id: 42, status: 'new', subject: 'Refund' } } });
    expect(fake.apiRequests.at(-1)).toMatchObject({
      method: 'POST',
      path: '/api/v2/tickets.json',
      body: { ticket: { subject: 'Refund', comment: { body: 'Caller wants a refund' }, requester: { email: 'a@example.com', name: 'a@example.com' } } },
    });
    const missing = await ws.api.post(`/apps/${desk.body.app_id}/execute`, { body: { tool: 'create_ticket', arguments: { subject: 'x' } } });
    expect(missing.status).toBe(400);
    expect(missing.body.message).toBe('arguments.description: Required');
    const unknown = await ws.api.post(`/apps/${desk.body.app_id}/execute`, { body: { tool: 'book_meeting' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toBe('zendesk has no tool book_meeting (it has create_ticket, get_ticket)');

    const cal = await ws.api.post('/create-app', { body: { provider: 'cal_com', type: 'calendar', tenant_url: fake.url, auth_config: { type: 'api_key', api_key: 'cal-secret-key' } } });
    const booked = await ws.api.post(`/apps/${cal.body.app_id}/execute`, {
      body: { tool: 'book_meeting', arguments: { event_type_id: 5, start: '2030-01-07T09:00:00Z', name: 'Ann', email: 'ann@example.com' } },
    });
    expect(booked.body.result).toEqual({ status: 'success', data: { id: 7, start: '2030-01-07T09:00:00Z' } });

    const start = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'calendly', name: 'Bookings' } });
    expect(start.body.mock).toBe(true);
    const page = await call(app.url, 'GET', localPath(start.body.authorize_url));
    const approve = /id="approve" href="([^"]+)"/.exec(page.text)![1]!.replaceAll('&amp;', '&');
    const done = await call(app.url, 'GET', localPath(approve), { headers: { cookie: cookiesFrom(start) } });
    const appId = new URL(done.headers.location!).searchParams.get('app_id')!;
    expect((await ws.api.get(`/get-app/${appId}`)).body).toMatchObject({ name: 'Bookings', provider: 'calendly', type: 'calendar', mock: true, connection_status: 'connected' });
    const link = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'create_scheduling_link', arguments: { event_type_uri: 'https://api.calendly.com/event_types/1' } } });
    expect(link.body.result).toEqual({ mock: true, tool: 'create_scheduling_link', provider: 'calendly', result: {} });
  });

  it('refuses app URLs on private addresses (SSRF), auth_config for OAuth providers, and other workspaces\' apps', async () => {
    const ws = await app.newWorkspace();
    for (const [tenant, refusal] of [
      ['http://169.254.169.254', '169.254.169.254 is a link-local address'],
      ['http://10.0.0.5', '10.0.0.5 is a private address'],
      ['http://[::ffff:192.168.1.1]', '[::ffff:c0a8:101] is a private address'],
    ]) {
      const created = await ws.api.post('/create-app', { body: zendesk({ tenant_url: tenant }) });
      expect(created.body, tenant).toEqual({ status: 400, message: `tenant_url: Destination not allowed: ${refusal}` });
    }
    const oauthWithKey = await ws.api.post('/create-app', { body: { provider: 'hubspot', type: 'crm', auth_config: { type: 'api_key', api_key: 'k' } } });
    expect(oauthWithKey.status).toBe(400);
    expect(oauthWithKey.body.message).toBe('auth_config.type api_key is not accepted for hubspot: connect it through POST /oauth/start, or give your own OAuth client (type oauth2)');
    const wrongType = await ws.api.post('/create-app', { body: { provider: 'zendesk', type: 'crm' } });
    expect(wrongType.body.message).toBe('provider zendesk is a support app, not crm');
    const noTenant = await ws.api.post('/create-app', { body: { provider: 'zendesk', type: 'support' } });
    expect(noTenant.body.message).toBe('tenant_url is required for zendesk (e.g. https://yourcompany.zendesk.com)');

    const mine = await ws.api.post('/create-app', { body: zendesk() });
    const other = await app.newWorkspace();
    for (const [method, path] of [
      ['GET', `/get-app/${mine.body.app_id}`],
      ['POST', `/test-app-auth/${mine.body.app_id}`],
      ['DELETE', `/delete-app/${mine.body.app_id}`],
      ['GET', `/list-app-usages/${mine.body.app_id}`],
    ] as const) {
      const answer = await call(app.url, method, path, { key: other.api_key });
      expect(answer.status, path).toBe(404);
      expect(answer.body.message).toBe(`App ${mine.body.app_id} not found`);
    }
    expect((await other.api.get('/list-apps')).body.items).toEqual([]);
  });
});

describe('CRM config, schema and sync jobs', () => {
  it('connects a CRM, reads its schema, and pushes contacts through the queue idempotently', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    expect(await client.crm.getConfig()).toEqual({ org_id: ws.workspace_id, providers: [] });
    await connectHubspotCrm(ws.api);
    for (const [phone, name] of [['+14155550101', 'Ann'], ['+14155550102', 'Bob']]) {
      expect((await ws.api.post('/create-contact', { body: { phone_number: phone, first_name: name } })).status).toBe(201);
    }
    const config = await ws.api.put('/update-crm-config/hubspot', { body: { sync_calls: false, field_mappings: [{ field_name: 'first_name', external_field_name: 'firstname' }] } });
    expect(config.body).toMatchObject({ provider: 'hubspot', enabled: true, sync_calls: false, sync_contacts: true, connection_status: 'connected', mock: false });

    const schema = await ws.api.get('/get-crm-schema/hubspot');
    expect(schema.body).toEqual({
      provider: 'hubspot',
      fields: [
        { name: 'firstname', type: 'string', label: 'First Name' },
        { name: 'hs_lead_status', type: 'enum', label: 'Lead Status', options: ['NEW'] },
      ],
    });
    expect((await client.crm.getSchema({ provider: 'hubspot' } as never)).fields).toHaveLength(2);
    expect((await ws.api.post('/test-crm-auth/hubspot')).body).toEqual({ success: true });

    const started = await ws.api.post('/run-crm-sync-job', { body: {} });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ provider: 'hubspot', status: 'queued', triggered_by: 'manual', succeeded: 0 });
    const busy = await ws.api.post('/run-crm-sync-job', { body: {} });
    if (busy.status === 409) expect(busy.body.message).toBe('A CRM sync is already running in this workspace');
    else expect(busy.status).toBe(202);
    const done = await eventually(
      () => ws.api.get(`/get-crm-sync-job/${started.body.sync_job_id}`),
      (answer) => answer.body.status === 'completed',
      30_000,
    );
    expect(done.body).toMatchObject({ succeeded: 2, failed: 0, skipped: 0, errors: [] });
    const created = fake.apiRequests.filter((request) => request.method === 'POST' && request.path === '/crm/v3/objects/contacts');
    expect(created.map((request) => request.body)).toEqual([
      { properties: { phone: '+14155550101', firstname: 'Ann' } },
      { properties: { phone: '+14155550102', firstname: 'Bob' } },
    ]);

    // Run again: nothing changed, nothing pushed.
    await eventually(() => client.crm.getSyncJobStatus(), (status) => status.status === 'idle', 30_000);
    const again = await client.crm.runSyncJob();
    expect(again).toMatchObject({ status: 'queued', triggered_by: 'manual' });
    const second = await eventually(() => ws.api.get('/list-crm-sync-jobs'), (answer) => answer.body[0]?.status === 'completed' && answer.body.length >= 2, 30_000);
    expect(second.body[0]).toMatchObject({ succeeded: 0, skipped: 2 });
    expect(fake.apiRequests.filter((request) => request.method === 'POST' && request.path === '/crm/v3/objects/contacts')).toHaveLength(2);

    const sdkConfig = await client.crm.updateConfig({ custom_fields: [{ name: 'plan', type: 'string' }] });
    expect(sdkConfig).toMatchObject({ org_id: ws.workspace_id, custom_fields: [{ name: 'plan', type: 'string' }] });
    expect(sdkConfig.last_sync_timestamp).toBeGreaterThan(0);

    const removed = await ws.api.delete('/delete-crm-config/hubspot');
    expect(removed.status).toBe(204);
    expect((await ws.api.delete('/delete-crm-config/hubspot')).status).toBe(404);
    const none = await ws.api.post('/run-crm-sync-job', { body: {} });
    expect(none.status).toBe(400);
    expect(none.body.message).toBe('No CRM is connected in this workspace; connect one through POST /oauth/start');
    expect(BASE).toBe('https://api.parley.test');
  }, 60_000);
});
