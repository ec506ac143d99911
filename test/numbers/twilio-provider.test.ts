import { randomInt } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { startFakeTwilio } from '../support/fake-twilio.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

const ACCOUNT_SID = 'AC' + '0'.repeat(30);
const AUTH_TOKEN = 'fake-auth-token-123';
const twilio = await startFakeTwilio(ACCOUNT_SID, AUTH_TOKEN);
afterAll(() => twilio.close());

const app = await startTestApp({
  TWILIO_ACCOUNT_SID: ACCOUNT_SID,
  TWILIO_AUTH_TOKEN: AUTH_TOKEN,
  TWILIO_SIP_PASSWORD: 'Sip-Password-1234',
  TWILIO_BASE_URL: twilio.url,
  SIP_HOST: 'sip.test.parley.dev',
  TWILIO_INBOUND_ALLOWED_ADDRESSES: '198.51.100.7, 203.0.113.0/28',
});
const { listProviderOperations } = await import('../../shared/vendors/telephony/operation-log.ts');
const { parseInboundAddresses } = await import('../../shared/numbers/phone-numbers/phone-numbers.ts');

const freshNumber = () => `+1415${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`;

async function workspace() {
  const ws = await app.newWorkspace();
  return { ...ws, retell: retellClient(app.url, ws.api_key) };
}

const since = (start: number) => twilio.requests.slice(start).map((r) => `${r.method} ${r.path.replace(`/2010-04-01/Accounts/${ACCOUNT_SID}`, '~')}`);

describe('buying through the Twilio REST API (rule 7)', () => {
  it('creates one trunk per workspace with origination, a credential list and each number attached', async () => {
    const ws = await workspace();
    const start = twilio.requests.length;
    const wanted = freshNumber();
    const bought = await ws.retell.phoneNumber.create({ phone_number: wanted, number_provider: 'twilio' });
    expect(bought).toMatchObject({ phone_number: wanted, phone_number_type: 'retell-twilio', provider: 'twilio', cps_limit: 4 });
    expect((bought as unknown as { effective_inbound_addresses: string[] }).effective_inbound_addresses).toEqual([
      '198.51.100.7',
      '203.0.113.0/28',
    ]);
    expect(since(start).map((line) => line.replace(/(TK|CL|PN)[0-9a-f]{32}/g, '$1…'))).toEqual([
      'POST /v1/Trunks',
      'POST /v1/Trunks/TK…/OriginationUrls',
      'POST ~/SIP/CredentialLists.json',
      'POST ~/SIP/CredentialLists/CL…/Credentials.json',
      'POST /v1/Trunks/TK…/CredentialLists',
      'POST ~/IncomingPhoneNumbers.json',
      'POST /v1/Trunks/TK…/PhoneNumbers',
    ]);
    for (const request of twilio.requests.slice(start)) {
      expect(request.authorization).toBe(`Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`);
    }
    const [trunkSid, trunk] = [...twilio.trunks].at(-1)!;
    expect(trunk).toMatchObject({
      friendlyName: `parley-${ws.workspace_id}`,
      originationUrls: ['sip:sip.test.parley.dev;transport=tcp'],
      transferMode: 'enable-all',
    });
    expect(twilio.credentialLists.get(trunk.credentialLists[0]!)).toEqual([{ username: 'parley', password: 'Sip-Password-1234' }]);
    expect(trunk.phoneNumbers.map((pn) => twilio.numbers.get(pn))).toEqual([wanted]);

    // The second number reuses the trunk.
    const before = twilio.requests.length;
    const second = await ws.retell.phoneNumber.create({ area_code: 212 });
    expect(second.phone_number).toMatch(/^\+1212\d{7}$/);
    expect(since(before)).toEqual([
      `GET ~/AvailablePhoneNumbers/US/Local.json`,
      'POST ~/IncomingPhoneNumbers.json',
      `POST /v1/Trunks/${trunkSid}/PhoneNumbers`,
    ]);
    expect(twilio.requests[before]!.query).toMatchObject({ AreaCode: '212' });

    const operations = await listProviderOperations(ws.workspace_id, { limit: 100 });
    expect(operations.every((op) => op.provider === 'twilio' && op.outcome === 'ok')).toBe(true);
    expect(JSON.stringify(operations)).not.toContain('Sip-Password-1234');

    // Deleting releases the number at Twilio.
    const releaseStart = twilio.requests.length;
    await ws.retell.phoneNumber.delete(second.phone_number);
    expect(since(releaseStart)).toEqual([expect.stringMatching(/^DELETE ~\/IncomingPhoneNumbers\/PN[0-9a-f]{32}\.json$/)]);
    expect([...twilio.numbers.values()]).not.toContain(second.phone_number);
  });

  it('searches Twilio by country, area code and contained digits', async () => {
    const start = twilio.requests.length;
    twilio.available = ['+16465550101', '+16465550102', '+16465550103'];
    const res = await app.api.get('/search-phone-numbers?country=US&area_code=646&contains=55&limit=2');
    twilio.available = undefined;
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      expect.objectContaining({ phone_number: '+16465550101', area_code: 646, country: 'US', locality: 'San Francisco', number_provider: 'twilio' }),
      expect.objectContaining({ phone_number: '+16465550102' }),
    ]);
    expect(twilio.requests[start]!.query).toEqual({ PageSize: '2', AreaCode: '646', Contains: '55' });
  });

  it('a number Twilio cannot sell is a 422 and nothing is written', async () => {
    const ws = await workspace();
    await ws.retell.phoneNumber.create({});
    twilio.failNext('POST', /IncomingPhoneNumbers\.json$/, 400, { code: 21422, message: 'PhoneNumber requested is not available', status: 400 });
    const wanted = freshNumber();
    const res = await sdkFailure(ws.retell.phoneNumber.create({ phone_number: wanted }));
    expect(res.status).toBe(422);
    expect(res.body.message).toBe(`Phone number ${wanted} is not available to buy (Twilio error 21422)`);
    expect((await ws.retell.phoneNumber.list()).items).toHaveLength(1);
    expect((await ws.api.get(`/get-phone-number/${wanted}`)).status).toBe(404);
  });

  it.each([
    [500, { code: 20500, message: 'Internal Server Error' }, 'Twilio purchase number failed: HTTP 500 (Twilio error 20500)'],
    [401, { code: 20003, message: 'Authenticate' }, "Twilio purchase number failed: the platform's Twilio credentials were refused (HTTP 401 (Twilio error 20003))"],
  ])('a Twilio %i on purchase is a 502 provisioning_failed and nothing is written', async (status, body, message) => {
    const ws = await workspace();
    twilio.failNext('POST', /IncomingPhoneNumbers\.json$/, status, body);
    const res = await ws.api.post('/create-phone-number', { body: { phone_number: freshNumber() } });
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ status: 502, message, error_code: 'provisioning_failed' });
    expect((await ws.api.get('/v2/list-phone-numbers')).body.items).toEqual([]);
  });

  it('a failed attach releases the bought number again', async () => {
    const ws = await workspace();
    await ws.retell.phoneNumber.create({});
    twilio.failNext('POST', /\/PhoneNumbers$/, 503);
    const wanted = freshNumber();
    const res = await ws.api.post('/create-phone-number', { body: { phone_number: wanted } });
    expect(res.status).toBe(502);
    expect(res.body.error_code).toBe('provisioning_failed');
    expect([...twilio.numbers.values()]).not.toContain(wanted);
    // The number is free again.
    expect((await ws.api.post('/create-phone-number', { body: { phone_number: wanted } })).status).toBe(201);
  });

  it('provisioning failure is a 502 provisioning_failed and is recorded on the number', async () => {
    const ws = await workspace();
    const bought = await ws.retell.phoneNumber.create({});
    twilio.failNext('POST', /\/PhoneNumbers$/, 500);
    const failed = await ws.api.post(`/provision-phone-number/${encodeURIComponent(bought.phone_number)}`);
    expect(failed.status).toBe(502);
    expect(failed.body).toEqual({ status: 502, message: 'Twilio attach number failed: HTTP 500 (Twilio error 20500)', error_code: 'provisioning_failed' });
    expect((await ws.api.get(`/get-phone-number/${bought.phone_number}`)).body.provisioning_status).toBe('failed');
    const again = await ws.api.post(`/provision-phone-number/${bought.phone_number}`);
    expect(again.status).toBe(200);
    expect(again.body.provisioning_status).toBe('provisioned');
    const ops = await listProviderOperations(ws.workspace_id, { limit: 3 });
    expect(ops.map((op) => [op.operation, op.outcome])).toEqual([
      ['attach_number', 'ok'],
      ['attach_number', 'error'],
      ['attach_number', 'ok'],
    ]);
  });

  it('a failed release keeps the number (502), a number already gone at Twilio is deleted', async () => {
    const ws = await workspace();
    const bought = await ws.retell.phoneNumber.create({});
    twilio.failNext('DELETE', /IncomingPhoneNumbers\//, 500);
    const failed = await ws.api.delete(`/delete-phone-number/${bought.phone_number}`);
    expect(failed.status).toBe(502);
    expect(failed.body.error_code).toBe('provisioning_failed');
    expect((await ws.api.get(`/get-phone-number/${bought.phone_number}`)).status).toBe(200);
    twilio.failNext('DELETE', /IncomingPhoneNumbers\//, 404, { code: 20404, message: 'Not found', status: 404 });
    expect((await ws.api.delete(`/delete-phone-number/${bought.phone_number}`)).status).toBe(204);
    expect((await ws.api.get(`/get-phone-number/${bought.phone_number}`)).status).toBe(404);
  });

  it('without the SIP password setting buying is a 502 naming it; unreachable Twilio is a 502', async () => {
    const ws = await workspace();
    const saved = process.env.TWILIO_SIP_PASSWORD;
    delete process.env.TWILIO_SIP_PASSWORD;
    try {
      const res = await ws.api.post('/create-phone-number', { body: {} });
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ status: 502, message: 'Twilio is not fully configured: TWILIO_SIP_PASSWORD not set', error_code: 'provisioning_failed' });
    } finally {
      process.env.TWILIO_SIP_PASSWORD = saved;
    }
    const savedUrl = process.env.TWILIO_BASE_URL;
    process.env.TWILIO_BASE_URL = 'http://127.0.0.1:9';
    try {
      const res = await ws.api.post('/create-phone-number', { body: {} });
      expect(res.status).toBe(502);
      expect(res.body).toEqual({ status: 502, message: 'Twilio create trunk failed: unreachable', error_code: 'provisioning_failed' });
    } finally {
      process.env.TWILIO_BASE_URL = savedUrl;
    }
    expect((await ws.api.get('/v2/list-phone-numbers')).body.items).toEqual([]);
  });
});

describe('TWILIO_INBOUND_ALLOWED_ADDRESSES (rule 2)', () => {
  it('is canonicalised, and a bad entry is an error naming the setting', () => {
    expect(parseInboundAddresses('198.51.100.7, 203.0.113.5/28,2001:DB8::/32')).toEqual(['198.51.100.7', '203.0.113.0/28', '2001:db8::/32']);
    expect(() => parseInboundAddresses('198.51.100.7, nope')).toThrow(
      'Invalid Parley settings: TWILIO_INBOUND_ALLOWED_ADDRESSES: "nope" is not an IP or CIDR block',
    );
  });
});
