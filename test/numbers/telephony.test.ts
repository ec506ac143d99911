import { describe, expect, it, vi } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { useProductionSettings } from '../support/production-settings.ts';

const app = await startTestApp({ SIP_HOST: 'sip.test.parley.dev', SIP_IP_RANGES: '203.0.113.7, 198.51.100.0/24,2001:DB8::/32' });

const kycDetails = (overrides: Record<string, unknown> = {}) => ({
  legal_name: 'Acme Telephony Pty Ltd',
  registration_number: 'ACN 123 456 789',
  country: 'AU',
  address: { line1: '1 George St', city: 'Sydney', region: 'NSW', postal_code: '2000' },
  contact_email: 'compliance@acme.example',
  ...overrides,
});

async function scopedKey(scopes: string[]) {
  return (await app.api.post('/api-keys', { body: { name: `scoped ${scopes.join(',')}`, scopes } })).body.api_key as string;
}

describe('SIP origination', () => {
  it('answers the origination URI and address ranges from settings, canonicalised', async () => {
    const res = await app.api.get('/sip-origination');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      origination_uri: 'sip:sip.test.parley.dev;transport=tcp',
      ip_ranges: ['203.0.113.7/32', '198.51.100.0/24', '2001:db8::/32'],
    });
  });

  it('needs the numbers scope', async () => {
    const key = await scopedKey(['agents']);
    const res = await app.api.withKey(key).get('/sip-origination');
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "numbers" scope' });
    expect((await app.api.withKey(await scopedKey(['numbers'])).get('/sip-origination')).status).toBe(200);
  });
});

describe('settings for SIP', () => {
  it('read SIP_IP_RANGES as JSON or a comma list and refuse anything that is not a CIDR block', async () => {
    const { loadConfig } = await import('../../shared/platform/config.ts');
    expect(loadConfig({}).SIP_IP_RANGES).toEqual(['127.0.0.1/32']);
    expect(loadConfig({ SIP_IP_RANGES: '["10.1.2.3/8", "::1"]' }).SIP_IP_RANGES).toEqual(['10.0.0.0/8', '::1/128']);
    expect(() => loadConfig({ SIP_IP_RANGES: '10.0.0.0/33' })).toThrow(
      'Invalid Parley settings: SIP_IP_RANGES: "10.0.0.0/33" is not an IP address or CIDR block',
    );
    expect(() => loadConfig({ SIP_IP_RANGES: '[1,' })).toThrow('SIP_IP_RANGES: Must be a JSON array');
  });
});

describe('KYC', () => {
  it('starts not submitted, moves to pending on submission and to approved on a (non-production) decision', async () => {
    const ws = await app.newWorkspace();
    const empty = await ws.api.get('/kyc');
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({
      status: 'not_submitted', legal_name: null, registration_number: null, country: null, address: null,
      contact_email: null, submitted_timestamp: null, reviewed_timestamp: null, rejection_reason: null,
    });
    const submitted = await ws.api.post('/kyc', { body: kycDetails({ unknown_field: 1 }) });
    expect(submitted.status).toBe(200);
    expect(submitted.body).toMatchObject({ ...kycDetails(), status: 'pending', reviewed_timestamp: null, rejection_reason: null });
    expect(submitted.body).not.toHaveProperty('unknown_field');
    expect(submitted.body.submitted_timestamp).toBeGreaterThan(0);
    expect((await ws.api.get('/kyc')).body).toEqual(submitted.body);

    const approved = await ws.api.post('/kyc', { body: { decision: 'approved' } });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ ...kycDetails(), status: 'approved', rejection_reason: null });
    expect(approved.body.reviewed_timestamp).toBeGreaterThan(0);

    const again = await ws.api.post('/kyc', { body: kycDetails({ legal_name: 'Someone Else' }) });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ status: 409, message: 'Business verification is already approved' });
    expect((await ws.api.get('/kyc')).body.legal_name).toBe('Acme Telephony Pty Ltd');
  });

  it('can be rejected with a reason and resubmitted', async () => {
    const ws = await app.newWorkspace();
    const early = await ws.api.post('/kyc', { body: { decision: 'approved' } });
    expect(early.status).toBe(409);
    expect(early.body.message).toBe('Business verification is not_submitted; only a pending submission can be decided');
    await ws.api.post('/kyc', { body: kycDetails() });
    const rejected = await ws.api.post('/kyc', { body: { decision: 'rejected', reason: 'Registration number not found' } });
    expect(rejected.body).toMatchObject({ status: 'rejected', rejection_reason: 'Registration number not found' });
    const resubmitted = await ws.api.post('/kyc', { body: kycDetails({ registration_number: 'ACN 987 654 321' }) });
    expect(resubmitted.body).toMatchObject({ status: 'pending', registration_number: 'ACN 987 654 321', rejection_reason: null });
  });

  it.each([
    [{ ...kycDetails(), legal_name: undefined }, 'legal_name: Required'],
    [kycDetails({ country: 'XX' }), 'country: Must be an ISO 3166-1 alpha-2 country code'],
    [kycDetails({ country: 'au' }), 'country: Must be an ISO 3166-1 alpha-2 country code (two capital letters)'],
    [kycDetails({ contact_email: 'not-an-email' }), 'contact_email: Must be an email address'],
    [kycDetails({ address: { line1: '1 George St' } }), 'address.city: Required'],
    [kycDetails({ legal_name: '   ' }), 'legal_name: Must be at least 1 characters'],
    [{}, 'legal_name: Required; registration_number: Required; country: Required; address: Required; contact_email: Required'],
    [{ ...kycDetails(), decision: 'approved' }, 'decision: Send either a decision or the business details, not both'],
    [{ decision: 'maybe' }, 'decision: Expected one of "approved", "rejected"'],
  ])('refuses %j with a 400, writing nothing', async (body, message) => {
    const ws = await app.newWorkspace();
    const res = await ws.api.post('/kyc', { body });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message });
    expect((await ws.api.get('/kyc')).body.status).toBe('not_submitted');
  });

  it('belongs to the numbers scope, as everything the numbers issue names does', async () => {
    const numbersKey = await scopedKey(['numbers']);
    expect((await app.api.withKey(numbersKey).get('/kyc')).status).toBe(200);
    const otherKey = await scopedKey(['agents']);
    for (const res of [await app.api.withKey(otherKey).get('/kyc'), await app.api.withKey(otherKey).post('/kyc', { body: kycDetails() })]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "numbers" scope' });
    }
  });

  it('refuses reviewer decisions through the API in production', async () => {
    const ws = await app.newWorkspace();
    await ws.api.post('/kyc', { body: kycDetails() });
    const restoreSettings = useProductionSettings();
    vi.resetModules();
    try {
      const { decideKyc } = await import('../../shared/numbers/telephony/kyc.ts');
      await expect(decideKyc(ws.workspace_id, { decision: 'approved' })).rejects.toMatchObject({
        status: 403,
        message: 'Business verification decisions are made by the reviewer, not through the API',
      });
    } finally {
      restoreSettings();
      vi.resetModules();
    }
    expect((await ws.api.get('/kyc')).body.status).toBe('pending');
  });

  it('assertKycApproved names the status and the action', async () => {
    const { assertKycApproved } = await import('../../shared/numbers/telephony/kyc.ts');
    const ws = await app.newWorkspace();
    await expect(assertKycApproved(ws.workspace_id, 'buy a phone number')).rejects.toMatchObject({
      status: 403,
      message: 'Business verification is not_submitted; approved verification is required to buy a phone number',
    });
    await ws.api.post('/kyc', { body: kycDetails() });
    await expect(assertKycApproved(ws.workspace_id, 'buy a phone number')).rejects.toMatchObject({
      message: 'Business verification is pending; approved verification is required to buy a phone number',
    });
    await ws.api.post('/kyc', { body: { decision: 'approved' } });
    await expect(assertKycApproved(ws.workspace_id, 'buy a phone number')).resolves.toBeUndefined();
  });
});

const trunkBody = (overrides: Record<string, unknown> = {}) => ({
  name: 'Main carrier',
  termination_uri: 'sip:trunk.example.com:5060;transport=tcp',
  auth_username: 'parley-user',
  auth_password: 's3cret-Passw0rd',
  allowed_addresses: ['203.0.113.10', '198.51.100.7/24'],
  ...overrides,
});

describe('SIP trunks', () => {
  it('creates, reads, lists, updates and deletes a trunk, never answering the password', async () => {
    const ws = await app.newWorkspace();
    const created = await ws.api.post('/create-sip-trunk', { body: trunkBody({ transport: 'udp', sip_trunk_id: 'sip_trunk_x' }) });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      sip_trunk_id: expect.stringMatching(/^sip_trunk_[0-9a-f]{24}$/),
      name: 'Main carrier',
      termination_uri: 'sip:trunk.example.com:5060;transport=tcp',
      auth_username: 'parley-user',
      auth_password: '********',
      allowed_addresses: ['203.0.113.10', '198.51.100.0/24'],
      transport: 'UDP',
      created_timestamp: expect.any(Number),
      last_modification_timestamp: created.body.created_timestamp,
    });
    const id = created.body.sip_trunk_id;
    expect((await ws.api.get(`/get-sip-trunk/${id}`)).body).toEqual(created.body);
    const second = await ws.api.post('/create-sip-trunk', {
      body: { name: 'Bare', termination_uri: 'example.pstn.twilio.com' },
    });
    expect(second.body).toMatchObject({ auth_username: null, auth_password: null, allowed_addresses: [], transport: 'TCP' });
    const listed = await ws.api.get('/list-sip-trunks');
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([created.body, second.body]);

    const updated = await ws.api.patch(`/update-sip-trunk/${id}`, {
      body: { name: 'Renamed', allowed_addresses: [], transport: 'TLS' },
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'Renamed', allowed_addresses: [], transport: 'TLS', auth_password: '********' });
    const cleared = await ws.api.patch(`/update-sip-trunk/${id}`, { body: { auth_username: null, auth_password: null } });
    expect(cleared.body).toMatchObject({ auth_username: null, auth_password: null });

    for (const res of [created, updated, cleared, listed]) expect(res.text).not.toContain('s3cret');

    expect((await ws.api.delete(`/delete-sip-trunk/${id}`)).status).toBe(204);
    const gone = await ws.api.get(`/get-sip-trunk/${id}`);
    expect(gone.status).toBe(404);
    expect(gone.body).toEqual({ status: 404, message: `SIP trunk ${id} not found` });
    expect((await ws.api.delete(`/delete-sip-trunk/${id}`)).status).toBe(404);
  });

  it('stores the password sealed to its trunk', async () => {
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const { db, tableName } = await import('../../shared/platform/store/db.ts');
    const { keys } = await import('../../shared/platform/store/keys.ts');
    const { decryptSecret, recordContext } = await import('../../shared/platform/crypto/envelope.ts');
    const ws = await app.newWorkspace();
    const { sip_trunk_id: id } = (await ws.api.post('/create-sip-trunk', { body: trunkBody() })).body;
    const item = (await db.send(new GetCommand({ TableName: tableName, Key: keys.sipTrunk(ws.workspace_id, id) }))).Item!;
    expect(JSON.stringify(item)).not.toContain('s3cret');
    expect(item.auth_password_sealed).toMatch(/^env1\./);
    expect(await decryptSecret(item.auth_password_sealed, recordContext(ws.workspace_id, `sip_trunk:${id}`))).toBe('s3cret-Passw0rd');
    await expect(decryptSecret(item.auth_password_sealed, recordContext(ws.workspace_id, 'sip_trunk:other'))).rejects.toThrow();
  });

  it('keeps the stored password when the masked value it answered is written back', async () => {
    const { GetCommand } = await import('@aws-sdk/lib-dynamodb');
    const { db, tableName } = await import('../../shared/platform/store/db.ts');
    const { keys } = await import('../../shared/platform/store/keys.ts');
    const { decryptSecret, recordContext } = await import('../../shared/platform/crypto/envelope.ts');
    const ws = await app.newWorkspace();
    const { sip_trunk_id: id } = (await ws.api.post('/create-sip-trunk', { body: trunkBody() })).body;
    const storedPassword = async () => {
      const item = (await db.send(new GetCommand({ TableName: tableName, Key: keys.sipTrunk(ws.workspace_id, id) }))).Item!;
      return decryptSecret(item.auth_password_sealed, recordContext(ws.workspace_id, `sip_trunk:${id}`));
    };

    // Read, change the name, write the whole object back: the password must survive.
    const { sip_trunk_id: _id, created_timestamp: _c, last_modification_timestamp: _m, ...fetched } = (await ws.api.get(`/get-sip-trunk/${id}`)).body;
    expect(fetched.auth_password).toBe('********');
    const written = await ws.api.patch(`/update-sip-trunk/${id}`, { body: { ...fetched, name: 'Renamed' } });
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ name: 'Renamed', auth_username: 'parley-user', auth_password: '********' });
    expect(await storedPassword()).toBe('s3cret-Passw0rd');

    // A real new password still replaces it; a mask on create is refused, not stored.
    await ws.api.patch(`/update-sip-trunk/${id}`, { body: { auth_password: 'n3w-Passw0rd' } });
    expect(await storedPassword()).toBe('n3w-Passw0rd');
    const copied = await ws.api.post('/create-sip-trunk', { body: { ...fetched, name: 'Copy' } });
    expect(copied.status).toBe(400);
    expect(copied.body).toEqual({ status: 400, message: 'auth_password: Send the secret itself; ******** is how a stored one is shown' });
    expect((await ws.api.get('/list-sip-trunks')).body).toHaveLength(1);
  });

  it.each([
    [trunkBody({ termination_uri: 'http://example.com' }), 'termination_uri: Must be a SIP URI'],
    [trunkBody({ termination_uri: 'sip:exa mple.com' }), 'termination_uri: Must be a SIP URI'],
    [trunkBody({ allowed_addresses: ['10.0.0.0/33'] }), 'allowed_addresses.0: Must be an IPv4 or IPv6 address or a CIDR block (e.g. 203.0.113.0/24)'],
    [trunkBody({ allowed_addresses: ['example.com'] }), 'allowed_addresses.0: Must be an IPv4 or IPv6 address or a CIDR block (e.g. 203.0.113.0/24)'],
    [trunkBody({ transport: 'SCTP' }), 'transport: Must be TCP, TLS or UDP'],
    [trunkBody({ auth_password: undefined }), 'auth_password: Required when auth_username is set'],
    [trunkBody({ auth_username: undefined }), 'auth_username: Required when auth_password is set'],
    [trunkBody({ auth_username: 'has space' }), 'auth_username: Must be printable ASCII without spaces'],
    [trunkBody({ name: '' }), 'name: Must be at least 1 characters'],
  ])('refuses %j with a 400, writing nothing', async (body, message) => {
    const ws = await app.newWorkspace();
    const res = await ws.api.post('/create-sip-trunk', { body });
    expect(res.status).toBe(400);
    expect(res.body.message.startsWith(message)).toBe(true);
    expect((await ws.api.get('/list-sip-trunks')).body).toEqual([]);
  });

  it('refuses an update that would leave half the credentials, changing nothing', async () => {
    const ws = await app.newWorkspace();
    const { body: trunk } = await ws.api.post('/create-sip-trunk', { body: trunkBody() });
    const res = await ws.api.patch(`/update-sip-trunk/${trunk.sip_trunk_id}`, { body: { auth_password: null, name: 'x' } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message: 'auth_password: Required when auth_username is set' });
    expect((await ws.api.get(`/get-sip-trunk/${trunk.sip_trunk_id}`)).body).toEqual(trunk);
    const badId = await ws.api.get('/get-sip-trunk/trunk_1');
    expect(badId.status).toBe(400);
    expect(badId.body.message).toBe('id: Must be a SIP trunk ID (sip_trunk_ followed by 24 hex characters)');
  });

  it("answers 404 for another workspace's trunk and leaves it alone", async () => {
    const owner = await app.newWorkspace();
    const other = await app.newWorkspace();
    const { body: trunk } = await owner.api.post('/create-sip-trunk', { body: trunkBody() });
    const id = trunk.sip_trunk_id;
    for (const res of [
      await other.api.get(`/get-sip-trunk/${id}`),
      await other.api.patch(`/update-sip-trunk/${id}`, { body: { name: 'stolen' } }),
      await other.api.delete(`/delete-sip-trunk/${id}`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `SIP trunk ${id} not found` });
    }
    expect((await other.api.get('/list-sip-trunks')).body).toEqual([]);
    expect((await owner.api.get(`/get-sip-trunk/${id}`)).body).toEqual(trunk);
  });

  it('needs the numbers scope', async () => {
    const key = await scopedKey(['calls']);
    const scoped = app.api.withKey(key);
    const id = 'sip_trunk_000000000000000000000000';
    for (const res of [
      await scoped.post('/create-sip-trunk', { body: trunkBody() }),
      await scoped.get('/list-sip-trunks'),
      await scoped.get(`/get-sip-trunk/${id}`),
      await scoped.patch(`/update-sip-trunk/${id}`, { body: { name: 'x' } }),
      await scoped.delete(`/delete-sip-trunk/${id}`),
    ]) {
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "numbers" scope' });
    }
  });
});

async function approvedWorkspace() {
  const ws = await app.newWorkspace();
  await ws.api.post('/kyc', { body: kycDetails() });
  await ws.api.post('/kyc', { body: { decision: 'approved' } });
  return ws;
}

const brandedBody = (overrides: Record<string, unknown> = {}) => ({
  phone_number: '+14155550123',
  display_name: 'Acme Support',
  call_reason: 'Your appointment',
  logo_url: 'https://acme.example/logo.png',
  ...overrides,
});

describe('branded caller IDs (offline vendor)', () => {
  it('needs approved business verification, naming the status and the action', async () => {
    const ws = await app.newWorkspace();
    const refused = await ws.api.post('/create-branded-caller-id', { body: brandedBody() });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({
      status: 403,
      message: 'Business verification is not_submitted; approved verification is required to create a branded caller ID',
    });
    await ws.api.post('/kyc', { body: kycDetails() });
    const pending = await ws.api.post('/create-branded-caller-id', { body: brandedBody() });
    expect(pending.status).toBe(403);
    expect(pending.body.message).toBe('Business verification is pending; approved verification is required to create a branded caller ID');
    await ws.api.post('/kyc', { body: { decision: 'rejected' } });
    expect((await ws.api.post('/create-branded-caller-id', { body: brandedBody() })).body.message).toMatch(/^Business verification is rejected;/);
    expect((await ws.api.get('/list-branded-caller-ids')).body).toEqual([]);
  });

  it('registers pending, refreshes to approved, lists and deletes', async () => {
    const ws = await approvedWorkspace();
    const created = await ws.api.post('/create-branded-caller-id', { body: brandedBody() });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      branded_caller_id: expect.stringMatching(/^branded_caller_id_[0-9a-f]{24}$/),
      phone_number: '+14155550123',
      display_name: 'Acme Support',
      call_reason: 'Your appointment',
      logo_url: 'https://acme.example/logo.png',
      status: 'pending',
      status_reason: null,
      vendor: 'mock',
      created_timestamp: expect.any(Number),
      last_refreshed_timestamp: created.body.created_timestamp,
    });
    const id = created.body.branded_caller_id;
    const duplicate = await ws.api.post('/create-branded-caller-id', { body: brandedBody({ display_name: 'Other' }) });
    expect(duplicate.status).toBe(409);
    expect(duplicate.body).toEqual({ status: 409, message: '+14155550123 already has a branded caller ID' });

    const refreshed = await ws.api.post(`/refresh-branded-caller-id/${id}`);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body).toMatchObject({ branded_caller_id: id, status: 'approved', display_name: 'Acme Support' });
    expect(refreshed.body).not.toHaveProperty('vendor_reference');
    expect((await ws.api.get('/list-branded-caller-ids')).body).toEqual([refreshed.body]);

    expect((await ws.api.delete(`/delete-branded-caller-id/${id}`)).status).toBe(204);
    expect((await ws.api.get('/list-branded-caller-ids')).body).toEqual([]);
    const gone = await ws.api.post(`/refresh-branded-caller-id/${id}`);
    expect(gone.body).toEqual({ status: 404, message: `Branded caller ID ${id} not found` });
    // The number is free again.
    expect((await ws.api.post('/create-branded-caller-id', { body: brandedBody() })).status).toBe(201);
  });

  it.each([
    [brandedBody({ phone_number: '4155550123' }), 'phone_number: Must be a valid phone number in E.164 format'],
    [brandedBody({ phone_number: '+1415555O123' }), 'phone_number: Must be a valid phone number in E.164 format'],
    [brandedBody({ phone_number: '+14155550123\n' }), 'phone_number: Must be a valid phone number in E.164 format'],
    [brandedBody({ phone_number: '+1415555012３' }), 'phone_number: Must be a valid phone number in E.164 format'],
    [brandedBody({ display_name: 'x'.repeat(33) }), 'display_name: Must be at most 32 characters'],
    [brandedBody({ logo_url: 'http://acme.example/logo.png' }), 'logo_url: Must be an https:// URL'],
  ])('refuses %j with a 400, writing nothing', async (body, message) => {
    const ws = await approvedWorkspace();
    const res = await ws.api.post('/create-branded-caller-id', { body });
    expect(res.status).toBe(400);
    expect(res.body.message.startsWith(message)).toBe(true);
    expect((await ws.api.get('/list-branded-caller-ids')).body).toEqual([]);
  });
});

describe('verified numbers (offline vendor)', () => {
  it('starts a verification with a code, refreshes to verified, lists and deletes', async () => {
    const ws = await app.newWorkspace();
    const created = await ws.api.post('/create-verified-number', { body: { phone_number: '+61291234567', friendly_name: 'Sydney office' } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      verified_number_id: expect.stringMatching(/^verified_number_[0-9a-f]{24}$/),
      phone_number: '+61291234567',
      friendly_name: 'Sydney office',
      status: 'pending',
      status_reason: null,
      validation_code: expect.stringMatching(/^[0-9]{6}$/),
      vendor: 'mock',
      created_timestamp: expect.any(Number),
      last_refreshed_timestamp: created.body.created_timestamp,
    });
    const id = created.body.verified_number_id;
    const again = await ws.api.post('/create-verified-number', { body: { phone_number: '+61291234567' } });
    expect(again.body).toEqual({ status: 409, message: '+61291234567 is already a verified number in this workspace' });
    const refreshed = await ws.api.post(`/refresh-verified-number/${id}`);
    expect(refreshed.body).toMatchObject({ status: 'verified', validation_code: null });
    expect((await ws.api.get('/list-verified-numbers')).body).toEqual([refreshed.body]);
    expect((await ws.api.delete(`/delete-verified-number/${id}`)).status).toBe(204);
    expect((await ws.api.get('/list-verified-numbers')).body).toEqual([]);
    expect((await ws.api.delete(`/delete-verified-number/${id}`)).body).toEqual({ status: 404, message: `Verified number ${id} not found` });
  });

  it('refuses numbers that are not E.164 and IDs of the wrong kind', async () => {
    const ws = await app.newWorkspace();
    for (const phone_number of ['+1', '+999123456789', '+14155550123456789', 'phone', 14155550123]) {
      const res = await ws.api.post('/create-verified-number', { body: { phone_number } });
      expect(res.status, String(phone_number)).toBe(400);
      expect(res.body.message).toMatch(/^phone_number: /);
    }
    expect((await ws.api.get('/list-verified-numbers')).body).toEqual([]);
    const wrongKind = await ws.api.post('/refresh-verified-number/branded_caller_id_000000000000000000000000');
    expect(wrongKind.status).toBe(400);
    expect(wrongKind.body.message).toBe('id: Must be a verified number ID (verified_number_ followed by 24 hex characters)');
  });
});

describe('caller IDs across workspaces and scopes', () => {
  it("answers 404 for another workspace's records and leaves them alone", async () => {
    const owner = await approvedWorkspace();
    const other = await approvedWorkspace();
    const branded = (await owner.api.post('/create-branded-caller-id', { body: brandedBody() })).body;
    const verified = (await owner.api.post('/create-verified-number', { body: { phone_number: '+14155550123' } })).body;
    for (const [res, message] of [
      [await other.api.post(`/refresh-branded-caller-id/${branded.branded_caller_id}`), `Branded caller ID ${branded.branded_caller_id} not found`],
      [await other.api.delete(`/delete-branded-caller-id/${branded.branded_caller_id}`), `Branded caller ID ${branded.branded_caller_id} not found`],
      [await other.api.post(`/refresh-verified-number/${verified.verified_number_id}`), `Verified number ${verified.verified_number_id} not found`],
      [await other.api.delete(`/delete-verified-number/${verified.verified_number_id}`), `Verified number ${verified.verified_number_id} not found`],
    ] as const) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message });
    }
    expect((await other.api.get('/list-branded-caller-ids')).body).toEqual([]);
    expect((await other.api.get('/list-verified-numbers')).body).toEqual([]);
    expect((await owner.api.get('/list-branded-caller-ids')).body).toEqual([branded]);
    // The same number in another workspace is its own record.
    expect((await other.api.post('/create-branded-caller-id', { body: brandedBody() })).status).toBe(201);
  });

  it('needs the numbers scope', async () => {
    const scoped = app.api.withKey(await scopedKey(['agents', 'calls']));
    for (const res of [
      await scoped.post('/create-branded-caller-id', { body: brandedBody() }),
      await scoped.get('/list-branded-caller-ids'),
      await scoped.post('/refresh-branded-caller-id/branded_caller_id_000000000000000000000000'),
      await scoped.delete('/delete-branded-caller-id/branded_caller_id_000000000000000000000000'),
      await scoped.post('/create-verified-number', { body: { phone_number: '+14155550123' } }),
      await scoped.get('/list-verified-numbers'),
      await scoped.post('/refresh-verified-number/verified_number_000000000000000000000000'),
      await scoped.delete('/delete-verified-number/verified_number_000000000000000000000000'),
      await scoped.get('/telephony/operations'),
    ]) {
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "numbers" scope' });
    }
  });
});

describe('telephony operations', () => {
  it('answers the provider operation log newest first, limited, per workspace', async () => {
    const { recordProviderOperation } = await import('../../shared/vendors/telephony/operation-log.ts');
    const ws = await app.newWorkspace();
    const other = await app.newWorkspace();
    expect((await ws.api.get('/telephony/operations')).body).toEqual([]);
    for (let i = 0; i < 3; i++) {
      await recordProviderOperation(ws.workspace_id, { provider: 'mock', operation: `op${i}`, request: { i }, outcome: 'ok' }, 1_700_000_000_000 + i);
    }
    const all = await ws.api.get('/telephony/operations');
    expect(all.status).toBe(200);
    expect(all.body.map((o: { operation: string }) => o.operation)).toEqual(['op2', 'op1', 'op0']);
    expect(all.body[0]).toMatchObject({ provider: 'mock', request: { i: 2 }, outcome: 'ok', created_timestamp: 1_700_000_000_002 });
    expect((await ws.api.get('/telephony/operations?limit=2')).body.map((o: { operation: string }) => o.operation)).toEqual(['op2', 'op1']);
    expect((await other.api.get('/telephony/operations')).body).toEqual([]);
    const bad = await ws.api.get('/telephony/operations?limit=0');
    expect(bad.body).toEqual({ status: 400, message: 'limit: Must be at least 1' });
  });
});

describe('caller-ID vendor over HTTP (fake vendor on 127.0.0.1)', () => {
  interface Seen {
    method: string;
    url: string;
    authorization?: string;
    body: unknown;
  }

  /** A scripted vendor: answers by method and path prefix, records every request. */
  async function fakeVendor(answer: (req: Seen) => { status: number; body?: unknown }) {
    const { createServer } = await import('node:http');
    const seen: Seen[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const request: Seen = { method: req.method!, url: req.url!, authorization: req.headers.authorization, body: text ? JSON.parse(text) : undefined };
        seen.push(request);
        const { status, body } = answer(request);
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(resolve)) };
  }

  async function withVendor<T>(url: string, run: () => Promise<T>): Promise<T> {
    process.env.CALLER_ID_VENDOR_BASE_URL = url;
    process.env.CALLER_ID_VENDOR_API_KEY = 'vendor-key-123';
    try {
      return await run();
    } finally {
      delete process.env.CALLER_ID_VENDOR_BASE_URL;
      delete process.env.CALLER_ID_VENDOR_API_KEY;
    }
  }

  it('registers, refreshes and withdraws a branded caller ID through the vendor', async () => {
    let status = 'pending';
    const vendor = await fakeVendor((req) => {
      if (req.method === 'POST') return { status: 201, body: { id: 'bcid-42', status: 'pending' } };
      if (req.method === 'GET') return { status: 200, body: { id: 'bcid-42', status, status_reason: status === 'rejected' ? 'Logo unreadable' : null } };
      return { status: 204 };
    });
    try {
      const ws = await approvedWorkspace();
      await withVendor(vendor.url, async () => {
        const created = await ws.api.post('/create-branded-caller-id', { body: brandedBody() });
        expect(created.status).toBe(201);
        expect(created.body).toMatchObject({ status: 'pending', vendor: 'http' });
        expect(vendor.seen[0]).toEqual({
          method: 'POST',
          url: '/v1/branded-caller-ids',
          authorization: 'Bearer vendor-key-123',
          body: {
            phone_number: '+14155550123',
            display_name: 'Acme Support',
            call_reason: 'Your appointment',
            logo_url: 'https://acme.example/logo.png',
            business: { legal_name: 'Acme Telephony Pty Ltd', registration_number: 'ACN 123 456 789', country: 'AU' },
          },
        });
        const id = created.body.branded_caller_id;
        status = 'rejected';
        const refreshed = await ws.api.post(`/refresh-branded-caller-id/${id}`);
        expect(refreshed.body).toMatchObject({ status: 'rejected', status_reason: 'Logo unreadable' });
        expect(vendor.seen[1]).toMatchObject({ method: 'GET', url: '/v1/branded-caller-ids/bcid-42' });
        expect((await ws.api.delete(`/delete-branded-caller-id/${id}`)).status).toBe(204);
        expect(vendor.seen[2]).toMatchObject({ method: 'DELETE', url: '/v1/branded-caller-ids/bcid-42' });
        for (const res of [created, refreshed]) expect(res.text).not.toContain('vendor-key-123');
      });
    } finally {
      await vendor.close();
    }
  });

  it('maps vendor refusals to 400 and vendor failures to 502, writing nothing', async () => {
    const vendor = await fakeVendor((req) => {
      const phone = (req.body as { phone_number?: string } | undefined)?.phone_number;
      if (phone === '+14155550123') return { status: 422, body: { message: 'Number is not eligible for verification' } };
      if (phone === '+12025550143') return { status: 500, body: { message: 'internal trace abc' } };
      return { status: 200, body: { id: 'x', status: 'sideways' } };
    });
    try {
      const ws = await app.newWorkspace();
      await withVendor(vendor.url, async () => {
        const refused = await ws.api.post('/create-verified-number', { body: { phone_number: '+14155550123' } });
        expect(refused.body).toEqual({ status: 400, message: 'Caller ID vendor rejected the request: Number is not eligible for verification' });
        const failed = await ws.api.post('/create-verified-number', { body: { phone_number: '+12025550143' } });
        expect(failed.body).toEqual({ status: 502, message: 'Caller ID vendor http answered HTTP 500' });
        const odd = await ws.api.post('/create-verified-number', { body: { phone_number: '+61291234567' } });
        expect(odd.body).toEqual({ status: 502, message: 'Caller ID vendor http answered an unknown status "sideways"' });
      });
      expect((await ws.api.get('/list-verified-numbers')).body).toEqual([]);
    } finally {
      await vendor.close();
    }
    const ws = await app.newWorkspace();
    await withVendor(vendor.url, async () => {
      const unreachable = await ws.api.post('/create-verified-number', { body: { phone_number: '+14155550123' } });
      expect(unreachable.body).toEqual({ status: 502, message: 'Caller ID vendor http was unreachable (ECONNREFUSED)' });
    });
  });

  it('keeps using the vendor a record was made with', async () => {
    const vendor = await fakeVendor((req) =>
      req.method === 'GET' ? { status: 200, body: { id: 'vn-1', status: 'failed', status_reason: 'No answer' } } : { status: 201, body: { id: 'vn-1', status: 'pending', validation_code: '123456' } },
    );
    try {
      const ws = await app.newWorkspace();
      const created = await withVendor(vendor.url, () => ws.api.post('/create-verified-number', { body: { phone_number: '+14155550123' } }));
      expect(created.body).toMatchObject({ vendor: 'http', validation_code: '123456' });
      const id = created.body.verified_number_id;
      const unconfigured = await ws.api.post(`/refresh-verified-number/${id}`);
      expect(unconfigured.body).toEqual({ status: 502, message: 'Caller ID vendor http is not configured (CALLER_ID_VENDOR_BASE_URL)' });
      const refreshed = await withVendor(vendor.url, () => ws.api.post(`/refresh-verified-number/${id}`));
      expect(refreshed.body).toMatchObject({ status: 'failed', status_reason: 'No answer', validation_code: '123456' });
      const mockRecord = (await ws.api.post('/create-verified-number', { body: { phone_number: '+12025550143' } })).body;
      const mockRefresh = await withVendor(vendor.url, () => ws.api.post(`/refresh-verified-number/${mockRecord.verified_number_id}`));
      expect(mockRefresh.body).toMatchObject({ vendor: 'mock', status: 'verified' });
      expect(vendor.seen.filter((r) => r.url.includes(mockRecord.verified_number_id))).toEqual([]);
    } finally {
      await vendor.close();
    }
  });
});
