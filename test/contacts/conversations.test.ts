import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

/** A workspace with an agent and a number that dials with it. */
async function callSetup() {
  const ws = await app.newWorkspace();
  const { number } = await newAgentWithNumber(ws.api);
  return { ws, number, client: retellClient(app.url, ws.api_key) };
}

const callee = () => `+1415555${String(1000 + Math.floor(Math.random() * 8000))}`;

/** A short sandbox call to `to`, waited until it has ended. */
async function endedCall(setup: Awaited<ReturnType<typeof callSetup>>, to: string, says: string[] = ['Hi there']) {
  const created: any = await setup.client.call.createPhoneCall({
    from_number: setup.number,
    to_number: to,
    metadata: { sandbox_call_ms: 200, sandbox_user_says: says },
  });
  await eventually(() => setup.client.call.retrieve(created.call_id) as Promise<any>, (call) => call.call_status === 'ended');
  return created.call_id as string;
}

describe('a contact\'s conversations', () => {
  it('lists the calls with its number newest first, paged with before / next_before, and none of another number', async () => {
    const setup = await callSetup();
    const to = callee();
    const contact = (await setup.ws.api.post('/create-contact', { body: { phone_number: to } })).body;
    const calls: string[] = [];
    for (let i = 0; i < 5; i++) calls.push(await endedCall(setup, to));
    await endedCall(setup, callee());

    const all = await eventually(
      () => setup.ws.api.get(`/list-contact-conversations/${contact.contact_id}?limit=100`),
      (res) => res.body.items?.length === 5 && res.body.items.every((item: any) => item.call_status === 'ended'),
    );
    expect(all.body.items.map((item: any) => item.call_id)).toEqual([...calls].reverse());
    expect(all.body.items[0]).toMatchObject({ type: 'call', direction: 'outbound', call_status: 'ended' });
    expect(all.body.next_before).toBeNull();
    expect(all.body.has_more).toBe(false);

    const seen: string[] = [];
    let before: string | null = null;
    let pages = 0;
    do {
      const res = await setup.ws.api.get(`/list-contact-conversations/${contact.contact_id}?limit=2${before ? `&before=${encodeURIComponent(before)}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.items.map((item: any) => item.call_id));
      before = res.body.next_before;
      pages++;
    } while (before);
    expect(pages).toBe(3);
    expect(seen).toEqual([...calls].reverse());

    // retell-sdk pages with pagination_key.
    const sdkFirst: any = await setup.client.contact.listConversations(contact.contact_id, { limit: 3 });
    expect(sdkFirst.items).toHaveLength(3);
    expect(sdkFirst.has_more).toBe(true);
    const sdkSecond: any = await setup.client.contact.listConversations(contact.contact_id, { limit: 3, pagination_key: sdkFirst.pagination_key });
    expect(sdkSecond.items.map((item: any) => item.call_id)).toEqual([calls[1], calls[0]]);

    expect((await setup.ws.api.get(`/list-contact-conversations/${contact.contact_id}?before=garbage`)).body).toEqual({
      status: 400,
      message: 'before: Must be the next_before of a previous page',
    });
  });
});

describe('contact memory', () => {
  it('saves a call\'s summary to memory, and memory and fields join a new call\'s variables below its own', async () => {
    const setup = await callSetup();
    const to = callee();
    const contact = (
      await setup.ws.api.post('/create-contact', { body: { phone_number: to, first_name: 'Ada', custom_fields: { plan: 'gold', tier: 'one' } } })
    ).body;
    expect((await setup.ws.api.get(`/contacts/${contact.contact_id}/memory`)).body).toEqual({
      contact_id: contact.contact_id,
      memory: '',
      user_modified_timestamp: null,
    });
    const callId = await endedCall(setup, to, ['My dog is called Rex']);
    const saved = await setup.ws.api.post(`/contacts/${contact.contact_id}/memory/save-call`, { body: { call_id: callId } });
    expect(saved.status).toBe(200);
    expect(saved.body.memory).toContain(`(call ${callId}): `);
    // Saving the same call again adds nothing.
    expect((await setup.ws.api.post(`/contacts/${contact.contact_id}/memory/save-call`, { body: { call_id: callId } })).body.memory).toBe(saved.body.memory);

    // A call with another number is refused; another workspace's call is not found.
    const otherCall = await endedCall(setup, callee());
    expect((await setup.ws.api.post(`/contacts/${contact.contact_id}/memory/save-call`, { body: { call_id: otherCall } })).body).toEqual({
      status: 400,
      message: `call_id: Call ${otherCall} is not with this contact's number ${to}`,
    });
    const stranger = await app.newWorkspace();
    const strangerContact = (await stranger.api.post('/create-contact', { body: { phone_number: to } })).body;
    expect((await stranger.api.post(`/contacts/${strangerContact.contact_id}/memory/save-call`, { body: { call_id: callId } })).body).toEqual({
      status: 404,
      message: 'Call not found',
    });

    // Off by default: a new call gets none of the contact.
    const before: any = await setup.client.call.createPhoneCall({ from_number: setup.number, to_number: to, metadata: { sandbox_call_ms: 100 } });
    expect(before.retell_llm_dynamic_variables).toEqual({});

    expect((await setup.ws.api.put('/contact-memory-settings', { body: { enabled: true } })).body).toMatchObject({
      enabled: true,
      include_contact_fields: true,
      include_memory: true,
    });
    const created: any = await setup.client.call.createPhoneCall({
      from_number: setup.number,
      to_number: to,
      retell_llm_dynamic_variables: { contact_tier: 'call wins' },
      metadata: { sandbox_call_ms: 100 },
    });
    const fetched: any = await setup.client.call.retrieve(created.call_id);
    expect(fetched.retell_llm_dynamic_variables).toEqual({
      contact_id: contact.contact_id,
      contact_phone_number: to,
      contact_first_name: 'Ada',
      contact_do_not_call: 'false',
      contact_plan: 'gold',
      contact_tier: 'call wins',
      contact_memory: saved.body.memory,
    });
  });

  it('replaces memory with PUT, capped in size', async () => {
    const { ws } = await callSetup();
    const contact = (await ws.api.post('/create-contact', { body: { phone_number: callee() } })).body;
    const put = await ws.api.put(`/contacts/${contact.contact_id}/memory`, { body: { memory: 'Prefers mornings.' } });
    expect(put.status).toBe(200);
    expect((await ws.api.get(`/contacts/${contact.contact_id}/memory`)).body.memory).toBe('Prefers mornings.');
    expect((await ws.api.put(`/contacts/${contact.contact_id}/memory`, { body: { memory: 'x'.repeat(10_001) } })).body).toEqual({
      status: 400,
      message: 'memory: Must be at most 10000 characters',
    });
  });
});

describe('backfill', () => {
  it('creates a contact per number in the call history, in the background, and creates nothing new the second time', async () => {
    const setup = await callSetup();
    const numbers = [callee(), callee(), callee()];
    const existing = (await setup.ws.api.post('/create-contact', { body: { phone_number: numbers[0], first_name: 'Kept' } })).body;
    for (const to of [...numbers, numbers[1]!]) await endedCall(setup, to);

    const started = await setup.ws.api.post('/backfill-contacts', { body: {} });
    expect(started.status).toBe(202);
    expect(['queued', 'running', 'idle']).toContain(started.body.status);
    const done: any = await eventually(
      () => setup.client.contact.getBackfillJobStatus() as Promise<any>,
      (status) => status.status === 'idle' && status.end_timestamp !== undefined,
      20_000,
    );
    expect(done).toMatchObject({ succeeded: 2, skipped: 1, failed: 0, triggered_by: 'manual' });
    const listed = (await setup.ws.api.get('/list-contacts')).body;
    expect(listed.map((c: any) => c.phone_number).sort()).toEqual([...numbers].sort());
    expect(listed.find((c: any) => c.contact_id === existing.contact_id).first_name).toBe('Kept');

    // retell-sdk's spelling runs the same job; nothing new is created.
    const again: any = await setup.client.contact.backfillAnalysisData({ backfill_attributes: [] });
    expect(['queued', 'running', 'idle']).toContain(again.status);
    await eventually(
      () => setup.client.contact.getBackfillJobStatus() as Promise<any>,
      (status) => status.status === 'idle' && status.start_timestamp >= done.start_timestamp && status.skipped === 3,
      20_000,
    );
    expect((await setup.ws.api.get('/list-contacts')).body).toHaveLength(3);
  });

  it('answers idle before any backfill', async () => {
    const { client } = await callSetup();
    expect(await client.contact.getBackfillJobStatus()).toEqual({ status: 'idle' });
    expect((await sdkFailure(client.contact.get('contact_000000000000000000000000'))).status).toBe(404);
  });
});
