import { beforeEach, describe, expect, it } from 'vitest';
import { ApiError, Unavailable, VendorFailed } from '../../../shared/platform/errors.ts';
import { LiveKitMedia, sipHost } from '../../../shared/vendors/media/livekit.ts';
import {
  mediaAdapter,
  verifyWorkerReportToken,
  type DialRequest,
  type MediaCall,
  type TrunkStore,
} from '../../../shared/vendors/media/index.ts';
import { FAKE_API_KEY, FAKE_API_SECRET, startFakeLiveKit } from '../../support/fake-livekit.ts';

const livekit = await startFakeLiveKit();
const fakeSettings = async (name: string) =>
  ({ LIVEKIT_API_KEY: FAKE_API_KEY, LIVEKIT_API_SECRET: FAKE_API_SECRET })[name];

/** A TrunkStore with the table's conditional-put semantics, in memory. */
class MemoryTrunks implements TrunkStore {
  readonly items = new Map<string, string>();
  async get(number: string) {
    return this.items.get(number);
  }
  async putIfAbsent(number: string, trunkId: string) {
    if (!this.items.has(number)) this.items.set(number, trunkId);
    return this.items.get(number)!;
  }
}

const reportAccess = async (callId: string) => ({
  report_url: `http://127.0.0.1:8080/internal/calls/${callId}/events`,
  report_token: `wrt_token_of_${callId}`,
});

function media(trunks: TrunkStore = new MemoryTrunks(), overrides: Partial<ConstructorParameters<typeof LiveKitMedia>[0]> = {}) {
  return new LiveKitMedia({
    url: livekit.url,
    apiKey: FAKE_API_KEY,
    apiSecret: FAKE_API_SECRET,
    agentName: 'parley-agent',
    trunks,
    reportAccess,
    requestTimeoutSeconds: 5,
    ...overrides,
  });
}

const call: MediaCall = {
  call_id: 'call_0a1b2c3d4e5f60718293a4b5',
  workspace_id: 'ws_111111111111111111111111',
  agent_id: 'agent_222222222222222222222222',
  agent_version: 3,
  call_type: 'phone_call',
  direction: 'outbound',
  from_number: '+14155550100',
  to_number: '+14155550199',
  dynamic_variables: { customer_name: 'Ada', order_id: '42' },
};

const dial = (overrides: Partial<DialRequest> = {}): DialRequest => ({
  call_id: call.call_id,
  from_number: '+14155550100',
  to_number: '+14155550199',
  trunk: {
    address: 'sip:parley-test.pstn.twilio.com;transport=tcp',
    transport: 'TCP',
    auth_username: 'trunk-user',
    auth_password: 'trunk-password-9f8e',
  },
  ...overrides,
});

/** The error a promise failed with (fails the test if it did not fail). */
async function failure(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ApiError);
  return error as ApiError;
}

beforeEach(() => livekit.reset());

describe('starting a call on LiveKit', () => {
  it('creates the room named after the call_id and dispatches the agent with the call as metadata', async () => {
    const session = await media().startCall(call);

    const [createRoom] = livekit.calls('RoomService/CreateRoom');
    expect(createRoom!.body).toEqual({
      name: call.call_id,
      metadata: JSON.stringify({ call_id: call.call_id, call_type: 'phone_call', agent_id: call.agent_id }),
    });
    expect(createRoom!.claims.video).toEqual({ roomCreate: true });
    expect(createRoom!.claims.iss).toBe(FAKE_API_KEY);

    const dispatches = livekit.calls('AgentDispatchService/CreateDispatch');
    expect(dispatches).toHaveLength(1);
    expect(dispatches[0]!.body.room).toBe(call.call_id);
    expect(dispatches[0]!.body.agentName).toBe('parley-agent');
    expect(JSON.parse(dispatches[0]!.body.metadata)).toEqual({
      call_id: call.call_id,
      workspace_id: 'ws_111111111111111111111111',
      agent_id: 'agent_222222222222222222222222',
      agent_version: 3,
      call_type: 'phone_call',
      direction: 'outbound',
      from_number: '+14155550100',
      to_number: '+14155550199',
      dynamic_variables: { customer_name: 'Ada', order_id: '42' },
      report_url: `http://127.0.0.1:8080/internal/calls/${call.call_id}/events`,
      report_token: `wrt_token_of_${call.call_id}`,
    });
    expect(dispatches[0]!.claims.video).toEqual({ roomAdmin: true, room: call.call_id });
    expect(session).toEqual({ room: call.call_id, dispatch_id: 'AD_000001' });
    expect([...livekit.rooms.keys()]).toEqual([call.call_id]);
  });

  it('keeps the report token out of the room metadata every participant can read', async () => {
    await media().startCall(call);
    expect(livekit.calls('RoomService/CreateRoom')[0]!.body.metadata).not.toContain('wrt_');
  });

  it('dispatches a web call with null direction and numbers', async () => {
    const web: MediaCall = { ...call, call_type: 'web_call', direction: null, from_number: null, to_number: null };
    await media().startCall(web);
    const metadata = JSON.parse(livekit.calls('AgentDispatchService/CreateDispatch')[0]!.body.metadata);
    expect([metadata.call_type, metadata.direction, metadata.from_number, metadata.to_number]).toEqual([
      'web_call',
      null,
      null,
      null,
    ]);
  });

  it('the factory builds LiveKit from the settings, with a report token the report route accepts', async () => {
    const adapter = await mediaAdapter({ url: livekit.url, trunks: new MemoryTrunks(), read: fakeSettings });
    expect(adapter.kind).toBe('livekit');
    await adapter.startCall(call);
    const metadata = JSON.parse(livekit.calls('AgentDispatchService/CreateDispatch')[0]!.body.metadata);
    expect(metadata.report_url).toBe(`http://127.0.0.1:${process.env.PORT ?? '8080'}/internal/calls/${call.call_id}/events`);
    expect(await verifyWorkerReportToken(call.call_id, metadata.report_token, { read: fakeSettings })).toBe(true);
    expect(await verifyWorkerReportToken('call_other', metadata.report_token, { read: fakeSettings })).toBe(false);
    expect(livekit.calls('AgentDispatchService/CreateDispatch')[0]!.body.agentName).toBe('parley-agent');
  });

  it('dispatches into an existing room (an inbound SIP call) without creating one', async () => {
    const id = await media().dispatchAgent('inbound-+14155550123-x1', { ...call, direction: 'inbound' });
    expect(id).toBe('AD_000001');
    expect(livekit.calls('RoomService/CreateRoom')).toEqual([]);
    expect(livekit.calls('AgentDispatchService/CreateDispatch')[0]!.body.room).toBe('inbound-+14155550123-x1');
  });
});

describe('dialling out over the number’s outbound trunk', () => {
  it('creates the trunk on the first dial, then dials the callee into the room', async () => {
    const trunks = new MemoryTrunks();
    const outcome = await media(trunks).dialOut(dial());

    expect(outcome).toEqual({
      placed: true,
      participant_identity: 'callee',
      // What LiveKit answered about the SIP leg, for the call's SIP trace.
      sip: {
        started_at: expect.any(Number),
        ended_at: expect.any(Number),
        participant_identity: 'callee',
        host: 'parley-test.pstn.twilio.com',
        sip_call_id: expect.stringMatching(/^SCL_/),
        participant_id: expect.stringMatching(/^PA_/),
      },
    });
    const [created] = livekit.calls('SIP/CreateSIPOutboundTrunk');
    expect(created!.body).toEqual({
      trunk: {
        name: 'parley +14155550100',
        metadata: JSON.stringify({ number: '+14155550100' }),
        address: 'parley-test.pstn.twilio.com',
        transport: 'SIP_TRANSPORT_TCP',
        numbers: ['+14155550100'],
        authUsername: 'trunk-user',
        authPassword: 'trunk-password-9f8e',
      },
    });
    expect(created!.claims.sip).toEqual({ admin: true });
    expect(trunks.items).toEqual(new Map([['+14155550100', 'ST_000001']]));

    const [participant] = livekit.calls('SIP/CreateSIPParticipant');
    expect(participant!.body).toEqual({
      sipTrunkId: 'ST_000001',
      sipCallTo: '+14155550199',
      sipNumber: '+14155550100',
      roomName: call.call_id,
      participantIdentity: 'callee',
      ringingTimeout: '30s',
    });
    // Placed, not answered: waitUntilAnswered is false (protobuf's JSON leaves the default out).
    expect(participant!.body.waitUntilAnswered).toBeUndefined();
    expect(participant!.claims.sip).toEqual({ call: true });
  });

  it('reuses the stored trunk on later dials', async () => {
    const trunks = new MemoryTrunks();
    const adapter = media(trunks);
    await adapter.dialOut(dial());
    await adapter.dialOut(dial({ to_number: '+14155550177', sip_headers: { 'X-Campaign': 'spring' }, ringing_timeout_seconds: 20 }));

    expect(livekit.calls('SIP/CreateSIPOutboundTrunk')).toHaveLength(1);
    const second = livekit.calls('SIP/CreateSIPParticipant')[1]!.body;
    expect([second.sipTrunkId, second.sipCallTo, second.headers, second.ringingTimeout]).toEqual([
      'ST_000001',
      '+14155550177',
      { 'X-Campaign': 'spring' },
      '20s',
    ]);
  });

  it('creates one trunk for concurrent first dials in one process', async () => {
    livekit.delay('SIP/CreateSIPOutboundTrunk', 50);
    const adapter = media();
    const outcomes = await Promise.all(
      Array.from({ length: 5 }, (_, i) => adapter.dialOut(dial({ to_number: `+1415555018${i}` }))),
    );

    expect(outcomes.every((outcome) => 'placed' in outcome)).toBe(true);
    expect(livekit.calls('SIP/CreateSIPOutboundTrunk')).toHaveLength(1);
    expect(livekit.calls('SIP/CreateSIPParticipant').map((request) => request.body.sipTrunkId)).toEqual(
      Array(5).fill('ST_000001'),
    );
  });

  it('two instances racing on a fresh number keep the stored winner and delete the loser’s trunk', async () => {
    livekit.delay('SIP/CreateSIPOutboundTrunk', 50);
    const shared = new MemoryTrunks();
    const [first, second] = await Promise.all([media(shared).dialOut(dial()), media(shared).dialOut(dial())]);

    expect(['placed' in first, 'placed' in second]).toEqual([true, true]);
    expect(livekit.calls('SIP/CreateSIPOutboundTrunk')).toHaveLength(2);
    const winner = shared.items.get('+14155550100')!;
    // The fake numbers every object from one counter: which IDs the two trunks got depends on
    // how the two dials interleave, so the loser is whichever trunk is not the winner.
    const deleted = livekit.calls('SIP/DeleteSIPTrunk').map((request) => request.body.sipTrunkId as string);
    expect(deleted).toHaveLength(1);
    expect(deleted[0]).toMatch(/^ST_\d{6}$/);
    expect(deleted[0]).not.toBe(winner);
    expect([...livekit.trunks.keys()]).toEqual([winner]);
    expect(livekit.calls('SIP/CreateSIPParticipant').map((request) => request.body.sipTrunkId)).toEqual([winner, winner]);
  });

  it('still dials with the winner when the loser’s trunk cannot be deleted', async () => {
    const shared = new MemoryTrunks();
    await shared.putIfAbsent('+14155550100', 'ST_elsewhere');
    // The store answers nothing at first (the other instance has not written yet), then the winner.
    const racing: TrunkStore = { get: async () => undefined, putIfAbsent: (n, id) => shared.putIfAbsent(n, id) };
    livekit.failNext('SIP/DeleteSIPTrunk', { status: 500, code: 'internal' });
    livekit.trunks.set('ST_elsewhere', {
      sipTrunkId: 'ST_elsewhere', name: '', address: '', numbers: [], transport: '', authUsername: '', authPassword: '', metadata: '',
    });

    expect(await media(racing).dialOut(dial())).toMatchObject({ placed: true, participant_identity: 'callee' });
    expect(livekit.calls('SIP/DeleteSIPTrunk').map((request) => request.body)).toEqual([{ sipTrunkId: 'ST_000001' }]);
    expect(livekit.calls('SIP/CreateSIPParticipant')[0]!.body.sipTrunkId).toBe('ST_elsewhere');
  });

  it.each([
    [486, 'Busy Here', 'dial_busy'],
    [603, 'Decline', 'dial_busy'],
    [480, 'Temporarily Unavailable', 'dial_no_answer'],
    [408, 'Request Timeout', 'dial_no_answer'],
    [404, 'Not Found', 'dial_failed'],
    [503, 'Service Unavailable', 'dial_failed'],
  ])('a SIP %i (%s) LiveKit answers at once is a dial outcome: not_connected, %s', async (code, status, reason) => {
    livekit.failNext('SIP/CreateSIPParticipant', {
      status: 400,
      code: 'failed_precondition',
      msg: `sip status: ${code}`,
      meta: { sip_status_code: String(code), sip_status: status },
    });
    expect(await media().dialOut(dial())).toEqual({
      connected: false,
      status: 'not_connected',
      disconnection_reason: reason,
      sip: { started_at: expect.any(Number), ended_at: expect.any(Number), participant_identity: 'callee', host: 'parley-test.pstn.twilio.com', status_code: code, status },
    });
  });

  it('reads the trunk host from a termination URI', () => {
    expect(sipHost('sip:pbx.example.com:5061;transport=tls')).toBe('pbx.example.com:5061');
    expect(sipHost('parley-test.pstn.twilio.com')).toBe('parley-test.pstn.twilio.com');
    expect(sipHost('SIPS:secure.example.com')).toBe('secure.example.com');
  });
});

describe('transfers and ending', () => {
  it('a cold transfer is a SIP REFER of the participant, to a tel: URI for a number', async () => {
    await media().coldTransfer({ call_id: call.call_id, participant_identity: 'callee', to: '+14155550142' });
    await media().coldTransfer({
      call_id: call.call_id,
      participant_identity: 'callee',
      to: 'sip:desk@pbx.example.com',
      sip_headers: { 'X-Reason': 'billing' },
    });

    const [toNumber, toUri] = livekit.calls('SIP/TransferSIPParticipant');
    expect(toNumber!.body).toEqual({
      participantIdentity: 'callee',
      roomName: call.call_id,
      transferTo: 'tel:+14155550142',
      ringingTimeout: '30s',
    });
    expect(toNumber!.claims.video).toEqual({ roomAdmin: true, room: call.call_id });
    expect(toNumber!.claims.sip).toEqual({ call: true });
    expect([toUri!.body.transferTo, toUri!.body.headers]).toEqual(['sip:desk@pbx.example.com', { 'X-Reason': 'billing' }]);
  });

  it('transfer() answers a refused REFER as an outcome, and a bridged one with the participant', async () => {
    livekit.failNext('SIP/TransferSIPParticipant', { status: 500, code: 'unavailable', msg: 'sip status: 480', meta: { sip_status_code: '480', sip_status: 'Temporarily Unavailable' } });
    const request = { kind: 'cold' as const, call_id: call.call_id, participant_identity: 'callee', to: '+14155550142' };
    expect(await media().transfer(request)).toEqual({ bridged: false, reason: 'dial_no_answer' });
    expect(await media().transfer(request)).toEqual({ bridged: true, participant_identity: 'callee' });
    livekit.failNext('SIP/TransferSIPParticipant', { status: 503, code: 'unavailable' });
    await expect(media().transfer(request)).rejects.toBeInstanceOf(Unavailable);
  });

  it('a warm transfer dials the target into the room as a second SIP participant', async () => {
    const outcome = await media().warmTransfer(dial({ to_number: '+14155550142' }));
    expect(outcome).toMatchObject({ connected: true, voicemail: false, participant_identity: 'transfer-+14155550142' });
    const [participant] = livekit.calls('SIP/CreateSIPParticipant');
    // The transfer step decides on the outcome: this dial waits for the answer.
    expect(participant!.body.waitUntilAnswered).toBe(true);
    expect([participant!.body.roomName, participant!.body.sipCallTo, participant!.body.participantIdentity]).toEqual([
      call.call_id,
      '+14155550142',
      'transfer-+14155550142',
    ]);
  });

  it('ending a call deletes its room, and a room already gone is fine', async () => {
    const adapter = media();
    await adapter.startCall(call);
    await adapter.endCall(call.call_id);
    await adapter.endCall(call.call_id);

    expect(livekit.calls('RoomService/DeleteRoom').map((request) => request.body)).toEqual([
      { room: call.call_id },
      { room: call.call_id },
    ]);
    expect(livekit.rooms.size).toBe(0);
  });
});

describe('who hears whom', () => {
  it('lists the participants\' audio tracks, marks the agent, and changes one participant\'s subscriptions server side', async () => {
    const adapter = media();
    await adapter.startCall(call);
    livekit.join(call.call_id, { identity: 'agent-AJ_1', kind: 'AGENT', tracks: [{ sid: 'TR_voice', name: 'roomio_audio' }, { sid: 'TR_hold', name: 'parley-hold' }] });
    livekit.join(call.call_id, { identity: 'callee', kind: 'SIP', tracks: [{ sid: 'TR_callee', name: 'phone' }] });
    expect(await adapter.listAudio(call.call_id)).toEqual([
      { identity: 'agent-AJ_1', agent: true, tracks: [{ sid: 'TR_voice', name: 'roomio_audio' }, { sid: 'TR_hold', name: 'parley-hold' }] },
      { identity: 'callee', agent: false, tracks: [{ sid: 'TR_callee', name: 'phone' }] },
    ]);
    await adapter.setSubscriptions(call.call_id, 'callee', ['TR_voice'], false);
    expect(livekit.hears(call.call_id, 'callee')).toEqual(['TR_hold']);
    await adapter.setSubscriptions(call.call_id, 'callee', ['TR_voice'], true);
    expect(livekit.hears(call.call_id, 'callee')).toEqual(['TR_voice', 'TR_hold']);
    // No tracks: no request.
    await adapter.setSubscriptions(call.call_id, 'callee', [], false);
    const [list] = livekit.calls('RoomService/ListParticipants');
    expect(list!.claims.video).toEqual({ roomAdmin: true, room: call.call_id });
    expect(livekit.calls('RoomService/UpdateSubscriptions').map((request) => request.body)).toEqual([
      { room: call.call_id, identity: 'callee', trackSids: ['TR_voice'] },
      { room: call.call_id, identity: 'callee', trackSids: ['TR_voice'], subscribe: true },
    ]);
    // A participant not in the room: LiveKit's not_found is a 502.
    expect((await failure(adapter.setSubscriptions(call.call_id, 'nobody', ['TR_voice'], false))).status).toBe(502);
  });
});

describe('LiveKit failures', () => {
  it('a refusal is a 502 naming the operation and status, never LiveKit’s message or the secret', async () => {
    livekit.failNext('RoomService/CreateRoom', { status: 500, code: 'internal', msg: 'db down near secret place' });
    const error = await failure(media().startCall(call));
    expect(error).toBeInstanceOf(VendorFailed);
    expect([error.status, error.message]).toEqual([502, 'LiveKit CreateRoom failed: HTTP 500 internal']);
    expect(livekit.calls('AgentDispatchService/CreateDispatch')).toEqual([]);
  });

  it('LiveKit overloaded is a 503 with retry-after', async () => {
    livekit.failNext('AgentDispatchService/CreateDispatch', { status: 503, code: 'unavailable' });
    const error = await failure(media().startCall(call));
    expect(error).toBeInstanceOf(Unavailable);
    expect([error.status, error.message, error.headers]).toEqual([
      503,
      'LiveKit is unavailable (CreateDispatch: HTTP 503)',
      { 'retry-after': '5' },
    ]);
  });

  it('a trunk LiveKit refuses fails the dial with a 502 and stores nothing', async () => {
    const trunks = new MemoryTrunks();
    livekit.failNext('SIP/CreateSIPOutboundTrunk', { status: 400, code: 'invalid_argument', msg: 'bad address' });
    const error = await failure(media(trunks).dialOut(dial()));
    expect([error.status, error.message]).toEqual([502, 'LiveKit CreateSIPOutboundTrunk failed: HTTP 400 invalid_argument']);
    expect(trunks.items.size).toBe(0);
    expect(livekit.calls('SIP/CreateSIPParticipant')).toEqual([]);
  });

  it('a wrong API secret is refused by LiveKit: a 502, and the secret appears nowhere', async () => {
    const error = await failure(media(new MemoryTrunks(), { apiSecret: 'not-the-secret-0000' }).startCall(call));
    expect([error.status, error.message]).toEqual([502, 'LiveKit CreateRoom failed: HTTP 401 unauthenticated']);
    expect(livekit.refused.map(({ method, status }) => [method, status])).toEqual([['RoomService/CreateRoom', 401]]);
    expect(JSON.stringify({ ...error, message: error.message })).not.toContain('not-the-secret-0000');
  });

  it('LiveKit unreachable is a 503', async () => {
    const gone = await startFakeLiveKit();
    const url = gone.url;
    await gone.close();
    const error = await failure(media(new MemoryTrunks(), { url }).endCall(call.call_id));
    expect([error.status, error.message]).toEqual([503, 'LiveKit could not be reached (DeleteRoom)']);
  });
});
