import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { signedWebhook, startLiveKitTestApp } from '../support/fake-livekit.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { call as request } from '../support/http.ts';
import { eventually } from '../support/webhook-receiver.ts';

// The SIP trace of LiveKit calls, built from what LiveKit reported about the SIP participant
// (docs/calls.md, SIP trace and pcap). The media server is the fake LiveKit: it starts first.
const { livekit, app } = await startLiveKitTestApp();
// Loaded after the app: settings are read once, on the first import of shared code.
const { mergeSipLeg, SIP_LEG_MAX_TRANSITIONS } = await import('../../shared/calls/artifacts/sip-leg.ts');

const ws = await app.newWorkspace();
const { number } = await newAgentWithNumber(ws.api);

async function livekitEvent(event: Record<string, unknown>) {
  const signed = await signedWebhook(event);
  const res = await request(app.url, 'POST', '/livekit/webhook', {
    rawBody: signed.body,
    headers: { 'content-type': 'application/json', authorization: signed.authorization },
  });
  expect(res.status).toBe(200);
  return res.body;
}

/** LiveKit's webhook about the dialled callee (its SIP participant), with its `sip.*` attributes. */
const calleeEvent = (id: string, event: string, callId: string, to: string, callStatus: string, extra: Record<string, unknown> = {}) => ({
  id,
  event,
  room: { name: callId },
  participant: {
    identity: 'callee',
    sid: `PA_${callId.slice(-6)}`,
    kind: 'SIP',
    attributes: {
      'sip.callID': `SCL_${callId.slice(-8)}`,
      'sip.callIDFull': `${callId.slice(-12)}-carrier@trunk.example.com`,
      'sip.callStatus': callStatus,
      'sip.phoneNumber': to,
      'sip.trunkPhoneNumber': number,
      'sip.hostname': 'trunk.example.com',
      'sip.trunkID': 'ST_outbound1',
    },
    ...extra,
  },
});

/** Places a phone call and waits until its dial reached LiveKit (CreateSIPParticipant). */
async function placeCall(to: string) {
  const created = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: to } });
  expect(created.status).toBe(201);
  const callId: string = created.body.call_id;
  await eventually(
    async () => livekit.calls('SIP/CreateSIPParticipant').filter((req) => req.body.roomName === callId).length,
    (count) => count === 1,
    30_000,
  );
  return callId;
}

/** Places a phone call whose CreateSIPParticipant request LiveKit holds until released (its answer then comes after the webhooks sent meanwhile). */
async function heldDial(to: string) {
  const release = livekit.hold('SIP/CreateSIPParticipant');
  return { callId: await placeCall(to), release };
}

const getCall = async (callId: string) => (await ws.api.get(`/v2/get-call/${callId}`)).body;
const pcapOf = async (callId: string, apiKey = ws.api_key) =>
  fetch(`${app.url}/get-call-pcap/${callId}`, { headers: { authorization: `Bearer ${apiKey}` } });
const tsharkFields = (bytes: Buffer, name: string) => {
  const file = join(tmpdir(), `${name}.pcap`);
  writeFileSync(file, bytes);
  const out = execFileSync('tshark', ['-r', file, '-Y', 'sip', '-T', 'fields', '-e', 'sip.Method', '-e', 'sip.Status-Code', '-e', 'sip.Call-ID'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return out.trim().split('\n').map((line) => line.split('\t').map((field) => field.trim()).filter(Boolean));
};
const hasTshark = (() => {
  try {
    execFileSync('tshark', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('the SIP trace of a LiveKit phone call', () => {
  afterEach(() => livekit.ringDials(false));

  it('dialing → ringing → active → hangup: the participant\'s Call-ID, numbers, carrier host and times; redeliveries add nothing', async () => {
    const to = '+14155550161';
    // The callee rings until the test answers (the agent worker's callee_answered report).
    livekit.ringDials();
    const callId = await placeCall(to);
    const joined = calleeEvent(`EV_join_${callId}`, 'participant_joined', callId, to, 'dialing');
    // A dialled callee is in the room while it rings: not live yet.
    expect(await livekitEvent(joined)).toEqual({ applied: 'ignored: not answered yet' });
    expect(await livekitEvent(calleeEvent(`EV_track_${callId}`, 'track_published', callId, to, 'ringing'))).toEqual({ applied: 'ignored' });
    // LiveKit redelivers the join (same event), and reports ringing again on another event.
    await livekitEvent(joined);
    await livekitEvent(calleeEvent(`EV_track2_${callId}`, 'track_published', callId, to, 'ringing'));
    expect(await livekit.answer(callId)).toBe(204); // the callee answers: LiveKit sends no webhook, the worker reports it
    await eventually(() => getCall(callId), (c) => c.call_status === 'ongoing', 30_000);
    const left = calleeEvent(`EV_left_${callId}`, 'participant_left', callId, to, 'hangup', { disconnectReason: 'CLIENT_INITIATED' });
    expect(await livekitEvent(left)).toEqual({ applied: 'ended' });
    expect(await livekitEvent(left)).toEqual({ applied: 'ignored' });
    const ended = await getCall(callId);
    expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(ended.sip_leg).toBeUndefined(); // never answered on the call

    const trace = await ws.api.get(`/v2/get-call-sip-trace/${callId}`);
    expect(trace.status).toBe(200);
    const callIdFull = `${callId.slice(-12)}-carrier@trunk.example.com`;
    expect(trace.body).toMatchObject({ call_id: callId, sip_call_id: callIdFull, synthetic: false, source: 'livekit_sip_participant' });
    const facts = trace.body.sip_participant;
    // LiveKit's SIP call ID as CreateSIPParticipant answered it, which came before the webhooks.
    const livekitCallId = facts.livekit_call_id;
    expect(livekitCallId).toMatch(/^SCL_\d{6}$/);
    expect(facts).toMatchObject({
      participant_identity: 'callee',
      call_id_full: callIdFull,
      phone_number: to,
      trunk_phone_number: number,
      hostname: 'trunk.example.com',
      trunk_id: 'ST_outbound1',
      rule_id: null,
      disconnect_reason: 'CLIENT_INITIATED',
      failure: null,
    });
    // Each status once, in order, however often it was reported.
    expect(facts.status_transitions.map((t: any) => `${t.status}/${t.source}`)).toEqual(['dialing/webhook', 'ringing/webhook', 'active/worker', 'hangup/webhook']);
    const at = Object.fromEntries(facts.status_transitions.map((t: any) => [t.status, t.timestamp]));
    expect(at.dialing < at.ringing && at.ringing < at.active && at.active <= at.hangup).toBe(true);
    expect(ended.start_timestamp).toBeGreaterThanOrEqual(at.active);

    const messages = trace.body.messages;
    expect(messages.map((m: any) => `${m.direction} ${m.method ?? `${m.status_code} ${m.reason}`}`)).toEqual([
      'sent INVITE',
      'received 100 Trying',
      'received 180 Ringing',
      'received 200 OK',
      'sent ACK',
      'received BYE', // CLIENT_INITIATED: the callee hung up
      'sent 200 OK',
    ]);
    expect(messages[0].timestamp).toBeLessThanOrEqual(at.dialing); // the INVITE left when the dial was sent
    expect(messages[0].basis).toBe('CreateSIPParticipant sent');
    expect(messages[2].timestamp).toBe(at.ringing);
    expect(messages[2].basis).toBe('sip.callStatus=ringing (track_published)');
    expect(messages[3].timestamp).toBe(at.active);
    expect(messages[5].timestamp).toBe(at.hangup);
    expect(messages[1].basis).toBe('implied');
    const invite = messages[0].raw;
    expect(invite).toMatch(new RegExp(`^INVITE sip:\\${to}@trunk\\.example\\.com SIP/2\\.0\r\n`));
    expect(invite).toContain(`From: <sip:${number}@`);
    expect(invite).toContain(`To: <sip:${to}@trunk.example.com>`);
    expect(invite).toContain(`Call-ID: ${callIdFull}\r\n`);
    expect(invite).toContain(`X-LiveKit-Call-ID: ${livekitCallId}`);
    for (const message of messages) expect(message.raw).toContain(`Call-ID: ${callIdFull}\r\n`);

    const pcap = await pcapOf(callId);
    expect(pcap.status).toBe(200);
    expect(pcap.headers.get('content-type')).toBe('application/vnd.tcpdump.pcap');
    const bytes = Buffer.from(await pcap.arrayBuffer());
    expect(bytes.readUInt32LE(0)).toBe(0xa1b2c3d4);
    if (hasTshark) {
      expect(tsharkFields(bytes, callId)).toEqual([
        ['INVITE', callIdFull],
        ['100', callIdFull],
        ['180', callIdFull],
        ['200', callIdFull],
        ['ACK', callIdFull],
        ['BYE', callIdFull],
        ['200', callIdFull],
      ]);
    }
  });

  it('a dial LiveKit refused at once with 486 Busy Here: INVITE, 100, 486, ACK, with the status LiveKit reported', async () => {
    const to = '+14155550162';
    const { callId, release } = await heldDial(to);
    await livekitEvent(calleeEvent(`EV_join_${callId}`, 'participant_joined', callId, to, 'dialing'));
    livekit.failNext('SIP/CreateSIPParticipant', {
      status: 400,
      code: 'failed_precondition',
      msg: 'sip status: 486',
      meta: { sip_status_code: '486', sip_status: 'Busy Here' },
    });
    release();
    await eventually(() => getCall(callId), (c) => c.call_status === 'not_connected', 30_000);
    await livekitEvent(calleeEvent(`EV_left_${callId}`, 'participant_left', callId, to, 'hangup', { disconnectReason: 'USER_REJECTED' }));
    expect(await getCall(callId)).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_busy' });

    const trace = (await ws.api.get(`/v2/get-call-sip-trace/${callId}`)).body;
    expect(trace).toMatchObject({ synthetic: false, source: 'livekit_sip_participant', sip_call_id: `${callId.slice(-12)}-carrier@trunk.example.com` });
    expect(trace.sip_participant.failure).toEqual({ status_code: 486, reason: 'Busy Here', timestamp: expect.any(Number) });
    expect(trace.sip_participant.status_transitions.map((t: any) => t.status)).toEqual(['dialing', 'hangup']);
    expect(trace.messages.map((m: any) => m.method ?? `${m.status_code} ${m.reason}`)).toEqual(['INVITE', '100 Trying', '486 Busy Here', 'ACK']);
    expect(trace.messages[2]).toMatchObject({ direction: 'received', timestamp: trace.sip_participant.failure.timestamp, basis: 'CreateSIPParticipant failed: SIP 486 Busy Here' });
    if (hasTshark) {
      const bytes = Buffer.from(await (await pcapOf(callId)).arrayBuffer());
      expect(tsharkFields(bytes, callId).map((fields) => fields[0])).toEqual(['INVITE', '100', '486', 'ACK']);
    }
  });

  it('another workspace\'s call is 404; a LiveKit call LiveKit reported nothing about yet stays reconstructed (synthetic)', async () => {
    const to = '+14155550163';
    const { callId, release } = await heldDial(to);
    // Still ringing, and no webhook yet: nothing reported, so the trace is the reconstructed one.
    const trace = (await ws.api.get(`/v2/get-call-sip-trace/${callId}`)).body;
    expect(trace).toMatchObject({ synthetic: true, source: 'livekit' });
    expect(trace.note).toContain('LiveKit reported nothing');
    expect(trace.sip_participant).toBeUndefined();
    release();
    await eventually(() => getCall(callId), (c) => c.call_status === 'ongoing', 30_000);
    await ws.api.post(`/v2/stop-call/${callId}`);
    // The room is the call: another workspace reaches neither its trace nor its pcap.
    const other = await app.newWorkspace();
    expect((await other.api.get(`/v2/get-call-sip-trace/${callId}`)).body).toEqual({ status: 404, message: 'Call not found' });
    expect((await pcapOf(callId, other.api_key)).status).toBe(404);
    const own = (await ws.api.get(`/v2/get-call-sip-trace/${callId}`)).body;
    expect(own).toMatchObject({ synthetic: false, source: 'livekit_sip_participant', sip_call_id: expect.stringMatching(/^SCL_/) });
    // manual_stopped: Parley's side (LiveKit deleting the room) hangs up.
    expect(own.messages.map((m: any) => `${m.direction} ${m.method ?? m.status_code}`)).toEqual(['sent INVITE', 'received 100', 'received 200', 'sent ACK', 'sent BYE', 'received 200']);
    expect(own.messages[4].basis).toBe('call end_timestamp');
  });

  it('keeps at most SIP_LEG_MAX_TRANSITIONS statuses, each once', () => {
    let leg = mergeSipLeg(undefined, {});
    for (let i = 0; i < SIP_LEG_MAX_TRANSITIONS + 10; i++) {
      leg = mergeSipLeg(leg, { transition: { status: `s${i}`, at: 1_000 + i, source: 'webhook' } });
      leg = mergeSipLeg(leg, { transition: { status: `s${i}`, at: 2_000 + i, source: 'webhook' } });
    }
    expect(leg.transitions).toHaveLength(SIP_LEG_MAX_TRANSITIONS);
    expect(leg.transitions[0]).toEqual({ status: 's0', at: 1_000, source: 'webhook' });
    // A later-arriving report of an earlier time moves the status earlier.
    expect(mergeSipLeg(leg, { transition: { status: 's1', at: 5, source: 'dial' } }).transitions[0]).toEqual({ status: 's1', at: 5, source: 'dial' });
  });
});
