import type * as LiveKitSdk from 'livekit-server-sdk';
import type {
  AgentDispatchClient,
  EgressClient,
  RoomServiceClient,
  SipClient,
  CreateSipOutboundTrunkOptions,
  CreateSipParticipantOptions,
} from 'livekit-server-sdk';
import { ApiError, Unavailable, VendorFailed } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import { wire } from '../../platform/naming.ts';
import { traced } from '../../platform/observability/tracing.ts';
import type { LiveKitCredentials } from './credentials.ts';
import { loadLiveKitSdk } from './sdk.ts';
import {
  CALLEE_IDENTITY,
  parseSipUri,
  type SipUri,
  transferIdentity,
  type ColdTransferRequest,
  DEFAULT_RINGING_TIMEOUT_SECONDS,
  dialFailureOfSipStatus,
  type DialFailureReason,
  type DialOutcome,
  type DialRequest,
  type DialStart,
  type DispatchMetadata,
  type MediaAdapter,
  type MediaCall,
  type MediaSession,
  type OutboundTrunkConfig,
  type RecordingUpload,
  type RoomAudio,
  type SipDialReport,
  type TransferOutcome,
  type TransferRequest,
  type TrunkStore,
  type WarmTransferRequest,
} from './types.ts';

export interface LiveKitMediaOptions extends LiveKitCredentials {
  /** LIVEKIT_URL (ws(s) or http(s); the SDK speaks HTTP to the same host). */
  url: string;
  /** LIVEKIT_AGENT_NAME: the worker explicit dispatch addresses. */
  agentName: string;
  trunks: TrunkStore;
  /** The worker's report access for a call (worker-token.ts); injected so tests can pin it. */
  reportAccess: (callId: string) => Promise<{ report_url: string; report_token: string }>;
  /** Per-request timeout of LiveKit's API, in seconds (a warm transfer's dial waits for the ringing timeout on top). */
  requestTimeoutSeconds?: number;
}

/** LiveKit's SIPTransport enum values (not exported by livekit-server-sdk): AUTO 0, UDP 1, TCP 2, TLS 3. */
const SIP_TRANSPORT = { UDP: 1, TCP: 2, TLS: 3 } as const;
/** ParticipantInfo.Kind AGENT (the enum is not exported by livekit-server-sdk). */
const AGENT_KIND = 4;
type SipOutboundConfig = NonNullable<Parameters<SipClient['createSipParticipant']>[4]>;
/** What Parley tells a caller to retry after when LiveKit cannot be reached. */
const RETRY_AFTER_SECONDS = 5;

/** The SDK's service clients for one LiveKitMedia, made on its first request. */
interface Clients {
  sdk: typeof LiveKitSdk;
  rooms: RoomServiceClient;
  dispatch: AgentDispatchClient;
  sip: SipClient;
  egress: EgressClient;
}

/**
 * The media layer on a LiveKit server through livekit-server-sdk (Twirp over HTTP, each
 * request signed with a short-lived JWT from the API key and secret):
 * - a call's room is named after its call_id, so webhooks and the worker find the call
 *   from the room name alone;
 * - the agent worker is dispatched explicitly (AgentDispatchService) with the call's
 *   DispatchMetadata, never automatically, so a room without a Parley call gets no agent;
 * - outbound dials are SIP participants over the from number's outbound trunk, created on
 *   the number's first dial and kept in the TrunkStore; a call's dial is placed without
 *   waiting for the answer (the callee's events move the call), a warm transfer's waits;
 * - cold transfers are SIP REFERs, warm transfers a second SIP participant.
 *
 * Failures: a dial the phone network refused (busy, no answer, any other SIP status) is a
 * DialOutcome, not an error. Anything else LiveKit refuses is a 502; LiveKit unreachable,
 * timing out or saying it is overloaded is a 503. LiveKit's own message goes to the logs
 * only, and no message carries the key or secret.
 *
 * The SDK is loaded on the first request (sdk.ts), not at import: constructing a
 * LiveKitMedia loads nothing, and the service clients are made once per instance.
 */
export class LiveKitMedia implements MediaAdapter {
  readonly kind = 'livekit' as const;
  private clientsLoaded?: Promise<Clients>;
  /** Trunk creations in flight in this process, so concurrent first dials of one number create one trunk. */
  private readonly creatingTrunks = new Map<string, Promise<string>>();

  constructor(private readonly options: LiveKitMediaOptions) {}

  private clients(): Promise<Clients> {
    return (this.clientsLoaded ??= loadLiveKitSdk().then((sdk) => {
      const { url, apiKey, apiSecret } = this.options;
      // failover is for LiveKit Cloud's regions; it only ever applies to *.livekit.cloud hosts.
      const clientOptions = { requestTimeout: this.options.requestTimeoutSeconds ?? 10 };
      return {
        sdk,
        rooms: new sdk.RoomServiceClient(url, apiKey, apiSecret, clientOptions),
        dispatch: new sdk.AgentDispatchClient(url, apiKey, apiSecret, clientOptions),
        sip: new sdk.SipClient(url, apiKey, apiSecret, clientOptions),
        egress: new sdk.EgressClient(url, apiKey, apiSecret, clientOptions),
      };
    }));
  }

  async startCall(call: MediaCall): Promise<MediaSession> {
    // Room metadata is visible to every participant (the web caller too): the call's
    // identity only, never the report token.
    const metadata = JSON.stringify({ call_id: call.call_id, call_type: call.call_type, agent_id: call.agent_id });
    const { rooms } = await this.clients();
    await attempt('CreateRoom', () => rooms.createRoom({ name: call.call_id, metadata }));
    const dispatchId = await this.dispatchAgent(call.call_id, call);
    return { room: call.call_id, dispatch_id: dispatchId };
  }

  async dispatchAgent(room: string, call: MediaCall): Promise<string> {
    const metadata: DispatchMetadata = { ...call, ...(await this.options.reportAccess(call.call_id)) };
    const clients = await this.clients();
    const dispatch = await attempt('CreateDispatch', () =>
      clients.dispatch.createDispatch(room, this.options.agentName, { metadata: JSON.stringify(metadata) }),
    );
    return dispatch.id;
  }

  /**
   * Placed, not answered: CreateSIPParticipant answers as soon as LiveKit's SIP service took
   * the dial, so no function waits while the phone rings. The callee's answer or failure
   * reaches the call engine as events (the SIP participant's webhooks, the agent worker's
   * report).
   */
  dialOut(request: DialRequest): Promise<DialStart> {
    return this.dial(request, request.participant_identity ?? CALLEE_IDENTITY, false);
  }

  /** A transfer step decides on the outcome, so this dial waits until the destination answered or failed. */
  async warmTransfer(request: WarmTransferRequest): Promise<DialOutcome> {
    const outcome = await this.dial(request, request.participant_identity ?? transferIdentity(request.to_number), true);
    return 'placed' in outcome ? { connected: true, voicemail: false, participant_identity: outcome.participant_identity, ...(outcome.sip ? { sip: outcome.sip } : {}) } : outcome;
  }

  async coldTransfer(request: ColdTransferRequest): Promise<void> {
    const transferTo = request.to.startsWith('sip:') || request.to.startsWith('tel:') ? request.to : `tel:${request.to}`;
    const { sip } = await this.clients();
    await attempt('TransferSIPParticipant', () =>
      sip.transferSipParticipant(request.call_id, request.participant_identity, transferTo, {
        ...(request.sip_headers ? { headers: request.sip_headers } : {}),
      }),
    );
  }

  /**
   * Cold: a SIP REFER of the caller's SIP participant (LiveKit answers once the transfer
   * target answered, or with the SIP status that refused it). Warm: the target is dialled
   * into the room (a second SIP participant over the from number's trunk); the agent worker
   * leaves once it joins (docs/calls-media.md).
   */
  async transfer(request: TransferRequest): Promise<TransferOutcome> {
    if (request.kind === 'warm') {
      const { kind: _kind, ...dial } = request;
      const outcome = await this.warmTransfer(dial);
      return outcome.connected
        ? { bridged: true, participant_identity: outcome.participant_identity }
        : { bridged: false, reason: outcome.disconnection_reason };
    }
    const { kind: _kind, ...cold } = request;
    try {
      await this.coldTransfer(cold);
      return { bridged: true, participant_identity: cold.participant_identity };
    } catch (error) {
      if (error instanceof DialRefused) return { bridged: false, reason: error.reason };
      throw error;
    }
  }

  async recordRoom(room: string, upload: RecordingUpload): Promise<string> {
    const { sdk, egress } = await this.clients();
    const { EncodedFileOutput, EncodedFileType, S3Upload } = sdk;
    const file = new EncodedFileOutput({
      fileType: EncodedFileType.OGG,
      filepath: upload.key,
      // No keys travel: LiveKit assumes the operator's role to write into the bucket.
      output: { case: 's3', value: new S3Upload({ bucket: upload.bucket, region: upload.region, assumeRoleArn: upload.role_arn, tagging: upload.tagging ?? '' }) },
    });
    const info = await attempt('StartRoomCompositeEgress', () => egress.startRoomCompositeEgress(room, file, { audioOnly: true }));
    return info.egressId;
  }

  async endCall(room: string): Promise<void> {
    const { rooms } = await this.clients();
    try {
      await attempt('DeleteRoom', () => rooms.deleteRoom(room));
    } catch (error) {
      // Ending is idempotent: the room may have closed on its own (everyone left) already.
      if (error instanceof RoomGone) return;
      throw error;
    }
  }

  async sendData(room: string, topic: string, data: unknown): Promise<void> {
    const payload = new TextEncoder().encode(JSON.stringify(data));
    const { sdk, rooms } = await this.clients();
    await attempt('SendData', () => rooms.sendData(room, payload, sdk.DataPacket_Kind.RELIABLE, { topic }));
  }

  async removeParticipant(room: string, identity: string): Promise<void> {
    const { rooms } = await this.clients();
    try {
      await attempt('RemoveParticipant', () => rooms.removeParticipant(room, identity));
    } catch (error) {
      // A listener who never joined (or already left) is not in the room: nothing to remove.
      if (error instanceof RoomGone) return;
      throw error;
    }
  }

  async allowPublish(room: string, identity: string): Promise<void> {
    const { rooms } = await this.clients();
    try {
      await attempt('UpdateParticipant', () =>
        rooms.updateParticipant(room, identity, { permission: { canPublish: true, canSubscribe: true, canPublishData: true } }),
      );
    } catch (error) {
      // Not in the room yet: the publish token the take-over answered lets it join publishing.
      if (error instanceof RoomGone) return;
      throw error;
    }
  }

  async listAudio(room: string): Promise<RoomAudio[]> {
    const { sdk, rooms } = await this.clients();
    const participants = await attempt('ListParticipants', () => rooms.listParticipants(room));
    return participants.map((participant) => ({
      identity: participant.identity,
      agent: participant.kind === AGENT_KIND,
      tracks: participant.tracks.filter((track) => track.type === sdk.TrackType.AUDIO).map((track) => ({ sid: track.sid, name: track.name })),
    }));
  }

  async setSubscriptions(room: string, identity: string, trackSids: string[], subscribe: boolean): Promise<void> {
    if (!trackSids.length) return;
    const { rooms } = await this.clients();
    await attempt('UpdateSubscriptions', () => rooms.updateSubscriptions(room, identity, trackSids, subscribe));
  }

  /** One dial: answered (or refused) when `untilAnswered`, else placed as soon as LiveKit took it. */
  private async dial(request: DialRequest, identity: string, untilAnswered: boolean): Promise<DialStart> {
    // A SIP URI destination (a warm transfer to `sip:desk@pbx.example.com;transport=tcp`) is
    // dialled at its own host with its own transport (LiveKit's per-request trunk), not over
    // the number's trunk.
    const uri = parseSipUri(request.to_number);
    if (uri) return this.dialSipUri(request, identity, uri, untilAnswered);
    const trunkId = await this.outboundTrunk(request.from_number, request.trunk);
    const options = this.dialOptions(request, identity, untilAnswered);
    const { sip } = await this.clients();
    return this.placeDial(identity, sipHost(request.trunk.address), untilAnswered, () =>
      sip.createSipParticipant(trunkId, request.to_number, request.call_id, options),
    );
  }

  private async dialSipUri(request: DialRequest, identity: string, uri: SipUri, untilAnswered: boolean): Promise<DialStart> {
    const options = this.dialOptions(request, identity, untilAnswered);
    // The request's constructor takes the config's plain fields (protobuf-es PartialMessage);
    // the SDK types the parameter as the message class, which @livekit/protocol (not a direct
    // dependency) would be needed to build.
    const trunk = { hostname: uri.host, transport: uri.transport ? SIP_TRANSPORT[uri.transport] : 0 } as unknown as SipOutboundConfig;
    const { sip } = await this.clients();
    return this.placeDial(identity, uri.host, untilAnswered, () => sip.createSipParticipant('', uri.user, request.call_id, options, trunk));
  }

  /** One dial's options, whichever trunk it goes over. */
  private dialOptions(request: DialRequest, identity: string, untilAnswered: boolean): CreateSipParticipantOptions {
    return {
      fromNumber: request.caller_id ?? request.from_number,
      participantIdentity: identity,
      // Waiting, LiveKit answers once the callee picked up or the dial failed (SipCallError with the SIP status).
      waitUntilAnswered: untilAnswered,
      ringingTimeout: request.ringing_timeout_seconds ?? DEFAULT_RINGING_TIMEOUT_SECONDS,
      timeout: this.options.requestTimeoutSeconds,
      ...(request.sip_headers ? { headers: request.sip_headers } : {}),
    };
  }

  private async placeDial(
    identity: string,
    host: string,
    untilAnswered: boolean,
    create: () => Promise<{ sipCallId?: string; participantId?: string }>,
  ): Promise<DialStart> {
    const startedAt = Date.now();
    try {
      const answer = await attempt('CreateSIPParticipant', create);
      const sip: SipDialReport = {
        started_at: startedAt,
        ended_at: Date.now(),
        participant_identity: identity,
        host,
        ...(answer?.sipCallId ? { sip_call_id: answer.sipCallId } : {}),
        ...(answer?.participantId ? { participant_id: answer.participantId } : {}),
      };
      if (!untilAnswered) return { placed: true, participant_identity: identity, sip };
      return { connected: true, voicemail: false, participant_identity: identity, sip };
    } catch (error) {
      if (error instanceof DialRefused) {
        const sip: SipDialReport = {
          started_at: startedAt,
          ended_at: Date.now(),
          participant_identity: identity,
          host,
          ...(error.sipStatusCode !== undefined ? { status_code: error.sipStatusCode } : {}),
          ...(error.sipStatus ? { status: error.sipStatus } : {}),
        };
        return { connected: false, status: 'not_connected', disconnection_reason: error.reason, sip };
      }
      throw error;
    }
  }

  /**
   * The number's outbound trunk: the stored one, else a new one stored with putIfAbsent.
   * Two dials racing on a fresh number (two Lambdas) both create a trunk; the store keeps
   * one, and the loser deletes its own so LiveKit is left with exactly one per number.
   */
  private outboundTrunk(number: string, config: OutboundTrunkConfig): Promise<string> {
    const inFlight = this.creatingTrunks.get(number);
    if (inFlight) return inFlight;
    const pending = this.findOrCreateTrunk(number, config).finally(() => this.creatingTrunks.delete(number));
    this.creatingTrunks.set(number, pending);
    return pending;
  }

  private async findOrCreateTrunk(number: string, config: OutboundTrunkConfig): Promise<string> {
    const stored = await this.options.trunks.get(number);
    if (stored) return stored;
    const options: CreateSipOutboundTrunkOptions = {
      transport: config.transport ? SIP_TRANSPORT[config.transport] : 0,
      metadata: JSON.stringify({ number }),
      ...(config.auth_username ? { authUsername: config.auth_username } : {}),
      ...(config.auth_password ? { authPassword: config.auth_password } : {}),
    };
    const { sip } = await this.clients();
    const created = await attempt('CreateSIPOutboundTrunk', () =>
      sip.createSipOutboundTrunk(`${wire.service} ${number}`, sipHost(config.address), [number], options),
    );
    const winner = await this.options.trunks.putIfAbsent(number, created.sipTrunkId);
    if (winner !== created.sipTrunkId) {
      await attempt('DeleteSIPTrunk', () => sip.deleteSipTrunk(created.sipTrunkId)).catch((error: unknown) => {
        // A leftover trunk costs nothing and is never used again; the dial goes on with the winner.
        logger.warn('Could not delete a duplicate LiveKit outbound trunk', {
          trunkId: created.sipTrunkId,
          reason: error instanceof Error ? error.message : String(error),
        });
      });
    }
    return winner;
  }
}

/**
 * The host[:port] LiveKit dials: a number's termination URI without its `sip:` scheme and
 * `;parameters` (the transport is a field of the trunk).
 */
export function sipHost(address: string): string {
  const withoutScheme = /^sips?:/i.test(address) ? address.slice(address.indexOf(':') + 1) : address;
  const end = withoutScheme.indexOf(';');
  return (end === -1 ? withoutScheme : withoutScheme.slice(0, end)).trim();
}

/** A dial the phone network refused: a DialOutcome, not an error of Parley's. */
class DialRefused extends Error {
  constructor(
    readonly reason: DialFailureReason,
    /** The SIP status LiveKit reported (SipCallError's metadata), for the call's SIP trace. */
    readonly sipStatusCode?: number,
    readonly sipStatus?: string,
  ) {
    super(reason);
  }
}

/** DeleteRoom on a room that is already gone. */
class RoomGone extends Error {}

/** Twirp statuses that mean LiveKit is overloaded or not answering in time: worth a retry. */
const RETRYABLE_STATUS = new Set([408, 429, 502, 503, 504]);

/** Runs one LiveKit API call (a `livekit` trace subsegment), turning its failures into Parley's errors. */
async function attempt<T>(operation: string, call: () => Promise<T>): Promise<T> {
  try {
    return await traced('livekit', call);
  } catch (error) {
    // The SDK is loaded (the call used its clients): its error classes, for instanceof.
    throw failure(operation, error, await loadLiveKitSdk());
  }
}

function failure(operation: string, error: unknown, { SipCallError, TwirpError }: typeof LiveKitSdk): Error {
  if (error instanceof ApiError || error instanceof DialRefused || error instanceof RoomGone) return error;
  if (error instanceof SipCallError && error.sipStatusCode !== undefined) {
    const code = error.sipStatusCode;
    return new DialRefused(dialFailureOfSipStatus(code), code, error.sipStatus);
  }
  if (error instanceof TwirpError) {
    if ((operation === 'DeleteRoom' || operation === 'RemoveParticipant' || operation === 'UpdateParticipant') && error.code === 'not_found') {
      return new RoomGone();
    }
    logger.warn('LiveKit refused a request', { operation, status: error.status, code: error.code, reason: error.message });
    if (RETRYABLE_STATUS.has(error.status)) {
      return new Unavailable(`LiveKit is unavailable (${operation}: HTTP ${error.status})`, RETRY_AFTER_SECONDS);
    }
    return new VendorFailed(`LiveKit ${operation} failed: HTTP ${error.status}${error.code ? ` ${error.code}` : ''}`);
  }
  // fetch's own failures: refused or reset connections, DNS, the request timeout.
  logger.warn('LiveKit could not be reached', {
    operation,
    reason: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
  });
  return new Unavailable(`LiveKit could not be reached (${operation})`, RETRY_AFTER_SECONDS);
}
