import { createServer, type AddressInfo } from 'node:net';
import type Retell from 'retell-sdk';
import { afterAll, describe, expect, it } from 'vitest';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { startTestApp } from '../support/app.ts';
import { freshNumber } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

const app = await startTestApp({ TWILIO_ACCOUNT_SID: '' });
const retell = retellClient(app.url, app.workspace.api_key);
const { db, tableName } = await import('../../shared/platform/store/db.ts');
const { keys } = await import('../../shared/platform/store/keys.ts');
const { listProviderOperations } = await import('../../shared/vendors/telephony/mock.ts');

const failure = sdkFailure;

/** A fresh valid US number each call (no two tests share one: numbers are global). */

async function newAgent() {
  const llm = await retell.llm.create({ general_prompt: 'You answer the phone.' });
  return retell.agent.create({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, voice_id: 'retell-Cimo' } as Retell.AgentCreateParams);
}

const importBody = (overrides: Record<string, unknown> = {}) => ({
  phone_number: freshNumber(),
  termination_uri: 'sip:trunk.example.com',
  sip_trunk_auth_username: 'alice',
  sip_trunk_auth_password: 's3cret-pass',
  ...overrides,
});

async function numberCount(api = app.api): Promise<number> {
  return ((await api.get('/v2/list-phone-numbers')).body as { items: unknown[] }).items.length;
}

describe('importing numbers', () => {
  it('imports through the client, reads back, lists, and stores the password only encrypted', async () => {
    const agent = await newAgent();
    const body = importBody({ inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }], nickname: 'Front desk' });
    const imported = await retell.phoneNumber.import(body as Retell.PhoneNumberImportParams);
    expect(imported).toMatchObject({
      phone_number: body.phone_number,
      phone_number_type: 'custom',
      provider: 'custom',
      nickname: 'Front desk',
      inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }],
      inbound_agent_id: agent.agent_id,
      cps_limit: 10,
      effective_inbound_addresses: null,
      sip_outbound_trunk_config: { termination_uri: 'sip:trunk.example.com', auth_username: 'alice', transport: 'TCP' },
    });
    expect(JSON.stringify(imported)).not.toContain('s3cret-pass');
    expect(await retell.phoneNumber.retrieve(body.phone_number)).toEqual(imported);
    expect(imported.phone_number_pretty).toBe(`+1 (${body.phone_number.slice(2, 5)}) ${body.phone_number.slice(5, 8)}-${body.phone_number.slice(8)}`);
    const listed = await retell.phoneNumber.list();
    expect(listed.items.map((n) => n.phone_number)).toContain(body.phone_number);
    expect((await app.api.get('/list-phone-numbers')).body).toEqual((await app.api.get('/v2/list-phone-numbers')).body);

    const stored = await db.send(new GetCommand({ TableName: tableName, Key: keys.phoneNumber(app.workspace.workspace_id, body.phone_number) }));
    expect(JSON.stringify(stored.Item)).not.toContain('s3cret-pass');
    expect(stored.Item?.auth_password_encrypted).toMatch(/^env1\./);
  });

  it('never takes the mask of a secret as a password: refused on import, "unchanged" on update', async () => {
    const { decryptSecret, recordContext } = await import('../../shared/platform/crypto/envelope.ts');
    const masked = await app.api.post('/import-phone-number', { body: importBody({ sip_trunk_auth_password: '********' }) });
    expect(masked.status).toBe(400);
    expect(masked.body).toEqual({ status: 400, message: 'sip_trunk_auth_password: Send the secret itself; ******** is how a stored one is shown' });

    const body = importBody();
    expect((await app.api.post('/import-phone-number', { body })).status).toBe(201);
    const updated = await app.api.patch(`/update-phone-number/${body.phone_number}`, { body: { auth_password: '********', nickname: 'Kept' } });
    expect(updated.status).toBe(200);
    const stored = await db.send(new GetCommand({ TableName: tableName, Key: keys.phoneNumber(app.workspace.workspace_id, body.phone_number) }));
    const context = recordContext(app.workspace.workspace_id, `phone_number#${body.phone_number}`);
    expect(await decryptSecret(stored.Item!.auth_password_encrypted, context)).toBe('s3cret-pass');
  });

  it('lists a page at a time, newest first by default', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const numbers = [];
    for (let i = 0; i < 3; i++) numbers.push((await client.phoneNumber.import(importBody() as Retell.PhoneNumberImportParams)).phone_number);
    const first = await client.phoneNumber.list({ limit: 2 });
    expect(first.items.map((n) => n.phone_number)).toEqual([numbers[2], numbers[1]]);
    expect(first).toMatchObject({ has_more: true, pagination_key: numbers[1] });
    const second = await client.phoneNumber.list({ limit: 2, pagination_key: first.pagination_key });
    expect(second.items.map((n) => n.phone_number)).toEqual([numbers[0]]);
    expect(second.has_more).toBe(false);
    const ascending = await client.phoneNumber.list({ sort_order: 'ascending' });
    expect(ascending.items.map((n) => n.phone_number)).toEqual(numbers);
    expect((await ws.api.get(`/v2/list-phone-numbers?pagination_key=${encodeURIComponent(freshNumber())}`)).status).toBe(400);
  });

  it('takes the number as + or %2B in paths', async () => {
    const body = importBody();
    await retell.phoneNumber.import(body as Retell.PhoneNumberImportParams);
    const plain = await app.api.get(`/get-phone-number/${body.phone_number}`);
    const encoded = await app.api.get(`/get-phone-number/${body.phone_number.replace('+', '%2B')}`);
    expect(plain.status).toBe(200);
    expect(encoded.status).toBe(200);
    expect(encoded.body).toEqual(plain.body);
  });

  it('stores provider twilio for *.pstn.twilio.com, limits inbound to Twilio blocks unless addresses are set (rules 1, 2)', async () => {
    const twilio = await retell.phoneNumber.import(importBody({ termination_uri: 'acme.pstn.twilio.com' }) as Retell.PhoneNumberImportParams);
    expect(twilio).toMatchObject({ provider: 'twilio', cps_limit: 4 });
    expect((twilio as unknown as { effective_inbound_addresses: string[] }).effective_inbound_addresses).toEqual([
      '54.172.60.0/30', '54.244.51.0/30', '54.171.127.192/30', '35.156.191.128/30',
      '54.65.63.192/30', '54.169.127.128/30', '54.252.254.64/30', '177.71.206.192/30',
    ]);
    const forced = await app.api.post('/import-phone-number', { body: importBody({ provider: 'twilio' }) });
    expect(forced.body.provider).toBe('twilio');
    const own = await app.api.post('/import-phone-number', {
      body: importBody({ termination_uri: 'sip:x.pstn.twilio.com:5060;transport=tcp', allowed_inbound_addresses: ['203.0.113.7/24', '2001:DB8:0:0::1'] }),
    });
    expect(own.body.allowed_inbound_addresses).toEqual(['203.0.113.0/24', '2001:db8::1']);
    expect(own.body.effective_inbound_addresses).toEqual(['203.0.113.0/24', '2001:db8::1']);
  });

  it('a number exists once across all workspaces; another workspace sees a 404', async () => {
    const body = importBody();
    await retell.phoneNumber.import(body as Retell.PhoneNumberImportParams);
    const again = await failure(retell.phoneNumber.import(body as Retell.PhoneNumberImportParams));
    expect(again).toEqual({ status: 409, body: { status: 409, message: `${body.phone_number} already exists` } });
    const other = await app.newWorkspace();
    // Another workspace's number answers exactly as a duplicate of one's own: nothing tells
    // a prober whether (or where) a number is held.
    const elsewhere = await other.api.post('/import-phone-number', { body });
    const ownDuplicate = await app.api.post('/import-phone-number', { body });
    expect(elsewhere.status).toBe(409);
    expect(elsewhere.body).toEqual(ownDuplicate.body);
    expect(elsewhere.text).toBe(ownDuplicate.text);
    expect(elsewhere.body.message).toBe(`${body.phone_number} already exists`);
    for (const res of [
      await other.api.get(`/get-phone-number/${body.phone_number}`),
      await other.api.patch(`/update-phone-number/${body.phone_number}`, { body: { nickname: 'x' } }),
      await other.api.delete(`/delete-phone-number/${body.phone_number}`),
      await other.api.get(`/phone-number-bindings/${body.phone_number}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.message).toBe(`Phone number ${body.phone_number} not found`);
    }
    expect(await numberCount(other.api)).toBe(0);
    // Deleting frees the number for anyone.
    await retell.phoneNumber.delete(body.phone_number);
    expect((await other.api.post('/import-phone-number', { body })).status).toBe(201);
  });

  it('lets exactly one of concurrent imports of a number (from any workspaces) succeed', async () => {
    const agent = await newAgent();
    const others = await Promise.all([app.newWorkspace(), app.newWorkspace()]);
    const body = importBody();
    const results = await Promise.all([
      app.api.post('/import-phone-number', { body: { ...body, inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] } }),
      app.api.post('/import-phone-number', { body: { ...body, inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] } }),
      ...others.map((ws) => ws.api.post('/import-phone-number', { body })),
    ]);
    expect(results.map((res) => res.status).sort()).toEqual([201, 409, 409, 409]);
    const owners = await Promise.all([app.api, ...others.map((ws) => ws.api)].map((api) => api.get(`/get-phone-number/${body.phone_number}`)));
    expect(owners.filter((res) => res.status === 200)).toHaveLength(1);
    // The agent is referenced at most once: deleting the number (if it is ours) frees it.
    if (owners[0]!.status === 200) await retell.phoneNumber.delete(body.phone_number);
    await retell.agent.delete(agent.agent_id);
  });

  const unicodeDigits = '+１４１５５５５０１２３';
  it.each([
    [{ phone_number: '+1415555CALL' }, 'phone_number'],
    [{ phone_number: unicodeDigits }, 'phone_number'],
    [{ phone_number: '+14155550123456789' }, 'phone_number'],
    [{ phone_number: '+14155550123\n' }, 'phone_number'],
    [{ phone_number: '14155550123' }, 'phone_number'],
    [{ phone_number: '+1 415 555 0123' }, 'phone_number'],
    [{ phone_number: '+1415555012' }, 'phone_number'],
    [{ termination_uri: 'https://trunk.example.com' }, 'termination_uri'],
    [{ termination_uri: 'sip:' }, 'termination_uri'],
    [{ termination_uri: 'trunk example.com' }, 'termination_uri'],
    [{ termination_uri: 'sip:trunk.example.com:99999' }, 'termination_uri'],
    [{ inbound_agents: [{ agent_id: 'agent_0123456789abcdef01234567', weight: 1 }] }, 'inbound_agents.0.agent_id: Agent agent_0123456789abcdef01234567 not found'],
    [{ outbound_agents: [{ agent_id: 'agent_0123456789abcdef01234567', weight: 1 }] }, 'outbound_agents.0.agent_id'],
    [{ inbound_agents: [{ agent_id: 'agent_0123456789abcdef01234567', weight: 0 }] }, 'inbound_agents.0.weight'],
    [{ inbound_agents: [{ agent_id: 'agent_0123456789abcdef01234567', weight: -1 }] }, 'inbound_agents.0.weight'],
    [{ allowed_inbound_country_list: ['us'] }, 'allowed_inbound_country_list.0'],
    [{ allowed_outbound_country_list: ['XX'] }, 'allowed_outbound_country_list.0'],
    [{ allowed_outbound_country_list: ['USA'] }, 'allowed_outbound_country_list.0'],
    [{ allowed_inbound_addresses: ['not-an-ip'] }, 'allowed_inbound_addresses.0'],
    [{ allowed_inbound_addresses: ['10.0.0.0/33'] }, 'allowed_inbound_addresses.0'],
    [{ allowed_inbound_addresses: ['010.0.0.1'] }, 'allowed_inbound_addresses.0'],
    [{ fallback_number: '+1415' }, 'fallback_number'],
    [{ cps_limit: 0 }, 'cps_limit'],
    [{ transport: 'SCTP' }, 'transport'],
    [{ inbound_webhook_url: 'ftp://example.com' }, 'inbound_webhook_url'],
  ])('refuses %j with a 4xx naming the field, writing nothing', async (overrides, field) => {
    const before = await numberCount();
    const body = importBody(overrides);
    const res = await app.api.post('/import-phone-number', { body });
    expect(res.status).toBe(400);
    expect(res.body.message).toContain(field);
    expect(await numberCount()).toBe(before);
    if (typeof body.phone_number === 'string' && !('phone_number' in overrides)) {
      const claim = await db.send(new GetCommand({ TableName: tableName, Key: keys.phoneNumberClaim(body.phone_number) }));
      expect(claim.Item).toBeUndefined();
    }
  });

  it('refuses a bad number in the path', async () => {
    for (const path of ['/get-phone-number/abc', '/get-phone-number/%2B1415555CALL', '/get-phone-number/%2B14155550123%0A']) {
      const res = await app.api.get(path);
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/^phone_number: /);
    }
  });
});

describe('agents on numbers', () => {
  it('keeps an agent in use from deletion until the number lets go of it', async () => {
    const agent = await newAgent();
    const other = await newAgent();
    const body = importBody({ inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }], outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] });
    await retell.phoneNumber.import(body as Retell.PhoneNumberImportParams);
    const refused = await failure(retell.agent.delete(agent.agent_id));
    expect(refused.status).toBe(409);
    expect(refused.body.message).toContain(`phone number ${body.phone_number}`);

    const updated = await retell.phoneNumber.update(body.phone_number, {
      inbound_agents: [{ agent_id: other.agent_id, weight: 0.5 }, { agent_id: agent.agent_id, weight: 0.5 }],
      outbound_agents: null,
    });
    expect(updated.outbound_agents).toBeNull();
    await retell.phoneNumber.update(body.phone_number, { inbound_agents: [{ agent_id: other.agent_id, weight: 1 }] });
    await retell.agent.delete(agent.agent_id);
    expect((await failure(retell.agent.delete(other.agent_id))).status).toBe(409);
    await retell.phoneNumber.delete(body.phone_number);
    await retell.agent.delete(other.agent_id);
  });

  it('accepts inbound_agent_id as a one-agent list', async () => {
    const agent = await newAgent();
    const res = await app.api.post('/import-phone-number', { body: importBody({ inbound_agent_id: agent.agent_id }) });
    expect(res.status).toBe(201);
    expect(res.body.inbound_agents).toEqual([{ agent_id: agent.agent_id, weight: 1 }]);
    const cleared = await app.api.patch(`/update-phone-number/${res.body.phone_number}`, { body: { inbound_agent_id: null } });
    expect(cleared.body).toMatchObject({ inbound_agents: null, inbound_agent_id: null });
  });

  it('binds versions: pins, latest, latest_published and tags must resolve', async () => {
    const agent = await newAgent();
    await retell.agent.publish(agent.agent_id, { version: 0 });
    const tag = await app.api.post(`/agents/${agent.agent_id}/tags`, { body: { name: 'prod', version: 0 } });
    const body = importBody({ inbound_agents: [{ agent_id: agent.agent_id, weight: 1, agent_version: 0 }], outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] });
    await retell.phoneNumber.import(body as Retell.PhoneNumberImportParams);

    const pinned = await app.api.patch(`/update-phone-number/${body.phone_number}`, {
      body: { inbound_agents: [{ agent_id: agent.agent_id, weight: 1, agent_version: 7 }] },
    });
    expect(pinned.status).toBe(400);
    expect(pinned.body.message).toMatch(/^inbound_agents\.0\.agent_version: /);

    const put = await app.api.put(`/phone-number-bindings/${body.phone_number}`, { body: { outbound_agent_version: 'latest_published' } });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      phone_number: body.phone_number,
      inbound_agent_version: null,
      outbound_agent_version: 'latest_published',
      inbound_agents: [{ agent_id: agent.agent_id, agent_version: 0, resolved_version: 0 }],
      outbound_agents: [{ agent_id: agent.agent_id, agent_version: 'latest_published', resolved_version: 0 }],
    });
    expect(tag.status).toBe(201);
    const tagged = await app.api.put(`/phone-number-bindings/${body.phone_number}`, { body: { outbound_agent_version: 'prod' } });
    expect(tagged.status).toBe(200);
    expect(tagged.body.outbound_agents[0]).toMatchObject({ agent_version: 'prod', resolved_version: 0 });
    const unknownTag = await app.api.put(`/phone-number-bindings/${body.phone_number}`, { body: { outbound_agent_version: 'staging' } });
    expect(unknownTag.status).toBe(400);
    expect(unknownTag.body.message).toMatch(/^outbound_agent_version: /);
    const bad = await app.api.put(`/phone-number-bindings/${body.phone_number}`, { body: { outbound_agent_version: 'latest!' } });
    expect(bad.status).toBe(400);
    expect((await app.api.get(`/phone-number-bindings/${body.phone_number}`)).body.outbound_agent_version).not.toBe('staging');
  });
});

describe('updates', () => {
  it('changes fields, null removes, cps_limit null restores the default', async () => {
    const body = importBody();
    await retell.phoneNumber.import(body as Retell.PhoneNumberImportParams);
    const fallback = freshNumber();
    const updated = await app.api.patch(`/update-phone-number/${encodeURIComponent(body.phone_number)}`, {
      body: {
        inbound_webhook_url: 'https://hooks.example.com/inbound',
        allowed_inbound_country_list: ['US', 'CA', 'US'],
        allowed_outbound_country_list: ['GB'],
        cps_limit: 2,
        fallback_number: fallback,
        termination_uri: 'acme.pstn.twilio.com',
        auth_password: 'n3w-pass',
      },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({
      inbound_webhook_url: 'https://hooks.example.com/inbound',
      allowed_inbound_country_list: ['US', 'CA'],
      allowed_outbound_country_list: ['GB'],
      cps_limit: 2,
      fallback_number: fallback,
      provider: 'twilio',
    });
    const cleared = await app.api.patch(`/update-phone-number/${body.phone_number}`, { body: { inbound_webhook_url: null, cps_limit: null } });
    expect(cleared.body).toMatchObject({ inbound_webhook_url: null, cps_limit: 4 });
    const self = await app.api.patch(`/update-phone-number/${body.phone_number}`, { body: { fallback_number: body.phone_number } });
    expect(self.status).toBe(400);
    expect(self.body.message).toMatch(/^fallback_number: /);
  });
});

describe('buying numbers (offline mock provider)', () => {
  it('buys with one trunk per workspace, logs every trunk request, releases on delete', async () => {
    const ws = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const first = await client.phoneNumber.create({ area_code: 650 });
    expect(first).toMatchObject({ phone_number_type: 'retell-twilio', provider: 'twilio', number_provider: 'twilio', area_code: 650, cps_limit: 4 });
    expect(first.phone_number).toMatch(/^\+1650\d{7}$/);
    const wanted = freshNumber();
    const second = await client.phoneNumber.create({ phone_number: wanted });
    expect(second.phone_number).toBe(wanted);

    const operations = await listProviderOperations(ws.workspace_id, { limit: 100 });
    const names = operations.map((op) => op.operation).reverse();
    expect(names.filter((name) => name === 'create_trunk')).toHaveLength(1);
    expect(names).toEqual([
      'create_trunk', 'add_origination_url', 'create_credential_list', 'add_credential', 'attach_credential_list',
      'purchase_number', 'attach_number', 'purchase_number', 'attach_number',
    ]);
    expect(operations.find((op) => op.operation === 'add_origination_url')?.request.sip_url).toBe('sip:sip.parley.local;transport=tcp');
    expect(JSON.stringify(operations)).not.toMatch(/password":"(?!\[redacted\])/);

    const again = await failure(client.phoneNumber.create({ phone_number: wanted }));
    expect(again.status).toBe(409);
    await client.phoneNumber.delete(wanted);
    const after = await listProviderOperations(ws.workspace_id, { limit: 1 });
    expect(after[0]).toMatchObject({ operation: 'release_number', request: { phone_number: wanted } });

    const provisioned = await ws.api.post(`/provision-phone-number/${first.phone_number}`);
    expect(provisioned.status).toBe(200);
    expect(provisioned.body.provisioning_status).toBe('provisioned');
  });

  it('searches by country, area code and contained digits', async () => {
    const res = await app.api.get('/search-phone-numbers?country=US&area_code=212&contains=77&limit=5');
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(5);
    for (const found of res.body as { phone_number: string; area_code: number }[]) {
      expect(found.phone_number).toMatch(/^\+1212\d*77\d*$/);
      expect(found.area_code).toBe(212);
    }
    expect((await app.api.get('/search-phone-numbers?country=usa')).status).toBe(400);
    expect((await app.api.get('/search-phone-numbers?area_code=12a')).status).toBe(400);
    expect((await app.api.get('/search-phone-numbers?contains=abc')).status).toBe(400);
  });

  it('refuses bad buy requests before anything is bought', async () => {
    const ws = await app.newWorkspace();
    for (const body of [
      { phone_number: '+1415555CALL' },
      { area_code: 12 },
      { country_code: 'GB' },
      { number_provider: 'vonage' },
      { inbound_agents: [{ agent_id: 'agent_0123456789abcdef01234567', weight: 1 }] },
    ]) {
      const res = await ws.api.post('/create-phone-number', { body });
      expect(res.status).toBe(400);
    }
    expect(await listProviderOperations(ws.workspace_id)).toEqual([]);
    expect(await numberCount(ws.api)).toBe(0);
  });
});

describe('scope', () => {
  it('needs the numbers scope', async () => {
    const key = (await app.api.post('/api-keys', { body: { name: 'agents only', scopes: ['agents'] } })).body.api_key;
    const limited = app.api.withKey(key);
    const res = await limited.get('/v2/list-phone-numbers');
    expect(res.status).toBe(403);
    expect(res.body.message).toBe('This API key lacks the "numbers" scope');
  });
});

describe('connection test (telephony rule 8)', () => {
  it('sends SIP OPTIONS to the termination URI over the number’s transport', async () => {
    const requests: string[] = [];
    const server = createServer((socket) => {
      let buffered = '';
      socket.on('data', (chunk) => {
        buffered += chunk.toString('utf8');
        if (!buffered.includes('\r\n\r\n')) return;
        requests.push(buffered);
        const headers = buffered.split('\r\n').filter((line) => /^(Via|From|To|Call-ID|CSeq):/i.test(line));
        socket.write(['SIP/2.0 200 OK', ...headers, 'Content-Length: 0', '', ''].join('\r\n'));
        buffered = '';
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    afterAll(() => server.close());
    const { port } = server.address() as AddressInfo;
    const body = importBody({ termination_uri: `127.0.0.1:${port}` });
    await retell.phoneNumber.import(body as Retell.PhoneNumberImportParams);
    const res = await app.api.post(`/test-phone-number-connection/${encodeURIComponent(body.phone_number)}`, { body: { timeout_ms: 2000 } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ reachable: true, status_code: 200, transport: 'tcp', address: `127.0.0.1:${port}` });
    expect(requests[0]).toMatch(/^OPTIONS sip:127\.0\.0\.1:\d+ SIP\/2\.0/);

    const bought = await retell.phoneNumber.create({});
    const refused = await app.api.post(`/test-phone-number-connection/${bought.phone_number}`, { body: {} });
    expect(refused.status).toBe(400);
    const missing = await app.api.post(`/test-phone-number-connection/${freshNumber()}`, { body: {} });
    expect(missing.status).toBe(404);
  });
});
