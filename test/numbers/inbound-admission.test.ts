import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { admitInboundInvite, DIGEST_NONCE_TTL_SECONDS, parseDigest, type InboundDecision } from '../../shared/numbers/inbound-admission.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber } from '../support/factories.ts';
import type { ApiClient } from '../support/http.ts';

const app = await startTestApp();

/*
 * Termination URIs name public addresses (52.10.0.x): a documentation range is refused as a
 * destination when the number is saved. No packet is sent to any of them; the INVITEs'
 * source addresses are only compared.
 */
async function importNumber(api: ApiClient, body: Record<string, unknown>): Promise<string> {
  const phone_number = freshNumber();
  const res = await api.post('/import-phone-number', { body: { phone_number, ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return phone_number;
}

const resolve = async (host: string) => (host === 'trunk.example.com' ? ['203.0.113.7', '2001:db8::7'] : []);
const invite = (calledNumber: string, sourceIp: string, authorization?: string) =>
  admitInboundInvite({ calledNumber, sourceIp, authorization }, { resolve });

function sha256(text: string) {
  return createHash('sha256').update(text).digest('hex');
}

/** What a trunk answers to a challenge: RFC 7616 SHA-256 with qop=auth. */
function answer(decision: InboundDecision, username: string, password: string, calledNumber: string): string {
  if (decision.admitted || decision.status !== 407) throw new Error(`expected a challenge, got ${JSON.stringify(decision)}`);
  const challenge = parseDigest(decision.challenge)!;
  const uri = `sip:${calledNumber}@sip.parley.test`;
  const ha1 = sha256(`${username}:${challenge.realm}:${password}`);
  const ha2 = sha256(`INVITE:${uri}`);
  const response = sha256(`${ha1}:${challenge.nonce}:00000001:0a4f113b:auth:${ha2}`);
  return `Digest username="${username}", realm="${challenge.realm}", nonce="${challenge.nonce}", uri="${uri}", response="${response}", algorithm=SHA-256, qop=auth, nc=00000001, cnonce="0a4f113b"`;
}

describe('inbound INVITEs to an imported number', () => {
  it('are admitted from the addresses its termination URI names or resolves to, and refused from elsewhere', async () => {
    const literal = await importNumber(app.api, { termination_uri: 'sip:52.10.0.20:5060' });
    expect(await invite(literal, '52.10.0.20')).toMatchObject({ admitted: true, by: 'address', workspaceId: app.workspace.workspace_id });
    expect(await invite(literal, '52.10.0.21')).toEqual({ admitted: false, status: 403, reason: `52.10.0.21 is not an inbound address of ${literal}` });

    const named = await importNumber(app.api, { termination_uri: 'trunk.example.com' });
    expect(await invite(named, '203.0.113.7')).toMatchObject({ admitted: true, by: 'address' });
    expect(await invite(named, '2001:db8::7')).toMatchObject({ admitted: true, by: 'address' });
    expect(await invite(named, '::ffff:203.0.113.7')).toMatchObject({ admitted: true, by: 'address' });
    expect(await invite(named, '203.0.113.8')).toMatchObject({ admitted: false, status: 403 });
  });

  it('take a carrier number from its signalling blocks and an explicit list over every default', async () => {
    const twilio = await importNumber(app.api, { termination_uri: 'acme.pstn.twilio.com' });
    expect(await invite(twilio, '54.172.60.2')).toMatchObject({ admitted: true, by: 'address' });
    expect(await invite(twilio, '203.0.113.7')).toMatchObject({ admitted: false, status: 403 });

    const listed = await importNumber(app.api, { termination_uri: 'trunk.example.com', allowed_inbound_addresses: ['192.0.2.0/24'] });
    expect(await invite(listed, '192.0.2.200')).toMatchObject({ admitted: true });
    expect(await invite(listed, '203.0.113.7')).toMatchObject({ admitted: false, status: 403 });
    expect((await app.api.get(`/get-phone-number/${listed}`)).body).toMatchObject({
      effective_inbound_addresses: ['192.0.2.0/24'],
      inbound_address_source: 'allowed_inbound_addresses',
    });
    expect((await app.api.get(`/get-phone-number/${twilio}`)).body.inbound_address_source).toBe('carrier_signalling');
  });

  it('never reach a squatter: calls from the real owner’s carrier are refused for a number imported onto another trunk', async () => {
    // The owner's carrier sends from 203.0.113.7 (trunk.example.com); the squatter imports
    // the owner's number pointing at a trunk of its own.
    const squatter = await app.newWorkspace();
    const stolen = await importNumber(squatter.api, { termination_uri: 'sip:52.10.0.99', sip_trunk_auth_username: 'squat', sip_trunk_auth_password: 'squat-pass' });
    const decision = await invite(stolen, '203.0.113.7');
    expect(decision).toMatchObject({ admitted: false, status: 407, reason: 'Credentials required' });
    // The owner's carrier cannot answer with the squatter's password; a guess fails.
    expect(await invite(stolen, '203.0.113.7', answer(decision, 'squat', 'guess', stolen))).toMatchObject({ admitted: false, status: 407 });
  });

  it('are admitted from anywhere with the trunk credentials, once per nonce', async () => {
    const number = await importNumber(app.api, { termination_uri: 'sip:52.10.0.30', sip_trunk_auth_username: 'alice', sip_trunk_auth_password: 's3cret-pass' });
    const challenged = await invite(number, '203.0.113.50');
    expect(challenged).toMatchObject({ admitted: false, status: 407 });
    const authorization = answer(challenged, 'alice', 's3cret-pass', number);

    expect(await invite(number, '203.0.113.50', authorization)).toMatchObject({ admitted: true, by: 'credentials' });
    // The same answer replayed finds its nonce spent.
    expect(await invite(number, '203.0.113.50', authorization)).toMatchObject({ admitted: false, status: 407, reason: 'The credentials or the nonce were not valid' });
    // Wrong password, wrong user, and a nonce issued for another number are refused.
    expect(await invite(number, '203.0.113.50', answer(await invite(number, '203.0.113.50'), 'alice', 'wrong', number))).toMatchObject({ admitted: false });
    expect(await invite(number, '203.0.113.50', answer(await invite(number, '203.0.113.50'), 'mallory', 's3cret-pass', number))).toMatchObject({ admitted: false });
    const other = await importNumber(app.api, { termination_uri: 'sip:52.10.0.31', sip_trunk_auth_username: 'alice', sip_trunk_auth_password: 's3cret-pass' });
    const foreignNonce = answer(await invite(other, '203.0.113.50'), 'alice', 's3cret-pass', number);
    expect(await invite(number, '203.0.113.50', foreignNonce)).toMatchObject({ admitted: false });
  });

  it('refuse an answer to an expired nonce', async () => {
    const number = await importNumber(app.api, { termination_uri: 'sip:52.10.0.40', sip_trunk_auth_username: 'bob', sip_trunk_auth_password: 'b0b-pass' });
    const issuedAt = Date.now();
    const challenged = await admitInboundInvite({ calledNumber: number, sourceIp: '203.0.113.60' }, { resolve, nowMs: issuedAt });
    const authorization = answer(challenged, 'bob', 'b0b-pass', number);
    const late = await admitInboundInvite(
      { calledNumber: number, sourceIp: '203.0.113.60', authorization },
      { resolve, nowMs: issuedAt + (DIGEST_NONCE_TTL_SECONDS + 2) * 1000 },
    );
    expect(late).toMatchObject({ admitted: false, status: 407 });
  });

  it('answer 404 for a number nobody imported', async () => {
    expect(await invite('+14155550000', '203.0.113.7')).toEqual({ admitted: false, status: 404, reason: '+14155550000 is not a number here' });
  });

  it('parse digest headers strictly: a duplicated field or an unterminated quote is no answer', () => {
    expect(parseDigest('Digest username="a", realm="r", nonce="n", response="x"')).toEqual({ username: 'a', realm: 'r', nonce: 'n', response: 'x' });
    expect(parseDigest('Digest username="a", username="b"')).toBeUndefined();
    expect(parseDigest('Digest username="a')).toBeUndefined();
    expect(parseDigest('Basic YWxhZGRpbjpvcGVuc2VzYW1l')).toBeUndefined();
  });
});
