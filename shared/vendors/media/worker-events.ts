import * as z from 'zod';
import { customSipHeaders, lazySchema } from '../../platform/http/schemas.ts';

/**
 * What the agent worker posts to `POST /internal/calls/{call_id}/events`
 * (Authorization: Bearer <report_token>), one event per request, in the order they
 * happened (docs/calls-media.md). `sequence` counts from 1 per call and never repeats, so
 * the route can drop a retried or late event: the calls domain applies an event only if its
 * sequence is above the last one it applied.
 */
const base = () => ({
  sequence: z.number().int().min(1),
  /** Epoch ms on the worker's clock when it happened. */
  timestamp: z.number().int().min(0),
});

const word = lazySchema(() => z.strictObject({ word: z.string(), start: z.number().min(0), end: z.number().min(0) }));

/**
 * Each utterance and tool call is stored as an item of its own (docs/data-model.md, A call's
 * transcript lines; DynamoDB's item limit is 400 KB): its JSON may be at most this many bytes
 * (about 2,500 words with their timings; a worker splits a longer turn).
 */
export const MAX_WORKER_ENTRY_BYTES = 128 * 1024;
/** Utterances in one transcript_updated: its lines are written in one transaction with the call (at most 100 items). */
export const MAX_REPORT_UTTERANCES = 50;
/** A worker report's body: the lines of one report are written in one transaction (at most 4 MB). */
export const MAX_WORKER_REPORT_BYTES = 2 * 1024 * 1024;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
const utf8Text = (max: number) => z.string().max(max).refine((text) => Buffer.byteLength(text, 'utf8') <= max, `Must be at most ${max} bytes as UTF-8`);

/** One finished utterance, as on the call's transcript_object (retell-sdk's shape). */
const workerUtteranceSchema = lazySchema(() =>
  z
    .strictObject({
      role: z.enum(['agent', 'user', 'transfer_target']),
      content: z.string().max(100_000),
      /** Word timings in seconds from the call's start (may be empty). */
      words: z.array(word).max(10_000).default([]),
    })
    .refine((utterance) => jsonBytes(utterance) <= MAX_WORKER_ENTRY_BYTES, `Must be at most ${MAX_WORKER_ENTRY_BYTES} bytes as JSON (split a longer utterance)`),
);

/** Why the call ended, as the worker saw it (the engine may add its own reasons). */
export const WORKER_END_REASONS = [
  'user_hangup',
  'agent_hangup',
  'call_transfer',
  'voicemail_reached',
  'ivr_reached',
  'inactivity',
  'max_duration_reached',
  'transfer_bridged',
  'transfer_cancelled',
  'error_llm_websocket_open',
  'error_llm_websocket_lost_connection',
  'error_llm_websocket_runtime',
  'error_llm_websocket_corrupt_payload',
  'error_no_audio_received',
  'error_asr',
  'error_unknown',
] as const;

/**
 * Figures a call_ended carries, per metric at most this many (ms): an hour of replies every
 * two seconds, and the call item (which stores them as call.latency's `values`) stays small.
 */
export const MAX_LATENCY_VALUES = 2000;
const latencyValues = () => z.array(z.number().int().min(0).max(3_600_000)).max(MAX_LATENCY_VALUES).optional();

/**
 * What the worker measured (retell-sdk's call `latency` keys): `e2e` the caller's last voiced
 * frame to the agent's first audio of the reply, `llm` the model's time to its first token,
 * `tts` the voice's time to its first audio, `asr` the recogniser's final transcript after
 * the caller stopped.
 */
const workerLatencySchema = lazySchema(() =>
  z.strictObject({ e2e: latencyValues(), llm: latencyValues(), tts: latencyValues(), asr: latencyValues() }),
);

export const workerEventSchema = lazySchema(() =>
z.discriminatedUnion('event', [
  z.strictObject({
    event: z.literal('transcript_updated'),
    ...base(),
    /** The utterances finished since the previous transcript_updated, in order. */
    utterances: z.array(workerUtteranceSchema).min(1).max(MAX_REPORT_UTTERANCES),
  }),
  z.strictObject({
    event: z.literal('tool_call_invoked'),
    ...base(),
    tool_call_id: z.string().min(1).max(200),
    name: z.string().min(1).max(200),
    /** The arguments as the model produced them: a JSON object's text. */
    arguments: utf8Text(100_000),
  }),
  z.strictObject({
    event: z.literal('tool_call_result'),
    ...base(),
    tool_call_id: z.string().min(1).max(200),
    content: utf8Text(100_000),
    successful: z.boolean(),
  }),
  z.strictObject({
    /** The agent transfers the call (its transfer_call tool, a flow transfer node): the engine runs the transfer. */
    event: z.literal('transfer_requested'),
    ...base(),
    /** An E.164 number or a `sip:` URI. */
    destination: z.string().min(1).max(512),
    /** cold: SIP REFER of the caller; warm: the destination is dialled into the room. */
    kind: z.enum(['cold', 'warm']).default('cold'),
    /**
     * The tool's (or node's) `transfer_option` as configured (retell-sdk TransferOption*):
     * an `agentic_warm_transfer` is consulted before the bridge, and its hold music, bridge
     * cue, public handoff and ring duration are applied (docs/calls.md, Agentic warm transfer).
     */
    transfer_option: z.looseObject({ type: z.enum(['cold_transfer', 'warm_transfer', 'agentic_warm_transfer']) }).optional(),
    /** The tool's (or node's) `custom_sip_headers` as configured (placeholders are filled by Parley), sent on the REFER or the INVITE. */
    custom_sip_headers: customSipHeaders().optional(),
  }),
  z.strictObject({
    /** An agentic warm transfer's mediator decided (its bridge_transfer / cancel_transfer tool) while consulting the destination. */
    event: z.literal('transfer_decision'),
    ...base(),
    decision: z.enum(['bridge', 'cancel']),
  }),
  z.strictObject({
    /**
     * The dialled callee answered: its SIP participant's `sip.callStatus` became `active`, a
     * change LiveKit sends no webhook for, which the worker sees in the room. An outbound call
     * that is still ringing goes live.
     */
    event: z.literal('callee_answered'),
    ...base(),
  }),
  z.strictObject({
    event: z.literal('call_ended'),
    ...base(),
    disconnection_reason: z.enum(WORKER_END_REASONS),
    /** The call's latency figures, one value (ms) per agent reply or caller turn; call.latency's percentiles are computed from them. */
    latency: workerLatencySchema.optional(),
  }),
]),
);

export type WorkerEvent = z.infer<typeof workerEventSchema>;
export type WorkerUtterance = z.infer<typeof workerUtteranceSchema>;
export type WorkerLatency = z.infer<typeof workerLatencySchema>;
