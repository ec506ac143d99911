import { randomBytes } from 'node:crypto';
import { isProduction } from '../../platform/config.ts';
import {
  CALLEE_IDENTITY,
  transferIdentity,
  type ColdTransferRequest,
  type DialOutcome,
  type DialRequest,
  type MediaAdapter,
  type MediaCall,
  type MediaOperation,
  type MediaSession,
  type RecordingUpload,
  type RoomAudio,
  type TransferOutcome,
  type TransferRequest,
  type WarmTransferRequest,
} from './types.ts';

/**
 * The media layer without media (LIVEKIT_URL unset): nothing is created anywhere and no
 * audio flows; the call engine runs the conversation itself. A dial's outcome comes from
 * the dialled number's last four digits, so users can try every path of their agent:
 *
 * | last four | outcome |
 * |---|---|
 * | 0001 | busy: not_connected, dial_busy |
 * | 0002 | no answer: not_connected, dial_no_answer |
 * | 0003 | voicemail: connected, voicemail (the engine ends it voicemail_reached) |
 * | 0004 | failed: not_connected, dial_failed |
 * | anything else | answers |
 *
 * Warm transfers follow the same rule for the transfer target.
 */
function sandboxDialOutcome(toNumber: string, identity: string = CALLEE_IDENTITY): DialOutcome {
  switch (toNumber.slice(-4)) {
    case '0001':
      return { connected: false, status: 'not_connected', disconnection_reason: 'dial_busy' };
    case '0002':
      return { connected: false, status: 'not_connected', disconnection_reason: 'dial_no_answer' };
    case '0003':
      return { connected: true, voicemail: true, participant_identity: identity };
    case '0004':
      return { connected: false, status: 'not_connected', disconnection_reason: 'dial_failed' };
    default:
      return { connected: true, voicemail: false, participant_identity: identity };
  }
}

export class SandboxMedia implements MediaAdapter {
  readonly kind = 'sandbox' as const;
  /**
   * Every operation, in order, for tests and local inspection. Not kept in production: a
   * warm Lambda serves calls for hours and the list would only grow.
   */
  readonly operations: MediaOperation[] = [];

  constructor(private readonly record: boolean = !isProduction) {}

  async startCall(call: MediaCall): Promise<MediaSession> {
    this.note({ op: 'start_call', call });
    return { room: call.call_id, dispatch_id: `sandbox_${randomBytes(6).toString('hex')}` };
  }

  async dispatchAgent(room: string, call: MediaCall): Promise<string> {
    this.note({ op: 'dispatch_agent', room, call });
    return `sandbox_${randomBytes(6).toString('hex')}`;
  }

  async dialOut(request: DialRequest): Promise<DialOutcome> {
    const outcome = sandboxDialOutcome(request.to_number, request.participant_identity ?? CALLEE_IDENTITY);
    this.note({ op: 'dial_out', request: withoutTrunk(request), outcome });
    return outcome;
  }

  async coldTransfer(request: ColdTransferRequest): Promise<void> {
    this.note({ op: 'cold_transfer', request });
  }

  async warmTransfer(request: WarmTransferRequest): Promise<DialOutcome> {
    const outcome = sandboxDialOutcome(request.to_number, request.participant_identity ?? transferIdentity(request.to_number));
    this.note({ op: 'warm_transfer', request: withoutTrunk(request), outcome });
    return outcome;
  }

  /**
   * Both kinds decide by the destination's last four digits, like dials: 0001 busy, 0002 no
   * answer, 0004 failed (the transfer is cancelled); anything else (0003 included: a
   * voicemail answers) bridges.
   */
  async transfer(request: TransferRequest): Promise<TransferOutcome> {
    if (request.kind === 'warm') {
      const { kind: _kind, ...dial } = request;
      return asTransferOutcome(await this.warmTransfer(dial));
    }
    const { kind: _kind, ...cold } = request;
    const target = cold.to.startsWith('sip:') ? '' : cold.to.replace(/^tel:/, '');
    const outcome = asTransferOutcome(sandboxDialOutcome(target, cold.participant_identity));
    this.note({ op: 'cold_transfer', request: cold, outcome });
    return outcome;
  }

  async endCall(room: string): Promise<void> {
    this.note({ op: 'end_call', room });
  }

  /** The sandbox has no audio (its calls get a synthetic WAV at the end instead): noted only. */
  async recordRoom(room: string, upload: RecordingUpload): Promise<string> {
    this.note({ op: 'record_room', room, upload });
    return `EG_sandbox_${room}`;
  }

  async sendData(room: string, topic: string, data: unknown): Promise<void> {
    this.note({ op: 'send_data', room, topic, data });
  }

  async removeParticipant(room: string, identity: string): Promise<void> {
    this.note({ op: 'remove_participant', room, identity });
  }

  async allowPublish(room: string, identity: string): Promise<void> {
    this.note({ op: 'allow_publish', room, identity });
  }

  /** No participants publish anything here. */
  async listAudio(_room: string): Promise<RoomAudio[]> {
    return [];
  }

  async setSubscriptions(room: string, identity: string, trackSids: string[], subscribe: boolean): Promise<void> {
    this.note({ op: 'set_subscriptions', room, identity, track_sids: trackSids, subscribe });
  }

  private note(operation: MediaOperation): void {
    if (this.record) this.operations.push(operation);
  }
}

function asTransferOutcome(outcome: DialOutcome): TransferOutcome {
  return outcome.connected
    ? { bridged: true, participant_identity: outcome.participant_identity }
    : { bridged: false, reason: outcome.disconnection_reason };
}

/** A dial request as recorded: the trunk holds the number's SIP password, which is never kept. */
function withoutTrunk(request: DialRequest): Omit<DialRequest, 'trunk'> {
  const { trunk: _trunk, ...rest } = request;
  return rest;
}
