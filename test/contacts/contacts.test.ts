import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { contactBody, freshNumber, newContact } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

const app = await startTestApp();

async function setup() {
  const ws = await app.newWorkspace();
  return { ws, client: retellClient(app.url, ws.api_key) };
}

describe('contacts through retell-sdk', () => {
  it('creates, gets, gets by phone, updates, lists and deletes a contact', async () => {
    const { ws, client } = await setup();
    const number = freshNumber();
    const created: any = await client.contact.create({
      phone_number: number,
      first_name: 'Grace',
      last_name: 'Hopper',
      tags: ['vip', 'vip', 'navy'],
      do_not_call: true,
      custom_fields: { plan: 'gold', seats: 3, active: true },
    });
    expect(created).toMatchObject({
      org_id: ws.workspace_id,
      phone_number: number,
      first_name: 'Grace',
      last_name: 'Hopper',
      tags: ['vip', 'navy'],
      do_not_call: true,
      custom_fields: { plan: 'gold', seats: 3, active: true },
    });
    expect(created.contact_id).toMatch(/^contact_[0-9a-f]{24}$/);
    expect(created.created_timestamp).toBe(created.user_modified_timestamp);

    expect(await client.contact.get(created.contact_id)).toEqual(created);
    expect(await client.contact.getByPhone(number)).toEqual(created);

    const updated: any = await client.contact.update(created.contact_id, { first_name: 'Amazing Grace', custom_fields: { plan: null, team: 'COBOL' } });
    expect(updated).toMatchObject({ first_name: 'Amazing Grace', last_name: 'Hopper', custom_fields: { seats: 3, active: true, team: 'COBOL' } });
    expect(updated.custom_fields).not.toHaveProperty('plan');

    const page: any = await client.contact.list({});
    expect(page).toEqual({ items: [updated], has_more: false });
    const array = await ws.api.get('/list-contacts');
    expect(array.status).toBe(200);
    expect(array.body).toEqual([updated]);

    await client.contact.delete(created.contact_id);
    expect(await sdkFailure(client.contact.get(created.contact_id))).toEqual({
      status: 404,
      body: { status: 404, message: `Contact ${created.contact_id} not found` },
    });
    expect((await sdkFailure(client.contact.getByPhone(number))).status).toBe(404);
    // The number is free again.
    expect((await ws.api.post('/create-contact', { body: { phone_number: number } })).status).toBe(201);
  });

  it('pages and filters retell-sdk\'s list, newest first', async () => {
    const { ws, client } = await setup();
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await newContact(ws.api, { tags: i % 2 ? ['odd'] : ['even'], custom_fields: { rank: i } }));
    const first: any = await client.contact.list({ limit: 2 });
    expect(first.items.map((c: any) => c.contact_id)).toEqual([made[4].contact_id, made[3].contact_id]);
    expect(first.has_more).toBe(true);
    const second: any = await client.contact.list({ limit: 2, pagination_key: first.pagination_key });
    expect(second.items.map((c: any) => c.contact_id)).toEqual([made[2].contact_id, made[1].contact_id]);
    const last: any = await client.contact.list({ limit: 2, pagination_key: second.pagination_key });
    expect(last).toEqual({ items: [made[0]], has_more: false });

    const odd: any = await client.contact.list({ filter_criteria: { tags: { type: 'enum', op: 'in', value: ['odd'] } } });
    expect(odd.items.map((c: any) => c.contact_id)).toEqual([made[3].contact_id, made[1].contact_id]);
    const ranked: any = await client.contact.list({
      sort_order: 'asc',
      filter_criteria: { custom_fields: [{ key: 'rank', type: 'number', op: 'ge', value: 3 }] },
    });
    expect(ranked.items.map((c: any) => c.contact_id)).toEqual([made[3].contact_id, made[4].contact_id]);
    const searched: any = await client.contact.list({ search_query: made[2].phone_number.slice(-7) });
    expect(searched.items.map((c: any) => c.contact_id)).toEqual([made[2].contact_id]);
    expect(await sdkFailure(client.contact.list({ pagination_key: 'nope!' }))).toEqual({
      status: 400,
      body: { status: 400, message: 'Invalid pagination_key' },
    });
  });

  it('refuses bad and oversized input with 400s naming the field', async () => {
    const { ws } = await setup();
    const cases: [Record<string, unknown>, string][] = [
      [{ phone_number: '415-555-1234' }, 'phone_number: Must be a valid phone number in E.164 format (+ and up to 15 digits, e.g. +14155550123)'],
      [contactBody({ first_name: 'x'.repeat(201) }), 'first_name: Must be at most 200 characters'],
      [contactBody({ email: 'not-an-email' }), 'email: Must be an email address'],
      [contactBody({ tags: Array.from({ length: 51 }, (_, i) => `t${i}`) }), 'tags: Must have at most 50 items'],
      [contactBody({ custom_fields: { first_name: 'x' } }), 'custom_fields.first_name: Field name: Is a built-in contact field'],
      [contactBody({ custom_fields: { 'bad name': 'x' } }), 'custom_fields.bad name: Field name: Must start with a letter or _ and hold only letters, digits and _ (at most 64)'],
      [contactBody({ custom_fields: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`f${i}`, i])) }), 'custom_fields: Must have at most 50 fields'],
      [contactBody({ custom_fields: { note: 'x'.repeat(1001) } }), 'custom_fields.note: Must be at most 1000 characters'],
    ];
    for (const [body, message] of cases) {
      const res = await ws.api.post('/create-contact', { body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.message).toBe(message);
    }
    expect((await ws.api.get('/list-contacts')).body).toEqual([]);
  });
});

describe('one contact per number', () => {
  it('20 concurrent creates of one number: exactly one 201, the rest 409', async () => {
    const { ws } = await setup();
    const number = freshNumber();
    const answers = await Promise.all(Array.from({ length: 20 }, () => ws.api.post('/create-contact', { body: { phone_number: number } })));
    expect(answers.filter((res) => res.status === 201)).toHaveLength(1);
    const refused = answers.filter((res) => res.status !== 201);
    expect(refused).toHaveLength(19);
    for (const res of refused) expect(res.body).toEqual({ status: 409, message: `A contact with ${number} already exists` });
    expect((await ws.api.get('/list-contacts')).body).toHaveLength(1);
  });

  it('changing the number moves the claim: the old number is free, the new one taken', async () => {
    const { ws } = await setup();
    const contact = await newContact(ws.api);
    const other = await newContact(ws.api);
    const next = freshNumber();
    const moved = await ws.api.patch(`/update-contact/${contact.contact_id}`, { body: { phone_number: next } });
    expect(moved.status).toBe(200);
    expect(moved.body.phone_number).toBe(next);
    expect((await ws.api.get(`/get-contact-by-phone/${encodeURIComponent(next)}`)).body.contact_id).toBe(contact.contact_id);
    expect((await ws.api.get(`/get-contact-by-phone/${encodeURIComponent(contact.phone_number)}`)).status).toBe(404);
    // The old number can be used again; the new one cannot.
    expect((await ws.api.post('/create-contact', { body: { phone_number: contact.phone_number } })).status).toBe(201);
    expect((await ws.api.post('/create-contact', { body: { phone_number: next } })).body).toEqual({
      status: 409,
      message: `A contact with ${next} already exists`,
    });
    // Moving onto a taken number is refused and changes nothing.
    const refused = await ws.api.patch(`/update-contact/${contact.contact_id}`, { body: { phone_number: other.phone_number, first_name: 'Nope' } });
    expect(refused.body).toEqual({ status: 409, message: `A contact with ${other.phone_number} already exists` });
    expect((await ws.api.get(`/get-contact/${contact.contact_id}`)).body).toMatchObject({ phone_number: next, first_name: 'Ada' });
  });

  it('keeps workspaces apart: another workspace\'s contact is 404 and its number is free here', async () => {
    const a = await setup();
    const b = await setup();
    const contact = await newContact(a.ws.api);
    for (const res of [
      await b.ws.api.get(`/get-contact/${contact.contact_id}`),
      await b.ws.api.patch(`/update-contact/${contact.contact_id}`, { body: { first_name: 'Eve' } }),
      await b.ws.api.delete(`/delete-contact/${contact.contact_id}`),
      await b.ws.api.get(`/list-contact-conversations/${contact.contact_id}`),
      await b.ws.api.get(`/contacts/${contact.contact_id}/memory`),
    ]) {
      expect(res.body).toEqual({ status: 404, message: `Contact ${contact.contact_id} not found` });
    }
    expect((await b.ws.api.get(`/get-contact-by-phone/${encodeURIComponent(contact.phone_number)}`)).status).toBe(404);
    expect((await b.ws.api.post('/create-contact', { body: { phone_number: contact.phone_number } })).status).toBe(201);
    expect((await a.ws.api.get(`/get-contact/${contact.contact_id}`)).body.first_name).toBe('Ada');
  });
});

describe('fields and mappings', () => {
  it('names the custom fields in use', async () => {
    const { ws } = await setup();
    expect((await ws.api.get('/list-contact-fields')).body.custom_fields).toEqual([]);
    await newContact(ws.api, { custom_fields: { plan: 'gold' } });
    const contact = await newContact(ws.api, { custom_fields: { company: 'Acme' } });
    await ws.api.patch(`/update-contact/${contact.contact_id}`, { body: { custom_fields: { seats: 4 } } });
    const fields = await ws.api.get('/list-contact-fields');
    expect(fields.status).toBe(200);
    expect(fields.body.custom_fields).toEqual(['company', 'plan', 'seats']);
    expect(fields.body.built_in_fields).toContain('first_name');
  });

  it('stores validated column mappings', async () => {
    const { ws } = await setup();
    expect((await ws.api.get('/contact-field-mappings')).body).toEqual({ mappings: [], user_modified_timestamp: null });
    const mappings = [
      { external_field_name: 'Phone', field_name: 'phone_number' },
      { external_field_name: 'Given name', field_name: 'first_name' },
      { external_field_name: 'Company', field_name: 'custom_fields.company' },
    ];
    const saved = await ws.api.put('/contact-field-mappings', { body: { mappings } });
    expect(saved.status).toBe(200);
    expect((await ws.api.get('/contact-field-mappings')).body).toEqual({ mappings, user_modified_timestamp: saved.body.user_modified_timestamp });
    const bad = await ws.api.put('/contact-field-mappings', {
      body: { mappings: [{ external_field_name: 'Phone', field_name: 'phone' }, { external_field_name: 'phone', field_name: 'first_name' }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe(
      'mappings.0.field_name: Must be one of phone_number, first_name, last_name, email, tags, do_not_call, external_id or custom_fields.<name>; ' +
        'mappings.1.external_field_name: Is mapped twice; mappings: Exactly one mapping must target phone_number',
    );
  });
});
