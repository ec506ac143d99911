import { logger } from '../../platform/logger.ts';
import { CALLEE_IDENTITY, type DialStart, type MediaWebhookEvent } from '../../vendors/media/index.ts';
import { writeSipLeg } from './store.ts';
import { findCallItem, type CallItem, type SipLeg, type SipStatusTransition } from '../store.ts';

/*
 * The facts of a LiveKit call's SIP leg (docs/calls.md, SIP trace and pcap), kept on the call
 * (`sip_leg`) for its SIP trace:
 * - the SIP participant's attributes as LiveKit's webhooks carry them (participant_joined,
 *   participant_left, participant_connection_aborted, track_published, track_unpublished:
 *   every webhook with the participant; LiveKit sends no webhook of its own for an attribute
 *   change): `sip.callID`, `sip.callIDFull`, `sip.phoneNumber`, `sip.trunkPhoneNumber`,
 *   `sip.hostname`, `sip.trunkID`, `sip.ruleID`, `lk.sip.inviteTime`, and each
 *   `sip.callStatus` it reached, with the time;
 * - the dial's own answer (CreateSIPParticipant): LiveKit's SIP call ID, and when a dial
 *   waited for the callee, the time it answered (`active`) or the SIP status that refused it;
 * - the callee's answer as the agent worker saw it (its `callee_answered` report), when no
 *   webhook carried `active`.
 *
 * Only the call's own phone party counts (the dialled `callee`, the inbound caller's
 * identity, a registered call's first SIP participant); a warm transfer's `transfer-…`
 * participant and listeners do not. The room is the call (its name, or its claim), so a
 * webhook can only write the call whose room it names. Each status is kept once (the
 * earliest report wins), so a redelivered webhook adds nothing, and at most
 * SIP_LEG_MAX_TRANSITIONS are kept. Every write is conditional on the leg's `rev` as read.
 */

export const SIP_LEG_MAX_TRANSITIONS = 50;
/** Longest attribute value kept (LiveKit's IDs and numbers are far shorter). */
const MAX_VALUE = 256;
const WRITE_ATTEMPTS = 5;

/** What one report says about the leg: identifiers, at most one status, a failure (the leg's fields, all optional). */
export type SipLegReport = Partial<Omit<SipLeg, 'rev' | 'transitions'>> & { transition?: SipStatusTransition };

const IDENTIFIERS = [
  'participant_identity',
  'participant_sid',
  'livekit_call_id',
  'call_id_full',
  'phone_number',
  'trunk_phone_number',
  'hostname',
  'trunk_host',
  'trunk_id',
  'rule_id',
  'invite_time',
  'joined_at',
  'dial_started_at',
  'failure',
  'disconnect_reason',
] as const;

const clip = (value: string | undefined): string | undefined => (value ? value.slice(0, MAX_VALUE) : undefined);

/**
 * The leg with a report merged in: identifiers fill what is not known yet (they do not change
 * within one dialog, so the order reports arrive in does not matter); a status is added once,
 * or moved earlier when a later-arriving report saw it first. Pure: the same report twice
 * gives the same leg.
 */
export function mergeSipLeg(leg: SipLeg | undefined, report: SipLegReport): SipLeg {
  const next: SipLeg = { ...(leg ?? { rev: 0, transitions: [] }), transitions: [...(leg?.transitions ?? [])] };
  for (const name of IDENTIFIERS) {
    const value = report[name];
    if (value !== undefined && next[name] === undefined) (next as unknown as Record<string, unknown>)[name] = value;
  }
  const transition = report.transition;
  if (transition) {
    const index = next.transitions.findIndex((known) => known.status === transition.status);
    if (index === -1) {
      if (next.transitions.length < SIP_LEG_MAX_TRANSITIONS) next.transitions.push(transition);
    } else if (transition.at < next.transitions[index]!.at) {
      next.transitions[index] = transition;
    }
    next.transitions.sort((a, b) => a.at - b.at);
  }
  return next;
}

/** Whether merging the report would change the leg (a redelivery changes nothing, so nothing is written). */
function changes(leg: SipLeg | undefined, merged: SipLeg): boolean {
  const { rev: _a, ...before } = leg ?? { rev: 0, transitions: [] };
  const { rev: _b, ...after } = merged;
  return JSON.stringify(before) !== JSON.stringify(after);
}

/**
 * When a webhook's news happened: LiveKit stamps events in whole seconds, so the time it
 * arrived is used when it arrived within that second, and the stamp otherwise (a delayed or
 * redelivered event keeps LiveKit's time).
 */
export function webhookTime(event: Pick<MediaWebhookEvent, 'created_at'>, nowMs = Date.now()): number {
  if (!event.created_at) return nowMs;
  return Math.min(Math.max(nowMs, event.created_at), event.created_at + 999);
}

/** Events that carry the participant with its attributes. */
const PARTICIPANT_EVENTS = new Set(['participant_joined', 'participant_left', 'participant_connection_aborted', 'track_published', 'track_unpublished']);

/** The report a webhook's SIP participant makes: its `sip.*` attributes and its callStatus now. */
export function reportOfParticipant(
  participant: NonNullable<MediaWebhookEvent['participant']>,
  event: string,
  at: number,
): SipLegReport {
  const attributes = participant.attributes ?? {};
  const inviteTime = Number(attributes['lk.sip.inviteTime']);
  // A participant that left without a status (an older SIP service) has hung up.
  const status = attributes['sip.callStatus'] || (event === 'participant_left' || event === 'participant_connection_aborted' ? 'hangup' : undefined);
  return {
    participant_identity: clip(participant.identity),
    participant_sid: clip(participant.sid),
    livekit_call_id: clip(attributes['sip.callID']),
    call_id_full: clip(attributes['sip.callIDFull']),
    phone_number: clip(attributes['sip.phoneNumber']),
    trunk_phone_number: clip(attributes['sip.trunkPhoneNumber']),
    hostname: clip(attributes['sip.hostname']),
    trunk_id: clip(attributes['sip.trunkID']),
    rule_id: clip(attributes['sip.ruleID']),
    ...(Number.isFinite(inviteTime) && inviteTime > 0 ? { invite_time: Math.trunc(inviteTime) } : {}),
    ...(event === 'participant_joined' ? { joined_at: at } : {}),
    ...(event === 'participant_left' && participant.disconnect_reason ? { disconnect_reason: clip(participant.disconnect_reason) } : {}),
    ...(status ? { transition: { status: status.slice(0, 32), at, source: 'webhook' as const, event } } : {}),
  };
}

/** The report of the dial's own answer (CreateSIPParticipant): placed, answered (`active`) or refused with a SIP status. */
function reportOfDial(outcome: DialStart): SipLegReport | undefined {
  const sip = outcome.sip;
  if (!sip) return undefined;
  const report: SipLegReport = {
    participant_identity: clip(sip.participant_identity),
    livekit_call_id: clip(sip.sip_call_id),
    trunk_host: clip(sip.host),
    dial_started_at: sip.started_at,
  };
  if ('placed' in outcome) return report;
  if (outcome.connected) report.transition = { status: 'active', at: sip.ended_at, source: 'dial', event: 'CreateSIPParticipant' };
  else if (sip.status_code !== undefined) {
    report.failure = { status_code: sip.status_code, reason: clip(sip.status) ?? '', at: sip.ended_at };
  }
  return report;
}

/**
 * Whether a SIP participant is the call's phone party: the inbound caller's identity, an
 * outbound call's `callee`, a registered call's first SIP participant. Never a warm
 * transfer's target or a listener.
 */
function isCallsSipParty(call: CallItem, identity: string | undefined): boolean {
  if (!identity || identity.startsWith('transfer-') || identity.startsWith('listener')) return false;
  if (call.engine.sip_identity) return identity === call.engine.sip_identity;
  if (call.engine.origin === 'register-phone-call') return !call.sip_leg?.participant_identity || call.sip_leg.participant_identity === identity;
  return identity === CALLEE_IDENTITY;
}

/**
 * Merges a report into the call's leg: read, merge, write conditional on the leg's `rev`,
 * again on a lost race. Answers the leg as written (undefined when nothing changed).
 */
async function recordSipLeg(call: CallItem, report: SipLegReport): Promise<SipLeg | undefined> {
  let current: CallItem | undefined = call;
  for (let attempt = 1; attempt <= WRITE_ATTEMPTS && current; attempt++) {
    const merged = mergeSipLeg(current.sip_leg, report);
    if (!changes(current.sip_leg, merged)) return undefined;
    const readRev = current.sip_leg?.rev ?? 0;
    const leg = { ...merged, rev: readRev + 1 };
    if (await writeSipLeg(current.call_id, current.workspace_id, readRev, leg)) return leg;
    current = await findCallItem(call.call_id);
    if (current && current.workspace_id !== call.workspace_id) return undefined;
  }
  if (current) logger.warn('the SIP leg of a call kept changing under its write; report dropped', { call_id: call.call_id });
  return undefined;
}

/** A LiveKit webhook about the call's room: its SIP participant's attributes, when it is the call's phone party. */
export async function recordSipWebhook(call: CallItem, event: MediaWebhookEvent, nowMs = Date.now()): Promise<void> {
  const participant = event.participant;
  if (!participant || participant.kind !== 'sip' || call.call_type !== 'phone_call') return;
  if (!PARTICIPANT_EVENTS.has(event.event) || !isCallsSipParty(call, participant.identity)) return;
  await recordSipLeg(call, reportOfParticipant(participant, event.event, webhookTime(event, nowMs)));
}

/**
 * The callee answered as the agent worker saw it (its `callee_answered` report, stamped on
 * the worker's clock): the leg's `active`, unless a webhook reported it first. Never fails
 * the answer (a failed write is logged).
 */
export async function recordCalleeAnswered(call: CallItem, at: number): Promise<void> {
  await recordSipLeg(call, { transition: { status: 'active', at, source: 'worker', event: 'callee_answered' } }).catch((error: unknown) =>
    logger.warn('could not record the answer on the call\'s SIP leg', { call_id: call.call_id, error }),
  );
}

/**
 * The dial's own answer. Never fails the dial: the call's state matters more than its trace
 * (a failed write is logged).
 */
export async function recordSipDial(call: CallItem, outcome: DialStart): Promise<void> {
  const report = reportOfDial(outcome);
  if (!report) return;
  await recordSipLeg(call, report).catch((error: unknown) => logger.warn('could not record the dial on the call\'s SIP leg', { call_id: call.call_id, error }));
}
