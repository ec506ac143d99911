import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { findPii, luhnValid, redactPii } from '../../shared/platform/text/pii.ts';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody, freshNumber, newAgent, newAgentWithNumber } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const CARD = '4111 1111 1111 1111';
const SAYS = [`My card is ${CARD} and my SSN is 123-45-6789.`, 'Email me at ada.lovelace@example.com or call (415) 555-0142.'];

async function scrubbedSetup(agentFields: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const { agent } = await newAgent(ws.api, { agent: agentFields });
  const number = freshNumber();
  expect(
    (await ws.api.post('/import-phone-number', {
      body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
    })).status,
  ).toBe(201);
  const created = await ws.api.post('/v2/create-phone-call', {
    body: {
      from_number: number,
      to_number: '+14155555555',
      retell_llm_dynamic_variables: { customer_email: 'ada.lovelace@example.com', plan: 'gold' },
      metadata: { sandbox_call_ms: 2500, sandbox_user_says: SAYS },
    },
  });
  expect(created.status).toBe(201);
  const call = await eventually(
    async () => (await ws.api.get(`/v2/get-call/${created.body.call_id}`)).body,
    (c) => c.call_status === 'ended' && c.call_analysis !== undefined,
    30_000,
  );
  return { ws, call };
}

describe('PII detection', () => {
  it('finds Luhn-valid cards, SSNs, emails and phone numbers, and nothing else', () => {
    expect(luhnValid('4111111111111111')).toBe(true);
    expect(luhnValid('4111111111111112')).toBe(false);
    expect(redactPii(SAYS[0]!)).toBe('My card is [credit_card] and my SSN is [ssn].');
    expect(redactPii(SAYS[1]!)).toBe('Email me at [email] or call [phone_number].');
    // 16 digits failing Luhn are not a card (they read as nothing: too long for a phone).
    expect(redactPii('order 4111 1111 1111 1112 ok')).toBe('order 4111 1111 1111 1112 ok');
    expect(findPii('ID A12345678 and room 12', ['phone_number'])).toEqual([]);
    expect(redactPii('card 4111111111111111, mail a@b.co', ['email'])).toBe('card 4111111111111111, mail [email]');
  });
});

describe('remove-call-sensitive-data', () => {
  it('scrubs transcripts, variables and the recording; only admin sees the unscrubbed copy', async () => {
    const { ws, call } = await scrubbedSetup();
    const before = await fetch((await ws.api.get(`/get-call-recording-url/${call.call_id}`)).body.recording_url);
    const originalWav = Buffer.from(await before.arrayBuffer());

    const scrubbed = await ws.api.post(`/v2/remove-call-sensitive-data/${call.call_id}`);
    expect(scrubbed.status).toBe(200);
    // metadata is the caller's own storage (here it holds the sandbox's script): never scrubbed.
    expect(scrubbed.body.metadata.sandbox_user_says).toEqual(SAYS);
    // The fields scrubbing rewrites (scrubbing.ts): the whole call's JSON would also hold URLs
    // whose random port may contain a secret's digits (41117).
    const scrubbedFields = ['transcript', 'transcript_object', 'transcript_with_tool_calls', 'retell_llm_dynamic_variables', 'call_analysis'] as const;
    for (const field of scrubbedFields) expect(scrubbed.body[field], field).toBeDefined();
    const text = JSON.stringify(Object.fromEntries(scrubbedFields.map((field) => [field, scrubbed.body[field]])));
    for (const secret of ['4111', '123-45-6789', 'ada.lovelace@example.com', '555-0142']) expect(text).not.toContain(secret);
    expect(scrubbed.body.transcript).toContain('User: My card is [credit_card] and my SSN is [ssn].');
    expect(scrubbed.body.transcript_object[1].content).toBe('My card is [credit_card] and my SSN is [ssn].');
    expect(scrubbed.body.transcript_object[3].content).toBe('Email me at [email] or call [phone_number].');
    expect(scrubbed.body.retell_llm_dynamic_variables).toEqual({ customer_email: '[email]', plan: 'gold' });
    // get-call answers the scrubbed call from now on.
    expect((await ws.api.get(`/v2/get-call/${call.call_id}`)).body.transcript).toBe(scrubbed.body.transcript);

    // The recording: the scrubbed turns are silent now, the others unchanged.
    const after = await ws.api.get(`/get-call-recording-url/${call.call_id}`);
    expect(after.body.scrubbed).toBe(true);
    const scrubbedWav = Buffer.from(await (await fetch(after.body.recording_url)).arrayBuffer());
    expect(scrubbedWav.length).toBe(originalWav.length);
    expect(scrubbedWav.equals(originalWav)).toBe(false);
    const loud = (wav: Buffer) => Array.from({ length: (wav.length - 44) / 2 }, (_, i) => wav.readInt16LE(44 + i * 2)).filter((s) => Math.abs(s) > 1000).length;
    expect(loud(scrubbedWav)).toBeGreaterThan(0);
    expect(loud(scrubbedWav)).toBeLessThan(loud(originalWav));

    // The default key has full access (admin): it sees the original, and the untouched recording.
    const unscrubbed = await ws.api.get(`/v2/get-call-unscrubbed/${call.call_id}`);
    expect(unscrubbed.status).toBe(200);
    expect(unscrubbed.body.transcript_object[1].content).toBe(SAYS[0]);
    expect(unscrubbed.body.retell_llm_dynamic_variables).toEqual({ customer_email: 'ada.lovelace@example.com', plan: 'gold' });
    const untouched = Buffer.from(await (await fetch(unscrubbed.body.recording_url)).arrayBuffer());
    expect(untouched.equals(originalWav)).toBe(true);

    // A key with the calls scope (not admin) may scrub but not read the copy.
    const callsKey = await ws.api.post('/api-keys', { body: apiKeyBody({ scopes: ['calls'] }) });
    expect(callsKey.status).toBe(201);
    const refused = await ws.api.withKey(callsKey.body.api_key).get(`/v2/get-call-unscrubbed/${call.call_id}`);
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ status: 403, message: 'This API key lacks the "admin" scope' });
    const adminKey = await ws.api.post('/api-keys', { body: apiKeyBody({ scopes: ['admin'] }) });
    expect((await ws.api.withKey(adminKey.body.api_key).get(`/v2/get-call-unscrubbed/${call.call_id}`)).status).toBe(200);

    // Idempotent: scrubbing again changes nothing and keeps the original copy.
    const again = await ws.api.withKey(callsKey.body.api_key).post(`/v2/remove-call-sensitive-data/${call.call_id}`);
    expect(again.status).toBe(200);
    expect(again.body.transcript).toBe(scrubbed.body.transcript);
    expect((await ws.api.get(`/v2/get-call-unscrubbed/${call.call_id}`)).body.transcript_object[1].content).toBe(SAYS[0]);

    // Another workspace's call is 404 on both routes.
    const other = await app.newWorkspace();
    expect((await other.api.post(`/v2/remove-call-sensitive-data/${call.call_id}`)).body).toEqual({ status: 404, message: 'Call not found' });
    expect((await other.api.get(`/v2/get-call-unscrubbed/${call.call_id}`)).status).toBe(404);
  });

  it('follows pii_config (only the named categories) and keeps no copy under everything_except_pii', async () => {
    const { ws, call } = await scrubbedSetup({ pii_config: { mode: 'post_call', categories: ['email'] }, data_storage_setting: 'everything_except_pii' });
    const scrubbed = await ws.api.post(`/v2/remove-call-sensitive-data/${call.call_id}`);
    expect(scrubbed.status).toBe(200);
    expect(scrubbed.body.transcript_object[1].content).toBe(SAYS[0]);
    expect(scrubbed.body.transcript_object[3].content).toBe('Email me at [email] or call (415) 555-0142.');
    const copy = await ws.api.get(`/v2/get-call-unscrubbed/${call.call_id}`);
    expect(copy.status).toBe(404);
    expect(copy.body).toEqual({ status: 404, message: `No unscrubbed copy of call ${call.call_id} is kept: its data storage setting is everything_except_pii` });
  });

  it('an ongoing call is refused with 400', async () => {
    const ws = await app.newWorkspace();
    const { number } = await newAgentWithNumber(ws.api);
    const created = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: '+14155555555', metadata: { sandbox_call_ms: 60_000 } } });
    await eventually(async () => (await ws.api.get(`/v2/get-call/${created.body.call_id}`)).body, (c) => c.call_status === 'ongoing');
    const refused = await ws.api.post(`/v2/remove-call-sensitive-data/${created.body.call_id}`);
    expect(refused.status).toBe(400);
    expect(refused.body).toEqual({ status: 400, message: 'Sensitive data can only be removed from a call that has ended; this call is ongoing' });
    await ws.api.post(`/v2/stop-call/${created.body.call_id}`);
  });
});
