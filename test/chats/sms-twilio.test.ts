import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newChatAgent } from '../support/factories.ts';
import { startFakeTwilio } from '../support/fake-twilio.ts';
import { call } from '../support/http.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

/*
 * SMS through Twilio: the Messaging client against the fake Twilio API on 127.0.0.1, and
 * Twilio's inbound SMS webhook with its request signature (X-Twilio-Signature), on the
 * offline model. The signatures here are computed by Twilio's published algorithm, checked
 * first against Twilio's own documented vectors.
 */
const ACCOUNT_SID = 'AC' + '1'.repeat(30);
const AUTH_TOKEN = 'fake-sms-auth-token';
/** What Twilio signs: the public URL it was given, not the address the request reaches here. */
const PUBLIC = 'https://api.sms-test.example';
const twilio = await startFakeTwilio(ACCOUNT_SID, AUTH_TOKEN);
afterAll(() => twilio.close());

const app = await startTestApp({
  TWILIO_ACCOUNT_SID: ACCOUNT_SID,
  TWILIO_AUTH_TOKEN: AUTH_TOKEN,
  TWILIO_SIP_PASSWORD: 'Sip-Password-1234',
  TWILIO_BASE_URL: twilio.url,
  PUBLIC_BASE_URL: PUBLIC,
});
// Loaded after the settings above (config is read as the environment was when it loaded).
const background = (await import('../../local/background.ts')).startBackgroundWork();
afterAll(() => background.stop());
const { twilioSignature, verifyTwilioSignature } = await import('../../shared/vendors/messaging/index.ts');

const OFFLINE = (line: string) => `You said: "${line}". This is Parley's offline model; set LLM_BASE_URL for real answers.`;
const WEBHOOK = '/twilio/sms-webhook';
const STATUS = '/twilio/sms-status';
const messageSid = () => `SM${randomBytes(16).toString('hex')}`;

/** Posts a form to the webhook as Twilio does: signed over the URL and the parameters (or with the given signature). */
function deliver(params: Record<string, string>, signature?: string | null, path = WEBHOOK) {
  const form = new URLSearchParams(params);
  const signed = signature === undefined ? twilioSignature(AUTH_TOKEN, `${PUBLIC}${path}`, form) : signature;
  return call(app.url, 'POST', path, {
    rawBody: form.toString(),
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(signed !== null ? { 'x-twilio-signature': signed } : {}) },
  });
}

async function setup(options: { inbound?: boolean } = {}) {
  const ws = await app.newWorkspace();
  const { chatAgent: agent } = await newChatAgent(ws.api, { llm: { general_prompt: 'You book tables.', begin_message: 'Hi, want a table?' } });
  const number = freshNumber();
  const entry = [{ agent_id: agent.agent_id, weight: 1 }];
  const imported = await ws.api.post('/import-phone-number', {
    body: {
      phone_number: number,
      termination_uri: 'sip:trunk.example.com',
      outbound_sms_agents: entry,
      ...(options.inbound === false ? {} : { inbound_sms_agents: entry }),
    },
  });
  expect(imported.status).toBe(201);
  expect(imported.body).toMatchObject({ outbound_sms_agents: entry, inbound_sms_agents: options.inbound === false ? null : entry });
  return { ws, agent, number, client: retellClient(app.url, ws.api_key) };
}

const messagesTo = (to: string) => twilio.messages.filter((m) => m.to === to);

describe("Twilio's request signature", () => {
  it("matches Twilio's documented vectors", () => {
    const url = 'https://mycompany.com/myapp.php?foo=1&bar=2';
    const params = new URLSearchParams({ CallSid: 'CA1234567890ABCDE', Caller: '+14158675309', Digits: '1234', From: '+14158675309', To: '+18005551212' });
    expect(twilioSignature('12345', url, params)).toBe('RSOYDt4T1cUTdK1PDd93/VVr8B8=');
    expect(verifyTwilioSignature('12345', url, params, 'RSOYDt4T1cUTdK1PDd93/VVr8B8=')).toBe(true);
    expect(verifyTwilioSignature('12345', `${url}&x=1`, params, 'RSOYDt4T1cUTdK1PDd93/VVr8B8=')).toBe(false);
    expect(verifyTwilioSignature('12345', url, params, undefined)).toBe(false);
    const repeated = new URLSearchParams([['Sid', 'CA123'], ['SidAccount', 'AC123'], ['Digits', '5678'], ['Digits', '1234'], ['Digits', '1234']]);
    expect(twilioSignature('12345', url, repeated)).toBe('IK+Dwps556ElfBT0I3Rgjkr1wJU=');
  });
});

describe('inbound SMS through the Twilio webhook', () => {
  it('starts a chat with the inbound SMS agent, answers through Twilio, continues it, and handles a redelivery once', async () => {
    const { ws, agent, number } = await setup();
    const party = freshNumber();
    const sid = messageSid();
    const first = { MessageSid: sid, SmsSid: sid, AccountSid: ACCOUNT_SID, From: party, To: number, Body: 'A table tonight?', NumMedia: '0' };
    const res = await deliver(first);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/xml; charset=utf-8');
    expect(res.text).toBe('<?xml version="1.0" encoding="UTF-8"?><Response></Response>');
    expect(messagesTo(party)).toEqual([{ sid: expect.stringMatching(/^SM/), from: number, to: party, body: OFFLINE('A table tonight?') }]);

    const chats = (await ws.api.get('/list-sms-chats')).body;
    expect(chats).toEqual([
      expect.objectContaining({ agent_id: agent.agent_id, chat_type: 'sms_chat', direction: 'inbound', from_number: party, to_number: number, message_count: 2 }),
    ]);
    const chatId = chats[0].chat_id;

    // Twilio retries the same MessageSid: one message, one reply.
    expect((await deliver(first)).status).toBe(200);
    expect((await deliver(first)).status).toBe(200);
    expect(messagesTo(party)).toHaveLength(1);
    const received = (await ws.api.get('/telephony/operations')).body.filter((op: any) => op.operation === 'receive_sms');
    expect(received.map((op: any) => op.request)).toEqual([{ from: party, to: number, body: 'A table tonight?', message_sid: sid }]);
    expect((await ws.api.get(`/get-sms-chat/${chatId}`)).body.message_with_tool_calls.map((m: any) => [m.role, m.content])).toEqual([
      ['user', 'A table tonight?'],
      ['agent', OFFLINE('A table tonight?')],
    ]);

    // The next message continues the same chat.
    expect((await deliver({ ...first, MessageSid: messageSid(), SmsSid: '', Body: 'For two' })).status).toBe(200);
    expect(messagesTo(party).map((m) => m.body)).toEqual([OFFLINE('A table tonight?'), OFFLINE('For two')]);
    expect((await ws.api.get('/list-sms-chats')).body.map((c: any) => [c.chat_id, c.message_count])).toEqual([[chatId, 4]]);

    // Once that chat has ended, the party's next message starts a new one.
    expect((await ws.api.post(`/end-sms-chat/${chatId}`)).status).toBe(200);
    expect((await deliver({ ...first, MessageSid: messageSid(), Body: 'Hello again' })).status).toBe(200);
    const after = (await ws.api.get('/list-sms-chats')).body;
    expect(after.map((c: any) => c.chat_status)).toEqual(['ongoing', 'ended']);
    expect(after[0].chat_id).not.toBe(chatId);
    expect(messagesTo(party)).toHaveLength(3);
  });

  it('two first messages at once start one chat; the same message delivered twice at once is answered once', async () => {
    const { ws, number } = await setup();
    const party = freshNumber();
    const a = { MessageSid: messageSid(), From: party, To: number, Body: 'first' };
    const b = { MessageSid: messageSid(), From: party, To: number, Body: 'second' };
    const results = await Promise.all([deliver(a), deliver(b), deliver(a), deliver(b)]);
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    const chats = (await ws.api.get('/list-sms-chats')).body;
    expect(chats).toHaveLength(1);
    const messages = (await ws.api.get(`/get-sms-chat/${chats[0].chat_id}`)).body.message_with_tool_calls;
    expect(messages.map((m: any) => m.role)).toEqual(['user', 'agent', 'user', 'agent']);
    expect(messages.filter((m: any) => m.role === 'user').map((m: any) => m.content).sort()).toEqual(['first', 'second']);
    expect(messagesTo(party)).toHaveLength(2);
  });

  it('refuses a forged, missing or misplaced X-Twilio-Signature with 403 and writes nothing', async () => {
    const { ws, number } = await setup();
    const party = freshNumber();
    const params = { MessageSid: messageSid(), From: party, To: number, Body: 'hi' };
    const forged = twilioSignature('not-the-token', `${PUBLIC}${WEBHOOK}`, new URLSearchParams(params));
    const otherUrl = twilioSignature(AUTH_TOKEN, `${PUBLIC}/elsewhere`, new URLSearchParams(params));
    // Signed for the address the request reached rather than the public URL Twilio was given.
    const localUrl = twilioSignature(AUTH_TOKEN, `${app.url}${WEBHOOK}`, new URLSearchParams(params));
    const tampered = twilioSignature(AUTH_TOKEN, `${PUBLIC}${WEBHOOK}`, new URLSearchParams({ ...params, Body: 'other' }));
    for (const signature of [forged, otherUrl, localUrl, tampered, null, '']) {
      expect((await deliver(params, signature)).body).toEqual({ status: 403, message: 'Invalid X-Twilio-Signature' });
    }
    expect((await ws.api.get('/list-sms-chats')).body).toEqual([]);
    expect(messagesTo(party)).toEqual([]);
  });

  it('answers 404 for a number no workspace holds, 400 without a MessageSid, and nothing for a number without an inbound SMS agent', async () => {
    const unknown = freshNumber();
    expect((await deliver({ MessageSid: messageSid(), From: freshNumber(), To: unknown, Body: 'hi' })).body).toEqual({
      status: 404,
      message: `Phone number ${unknown} not found`,
    });
    const { ws, number } = await setup({ inbound: false });
    expect((await deliver({ From: freshNumber(), To: number, Body: 'hi' })).body).toEqual({ status: 400, message: 'MessageSid and From are required' });
    const party = freshNumber();
    const res = await deliver({ MessageSid: messageSid(), From: party, To: number, Body: 'hi' });
    expect(res.status).toBe(200);
    expect((await ws.api.get('/list-sms-chats')).body).toEqual([]);
    expect(messagesTo(party)).toEqual([]);
  });
});

describe("Twilio's delivery reports (StatusCallback)", () => {
  it('are verified and kept in the sending workspace\'s operation log', async () => {
    const { ws, number } = await setup();
    const to = freshNumber();
    const sent = (await ws.api.post('/send-sms', { body: { from_number: number, to_number: to, content: 'x' } })).body;
    const report = { MessageSid: sent.provider_message_id, MessageStatus: 'undelivered', ErrorCode: '30003', From: number, To: to, AccountSid: ACCOUNT_SID };
    expect((await deliver(report, 'forged', STATUS)).body).toEqual({ status: 403, message: 'Invalid X-Twilio-Signature' });
    // A report signed for the inbound webhook's URL is not one for this URL.
    expect((await deliver(report, twilioSignature(AUTH_TOKEN, `${PUBLIC}${WEBHOOK}`, new URLSearchParams(report)), STATUS)).status).toBe(403);
    const res = await deliver(report, undefined, STATUS);
    expect(res.status).toBe(204);
    const statuses = (await ws.api.get('/telephony/operations')).body.filter((op: any) => op.operation === 'sms_status');
    expect(statuses.map((op: any) => [op.provider, op.request])).toEqual([
      ['twilio', { message_sid: sent.provider_message_id, status: 'undelivered', from: number, to, error_code: '30003' }],
    ]);
    const unknown = freshNumber();
    expect((await deliver({ ...report, From: unknown }, undefined, STATUS)).body).toEqual({ status: 404, message: `Phone number ${unknown} not found` });
    expect((await deliver({ MessageSid: 'SM1', From: number }, undefined, STATUS)).body).toEqual({
      status: 400,
      message: 'MessageSid and MessageStatus are required',
    });
  });
});

describe('delivery status on the chat\'s messages', () => {
  const statusReport = (sid: string, from: string, to: string, status: string, extra: Record<string, string> = {}) =>
    deliver({ MessageSid: sid, SmsSid: sid, MessageStatus: status, From: from, To: to, AccountSid: ACCOUNT_SID, ...extra }, undefined, STATUS);

  it('moves queued → sent → delivered from signed reports, never backwards, and refuses a forged one', async () => {
    const { ws, number, client } = await setup();
    const to = freshNumber();
    const chat: any = await client.chat.createSMSChat({ from_number: number, to_number: to });
    const opening = messagesTo(to)[0]!;
    const statusOf = async () => {
      const page = await ws.api.get(`/list-sms-messages?chat_id=${chat.chat_id}`);
      expect(page.status).toBe(200);
      const [message] = page.body.items;
      return [message.provider, message.provider_message_id, message.sms_status, message.sms_error_code];
    };
    expect(await statusOf()).toEqual(['twilio', opening.sid, 'queued', undefined]);

    // A forged report changes nothing.
    const forged = await deliver({ MessageSid: opening.sid, MessageStatus: 'failed', From: number, To: to }, 'forged', STATUS);
    expect(forged.body).toEqual({ status: 403, message: 'Invalid X-Twilio-Signature' });
    expect(await statusOf()).toEqual(['twilio', opening.sid, 'queued', undefined]);

    expect((await statusReport(opening.sid, number, to, 'sent')).status).toBe(204);
    expect(await statusOf()).toEqual(['twilio', opening.sid, 'sent', undefined]);
    expect((await statusReport(opening.sid, number, to, 'delivered')).status).toBe(204);
    expect(await statusOf()).toEqual(['twilio', opening.sid, 'delivered', undefined]);
    // Out of order (a late `sent`, a repeated `queued`) or another final status: ignored, still 204 (Twilio must not retry).
    for (const late of ['sent', 'queued', 'undelivered']) {
      expect((await statusReport(opening.sid, number, to, late, { ErrorCode: '30003' })).status).toBe(204);
    }
    expect(await statusOf()).toEqual(['twilio', opening.sid, 'delivered', undefined]);
    // Each report is still logged.
    const logged = (await ws.api.get('/telephony/operations')).body.filter((op: any) => op.operation === 'sms_status');
    expect(logged.map((op: any) => op.request.status).reverse()).toEqual(['sent', 'delivered', 'sent', 'queued', 'undelivered']);

    // A failure carries Twilio's error code.
    const reply = await ws.api.post(`/sms-chats/${chat.chat_id}/simulate-inbound`, { body: { content: 'Yes' } });
    expect(reply.status).toBe(200);
    const replySid = messagesTo(to)[1]!.sid;
    expect((await statusReport(replySid, number, to, 'failed', { ErrorCode: '30007' })).status).toBe(204);
    expect(await statusOf()).toEqual(['twilio', replySid, 'failed', '30007']);
  });

  it('a report that arrives before Twilio has answered the send is kept and lands on the message', async () => {
    const { ws, number, client } = await setup();
    const to = freshNumber();
    twilio.beforeMessageAnswer = async (message) => {
      twilio.beforeMessageAnswer = undefined;
      expect((await statusReport(message.sid, message.from, message.to, 'sent')).status).toBe(204);
    };
    const chat: any = await client.chat.createSMSChat({ from_number: number, to_number: to });
    expect(twilio.beforeMessageAnswer).toBeUndefined();
    const [message] = (await ws.api.get(`/list-sms-messages?chat_id=${chat.chat_id}`)).body.items;
    expect(message).toMatchObject({ provider: 'twilio', provider_message_id: messagesTo(to)[0]!.sid, sms_status: 'sent' });
  });

  it('a reply Twilio failed to take is sent once more; one it refused is not', async () => {
    const { ws, number, client } = await setup();
    const to = freshNumber();
    const chat: any = await client.chat.createSMSChat({ from_number: number, to_number: to });
    twilio.failNext('POST', /Messages\.json$/, 503);
    const reply = await ws.api.post(`/sms-chats/${chat.chat_id}/simulate-inbound`, { body: { content: 'Two at eight' } });
    expect(reply.status).toBe(200);
    expect(messagesTo(to).map((m) => m.body)).toEqual(['Hi, want a table?', OFFLINE('Two at eight')]);
    const [latest] = (await ws.api.get(`/list-sms-messages?chat_id=${chat.chat_id}`)).body.items;
    expect(latest).toMatchObject({ provider_message_id: messagesTo(to)[1]!.sid, sms_status: 'queued' });

    twilio.failNext('POST', /Messages\.json$/, 400, { code: 21610, message: 'Attempt to send to unsubscribed recipient', status: 400 });
    const refused = await ws.api.post(`/sms-chats/${chat.chat_id}/simulate-inbound`, { body: { content: 'Stop' } });
    expect(refused.body).toEqual({ status: 422, message: `Twilio refused the SMS to ${to}: HTTP 400 (Twilio error 21610)` });
    expect(messagesTo(to)).toHaveLength(2);
    const ops = (await ws.api.get('/telephony/operations')).body.filter((op: any) => op.operation === 'send_sms');
    expect(ops.map((op: any) => [op.outcome, op.error ?? null])).toEqual([
      ['error', 'HTTP 400 (Twilio error 21610)'],
      ['ok', null],
      ['error', 'HTTP 503 (Twilio error 20500)'],
      ['ok', null],
    ]);
    // The refused reply was stored (the turn ran) but has no carrier fields.
    const [unsent] = (await ws.api.get(`/list-sms-messages?chat_id=${chat.chat_id}`)).body.items;
    expect(unsent).toMatchObject({ role: 'agent', content: OFFLINE('Stop') });
    expect(unsent.sms_status).toBeUndefined();
  });
});

describe('outbound SMS through Twilio Messaging', () => {
  it('create-sms-chat and send-sms post to Messages.json with the account credentials, logged as twilio operations', async () => {
    const { ws, number, client } = await setup();
    const to = freshNumber();
    const start = twilio.requests.length;
    const chat: any = await client.chat.createSMSChat({ from_number: number, to_number: to });
    const sent = await ws.api.post('/send-sms', { body: { from_number: number, to_number: to, content: 'See you at 8' } });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ provider: 'twilio', provider_message_id: expect.stringMatching(/^SM[0-9a-f]{32}$/), status: 'queued' });
    const requests = twilio.requests.slice(start);
    const callback = `${PUBLIC}${STATUS}`;
    expect(requests.map((r) => [r.method, r.path, r.form])).toEqual([
      ['POST', `/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`, { From: number, To: to, Body: 'Hi, want a table?', StatusCallback: callback }],
      ['POST', `/2010-04-01/Accounts/${ACCOUNT_SID}/Messages.json`, { From: number, To: to, Body: 'See you at 8', StatusCallback: callback }],
    ]);
    expect(requests[0]!.authorization).toBe(`Basic ${Buffer.from(`${ACCOUNT_SID}:${AUTH_TOKEN}`).toString('base64')}`);
    const ops = (await ws.api.get('/telephony/operations')).body.filter((op: any) => op.operation === 'send_sms');
    expect(ops.map((op: any) => [op.provider, op.outcome, op.request.body, op.request.chat_id])).toEqual([
      ['twilio', 'ok', 'See you at 8', undefined],
      ['twilio', 'ok', 'Hi, want a table?', chat.chat_id],
    ]);
  });

  it('maps Twilio refusing a message to 422 and a Twilio failure to 502; a refused opening marks the chat error', async () => {
    const { ws, number, client } = await setup();
    const to = freshNumber();
    twilio.failNext('POST', /Messages\.json$/, 400, { code: 21610, message: 'Attempt to send to unsubscribed recipient', status: 400 });
    expect((await ws.api.post('/send-sms', { body: { from_number: number, to_number: to, content: 'x' } })).body).toEqual({
      status: 422,
      message: `Twilio refused the SMS to ${to}: HTTP 400 (Twilio error 21610)`,
    });
    twilio.failNext('POST', /Messages\.json$/, 500);
    expect((await ws.api.post('/send-sms', { body: { from_number: number, to_number: to, content: 'x' } })).body).toEqual({
      status: 502,
      message: 'Twilio send SMS failed: HTTP 500 (Twilio error 20500)',
    });
    twilio.failNext('POST', /Messages\.json$/, 400, { code: 21610, message: 'Attempt to send to unsubscribed recipient', status: 400 });
    expect(await sdkFailure(client.chat.createSMSChat({ from_number: number, to_number: to }))).toEqual({
      status: 422,
      body: { status: 422, message: `Twilio refused the SMS to ${to}: HTTP 400 (Twilio error 21610)` },
    });
    expect((await ws.api.get('/list-sms-chats')).body.map((c: any) => c.chat_status)).toEqual(['error']);
    // It ended (no chat_ended: it never opened): the analytics rollups count it, as an error chat.
    // Imported here: the settings are applied by startTestApp before anything reads them.
    const { readCells } = await import('../../shared/analytics/rollups/index.ts');
    const now = Date.now();
    const cells = await readCells({ workspaceId: ws.workspace_id, table: 'chats', level: 'day', view: ['chat_status'], start: now - 86_400_000, end: now + 86_400_000 });
    expect(cells.map((cell) => [cell.values, cell.totals.count])).toEqual([[['error'], 1]]);
    const ops = (await ws.api.get('/telephony/operations')).body.filter((op: any) => op.operation === 'send_sms');
    expect(ops.map((op: any) => [op.outcome, op.error])).toEqual([
      ['error', 'HTTP 400 (Twilio error 21610)'],
      ['error', 'HTTP 500 (Twilio error 20500)'],
      ['error', 'HTTP 400 (Twilio error 21610)'],
    ]);
  });
});
