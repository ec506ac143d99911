/**
 * The media layer of calls: where a call's audio happens. Two implementations behind one
 * interface, picked by settings (index.ts): LiveKit (rooms, agent dispatch, SIP) when
 * LIVEKIT_URL is set, else the sandbox, which has no media at all and decides dial outcomes
 * from the dialled number. The call engine (the calls domain) owns the call's state; this
 * layer only acts on the media server and reports what happened.
 */

type MediaKind = 'livekit' | 'sandbox';
type CallType = 'web_call' | 'phone_call';
type CallDirection = 'inbound' | 'outbound';

/** What the engine knows about a call when it starts its media: the dispatch metadata minus the report access. */
export interface MediaCall {
  call_id: string;
  workspace_id: string;
  agent_id: string;
  agent_version: number;
  call_type: CallType;
  /** null for web calls, as on the call object. */
  direction: CallDirection | null;
  from_number: string | null;
  to_number: string | null;
  /** The call's dynamic variables, values already strings. */
  dynamic_variables: Record<string, string>;
  /**
   * This call's configuration over the agent version's (its agent_override, validated):
   * `agent` (update-agent fields: voice, webhook, …), `llm` (Retell LLM fields), `flow`
   * (conversation flow fields). The worker lays them over what it reads by agent_id and
   * agent_version. Absent when nothing is overridden.
   */
  agent_override?: { agent?: Record<string, unknown>; llm?: Record<string, unknown>; flow?: Record<string, unknown> };
  /**
   * The workspace's reliability settings (PUT /workspace/reliability): voices to switch to, in
   * order, when the agent's voice provider fails, and the model to try once when the LLM
   * provider cannot answer the agent's. Absent when the workspace sets none.
   */
  reliability?: { fallback_voice_ids: string[]; fallback_llm_model: string | null };
}

/**
 * The JSON the agent worker receives as its LiveKit dispatch metadata (job.metadata):
 * the call, plus where and how it reports back (docs/calls-media.md). It is visible to the
 * agent worker and LiveKit's operators only, never to the room's other participants, which
 * is why the report token travels here and not in the room's metadata.
 */
export interface DispatchMetadata extends MediaCall {
  /** `POST` target for the worker's events: `<base>/internal/calls/<call_id>/events`. */
  report_url: string;
  /** Bearer token for report_url, valid for this call only (worker-token.ts). */
  report_token: string;
}

/** What startCall set up: the room (named after the call_id) and the agent's dispatch. */
export interface MediaSession {
  room: string;
  /** LiveKit's dispatch ID; the sandbox makes one up. */
  dispatch_id: string;
}

/**
 * Where a room's recording goes: an object in the recordings bucket, written by the media
 * server itself (LiveKit Egress) under a role it assumes; `tagging` is the object's tag set
 * (the bucket's retention lifecycle reads it).
 */
export interface RecordingUpload {
  bucket: string;
  region: string;
  key: string;
  role_arn: string;
  tagging?: string;
}

/** How a number's calls leave for the phone network: its termination trunk (the number's own settings). */
export interface OutboundTrunkConfig {
  /** The termination host, with or without `sip:` and parameters (`example.pstn.twilio.com`, `sip:pbx.example.com:5061;transport=tls`). */
  address: string;
  transport?: 'TCP' | 'TLS' | 'UDP' | null;
  auth_username?: string | null;
  auth_password?: string | null;
}

/**
 * Where outbound trunks are kept: one LiveKit outbound trunk per number, created on the
 * number's first dial and reused. The calls domain implements it on the table with a
 * conditional put, so two dials racing on a fresh number agree on one trunk.
 */
export interface TrunkStore {
  get(number: string): Promise<string | undefined>;
  /** Stores `trunkId` unless the number has one; answers the trunk the number has now (the winner). */
  putIfAbsent(number: string, trunkId: string): Promise<string>;
}

export interface DialRequest {
  /** The call (and its room) the callee joins. */
  call_id: string;
  /** The number of the workspace whose trunk the dial goes over (and, without `caller_id`, the caller ID). */
  from_number: string;
  /**
   * The caller ID the callee sees when it is not `from_number`: a transfer with
   * `show_transferee_as_caller` shows the user's number (the carrier must allow caller ID override).
   */
  caller_id?: string;
  to_number: string;
  trunk: OutboundTrunkConfig;
  /** The callee's participant identity in the room (default `callee`). */
  participant_identity?: string;
  /** Custom SIP headers on the INVITE (`X-…`). */
  sip_headers?: Record<string, string>;
  /** How long the phone may ring before the dial is `dial_no_answer` (default DEFAULT_RINGING_TIMEOUT_SECONDS). */
  ringing_timeout_seconds?: number;
}

/** Why a dial did not connect (retell-sdk's disconnection_reason values for dials). */
export type DialFailureReason = 'dial_busy' | 'dial_no_answer' | 'dial_failed';

/** How long a dialled phone may ring before the dial is `dial_no_answer` unless the request says otherwise (LiveKit's own default). */
export const DEFAULT_RINGING_TIMEOUT_SECONDS = 30;

/** SIP statuses of a callee who is busy or declined (486 Busy Here, 600 Busy Everywhere, 603 Decline). */
const BUSY = new Set([486, 600, 603]);
/** SIP statuses of a phone nobody answered (408 Request Timeout, 480 Temporarily Unavailable, 487 Request Terminated). */
const NO_ANSWER = new Set([408, 480, 487]);

/** Why a dial the phone network refused with this SIP status did not connect. */
export function dialFailureOfSipStatus(code: number): DialFailureReason {
  return BUSY.has(code) ? 'dial_busy' : NO_ANSWER.has(code) ? 'dial_no_answer' : 'dial_failed';
}

/**
 * Why a dialled SIP participant that left before answering did not connect, from the
 * DisconnectReason LiveKit's SIP service gives it (its participant_left webhook carries no
 * SIP status): USER_REJECTED is what it gives a busy or declining callee (486, 603),
 * USER_UNAVAILABLE a phone that did not answer (480, 408, the ringing timeout); anything
 * else (SIP_TRUNK_FAILURE, a room closed under it, …) is a failed dial.
 */
export function dialFailureOfDisconnect(disconnectReason: string | undefined): DialFailureReason {
  return disconnectReason === 'USER_REJECTED' ? 'dial_busy' : disconnectReason === 'USER_UNAVAILABLE' ? 'dial_no_answer' : 'dial_failed';
}

/**
 * What the media server reported about a dial's SIP leg (LiveKit's CreateSIPParticipant:
 * its answer, or the SIP status that refused the call), for the call's SIP trace. The
 * sandbox has no SIP leg and reports none.
 */
export interface SipDialReport {
  /** When the dial was sent (epoch ms): the INVITE left then. */
  started_at: number;
  /** When the media server answered the request: the dial was placed, the callee picked up, or the dial failed (epoch ms). */
  ended_at: number;
  /** LiveKit's SIP call ID (the participant's `sip.callID`), from the answer. */
  sip_call_id?: string;
  /** The SIP participant's ID in the room, from the answer. */
  participant_id?: string;
  participant_identity: string;
  /** The termination host the trunk dials (without `sip:` and parameters). */
  host?: string;
  /** The SIP status that refused the call (486, 480, 603, …) and its reason phrase, when it failed. */
  status_code?: number;
  status?: string;
}

export type DialOutcome =
  | {
      connected: true;
      /** The sandbox's voicemail outcome; LiveKit does not detect voicemail here (the agent worker does). */
      voicemail: boolean;
      participant_identity: string;
      sip?: SipDialReport;
    }
  | { connected: false; status: 'not_connected'; disconnection_reason: DialFailureReason; sip?: SipDialReport };

/**
 * A dial the media server is placing (LiveKit's CreateSIPParticipant without waiting for the
 * answer): the callee's SIP participant is in the room, dialling; whether it answers comes
 * later, as the media server's events (docs/calls-media.md, Dialling).
 */
interface DialPlaced {
  placed: true;
  participant_identity: string;
  sip?: SipDialReport;
}

/** What starting a dial answers: placed (the outcome comes later), or already its outcome (the sandbox's, or a refusal at once). */
export type DialStart = DialOutcome | DialPlaced;

/** A cold transfer: the caller's leg is handed to another destination by SIP REFER; the agent leaves. */
export interface ColdTransferRequest {
  call_id: string;
  /** The SIP participant to transfer (the callee's identity, or the inbound caller's). */
  participant_identity: string;
  /** E.164 number (sent as `tel:`) or a `sip:` URI. */
  to: string;
  sip_headers?: Record<string, string>;
}

/** A warm transfer: a new INVITE dials the transfer target into the room beside the caller. */
export type WarmTransferRequest = DialRequest;

/** One transfer of the call's phone party: cold (SIP REFER) or warm (a new INVITE into the room). */
export type TransferRequest = ({ kind: 'cold' } & ColdTransferRequest) | ({ kind: 'warm' } & WarmTransferRequest);

/**
 * How a transfer went: bridged (the destination answered: the REFER was accepted, or the
 * warm target joined the room), or not, with the dial's reason. A refusal of the phone
 * network is an outcome, not an error.
 */
export type TransferOutcome =
  | { bridged: true; participant_identity: string }
  | { bridged: false; reason: DialFailureReason };

/** What one operation did, in order (the sandbox keeps them for tests and local inspection). */
export type MediaOperation =
  | { op: 'start_call'; call: MediaCall }
  | { op: 'dispatch_agent'; room: string; call: MediaCall }
  | { op: 'dial_out'; request: Omit<DialRequest, 'trunk'>; outcome: DialOutcome }
  | { op: 'cold_transfer'; request: ColdTransferRequest; outcome?: TransferOutcome }
  | { op: 'warm_transfer'; request: Omit<DialRequest, 'trunk'>; outcome: DialOutcome }
  | { op: 'end_call'; room: string }
  | { op: 'send_data'; room: string; topic: string; data: unknown }
  | { op: 'remove_participant'; room: string; identity: string }
  | { op: 'allow_publish'; room: string; identity: string }
  | { op: 'record_room'; room: string; upload: RecordingUpload }
  | { op: 'set_subscriptions'; room: string; identity: string; track_sids: string[]; subscribe: boolean };

/** One participant of a room and the audio tracks it publishes, as the media server lists them. */
export interface RoomAudio {
  identity: string;
  /** The agent worker (LiveKit's `agent` participant kind). */
  agent: boolean;
  tracks: { sid: string; name: string }[];
}

export interface MediaAdapter {
  readonly kind: MediaKind;
  /** Creates the room named after the call_id (with its metadata) and dispatches the agent worker into it. */
  startCall(call: MediaCall): Promise<MediaSession>;
  /**
   * Dispatches the agent worker into an existing room (an inbound SIP call, whose room
   * LiveKit's dispatch rule created). Answers the dispatch ID.
   */
  dispatchAgent(room: string, call: MediaCall): Promise<string>;
  /**
   * Dials the callee into the call's room over the from number's outbound trunk without
   * waiting for the answer (LiveKit: placed, the answer or failure comes as events), or with
   * the outcome at once when it is known already (the sandbox's, a refusal).
   */
  dialOut(request: DialRequest): Promise<DialStart>;
  coldTransfer(request: ColdTransferRequest): Promise<void>;
  warmTransfer(request: WarmTransferRequest): Promise<DialOutcome>;
  /**
   * Transfers the call's phone party (the call engine's one entry for transfers): cold by
   * SIP REFER of that participant, warm by dialling the destination into the room over the
   * from number's trunk. Answers once the destination answered or the transfer failed.
   */
  transfer(request: TransferRequest): Promise<TransferOutcome>;
  /** Ends the call's media: deletes the room, which disconnects everyone in it. A room already gone is fine. */
  endCall(room: string): Promise<void>;
  /**
   * A reliable data message to the room on `topic` (the agent worker's live controls,
   * docs/calls-media.md): LiveKit's SendData; the data is JSON.
   */
  sendData(room: string, topic: string, data: unknown): Promise<void>;
  /** Removes a participant from the room (a live listener who left); one not in the room is fine. */
  removeParticipant(room: string, identity: string): Promise<void>;
  /** Lets a participant already in the room publish (a listener taking the call over); one not in the room is fine. */
  allowPublish(room: string, identity: string): Promise<void>;
  /** The room's participants with their published audio tracks (LiveKit's ListParticipants); the sandbox has none. */
  listAudio(room: string): Promise<RoomAudio[]>;
  /**
   * Subscribes `identity` to these tracks, or unsubscribes it from them (LiveKit's
   * UpdateSubscriptions, applied by the server: the participant's client has no say). What
   * a participant hears is decided this way because rtc-node has no per-track permissions.
   */
  setSubscriptions(room: string, identity: string, trackSids: string[], subscribe: boolean): Promise<void>;
  /**
   * Records the room's audio (all participants mixed) into the bucket until the room ends:
   * LiveKit's room composite Egress, audio only, OGG. Answers the egress ID; its end comes
   * as the `egress_ended` webhook.
   */
  recordRoom(room: string, upload: RecordingUpload): Promise<string>;
}

/** The data topic of live controls for the agent worker (docs/calls-media.md, Live controls). */
export const LIVE_CONTROL_TOPIC = 'parley.live';

/**
 * The name of the agent worker's hold track: the hold music of an agentic warm transfer plays
 * on a track of its own, so the caller can hear it while unsubscribed from the agent's voice,
 * which is speaking privately with the transfer's destination.
 */
export const HOLD_TRACK_NAME = 'parley-hold';

/** The identity a dialled callee gets in the room unless the request names one. */
export const CALLEE_IDENTITY = 'callee';
/** The identity a warm transfer's target gets in the room unless the request names one. */
export const transferIdentity = (number: string) => `transfer-${number}`;

export interface SipUri {
  user: string;
  host: string;
  transport?: 'UDP' | 'TCP' | 'TLS';
}

/**
 * A `sip:`/`sips:` destination's parts: the user, the host[:port], and `;transport=`
 * (udp, tcp or tls, any case). Undefined for anything else (an E.164 number), and for a
 * transport that is none of those (the call engine refuses such a destination first).
 */
export function parseSipUri(value: string): SipUri | undefined {
  const match = /^sips?:(?:([^@;\s]+)@)?([^;?\s]+)((?:;[^?\s]*)?)/i.exec(value.trim());
  if (!match) return undefined;
  const params = new Map(
    match[3]!
      .split(';')
      .filter(Boolean)
      .map((param) => {
        const at = param.indexOf('=');
        return [(at === -1 ? param : param.slice(0, at)).toLowerCase(), at === -1 ? '' : param.slice(at + 1)] as const;
      }),
  );
  const transport = params.get('transport')?.toUpperCase();
  if (transport !== undefined && transport !== 'UDP' && transport !== 'TCP' && transport !== 'TLS') return undefined;
  return { user: match[1] ?? '', host: match[2]!, ...(transport ? { transport } : {}) };
}
