import type { Context, SQSEvent } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as integrationJobs } from '../../functions/integration-jobs.ts';
import { startBackgroundWork } from '../../local/background.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { fakeOAuth } from '../support/fake-oauth.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { call, cookiesFrom, type ApiClient } from '../support/http.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * The CRM flows (docs/integrations.md, CRM): an analysed call's CRM side runs on the
 * integration-jobs queue (the analysis data mapped into its contact, the contact and the
 * call log pushed to each CRM whose config asks for it, once per call), and the settings
 * that drive it are checked as retell-sdk's crm types describe.
 */

vi.hoisted(() => (process.env.PUBLIC_BASE_URL = 'https://api.parley.test'));
const app = await startTestApp();
const fake = await fakeOAuth();
// HubSpot is a real provider here (the fake server: OAuth and its CRM API); Salesforce stays the built-in mock.
Object.assign(process.env, {
  HUBSPOT_OAUTH_CLIENT_ID: fake.clientId,
  HUBSPOT_OAUTH_CLIENT_SECRET: fake.clientSecret,
  HUBSPOT_OAUTH_AUTHORIZE_URL: `${fake.url}/authorize`,
  HUBSPOT_OAUTH_TOKEN_URL: `${fake.url}/token`,
  HUBSPOT_API_BASE_URL: fake.url,
});

let background: { stop(): Promise<void> };
beforeAll(() => {
  background = startBackgroundWork(JOBS.filter((job) => job.name === 'integration-jobs' || job.name === 'call-steps'));
});
afterAll(() => background.stop());

const localPath = (url: string) => new URL(url).pathname + new URL(url).search;

async function connectCrm(api: ApiClient, provider: 'hubspot' | 'salesforce') {
  const start = await api.post('/oauth/start', { body: { target: 'crm', provider } });
  expect(start.status).toBe(200);
  let callback: string;
  if (start.body.mock) {
    const page = await call(app.url, 'GET', localPath(start.body.authorize_url));
    callback = /id="approve" href="([^"]+)"/.exec(page.text)![1]!.replaceAll('&amp;', '&');
  } else {
    callback = (await fetch(start.body.authorize_url, { redirect: 'manual' })).headers.get('location')!;
  }
  const done = await call(app.url, 'GET', localPath(callback), { headers: { cookie: cookiesFrom(start) } });
  expect(new URL(done.headers.location!).searchParams.get('oauth')).toBe('success');
}

/** An agent whose analysis extracts the user's last line and the number of user turns (the offline model's rules). */
async function sandboxCaller(api: ApiClient) {
  const { agent } = await newAgent(api, {
    agent: {
      post_call_analysis_data: [
        { type: 'string', name: 'last_words', description: 'What the user said last' },
        { type: 'number', name: 'user_turns', description: 'How often the user spoke' },
      ],
    },
  });
  const number = freshNumber();
  const imported = await api.post('/import-phone-number', {
    body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
  });
  expect(imported.status).toBe(201);
  return async (toNumber: string, userSays: string[]) => {
    const created = await api.post('/v2/create-phone-call', {
      body: { from_number: number, to_number: toNumber, metadata: { sandbox_call_ms: 1500, sandbox_user_says: userSays } },
    });
    expect(created.status).toBe(201);
    const analyzed = await eventually(() => api.get(`/v2/get-call/${created.body.call_id}`), (answer) => answer.body.call_analysis !== undefined, 30_000);
    return analyzed.body;
  };
}

/** The integration-jobs consumer run on one message, as SQS would hand it over (awaited, so a test knows it ran). */
async function deliver(message: Record<string, unknown>, count = 1) {
  const event = (id: number): SQSEvent =>
    ({ Records: [{ messageId: `m-${id}`, body: JSON.stringify(message), attributes: { ApproximateReceiveCount: '1' } }] }) as unknown as SQSEvent;
  const answers = await Promise.all(Array.from({ length: count }, (_, index) => integrationJobs(event(index), { awsRequestId: `r-${index}` } as Context)));
  for (const answer of answers) expect(answer).toEqual({ batchItemFailures: [] });
}

const providerOf = async (api: ApiClient, provider: string) => (await api.get('/get-crm-config')).body.providers.find((item: any) => item.provider === provider);
const since = (mark: number, method: string, path: string) => fake.apiRequests.slice(mark).filter((request) => request.method === method && request.path === path);

describe('an analysed call pushed to the CRM', () => {
  it('maps its analysis data into the contact, pushes the contact with the field mappings and logs the call once', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    await connectCrm(ws.api, 'hubspot');
    const settings = await client.crm.updateConfig({
      custom_fields: [
        { name: 'notes', type: 'string', label: 'Notes' },
        { name: 'turns', type: 'number' },
      ],
      crm_analysis_data_mappings: [
        { analysis_data_name: 'last_words', field_name: 'notes', update_mode: 'merge' },
        { analysis_data_name: 'user_turns', field_name: 'turns', update_mode: 'overwrite' },
        { analysis_data_name: 'last_words', field_name: 'first_name', update_mode: 'fill_if_empty' },
      ],
    });
    expect(settings.custom_fields).toHaveLength(2);
    const mappings = await ws.api.put('/update-crm-config/hubspot', {
      body: {
        field_mappings: [
          { field_name: 'first_name', external_field_name: 'firstname' },
          { field_name: 'notes', external_field_name: 'hs_notes' },
          { field_name: 'custom_fields.turns', external_field_name: 'num_turns' },
        ],
      },
    });
    expect(mappings.status).toBe(200);
    const callee = freshNumber();
    const contact = await ws.api.post('/create-contact', { body: { phone_number: callee, first_name: 'Ann', custom_fields: { notes: 'Asked about prices' } } });
    expect(contact.status).toBe(201);

    const mark = fake.apiRequests.length;
    const dial = await sandboxCaller(ws.api);
    const analyzed = await dial(callee, ['Hello?', 'I want the gold plan']);
    expect(analyzed.call_analysis.custom_analysis_data).toEqual({ last_words: 'I want the gold plan', user_turns: 2 });
    const pushed = await eventually(() => providerOf(ws.api, 'hubspot'), (provider) => provider.calls_pushed === 1, 30_000);
    expect(pushed.calls_pushed).toBe(1);

    const updated = await ws.api.get(`/get-contact/${contact.body.contact_id}`);
    expect(updated.body).toMatchObject({ first_name: 'Ann', custom_fields: { notes: 'Asked about prices\nI want the gold plan', turns: 2 } });
    const logs = since(mark, 'POST', '/crm/v3/objects/calls');
    expect(logs).toHaveLength(1);
    expect(logs[0]!.body).toMatchObject({
      properties: { hs_call_title: `Call ${analyzed.call_id}`, hs_call_direction: 'OUTBOUND', hs_call_to_number: callee, hs_call_status: 'COMPLETED' },
    });
    expect((logs[0]!.body as any).properties.hs_call_body).toContain('The user first said: "Hello?"');
    const contacts = since(mark, 'POST', '/crm/v3/objects/contacts');
    expect(contacts.map((request) => request.body)).toEqual([
      { properties: { phone: callee, firstname: 'Ann', hs_notes: 'Asked about prices\nI want the gold plan', num_turns: 2 } },
    ]);

    // The analysis reported again (twice at once, and once more): nothing is merged or logged twice.
    await deliver({ kind: 'crm-call', workspace_id: ws.workspace_id, call_id: analyzed.call_id }, 2);
    await deliver({ kind: 'crm-call', workspace_id: ws.workspace_id, call_id: analyzed.call_id });
    expect(since(mark, 'POST', '/crm/v3/objects/calls')).toHaveLength(1);
    expect(since(mark, 'POST', '/crm/v3/objects/contacts')).toHaveLength(1);
    expect((await providerOf(ws.api, 'hubspot')).calls_pushed).toBe(1);
    expect((await ws.api.get(`/get-contact/${contact.body.contact_id}`)).body.custom_fields.notes).toBe('Asked about prices\nI want the gold plan');

    // A sync afterwards finds the contact and the call already in the CRM.
    const job = await ws.api.post('/run-crm-sync-job', { body: {} });
    expect(job.status).toBe(202);
    const done = await eventually(() => ws.api.get(`/get-crm-sync-job/${job.body.sync_job_id}`), (answer) => answer.body.status === 'completed', 30_000);
    expect(done.body).toMatchObject({ succeeded: 0, failed: 0, skipped: 2 });
    expect(since(mark, 'POST', '/crm/v3/objects/calls')).toHaveLength(1);
  }, 60_000);

  it('logs a call once through the built-in mock provider, and not at all where sync_calls is off or for another workspace', async () => {
    const ws = await app.newWorkspace();
    await connectCrm(ws.api, 'salesforce');
    expect(await providerOf(ws.api, 'salesforce')).toMatchObject({ mock: true, sync_calls: true, calls_pushed: 0 });
    const dial = await sandboxCaller(ws.api);
    const analyzed = await dial(freshNumber(), ['Hi there']);
    await eventually(() => providerOf(ws.api, 'salesforce'), (provider) => provider.calls_pushed === 1, 30_000);
    await deliver({ kind: 'crm-call', workspace_id: ws.workspace_id, call_id: analyzed.call_id });
    expect((await providerOf(ws.api, 'salesforce')).calls_pushed).toBe(1);

    // Another workspace naming this call pushes nothing (the call is not found there).
    const other = await app.newWorkspace();
    await connectCrm(other.api, 'salesforce');
    await deliver({ kind: 'crm-call', workspace_id: other.workspace_id, call_id: analyzed.call_id });
    expect((await providerOf(other.api, 'salesforce')).calls_pushed).toBe(0);

    // sync_calls off: the next call's analysis queues nothing for this CRM.
    expect((await ws.api.put('/update-crm-config/salesforce', { body: { sync_calls: false } })).body).toMatchObject({ sync_calls: false, calls_pushed: 1 });
    const second = await dial(freshNumber(), ['Hello']);
    await deliver({ kind: 'crm-call', workspace_id: ws.workspace_id, call_id: second.call_id });
    expect((await providerOf(ws.api, 'salesforce')).calls_pushed).toBe(1);
  }, 60_000);
});

describe('the CRM settings that drive it', () => {
  it('refuses custom fields and analysis mappings retell-sdk\'s rules refuse, and keeps what was stored', async () => {
    const ws = await app.newWorkspace();
    const post = (body: Record<string, unknown>) => ws.api.post('/update-crm-config', { body });
    const stored = await post({
      custom_fields: [{ name: 'plan', type: 'enum', options: ['gold', 'silver'] }],
      crm_analysis_data_mappings: [{ analysis_data_name: 'plan', field_name: 'plan', update_mode: 'overwrite' }],
    });
    expect(stored.status).toBe(200);
    const refusals: [Record<string, unknown>, string][] = [
      [{ custom_fields: [{ name: 'email', type: 'string' }] }, 'custom_fields[0].name: email is a built-in contact field'],
      [{ custom_fields: [{ name: 'contact_owner', type: 'string' }] }, 'custom_fields[0].name: must not start with contact or external'],
      [{ custom_fields: [{ name: 'external_ref', type: 'string' }] }, 'custom_fields[0].name: must not start with contact or external'],
      [{ custom_fields: [{ name: 'a', type: 'string' }, { name: 'a', type: 'number' }] }, 'custom_fields[1].name: a is declared twice'],
      [{ custom_fields: [{ name: 'tier', type: 'enum' }] }, 'custom_fields[0].options: required for an enum field'],
      [
        { custom_fields: [{ name: 'tier', type: 'string' }] },
        'custom_fields: plan is still the target of crm_analysis_data_mappings[0]; send crm_analysis_data_mappings in the same request to retarget or drop it',
      ],
      [
        { crm_analysis_data_mappings: [{ analysis_data_name: 'x', field_name: 'phone_number', update_mode: 'overwrite' }] },
        'crm_analysis_data_mappings[0].field_name: phone_number identifies the contact and cannot be written',
      ],
      [
        { crm_analysis_data_mappings: [{ analysis_data_name: 'x', field_name: 'nickname', update_mode: 'overwrite' }] },
        'crm_analysis_data_mappings[0].field_name: nickname is not a built-in or custom contact field',
      ],
      [
        { crm_analysis_data_mappings: [{ analysis_data_name: 'x', field_name: 'plan', update_mode: 'merge' }] },
        'crm_analysis_data_mappings[0].update_mode: merge is for text fields; plan is enum',
      ],
    ];
    for (const [body, message] of refusals) {
      const answer = await post(body);
      expect(answer.status, message).toBe(400);
      expect(answer.body.message).toBe(message);
    }
    // Retargeting in the same request is accepted; what was refused changed nothing.
    const config = await ws.api.get('/get-crm-config');
    expect(config.body.custom_fields).toEqual([{ name: 'plan', type: 'enum', options: ['gold', 'silver'] }]);
    const retargeted = await post({
      custom_fields: [{ name: 'tier', type: 'string' }],
      crm_analysis_data_mappings: [{ analysis_data_name: 'plan', field_name: 'tier', update_mode: 'merge' }],
    });
    expect(retargeted.status).toBe(200);
    expect(retargeted.body.crm_analysis_data_mappings).toEqual([{ analysis_data_name: 'plan', field_name: 'tier', update_mode: 'merge' }]);
  });

  it('clears the link to a CRM app when that app is deleted, and only that link', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const linkApp = async () => {
      const start = await ws.api.post('/oauth/start', { body: { target: 'app', provider: 'salesforce' } });
      const page = await call(app.url, 'GET', localPath(start.body.authorize_url));
      const approve = /id="approve" href="([^"]+)"/.exec(page.text)![1]!.replaceAll('&amp;', '&');
      const done = await call(app.url, 'GET', localPath(approve), { headers: { cookie: cookiesFrom(start) } });
      return new URL(done.headers.location!).searchParams.get('app_id')!;
    };
    const [first, second] = [await linkApp(), await linkApp()];
    expect((await client.crm.updateConfig({ app_id: first })).app_id).toBe(first);
    await client.app.delete(second);
    expect((await client.crm.getConfig()).app_id).toBe(first);
    await client.app.delete(first);
    expect(await client.crm.getConfig()).toEqual({ org_id: ws.workspace_id, providers: [] });
  });
});
