import type { TransferOptions } from '../conversation/index.ts';
import type { AgentOverride } from './agent-override.ts';
import type { CallView } from './schemas.ts';

/*
 * The call item's shape (docs/data-model.md): what store.ts reads and writes, named here,
 * apart from store.ts, so the modules store.ts calls (line-store.ts, transcript.ts, the live
 * modules) can name it without importing store.ts back. store.ts re-exports these types
 * for the rest of the domain.
 */

/** What the engine keeps between steps; never answered. */
export interface EngineState {
  /** The sandbox's script: the callee's lines still to say, and how long the call may last. */
  sandbox?: {
    user_lines: string[];
    call_ms: number;
    /** The lines are the ordinary ones (metadata gave sandbox keys but no script): said while the call lasts, they do not hold its hang-up. */
    unscripted?: boolean;
    voicemail?: boolean;
    transfer_ring_ms?: number;
    /** What a sandbox transfer's destination says to an agentic warm transfer's mediator (`metadata.sandbox_transfer_says`). */
    transfer_lines?: string[];
  };
  /** The response engine's own state (shared/conversation), plain JSON. */
  conversation?: unknown;
  /** Whether this call holds a concurrency slot (released exactly once on its end). */
  slot?: boolean;
  /** The index of the callee's next scripted line: a user step carries it, a stale one is dropped. */
  step_seq?: number;
  /** Counts analyses: an analysis step carries it, so a redelivered one changes nothing. */
  analysis_seq?: number;
  /** The last agent-worker report applied (LiveKit calls): reports at or below it change nothing. */
  report_seq?: number;
  /** Measured response-engine turn times (ms), for `latency`. */
  turn_ms?: number[];
  /** When transcript_updated was last sent (at most every 3 s). */
  transcript_sent_at?: number;
  /** The media layer in use when the call started. */
  media?: 'sandbox' | 'livekit';
  /** The media server's room when it is not named after the call (an inbound SIP call's, made by LiveKit's dispatch rule). */
  room?: string;
  /** Why the call was created (outbound dial, web, register, inbound). */
  origin?: 'create-phone-call' | 'create-web-call' | 'register-phone-call' | 'inbound' | 'batch';
  /** The batch task that placed the call (shared/calls/batch-dial.ts); `dialled` adds the batch_dial cost line. */
  batch?: { batch_call_id: string; task_index: number; dialled: boolean };
  /** The caller's SIP participant identity in the room when it is not `callee` (inbound SIP calls): what a cold transfer REFERs. */
  sip_identity?: string;
  /** agent_override of the create request or the inbound webhook's answer, validated (agent-override.ts): this call's configuration only. */
  agent_override?: AgentOverride;
  /** How many of the call's `live_say` texts the sandbox agent has said (live/control.ts). */
  live_said?: number;
  /** The `live_patch.seq` the sandbox agent's conversation has taken in (update-live-call). */
  live_patch_seq?: number;
}

/** Where a call's recording is stored; on the call item, never answered. */
export interface RecordingState {
  key: string;
  content_type: string;
  /** The sandbox's tones (true), or a media server's recording. */
  synthetic: boolean;
  duration_ms: number;
  /** LiveKit Egress that records the room (its file lands at `key` when the egress ends). */
  egress_id?: string;
  /** The egress ended with its file written (egress_ended, complete). */
  ready?: boolean;
  /** The egress ended without a file: the call has no recording. */
  failed?: boolean;
  /** Turns silenced by remove-call-sensitive-data (indexes into transcript_object). */
  silenced_turns?: number[];
  /** A media server's recording removed by scrubbing (it cannot be silenced here), or any recording by the data storage setting basic_attributes_only. */
  removed?: boolean;
  /** The untouched recording, kept while the data storage setting allows (scrubbing.ts). */
  unscrubbed_key?: string;
}

/**
 * A transfer of the call's phone party (docs/calls.md, Transfers): kept at the item's top
 * level, beside `transfer_seq`, so the engine's other writes (which replace `engine`) never
 * undo it.
 */
export interface TransferState {
  kind: 'cold' | 'warm';
  destination: string;
  status: 'dialing' | 'bridged' | 'cancelled' | 'ended';
  started_timestamp: number;
  /** The transfer_seq its start wrote (the `transfer` step carries it). */
  started_seq?: number;
  /** Why a cancelled transfer did not bridge (dial_busy, dial_no_answer, dial_failed, transfer_declined, transfer_timeout, or the call ended first). */
  reason?: string;
  /** The transfer option's fields the engine acts on (agentic config, hold music, bridge cue, public handoff, ring time). */
  options?: TransferOptions;
  /**
   * An agentic warm transfer whose destination answered: the mediator talks to it while the
   * caller stays on hold (`status` is still `dialing`). Absent: ringing.
   */
  phase?: 'consulting';
}

/** One `sip.callStatus` the call's SIP participant reached, when, and who said so. */
export interface SipStatusTransition {
  /** LiveKit's `sip.callStatus`: dialing, ringing, automation, active, hangup (any other value is kept as reported). */
  status: string;
  /** Epoch ms. */
  at: number;
  /** A LiveKit webhook carrying the participant's attributes, the dial's own answer (CreateSIPParticipant), or the agent worker's report of the answer. */
  source: 'webhook' | 'dial' | 'worker';
  /** The webhook event that carried it (participant_joined, participant_left, track_published, …). */
  event?: string;
}

/**
 * What LiveKit reported about a call's SIP leg (shared/calls/artifacts/sip-leg.ts): the SIP
 * participant's identifiers (its `sip.*` attributes) and each callStatus it reached, from
 * LiveKit's webhooks and the dial's answer. Top-level (the engine's writes replace
 * `engine`), bounded (SIP_LEG_MAX_TRANSITIONS), written conditionally on `rev`. Never
 * answered on the call; the SIP trace is built from it.
 */
export interface SipLeg {
  /** Bumped by every write: each write is conditional on the value it read. */
  rev: number;
  participant_identity?: string;
  participant_sid?: string;
  /** `sip.callID`: LiveKit's SIP call ID (SCL_…). */
  livekit_call_id?: string;
  /** `sip.callIDFull`: the dialog's Call-ID header, as the trunk provider sees it. */
  call_id_full?: string;
  /** `sip.phoneNumber`: the phone party (the callee outbound, the caller inbound). */
  phone_number?: string;
  /** `sip.trunkPhoneNumber`: the workspace's number on the trunk. */
  trunk_phone_number?: string;
  /** `sip.hostname`: the host on the far side of LiveKit's SIP service. */
  hostname?: string;
  /** The termination host the outbound trunk dialled (from the dial, when LiveKit named none). */
  trunk_host?: string;
  /** `sip.trunkID`, `sip.ruleID`. */
  trunk_id?: string;
  rule_id?: string;
  /** `lk.sip.inviteTime`: when LiveKit received an inbound INVITE (epoch ms). */
  invite_time?: number;
  /** When LiveKit said the participant joined the room (participant_joined; an inbound caller's INVITE was just accepted). */
  joined_at?: number;
  /** When the dial (CreateSIPParticipant) was sent: the outbound INVITE. */
  dial_started_at?: number;
  /** The SIP status that refused the dial (CreateSIPParticipant's error), when it failed. */
  failure?: { status_code: number; reason: string; at: number };
  /** LiveKit's DisconnectReason when the participant left (CLIENT_INITIATED, ROOM_DELETED, USER_REJECTED, …). */
  disconnect_reason?: string;
  transitions: SipStatusTransition[];
}

export type CallItem = CallView & {
  pk: string;
  sk: string;
  gsi1pk: string;
  gsi1sk: string;
  /** The conversations-by-party entry (gsi2): phone calls with a valid other party only. */
  gsi2pk?: string;
  gsi2sk?: string;
  type: 'call';
  workspace_id: string;
  created_timestamp: number;
  engine: EngineState;
  /** Flattened for the listing index (see docs/data-model.md, The listing index's projection). */
  user_sentiment?: string;
  call_successful?: boolean;
  in_voicemail?: boolean;
  combined_cost?: number;
  e2e_latency_p50?: number;
  /** SHA-256 of the idempotency_key the call was created with (its claim: idempotency.ts), so deleting the call scrubs the stored response. */
  idempotency_claim?: string;
  /** The current (or last) transfer and its counter: each change of a transfer is a write conditional on the counter. */
  transfer_state?: TransferState;
  transfer_seq?: number;
  transfer_destination?: string | null;
  transfer_end_timestamp?: number;
  /** How many of the call's transfers were cancelled without bridging (each cancel adds 1 under the transfer counter's condition): the rollups' transfer_failed. Never answered. */
  transfers_failed?: number;
  /** Where the recording is stored (shared/calls/artifacts/recordings.ts); `recording_url` is the wire field. */
  recording?: RecordingState;
  recording_url?: string;
  /** When remove-call-sensitive-data last scrubbed the call (shared/calls/artifacts/scrubbing.ts). */
  scrubbed_timestamp?: number;
  /** The data storage setting last applied to what the call stores once it was over (data-storage.ts); removed by a new analysis. Never answered. */
  data_storage_applied?: 'everything_except_pii' | 'basic_attributes_only';
  /**
   * Set with a new analysis and removed once its `call_analyzed` is queued: a step that stored
   * the analysis but failed to queue the event finds it on its retry and queues it then
   * (engine/finish.ts `analyze`). Never answered.
   */
  analyzed_event_pending?: boolean;
  /** Live calls (live/store.ts): top-level, so the engine's writes (which replace `engine`) never undo them. Never answered. */
  /** The controls and supervisor-say texts of a call stored before controls were items of their own (read, never written now). */
  live_log?: LiveLogEntry[];
  live_say?: string[];
  /** How many live controls the call has (`CONTROL#` items), and how many of them are supervisor-say: moved with each control's item. */
  control_count?: number;
  say_count?: number;
  live_patch?: { seq: number; dynamic_variables?: Record<string, string>; agent_override?: AgentOverride };
  live_take_over?: { participant_id: string; timestamp: number };
  live_watched?: boolean;
  /**
   * 1 once the outbound dial was placed (engine.ts `dial`): a redelivered dial step finds it
   * and dials nothing, and the dial-timeout step carries it. Top-level, so the engine's
   * writes (which replace `engine`) never undo it. Never answered.
   */
  dial_seq?: number;
  /** LiveKit's reports about the call's SIP leg (sip-leg.ts), for the SIP trace. Never answered. */
  sip_leg?: SipLeg;
  /**
   * How many transcript lines the call has (line-store.ts): their positions are 0 to
   * line_count - 1, and every write of lines moves it in the same transaction. Absent on a
   * call that has none yet, and on calls stored with their transcript on the item. Never answered.
   */
  line_count?: number;
};

/** A live control as kept (its `CONTROL#` item; `live_log` on a call stored before those): who did what, and where in the transcript. */
export interface LiveLogEntry {
  type: 'listener_joined' | 'listener_left' | 'take_over' | 'supervisor_say' | 'live_update' | 'additional_context';
  timestamp: number;
  /** The transcript's length (entries written) when it was written: its place among the transcript's entries. */
  t_index: number;
  participant_id?: string;
  text?: string;
  fields?: string[];
}
