import { afterEach, describe, expect, it } from 'vitest';
import { signedWebhook, startLiveKitTestApp } from '../support/fake-livekit.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { call as request } from '../support/http.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

// Outbound dials on LiveKit are placed, not waited for (docs/calls-media.md, Dialling): the
// dial step starts CreateSIPParticipant and returns; the callee's answer (the agent worker's
// callee_answered report, or a webhook carrying sip.callStatus active) or its failure (its
// participant_left) moves the call, and a dial-timeout step ends a call left ringing. The
// media server is the fake LiveKit, told to keep dials ringing until the test decides.
const { livekit, app } = await startLiveKitTestApp();
// Loaded after the app: settings are read once, on the first import of shared code.
const { localQueue } = await import('../../local/queues.ts');
const { runCallStep } = await import('../../shared/calls/engine/engine.ts');
type Step = Parameters<typeof runCallStep>[0];

const ws = await app.newWorkspace();
const hooks = await webhookReceiver();
const { number } = await newAgentWithNumber(ws.api, { agent: { webhook_url: hooks.url } });

afterEach(() => livekit.ringDials(false));

const getCall = async (callId: string) => (await ws.api.get(`/v2/get-call/${callId}`)).body;

async function livekitEvent(event: Record<string, unknown>) {
  const signed = await signedWebhook(event);
  const res = await request(app.url, 'POST', '/livekit/webhook', {
    rawBody: signed.body,
    headers: { 'content-type': 'application/json', authorization: signed.authorization },
  });
  expect(res.status).toBe(200);
  return res.body;
}

const calleeEvent = (event: string, callId: string, callStatus: string) => ({
  id: `EV_${event}_${callId}`,
  event,
  room: { name: callId },
  participant: { identity: 'callee', sid: `PA_${callId.slice(-6)}`, kind: 'SIP', attributes: { 'sip.callStatus': callStatus } },
});

/** The call's queued steps of this kind, with their due times (the call-steps queue as the local runtime holds it: due-time envelopes). */
const queuedSteps = (callId: string, step: string): (Step & { due_at_ms: number })[] =>
  localQueue('call-steps')
    .list()
    .map((queued) => JSON.parse(queued.body) as { due_at_ms: number; message: Step })
    .filter(({ message }) => message.call_id === callId && message.step === step)
    .map(({ due_at_ms: dueAt, message }) => ({ ...message, due_at_ms: dueAt }));

/**
 * Places a call whose callee rings until the test answers, and waits until its dial step has
 * finished: the dial-timeout step it schedules last is queued. The fake has not answered.
 */
async function ringingCall(to: string) {
  livekit.ringDials();
  const created = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: to } });
  expect(created.status).toBe(201);
  const callId: string = created.body.call_id;
  await eventually(async () => queuedSteps(callId, 'dial_timeout'), (steps) => steps.length === 1, 30_000);
  return callId;
}

const dials = (callId: string) => livekit.calls('SIP/CreateSIPParticipant').filter((req) => req.body.roomName === callId);

describe('dialling on LiveKit', () => {
  it('the dial step returns while the callee rings; the answer makes the call ongoing once, however often it is delivered', async () => {
    const callId = await ringingCall('+14155550181');
    // The step finished before anyone answered: the call rings, placed once, without waiting for the answer.
    expect(await getCall(callId)).toMatchObject({ call_status: 'registered' });
    expect(dials(callId)).toHaveLength(1);
    expect(dials(callId)[0]!.body.waitUntilAnswered).toBeUndefined();
    expect(queuedSteps(callId, 'dial')).toEqual([]);
    // A redelivered dial step dials nothing.
    await runCallStep({ call_id: callId, workspace_id: ws.workspace_id, step: 'dial', seq: 0 });
    expect(dials(callId)).toHaveLength(1);

    // Ringing is no news; the worker's report of the answer is, delivered twice and alongside a webhook saying the same.
    expect(await livekitEvent(calleeEvent('participant_joined', callId, 'ringing'))).toEqual({ applied: 'ignored: not answered yet' });
    expect(await livekit.answer(callId)).toBe(204);
    expect(await livekit.answer(callId)).toBe(204);
    expect(await livekitEvent(calleeEvent('track_published', callId, 'active'))).toEqual({ applied: 'ignored' });
    const live = await getCall(callId);
    expect(live).toMatchObject({ call_status: 'ongoing' });

    // The dial-timeout step, when it comes, leaves an answered call alone.
    const { due_at_ms: _dueAt, ...timeout } = queuedSteps(callId, 'dial_timeout')[0]!;
    await runCallStep(timeout);
    expect(await getCall(callId)).toMatchObject({ call_status: 'ongoing', start_timestamp: live.start_timestamp });
    await ws.api.post(`/v2/stop-call/${callId}`);
    await eventually(async () => hooks.events(callId), (events) => events.includes('call_ended'));
    expect(hooks.events(callId).filter((event) => event === 'call_started')).toHaveLength(1);
  });

  it('a webhook carrying the callee\'s sip.callStatus active answers too, once', async () => {
    const callId = await ringingCall('+14155550182');
    expect(await livekitEvent(calleeEvent('participant_joined', callId, 'active'))).toEqual({ applied: 'ongoing' });
    expect(await livekitEvent(calleeEvent('participant_joined', callId, 'active'))).toEqual({ applied: 'ignored' });
    expect(await livekit.answer(callId)).toBe(204);
    expect(await getCall(callId)).toMatchObject({ call_status: 'ongoing' });
    await ws.api.post(`/v2/stop-call/${callId}`);
    await eventually(async () => hooks.events(callId), (events) => events.includes('call_ended'));
    expect(hooks.events(callId).filter((event) => event === 'call_started')).toHaveLength(1);
  });

  it.each([
    ['USER_REJECTED', 'dial_busy'],
    ['USER_UNAVAILABLE', 'dial_no_answer'],
    ['SIP_TRUNK_FAILURE', 'dial_failed'],
  ])('the callee leaving before answering (%s) ends the call not_connected, %s, once', async (disconnectReason, reason) => {
    const callId = await ringingCall(`+1415555019${reason.length % 10}`);
    expect(await livekit.leave(callId, disconnectReason)).toEqual({ applied: 'not_connected' });
    expect(await livekit.leave(callId, disconnectReason)).toEqual({ applied: 'ignored' });
    expect(await getCall(callId)).toMatchObject({ call_status: 'not_connected', disconnection_reason: reason });
    expect(livekit.calls('RoomService/DeleteRoom').map((req) => req.body.room)).toContain(callId);
    // An answer reported after the failure changes nothing.
    expect(await livekit.answer(callId)).toBe(409);
    expect(await getCall(callId)).toMatchObject({ call_status: 'not_connected', disconnection_reason: reason });
    await eventually(async () => hooks.events(callId), (events) => events.includes('call_ended'));
    expect(hooks.events(callId)).toEqual(['call_ended']);
  });

  it('no answer and no event at all: the dial-timeout step ends the call dial_no_answer and removes its room, once', async () => {
    const callId = await ringingCall('+14155550184');
    const { due_at_ms: dueAt, ...timeout } = queuedSteps(callId, 'dial_timeout')[0]!;
    expect(timeout).toEqual({ call_id: callId, workspace_id: ws.workspace_id, step: 'dial_timeout', seq: 1 });
    // Due past LiveKit's ringing timeout (30 s from the dial, a moment ago), with a margin.
    expect(dueAt).toBeGreaterThan(Date.now() + 30_000);
    // Run as the queue would at its due time (the ringing timeout and a margin later), and again as a redelivery.
    await runCallStep(timeout);
    await runCallStep(timeout);
    expect(await getCall(callId)).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'dial_no_answer' });
    expect(livekit.calls('RoomService/DeleteRoom').filter((req) => req.body.room === callId)).toHaveLength(1);
    await eventually(async () => hooks.events(callId), (events) => events.includes('call_ended'));
    expect(hooks.events(callId)).toEqual(['call_ended']);
    // LiveKit's own no-answer arriving afterwards changes nothing.
    expect(await livekit.leave(callId, 'USER_UNAVAILABLE')).toEqual({ applied: 'ignored' });
  });
});
