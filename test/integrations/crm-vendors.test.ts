import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { fakeCrmVendors } from '../support/fake-crm-vendors.ts';
import { fakeOAuth } from '../support/fake-oauth.ts';
import { call, cookiesFrom, type ApiClient } from '../support/http.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * The vendor clients of Dynamics 365, Zoho CRM and HighLevel, and the knowledge apps'
 * search_documents (Google Drive, SharePoint, Notion), through the API routes against
 * fakes on 127.0.0.1: the OAuth server (fake-oauth.ts) and the vendor APIs
 * (fake-crm-vendors.ts).
 */

vi.hoisted(() => (process.env.PUBLIC_BASE_URL = 'https://api.parley.test'));
const app = await startTestApp();
const oauth = await fakeOAuth();
const vendors = await fakeCrmVendors((token) => oauth.issued.includes(token));
// Zoho's API host is the token answer's api_domain (no override), HighLevel's sub-account its locationId.
oauth.tokenExtras = { api_domain: vendors.url, locationId: 'loc_1' };
for (const prefix of ['DYNAMICS', 'ZOHO', 'GOHIGHLEVEL', 'GOOGLE_DRIVE', 'SHAREPOINT', 'NOTION']) {
  Object.assign(process.env, {
    [`${prefix}_OAUTH_CLIENT_ID`]: oauth.clientId,
    [`${prefix}_OAUTH_CLIENT_SECRET`]: oauth.clientSecret,
    [`${prefix}_OAUTH_AUTHORIZE_URL`]: `${oauth.url}/authorize`,
    [`${prefix}_OAUTH_TOKEN_URL`]: `${oauth.url}/token`,
  });
}
Object.assign(process.env, {
  DYNAMICS_API_BASE_URL: vendors.url,
  GOHIGHLEVEL_API_BASE_URL: vendors.url,
  GOOGLE_DRIVE_API_BASE_URL: `${vendors.url}/drive/v3`,
  SHAREPOINT_API_BASE_URL: `${vendors.url}/graph/v1.0`,
  NOTION_API_BASE_URL: `${vendors.url}/notion/v1`,
});

let background: { stop(): Promise<void> };
beforeAll(() => {
  background = startBackgroundWork(JOBS.filter((job) => job.name === 'integration-jobs'));
});
afterAll(() => background.stop());

const localPath = (url: string) => new URL(url).pathname + new URL(url).search;
const DYNAMICS_ORG = 'https://contoso.crm.dynamics.com';

/** The whole OAuth flow against the fake server; answers the authorize URL and the callback's redirect. */
async function connect(api: ApiClient, body: Record<string, unknown>) {
  const start = await api.post('/oauth/start', { body });
  expect(start.status).toBe(200);
  expect(start.body.mock).toBe(false);
  const answer = await fetch(start.body.authorize_url, { redirect: 'manual' });
  const done = await call(app.url, 'GET', localPath(answer.headers.get('location')!), { headers: { cookie: cookiesFrom(start) } });
  const redirect = new URL(done.headers.location!);
  expect(redirect.searchParams.get('oauth'), redirect.searchParams.get('message') ?? '').toBe('success');
  return { authorize: new URL(start.body.authorize_url), appId: redirect.searchParams.get('app_id') ?? undefined };
}

async function syncContacts(api: ApiClient, provider: string) {
  const started = await api.post('/run-crm-sync-job', { body: { provider } });
  expect(started.status).toBe(202);
  const done = await eventually(() => api.get(`/get-crm-sync-job/${started.body.sync_job_id}`), (answer) => ['completed', 'failed'].includes(answer.body.status), 30_000);
  return done.body;
}

const latestAccessToken = () => oauth.issued.filter((token) => token.startsWith('fake_at_')).at(-1)!;

describe('Dynamics 365', () => {
  it('connects with the organisation scope, reads the contact schema, tests auth, syncs contacts and logs a call', async () => {
    const ws = await app.newWorkspace();
    const { authorize } = await connect(ws.api, { target: 'crm', provider: 'dynamics', options: { instance_url: DYNAMICS_ORG } });
    expect(authorize.searchParams.get('scope')).toBe(`${DYNAMICS_ORG}/user_impersonation offline_access`);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');

    const schema = await ws.api.get('/get-crm-schema/dynamics');
    expect(schema.status).toBe(200);
    expect(schema.body).toEqual({
      provider: 'dynamics',
      fields: [
        { name: 'firstname', type: 'string', label: 'First Name' },
        { name: 'numberofchildren', type: 'number', label: 'No. of Children' },
        { name: 'preferredcontactmethodcode', type: 'enum', label: 'Preferred Method of Contact', description: 'How to reach them', options: ['1', '2', '3'] },
      ],
    });
    const mark = vendors.requests.length;
    expect((await ws.api.post('/test-crm-auth/dynamics')).body).toEqual({ success: true });
    expect(vendors.since(mark)).toEqual([
      expect.objectContaining({ method: 'GET', path: '/api/data/v9.2/WhoAmI', authorization: `Bearer ${latestAccessToken()}`, headers: expect.objectContaining({ 'odata-version': '4.0' }) }),
    ]);

    // One contact already in Dynamics (updated in place), one new (created).
    vendors.contacts.dynamics.set('6f1c0c52-0000-4000-8000-000000000001', { telephone1: '+14155550111', lastname: 'Existing' });
    await ws.api.post('/create-contact', { body: { phone_number: '+14155550111', first_name: "O'Neil" } });
    await ws.api.post('/create-contact', { body: { phone_number: '+14155550112', first_name: 'Bea', last_name: 'Ray' } });
    const syncMark = vendors.requests.length;
    const job = await syncContacts(ws.api, 'dynamics');
    expect(job).toMatchObject({ status: 'completed', succeeded: 2, failed: 0, errors: [] });
    const writes = vendors.since(syncMark).filter((request) => request.method !== 'GET');
    expect(writes).toEqual([
      expect.objectContaining({
        method: 'PATCH',
        path: '/api/data/v9.2/contacts(6f1c0c52-0000-4000-8000-000000000001)',
        headers: expect.objectContaining({ 'if-match': '*' }),
        body: { telephone1: '+14155550111', firstname: "O'Neil" },
      }),
      expect.objectContaining({
        method: 'POST',
        path: '/api/data/v9.2/contacts?$select=contactid',
        headers: expect.objectContaining({ prefer: 'return=representation' }),
        body: { lastname: 'Ray', telephone1: '+14155550112', firstname: 'Bea' },
      }),
    ]);
    expect(vendors.contacts.dynamics.get('6f1c0c52-0000-4000-8000-000000000001')).toEqual({ telephone1: '+14155550111', lastname: 'Existing', firstname: "O'Neil" });

    // A Dynamics app: log_call through apps/{id}/execute.
    const { appId } = await connect(ws.api, { target: 'app', provider: 'dynamics', name: 'Sales', options: { instance_url: DYNAMICS_ORG } });
    const logged = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'log_call', arguments: { call_id: 'call_1', phone_number: '+14155550112', summary: 'Wants a demo', duration_ms: 125_000 } } });
    expect(logged.status).toBe(200);
    expect(logged.body).toEqual({ app_id: appId, tool: 'log_call', result: { external_id: expect.stringMatching(/^[\da-f-]{36}$/), created: true } });
    expect(vendors.requests.at(-1)).toMatchObject({
      method: 'POST',
      path: '/api/data/v9.2/phonecalls?$select=activityid',
      body: { subject: 'Call call_1', description: 'Wants a demo', directioncode: true, actualdurationminutes: 2, phonenumber: '+14155550112' },
    });
  });

  it('maps the vendor\'s 401 and 500 to a failed auth test, 422 and 502', async () => {
    const ws = await app.newWorkspace();
    await connect(ws.api, { target: 'crm', provider: 'dynamics', options: { instance_url: DYNAMICS_ORG } });
    vendors.failNext(401);
    expect((await ws.api.post('/test-crm-auth/dynamics')).body).toEqual({ success: false, message: "dynamics refused the connection's credentials (HTTP 401)" });
    vendors.failNext(401, 2);
    const refused = await ws.api.get('/get-crm-schema/dynamics');
    expect(refused.status).toBe(422);
    expect(refused.body.message).toBe("dynamics refused the connection's credentials (HTTP 401); reconnect it");
    vendors.failNext(500, 2);
    const failed = await ws.api.get('/get-crm-schema/dynamics');
    expect(failed.status).toBe(502);
    expect(failed.body.message).toBe('dynamics failed: HTTP 500');
    expect((await ws.api.post('/test-crm-auth/dynamics')).body).toEqual({ success: true });
  });
});

describe('Zoho CRM', () => {
  it('refreshes an expiring token first, calls the kept api_domain with Zoho-oauthtoken, and upserts, logs and reports record errors', async () => {
    const ws = await app.newWorkspace();
    oauth.expiresIn = 60; // under the 5 minutes: refreshed before its first use
    try {
      await connect(ws.api, { target: 'crm', provider: 'zoho' });
    } finally {
      oauth.expiresIn = 3600;
    }
    const refreshes = oauth.refreshUses();
    const mark = vendors.requests.length;
    const schema = await ws.api.get('/get-crm-schema/zoho');
    expect(schema.status).toBe(200);
    expect(oauth.refreshUses()).toBe(refreshes + 1);
    expect(vendors.since(mark)).toEqual([
      expect.objectContaining({ method: 'GET', path: '/crm/v2/settings/fields?module=Contacts', authorization: `Zoho-oauthtoken ${latestAccessToken()}` }),
    ]);
    expect(schema.body.fields).toEqual([
      { name: 'Last_Name', type: 'string', label: 'Last Name' },
      { name: 'Lead_Source', type: 'enum', label: 'Lead Source', options: ['-None-', 'Web'] },
      { name: 'Date_of_Birth', type: 'date', label: 'Date of Birth' },
    ]);
    expect((await ws.api.get('/get-crm-config')).body.providers[0]).toMatchObject({ provider: 'zoho', connection_status: 'connected', token_expires_at: expect.any(Number) });
    expect((await ws.api.get('/get-crm-config')).body.providers[0].token_expires_at).toBeGreaterThan(Date.now() + 30 * 60_000);
    expect((await ws.api.post('/test-crm-auth/zoho')).body).toEqual({ success: true });

    await ws.api.post('/create-contact', { body: { phone_number: '+14155550121', first_name: 'Cy' } });
    const syncMark = vendors.requests.length;
    expect(await syncContacts(ws.api, 'zoho')).toMatchObject({ status: 'completed', succeeded: 1, failed: 0 });
    expect(vendors.since(syncMark).map((request) => `${request.method} ${request.path}`)).toEqual([
      'GET /crm/v2/Contacts/search?phone=+14155550121',
      'POST /crm/v2/Contacts',
    ]);
    expect(vendors.requests.at(-1)!.body).toEqual({ data: [{ Last_Name: '+14155550121', Phone: '+14155550121', First_Name: 'Cy' }] });

    const { appId } = await connect(ws.api, { target: 'app', provider: 'zoho' });
    const updated = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'upsert_contact', arguments: { phone_number: '+14155550121', last_name: 'Young' } } });
    expect(updated.body.result).toEqual({ external_id: 'z1', created: false });
    expect(vendors.requests.at(-1)).toMatchObject({ method: 'PUT', path: '/crm/v2/Contacts', body: { data: [{ id: 'z1', Phone: '+14155550121', Last_Name: 'Young' }] } });
    const invalid = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'upsert_contact', arguments: { phone_number: '+14155550122', email: 'invalid' } } });
    expect(invalid.status).toBe(502);
    expect(invalid.body.message).toBe('zoho failed: INVALID_DATA: invalid data');

    const logged = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'log_call', arguments: { call_id: 'call_9', summary: 'Asked for a callback', duration_ms: 65_000 } } });
    expect(logged.status).toBe(200);
    expect(logged.body.result).toEqual({ external_id: expect.stringMatching(/^zcall\d+$/), created: true });
    const [record] = vendors.requests.at(-1)!.body.data;
    expect(record).toEqual({ Subject: 'Call call_9', Call_Type: 'Outbound', Call_Start_Time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/), Call_Duration: '01:05', Description: 'Asked for a callback' });
  });
});

describe('HighLevel', () => {
  it('keeps the location, sends the Version header, upserts contacts and logs calls as notes', async () => {
    const ws = await app.newWorkspace();
    const { authorize } = await connect(ws.api, { target: 'crm', provider: 'gohighlevel' });
    expect(authorize.searchParams.get('scope')).toBe('contacts.readonly contacts.write locations.readonly locations/customFields.readonly');
    const mark = vendors.requests.length;
    expect((await ws.api.post('/test-crm-auth/gohighlevel')).body).toEqual({ success: true });
    expect(vendors.since(mark)).toEqual([expect.objectContaining({ method: 'GET', path: '/locations/loc_1', headers: expect.objectContaining({ version: '2021-07-28' }) })]);

    const schema = await ws.api.get('/get-crm-schema/gohighlevel');
    expect(schema.body.fields).toHaveLength(18);
    expect(schema.body.fields.slice(0, 2)).toEqual([
      { name: 'firstName', type: 'string', label: 'First Name' },
      { name: 'lastName', type: 'string', label: 'Last Name' },
    ]);
    expect(schema.body.fields.slice(-2)).toEqual([
      { name: 'cf_plan', type: 'enum', label: 'Plan', description: 'contact.plan', options: ['basic', 'pro'] },
      { name: 'cf_notes', type: 'string', label: 'Notes', description: 'contact.notes' },
    ]);

    await ws.api.post('/create-contact', { body: { phone_number: '+14155550131', first_name: 'Di', email: 'di@example.com' } });
    expect(await syncContacts(ws.api, 'gohighlevel')).toMatchObject({ status: 'completed', succeeded: 1, failed: 0 });
    expect(vendors.requests.filter((request) => request.path === '/contacts/upsert').at(-1)!.body).toEqual({
      locationId: 'loc_1',
      phone: '+14155550131',
      firstName: 'Di',
      email: 'di@example.com',
    });

    const { appId } = await connect(ws.api, { target: 'app', provider: 'gohighlevel' });
    const logged = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'log_call', arguments: { call_id: 'call_7', phone_number: '+14155550131', summary: 'Booked a visit', duration_ms: 42_000 } } });
    expect(logged.status).toBe(200);
    expect(logged.body.result).toEqual({ external_id: expect.stringMatching(/^note\d+$/), created: true });
    const [upsert, note] = vendors.requests.slice(-2);
    expect(upsert).toMatchObject({ path: '/contacts/upsert', body: { locationId: 'loc_1', phone: '+14155550131' } });
    expect(note).toMatchObject({ method: 'POST', path: '/contacts/ghl1/notes', body: { body: 'Call call_7 (outbound, 42 s)\n\nBooked a visit' } });

    const noNumber = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'log_call', arguments: { summary: 'x' } } });
    expect(noNumber.status).toBe(400);
    expect(noNumber.body.message).toBe("A call logged to gohighlevel needs the other party's phone number (a note goes on their contact)");
    vendors.failNext(500);
    const failed = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'upsert_contact', arguments: { phone_number: '+14155550132' } } });
    expect(failed.status).toBe(502);
    expect(failed.body.message).toBe('gohighlevel failed: HTTP 500');
  });
});

describe('knowledge apps: search_documents', () => {
  it('searches Google Drive, SharePoint and Notion through the connected app', async () => {
    const ws = await app.newWorkspace();
    const expected: Record<string, unknown> = {
      google_drive: {
        id: 'doc-refunds',
        name: 'Refund policy',
        url: 'https://docs.example/doc-refunds',
        modified: '2030-01-01T10:00:00Z',
        mime_type: 'application/vnd.google-apps.document',
      },
      sharepoint: { id: 'doc-refunds', name: 'Refund policy.docx', url: 'https://contoso.sharepoint.com/doc-refunds', modified: '2030-01-01T10:00:00Z', snippet: 'Refund policy' },
      notion: { id: 'doc-refunds', name: 'Refund policy', url: 'https://www.notion.so/doc-refunds', modified: '2030-01-01T10:00:00Z' },
    };
    for (const provider of ['google_drive', 'sharepoint', 'notion']) {
      const { appId } = await connect(ws.api, { target: 'app', provider });
      const got = await ws.api.get(`/get-app/${appId}`);
      expect(got.body, provider).toMatchObject({ provider, type: 'knowledge_base', connection_status: 'connected', mock: false });
      expect((await ws.api.post(`/test-app-auth/${appId}`)).body, provider).toEqual({ success: true });
      const found = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'search_documents', arguments: { query: 'refund' } } });
      expect(found.status, provider).toBe(200);
      expect(found.body, provider).toEqual({ app_id: appId, tool: 'search_documents', result: { query: 'refund', documents: [expected[provider]] } });
    }
    const searches = vendors.requests.filter((request) => /\/files\?|\/search/.test(request.path));
    expect(searches.at(-1)).toMatchObject({ method: 'POST', path: '/notion/v1/search', body: { query: 'refund', filter: { property: 'object', value: 'page' }, page_size: 10 } });
  });

  it('escapes the query in Drive\'s query language and answers the vendor\'s 401 as 422', async () => {
    const ws = await app.newWorkspace();
    const { appId } = await connect(ws.api, { target: 'app', provider: 'google_drive' });
    const none = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'search_documents', arguments: { query: "O'Brien \\ notes" } } });
    expect(none.body.result).toEqual({ query: "O'Brien \\ notes", documents: [] });
    expect(vendors.requests.at(-1)!.params.q).toBe("fullText contains 'O\\'Brien \\\\ notes' and trashed = false");
    vendors.failNext(401);
    const refused = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'search_documents', arguments: { query: 'refund' } } });
    expect(refused.status).toBe(422);
    expect(refused.body.message).toBe("google_drive refused the app's credentials (HTTP 401)");
    expect((await ws.api.get(`/get-app/${appId}`)).body.connection_status).toBe('error');
  });

  it('answers from the mock store in mock mode (a provider without a client id)', async () => {
    const ws = await app.newWorkspace();
    const clientId = process.env.NOTION_OAUTH_CLIENT_ID;
    delete process.env.NOTION_OAUTH_CLIENT_ID;
    try {
      const start = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'notion' } });
      expect(start.body.mock).toBe(true);
      const page = await call(app.url, 'GET', localPath(start.body.authorize_url));
      const approve = /id="approve" href="([^"]+)"/.exec(page.text)![1]!.replaceAll('&amp;', '&');
      const done = await call(app.url, 'GET', localPath(approve), { headers: { cookie: cookiesFrom(start) } });
      const appId = new URL(done.headers.location!).searchParams.get('app_id')!;
      const mark = vendors.requests.length;
      const found = await ws.api.post(`/apps/${appId}/execute`, { body: { tool: 'search_documents', arguments: { query: 'welcome' } } });
      expect(found.body.result).toEqual({
        mock: true,
        tool: 'search_documents',
        provider: 'notion',
        result: { query: 'welcome', documents: [{ id: 'mock-welcome', name: 'Welcome.md', snippet: 'A mock notion document: no real account is read.' }] },
      });
      expect(vendors.requests).toHaveLength(mark);
    } finally {
      process.env.NOTION_OAUTH_CLIENT_ID = clientId;
    }
  });
});
