import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { AccessToken, TokenVerifier, type ClaimGrants } from 'livekit-server-sdk';
import { afterAll } from 'vitest';

/**
 * A fake LiveKit server on 127.0.0.1 speaking the Twirp JSON protocol livekit-server-sdk
 * uses (`POST /twirp/livekit.<Service>/<Method>`, protobuf's JSON form both ways). Like
 * LiveKit it checks every request's `Authorization: Bearer <JWT>`: signed with the API
 * secret, issued by the API key, not expired, and carrying the grants the method needs
 * (the same ones LiveKit's server demands). It keeps rooms, dispatches, outbound trunks and
 * SIP participants, the participants in each room with the audio tracks they publish and the
 * tracks each is unsubscribed from (UpdateSubscriptions), records every request, and can be
 * told to fail or to wait.
 *
 * Dials: a CreateSIPParticipant that waits for the answer (a warm transfer's) answers once
 * the callee answered, as LiveKit does. One that does not wait (a call's dial) is placed: the
 * callee rings, and what happens next is sent to the app it is connected to (`connect`), the
 * way it reaches Parley from LiveKit: the answer as the agent worker's `callee_answered`
 * report (LiveKit sends no webhook when `sip.callStatus` becomes `active`; the worker in the
 * room sees it), a failure as the callee's participant_left webhook with LiveKit's
 * DisconnectReason. By default every placed dial is answered at once; `ringDials()` leaves
 * them ringing until the test calls `answer` or `leave`.
 *
 *   const livekit = await startFakeLiveKit();     // closed after the file's tests
 *   livekit.failNext('SIP/CreateSIPParticipant', { status: 486, code: 'unavailable', meta: { sip_status_code: '486', sip_status: 'Busy Here' } });
 *   ... new LiveKitMedia({ url: livekit.url, apiKey: livekit.apiKey, apiSecret: livekit.apiSecret, ... })
 *   expect(livekit.calls('RoomService/CreateRoom')[0].body.name).toBe(callId);
 */
export const FAKE_API_KEY = 'APIfake7Qw2';
export const FAKE_API_SECRET = 'fake-livekit-secret-5b0d7c4e9a1f2e3d8c6b';

interface TwirpRequest {
  /** `<Service>/<Method>` without the `livekit.` package, e.g. `SIP/CreateSIPOutboundTrunk`. */
  method: string;
  body: any;
  claims: ClaimGrants;
}

interface TwirpFailure {
  status: number;
  /** Twirp's error code, e.g. `not_found`, `internal`, `unavailable`. */
  code: string;
  msg?: string;
  meta?: Record<string, string>;
}

export interface FakeLiveKit {
  url: string;
  apiKey: string;
  apiSecret: string;
  /** Every request that passed authentication, in arrival order. */
  requests: TwirpRequest[];
  /** Requests refused before reaching a method (bad or missing token, missing grant). */
  refused: { method: string; status: number; reason: string }[];
  rooms: Map<string, { name: string; metadata: string }>;
  /** SIP participants in each room: added by CreateSIPParticipant, removed by TransferSIPParticipant (the REFER hands them away). */
  participants: Map<string, Set<string>>;
  /**
   * Everyone in each room with the audio tracks they publish (ListParticipants): a SIP
   * participant joins with one track (`TR_<identity>`, CreateSIPParticipant); others with `join`.
   */
  members: Map<string, Map<string, FakeMember>>;
  trunks: Map<string, { sipTrunkId: string; name: string; address: string; numbers: string[]; transport: string; authUsername: string; authPassword: string; metadata: string }>;
  /** The recorded requests of one method. */
  calls(method: string): TwirpRequest[];
  /** A participant joins `room` publishing these audio tracks (the agent worker is kind AGENT). */
  join(room: string, member: { identity: string; kind?: 'STANDARD' | 'SIP' | 'AGENT'; tracks?: { sid: string; name: string }[] }): void;
  /** The track SIDs `identity` is subscribed to: every other member's track, less the ones it was unsubscribed from. */
  hears(room: string, identity: string): string[];
  /** A room LiveKit made by itself, as a SIP dispatch rule does for an inbound caller. */
  openRoom(name: string): void;
  /** The next request to `method` fails this way (queued per method). */
  failNext(method: string, failure: TwirpFailure): void;
  /** Every request to `method` waits this long before answering (0 to stop). */
  delay(method: string, ms: number): void;
  /** Where the fake sends LiveKit's webhooks and the agent worker's reports: the app's base URL (startLiveKitTestApp sets it). */
  connect(appUrl: string): void;
  /** Placed dials ring until `answer` or `leave` (true), or are answered as soon as they are placed (false, the default). */
  ringDials(ringing?: boolean): void;
  /** The ringing callee of `room` answers: the agent worker's `callee_answered` report (sent as many times as asked: a redelivery). Answers the app's status. */
  answer(room: string): Promise<number>;
  /** The ringing callee of `room` leaves before answering: its participant_left webhook with this DisconnectReason (e.g. USER_REJECTED). Answers the app's response body. */
  leave(room: string, disconnectReason: string): Promise<unknown>;
  /**
   * Requests to `method` wait until the returned release is called (a dial ringing for as
   * long as the test needs, without timing): they then answer as usual (or as failNext says).
   */
  hold(method: string): () => void;
  reset(): void;
  close(): Promise<void>;
}

interface FakeMember {
  identity: string;
  kind: 'STANDARD' | 'SIP' | 'AGENT';
  tracks: { sid: string; name: string }[];
  /** Tracks the server unsubscribed it from (LiveKit subscribes everyone to everything by default). */
  unsubscribed: Set<string>;
}

/** The grants each method needs, as LiveKit's server checks them. */
const REQUIRED: Record<string, (claims: ClaimGrants, body: any) => boolean> = {
  'RoomService/CreateRoom': (c) => c.video?.roomCreate === true,
  'RoomService/DeleteRoom': (c) => c.video?.roomCreate === true,
  'AgentDispatchService/CreateDispatch': (c, body) => c.video?.roomAdmin === true && c.video.room === body.room,
  'RoomService/SendData': (c, body) => c.video?.roomAdmin === true && c.video.room === body.room,
  'RoomService/RemoveParticipant': (c, body) => c.video?.roomAdmin === true && c.video.room === body.room,
  'RoomService/UpdateParticipant': (c, body) => c.video?.roomAdmin === true && c.video.room === body.room,
  'RoomService/ListParticipants': (c, body) => c.video?.roomAdmin === true && c.video.room === body.room,
  'RoomService/UpdateSubscriptions': (c, body) => c.video?.roomAdmin === true && c.video.room === body.room,
  'SIP/CreateSIPOutboundTrunk': (c) => c.sip?.admin === true,
  'SIP/ListSIPOutboundTrunk': (c) => c.sip?.admin === true,
  'SIP/DeleteSIPTrunk': (c) => c.sip?.admin === true,
  'SIP/CreateSIPParticipant': (c) => c.sip?.call === true,
  'Egress/StartRoomCompositeEgress': (c) => c.video?.roomRecord === true,
  'SIP/TransferSIPParticipant': (c, body) =>
    c.sip?.call === true && c.video?.roomAdmin === true && c.video.room === body.roomName,
};

export async function startFakeLiveKit(options: { apiKey?: string; apiSecret?: string } = {}): Promise<FakeLiveKit> {
  const apiKey = options.apiKey ?? FAKE_API_KEY;
  const apiSecret = options.apiSecret ?? FAKE_API_SECRET;
  const verifier = new TokenVerifier(apiKey, apiSecret);
  const failures = new Map<string, TwirpFailure[]>();
  const delays = new Map<string, number>();
  const holds = new Map<string, Promise<void>>();
  /** Each room's dispatch metadata (the report URL's token), for the worker's reports. */
  const dispatchTokens = new Map<string, string>();
  /** The sequence of the last report sent for each room (a worker numbers its reports from 1). */
  const reportSeq = new Map<string, number>();
  let appUrl = '';
  let ringing = false;
  let counter = 0;
  const nextId = (prefix: string) => `${prefix}_${String(++counter).padStart(6, '0')}`;

  const fake: FakeLiveKit = {
    url: '',
    apiKey,
    apiSecret,
    requests: [],
    refused: [],
    rooms: new Map(),
    participants: new Map(),
    members: new Map(),
    trunks: new Map(),
    calls: (method) => fake.requests.filter((request) => request.method === method),
    join(room, member) {
      const members = fake.members.get(room) ?? new Map<string, FakeMember>();
      members.set(member.identity, { identity: member.identity, kind: member.kind ?? 'STANDARD', tracks: member.tracks ?? [], unsubscribed: new Set() });
      fake.members.set(room, members);
    },
    hears(room, identity) {
      const members = [...(fake.members.get(room)?.values() ?? [])];
      const listener = members.find((member) => member.identity === identity);
      if (!listener) return [];
      return members.filter((member) => member !== listener).flatMap((member) => member.tracks.map((track) => track.sid)).filter((sid) => !listener.unsubscribed.has(sid));
    },
    openRoom(name) {
      fake.rooms.set(name, { name, metadata: '' });
    },
    failNext(method, failure) {
      failures.set(method, [...(failures.get(method) ?? []), failure]);
    },
    delay(method, ms) {
      delays.set(method, ms);
    },
    connect(url) {
      appUrl = url;
    },
    ringDials(ring = true) {
      ringing = ring;
    },
    async answer(room) {
      const token = dispatchTokens.get(room);
      if (!appUrl || !token) throw new Error(`the fake LiveKit has no app or no dispatch for room ${room}`);
      const sequence = (reportSeq.get(room) ?? 0) + 1;
      reportSeq.set(room, sequence);
      const res = await fetch(`${appUrl}/internal/calls/${encodeURIComponent(room)}/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ event: 'callee_answered', sequence, timestamp: Date.now() }),
      });
      return res.status;
    },
    async leave(room, disconnectReason) {
      if (!appUrl) throw new Error('the fake LiveKit is not connected to an app');
      const signed = await signedWebhook(
        {
          id: nextId('EV'),
          event: 'participant_left',
          room: { name: room },
          participant: { identity: 'callee', sid: `PA_callee_${room}`, kind: 'SIP', attributes: { 'sip.callStatus': 'hangup' }, disconnectReason },
        },
        { apiKey, apiSecret },
      );
      const res = await fetch(`${appUrl}/livekit/webhook`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: signed.authorization }, body: signed.body });
      return res.json();
    },
    hold(method) {
      let release!: () => void;
      holds.set(method, new Promise<void>((resolve) => (release = resolve)));
      return () => {
        holds.delete(method);
        release();
      };
    },
    reset() {
      fake.requests.length = 0;
      fake.refused.length = 0;
      fake.rooms.clear();
      fake.participants.clear();
      fake.members.clear();
      fake.trunks.clear();
      counter = 0;
      ringing = false;
      dispatchTokens.clear();
      reportSeq.clear();
      failures.clear();
      delays.clear();
      holds.clear();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };

  /** Answers a method's request from the fake's state: [status, body] or a Twirp error. */
  function answer(method: string, body: any): [number, unknown] | TwirpFailure {
    switch (method) {
      case 'RoomService/CreateRoom': {
        const room = fake.rooms.get(body.name) ?? { name: body.name, metadata: body.metadata ?? '' };
        fake.rooms.set(body.name, room);
        return [200, { sid: `RM_${body.name}`, name: room.name, metadata: room.metadata, creationTime: '1700000000' }];
      }
      case 'RoomService/DeleteRoom':
        if (!fake.rooms.delete(body.room)) return { status: 404, code: 'not_found', msg: 'requested room does not exist' };
        return [200, {}];
      case 'RoomService/SendData':
        if (!fake.rooms.has(body.room)) return { status: 404, code: 'not_found', msg: 'requested room does not exist' };
        return [200, {}];
      case 'RoomService/ListParticipants': {
        if (!fake.rooms.has(body.room)) return { status: 404, code: 'not_found', msg: 'requested room does not exist' };
        const participants = [...(fake.members.get(body.room)?.values() ?? [])].map((member) => ({
          sid: `PA_${member.identity}`,
          identity: member.identity,
          state: 'ACTIVE',
          kind: member.kind,
          tracks: member.tracks.map((track) => ({ sid: track.sid, type: 'AUDIO', name: track.name, source: 'MICROPHONE' })),
        }));
        return [200, { participants }];
      }
      case 'RoomService/UpdateSubscriptions': {
        const member = fake.members.get(body.room)?.get(body.identity);
        if (!member) return { status: 404, code: 'not_found', msg: 'participant not found' };
        for (const sid of body.trackSids ?? []) {
          if (body.subscribe) member.unsubscribed.delete(sid);
          else member.unsubscribed.add(sid);
        }
        return [200, {}];
      }
      case 'RoomService/RemoveParticipant':
        if (fake.members.get(body.room)?.delete(body.identity)) {
          fake.participants.get(body.room)?.delete(body.identity);
          return [200, {}];
        }
        // Not in the room (a live listener who never joined): as LiveKit says.
        return { status: 404, code: 'not_found', msg: 'participant not found' };
      case 'RoomService/UpdateParticipant':
        // The fake has no WebRTC participants: a listener never "joined", as LiveKit would say.
        return { status: 404, code: 'not_found', msg: 'participant not found' };
      case 'Egress/StartRoomCompositeEgress':
        if (!fake.rooms.has(body.roomName)) return { status: 404, code: 'not_found', msg: 'requested room does not exist' };
        // One egress per room here, named after it, so a test can send its egress_ended.
        return [200, { egressId: `EG_${body.roomName}`, roomName: body.roomName, status: 'EGRESS_STARTING' }];
      case 'AgentDispatchService/CreateDispatch':
        try {
          const token = JSON.parse(body.metadata ?? '{}').report_token;
          if (typeof token === 'string') dispatchTokens.set(body.room, token);
        } catch {
          // Not a call's metadata: no reports for this room.
        }
        return [200, { id: nextId('AD'), agentName: body.agentName, room: body.room, metadata: body.metadata }];
      case 'SIP/CreateSIPOutboundTrunk': {
        const trunk = {
          sipTrunkId: nextId('ST'),
          name: body.trunk.name ?? '',
          address: body.trunk.address ?? '',
          numbers: body.trunk.numbers ?? [],
          transport: body.trunk.transport ?? 'SIP_TRANSPORT_AUTO',
          authUsername: body.trunk.authUsername ?? '',
          authPassword: body.trunk.authPassword ?? '',
          metadata: body.trunk.metadata ?? '',
        };
        fake.trunks.set(trunk.sipTrunkId, trunk);
        const { authPassword: _password, ...shown } = trunk;
        return [200, shown];
      }
      case 'SIP/ListSIPOutboundTrunk':
        return [200, { items: [...fake.trunks.values()].map(({ authPassword: _password, ...shown }) => shown) }];
      case 'SIP/DeleteSIPTrunk': {
        const trunk = fake.trunks.get(body.sipTrunkId);
        if (!trunk) return { status: 404, code: 'not_found', msg: 'trunk not found' };
        fake.trunks.delete(body.sipTrunkId);
        return [200, { sipTrunkId: trunk.sipTrunkId, name: trunk.name }];
      }
      case 'SIP/CreateSIPParticipant':
        // A request with its own trunk (`trunk: {hostname, transport, …}`) needs no stored one, as in LiveKit.
        if (!body.trunk?.hostname && !fake.trunks.has(body.sipTrunkId)) return { status: 404, code: 'not_found', msg: 'trunk not found' };
        fake.participants.set(body.roomName, (fake.participants.get(body.roomName) ?? new Set()).add(body.participantIdentity));
        fake.join(body.roomName, { identity: body.participantIdentity, kind: 'SIP', tracks: [{ sid: `TR_${body.participantIdentity}`, name: 'phone' }] });
        return [
          200,
          {
            participantId: nextId('PA'),
            participantIdentity: body.participantIdentity,
            roomName: body.roomName,
            sipCallId: nextId('SCL'),
          },
        ];
      case 'SIP/TransferSIPParticipant':
        // The REFER was accepted: the participant's call now belongs to the transfer target, not the room.
        fake.participants.get(body.roomName)?.delete(body.participantIdentity);
        fake.members.get(body.roomName)?.delete(body.participantIdentity);
        return [200, {}];
      default:
        return { status: 404, code: 'bad_route', msg: `no handler for ${method}` };
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req);
    const match = /^\/twirp\/livekit\.(\w+\/\w+)$/.exec(req.url ?? '');
    const method = match?.[1] ?? req.url ?? '';
    const refuse = (status: number, code: string, reason: string) => {
      fake.refused.push({ method, status, reason });
      sendError(res, { status, code, msg: reason });
    };
    if (req.method !== 'POST' || !match) return refuse(404, 'bad_route', `no route ${req.method} ${req.url}`);
    const header = req.headers.authorization ?? '';
    if (!header.startsWith('Bearer ')) return refuse(401, 'unauthenticated', 'authorization header missing');
    let claims: ClaimGrants;
    try {
      claims = await verifier.verify(header.slice('Bearer '.length));
    } catch (error) {
      return refuse(401, 'unauthenticated', `invalid token: ${(error as Error).message}`);
    }
    const body = JSON.parse(text || '{}');
    const allowed = REQUIRED[method];
    if (allowed && !allowed(claims, body)) return refuse(403, 'permission_denied', `${method}: missing grant`);
    fake.requests.push({ method, body, claims });
    const wait = delays.get(method) ?? 0;
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    await holds.get(method);
    const queued = failures.get(method);
    const failure = queued?.shift();
    if (failure) return sendError(res, failure);
    const result = answer(method, body);
    if (!Array.isArray(result)) return sendError(res, result);
    res.writeHead(result[0], { 'content-type': 'application/json' }).end(JSON.stringify(result[1]));
    // A placed dial (not waiting for the answer) rings; unless told to keep ringing, the callee answers now.
    if (method === 'SIP/CreateSIPParticipant' && !body.waitUntilAnswered && !ringing && appUrl && dispatchTokens.has(body.roomName)) {
      setImmediate(() => {
        fake.answer(body.roomName).catch(() => undefined);
      });
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) sendError(res, { status: 500, code: 'internal', msg: String(error) });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  afterAll(() => fake.close());
  return fake;
}

function sendError(res: ServerResponse, failure: TwirpFailure): void {
  // Exactly `application/json`: the SDK reads a Twirp error's JSON only with that type.
  res.writeHead(failure.status, { 'content-type': 'application/json' }).end(
    JSON.stringify({ code: failure.code, msg: failure.msg ?? failure.code, ...(failure.meta ? { meta: failure.meta } : {}) }),
  );
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * A webhook as LiveKit's server signs it: the JSON body, and an Authorization header with a
 * JWT from the API key and secret whose `sha256` claim is the body's SHA-256 in base64.
 */
export async function signedWebhook(
  event: Record<string, unknown>,
  options: { apiKey?: string; apiSecret?: string; ttlSeconds?: number } = {},
): Promise<{ body: string; authorization: string }> {
  const body = JSON.stringify(event);
  const token = new AccessToken(options.apiKey ?? FAKE_API_KEY, options.apiSecret ?? FAKE_API_SECRET, {
    ttl: options.ttlSeconds ?? 300,
  });
  token.sha256 = createHash('sha256').update(body).digest('base64');
  return { body, authorization: await token.toJwt() };
}

/**
 * A test app whose media server is a fresh fake LiveKit, with the background jobs running
 * (call steps, webhooks); both stop after the file. The fake starts first and the local
 * runtime is imported after the app, because settings are read once.
 */
export async function startLiveKitTestApp(settings: Record<string, string> = {}) {
  const livekit = await startFakeLiveKit();
  const { startTestApp } = await import('./app.ts');
  const app = await startTestApp({ LIVEKIT_URL: livekit.url, LIVEKIT_API_KEY: livekit.apiKey, LIVEKIT_API_SECRET: livekit.apiSecret, ...settings });
  livekit.connect(app.url);
  const { startBackgroundWork } = await import('../../local/background.ts');
  const background = startBackgroundWork();
  afterAll(async () => {
    await background.stop();
    await livekit.close();
  });
  return { livekit, app };
}
