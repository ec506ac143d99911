import { createHash } from 'node:crypto';
import { isIPv4 } from 'node:net';
import { config } from '../../platform/config.ts';
import { badRequest } from '../../platform/errors.ts';
import { Download } from '../../platform/http/handler.ts';
import { pcapFile } from './pcap.ts';
import type { SipTrace } from './schemas.ts';
import { getCallItem, type CallItem, type SipLeg } from '../store.ts';

/*
 * A phone call's SIP dialog (docs/calls.md, SIP trace and pcap), as JSON
 * (`GET /v2/get-call-sip-trace/{call_id}`) and as a libpcap file of UDP datagrams
 * (`GET /get-call-pcap/{call_id}`). Two kinds of trace:
 *
 * - **From LiveKit's reports** (`synthetic: false`, `source: 'livekit_sip_participant'`): a
 *   LiveKit call whose SIP leg was reported (sip-leg.ts: the SIP participant's attributes
 *   and callStatus transitions from LiveKit's webhooks, the dial's answer or its SIP status).
 *   The dialog carries the real Call-ID (`sip.callIDFull`, else LiveKit's `sip.callID`), the
 *   numbers LiveKit reported, the carrier's host, and the times LiveKit reported: INVITE
 *   when the dial left (or `dialing`, or the inbound INVITE's time), 180 at `ringing`, 200 at
 *   `active` (or `automation`), BYE at `hangup`, or the SIP status that refused the dial.
 *   Each message says what it rests on (`basis`): a reported fact, or `implied` for the
 *   messages the protocol requires around them (100 Trying, ACK, the BYE's 200 OK), whose
 *   times are the fact's plus a few ms. Parley is not on the SIP path, so this is not a
 *   packet capture: LiveKit reports states, not packets.
 * - **Reconstructed** (`synthetic: true`): the sandbox's calls (no SIP at all), and LiveKit
 *   calls of which LiveKit reported nothing (`source: 'livekit'`): the messages a dialog with
 *   the call's outcome carries, at the times the call recorded.
 *
 * Network addresses are documentation addresses (RFC 5737): 192.0.2.10 is Parley's side
 * (LiveKit's SIP service for LiveKit calls), 198.51.100.20 the carrier's, unless LiveKit
 * named the carrier by an IPv4 address (`sip.hostname`).
 */

const PARLEY = { ip: '192.0.2.10', port: 5060 };
const CARRIER = { ip: '198.51.100.20', port: 5060 };

type SipMessage = SipTrace['messages'][number];

const hex = (text: string, length: number) => createHash('sha256').update(text).digest('hex').slice(0, length);

interface Step {
  at: number;
  /** Who sends it: Parley's side, or the carrier's (the phone party). */
  from: 'parley' | 'carrier';
  /** A request method, or a response status with its reason and the method it answers. */
  method?: string;
  status?: [number, string, string];
  cseq: number;
  sdp?: boolean;
  body?: string;
  headers?: string[];
  /** What the message rests on (LiveKit traces): a reported fact, or `implied` by the protocol. */
  basis?: string;
}

/** What the dialog was, from the call's record. */
function dialogSteps(call: CallItem): Step[] {
  const parleyCalls = call.direction === 'outbound' && call.engine.origin !== 'register-phone-call';
  const caller: Step['from'] = parleyCalls ? 'parley' : 'carrier';
  const callee: Step['from'] = parleyCalls ? 'carrier' : 'parley';
  const t0 = call.created_timestamp;
  const steps: Step[] = [
    { at: t0, from: caller, method: 'INVITE', cseq: 1, sdp: true },
    { at: t0 + 20, from: callee, status: [100, 'Trying', 'INVITE'], cseq: 1 },
  ];
  const reason = call.disconnection_reason;
  const end = call.end_timestamp ?? Date.now();
  if (call.start_timestamp === undefined) {
    if (call.call_status === 'registered') {
      steps.push({ at: t0 + 200, from: callee, status: [180, 'Ringing', 'INVITE'], cseq: 1 });
      return steps;
    }
    if (reason === 'dial_no_answer' || reason === 'registered_call_timeout') {
      steps.push(
        { at: t0 + 200, from: callee, status: [180, 'Ringing', 'INVITE'], cseq: 1 },
        { at: end, from: caller, method: 'CANCEL', cseq: 1 },
        { at: end + 20, from: callee, status: [200, 'OK', 'CANCEL'], cseq: 1 },
        { at: end + 30, from: callee, status: [487, 'Request Terminated', 'INVITE'], cseq: 1 },
        { at: end + 40, from: caller, method: 'ACK', cseq: 1 },
      );
      return steps;
    }
    const final: [number, string, string] =
      reason === 'dial_busy' || reason === 'no_concurrency_fallback'
        ? [486, 'Busy Here', 'INVITE']
        : reason === 'user_declined'
          ? [603, 'Decline', 'INVITE']
          : reason === 'dial_failed'
            ? [503, 'Service Unavailable', 'INVITE']
            : [480, 'Temporarily Unavailable', 'INVITE'];
    steps.push({ at: Math.max(end, t0 + 40), from: callee, status: final, cseq: 1 }, { at: Math.max(end, t0 + 40) + 10, from: caller, method: 'ACK', cseq: 1 });
    return steps;
  }
  const answered = call.start_timestamp;
  steps.push(
    { at: Math.min(t0 + 200, answered - 1), from: callee, status: [180, 'Ringing', 'INVITE'], cseq: 1 },
    { at: answered, from: callee, status: [200, 'OK', 'INVITE'], cseq: 1, sdp: true },
    { at: answered + 10, from: caller, method: 'ACK', cseq: 1 },
  );
  if (call.call_status === 'ongoing') return steps;
  // The phone party is always the carrier's side; a cold transfer REFERs it first.
  if (reason === 'call_transfer' && call.transfer_destination) {
    steps.push(
      { at: end - 20, from: 'parley', method: 'REFER', cseq: 2, headers: [`Refer-To: <${referTarget(call.transfer_destination)}>`] },
      { at: end - 10, from: 'carrier', status: [202, 'Accepted', 'REFER'], cseq: 2 },
    );
  }
  const hangsUp: Step['from'] = reason === 'user_hangup' || reason === 'call_transfer' ? 'carrier' : 'parley';
  const other: Step['from'] = hangsUp === 'parley' ? 'carrier' : 'parley';
  const cseq = reason === 'call_transfer' ? 3 : 2;
  steps.push({ at: end, from: hangsUp, method: 'BYE', cseq }, { at: end + 15, from: other, status: [200, 'OK', 'BYE'], cseq });
  return steps;
}

const referTarget = (destination: string) => (destination.startsWith('sip') ? destination : `tel:${destination}`);

function sdp(host: string, id: string): string {
  return [
    'v=0',
    `o=- ${parseInt(id.slice(0, 8), 16)} 1 IN IP4 ${host}`,
    's=-',
    `c=IN IP4 ${host}`,
    't=0 0',
    'm=audio 10000 RTP/AVP 0 101',
    'a=rtpmap:0 PCMU/8000',
    'a=rtpmap:101 telephone-event/8000',
    'a=sendrecv',
    '',
  ].join('\r\n');
}

/** How the dialog's messages are addressed and named. */
interface Dialog {
  sipCallId: string;
  /** Parley's side places the call (an outbound dial) rather than receiving it. */
  parleyCalls: boolean;
  fromUser: string;
  toUser: string;
  /** Host names in the SIP URIs: Parley's side (LiveKit's SIP service for LiveKit calls) and the carrier's. */
  ownHost: string;
  carrierHost: string;
  /** Network addresses of the datagrams. */
  own: { ip: string; port: number };
  carrier: { ip: string; port: number };
  userAgent: string;
  extraHeaders: string[];
}

/** The messages of a dialog: SIP text for each step, addressed as the dialog says. */
function renderMessages(call: CallItem, steps: Step[], dialog: Dialog): SipMessage[] {
  const { parleyCalls, fromUser, toUser } = dialog;
  const callerTag = hex(`${call.call_id}:caller`, 10);
  const calleeTag = hex(`${call.call_id}:callee`, 10);
  const fromHeader = `From: <sip:${fromUser}@${parleyCalls ? dialog.ownHost : dialog.carrierHost}>;tag=${callerTag}`;
  const toUri = `sip:${toUser}@${parleyCalls ? dialog.carrierHost : dialog.ownHost}`;
  const callerUri = `sip:${fromUser}@${parleyCalls ? dialog.ownHost : dialog.carrierHost}`;
  let last = 0;
  return steps.map((step, index) => {
    const at = Math.max(Math.round(step.at), last + 1);
    last = at;
    const sender = step.from === 'parley' ? dialog.own : dialog.carrier;
    const receiver = step.from === 'parley' ? dialog.carrier : dialog.own;
    // Requests of the caller go on the dialog's From/To; the callee's requests (its BYE) swap them.
    const byCaller = (step.from === 'parley') === parleyCalls;
    const established = step.status ? step.status[0] !== 100 : index > 2;
    const toHeader = `To: <${toUri}>${established ? `;tag=${calleeTag}` : ''}`;
    const fromTo = step.method && !byCaller ? [`From: <${toUri}>;tag=${calleeTag}`, `To: ${fromHeader.slice(6)}`] : [fromHeader, toHeader];
    const body = step.sdp ? sdp(sender.ip, hex(call.call_id, 8)) : '';
    // The caller's requests go to the callee; the callee's (its BYE) to the caller; a REFER to the phone party.
    const requestUri = step.method === 'REFER' ? (parleyCalls ? toUri : callerUri) : byCaller ? toUri : callerUri;
    const firstLine = step.method ? `${step.method} ${requestUri} SIP/2.0` : `SIP/2.0 ${step.status![0]} ${step.status![1]}`;
    const cseqMethod = step.method ?? step.status![2];
    const branch = `z9hG4bK${hex(`${call.call_id}:${step.cseq}:${cseqMethod}:${byCaller}`, 16)}`;
    const lines = [
      firstLine,
      `Via: SIP/2.0/UDP ${(step.method ? sender : receiver).ip}:${(step.method ? sender : receiver).port};branch=${branch}`,
      ...(step.method ? ['Max-Forwards: 70'] : []),
      ...fromTo,
      `Call-ID: ${dialog.sipCallId}`,
      `CSeq: ${step.cseq} ${cseqMethod}`,
      ...(step.method === 'INVITE' || step.status?.[0] === 200 ? [`Contact: <sip:${sender.ip}:${sender.port}>`] : []),
      ...(step.headers ?? []),
      ...dialog.extraHeaders,
      `User-Agent: ${dialog.userAgent}`,
      ...(body ? ['Content-Type: application/sdp'] : []),
      `Content-Length: ${Buffer.byteLength(body)}`,
      '',
      body,
    ];
    return {
      timestamp: at,
      direction: step.from === 'parley' ? 'sent' : 'received',
      src: `${sender.ip}:${sender.port}`,
      dst: `${receiver.ip}:${receiver.port}`,
      transport: 'UDP',
      method: step.method ?? null,
      status_code: step.status?.[0] ?? null,
      reason: step.status?.[1] ?? null,
      cseq: `${step.cseq} ${cseqMethod}`,
      raw: lines.join('\r\n'),
      ...(step.basis ? { basis: step.basis } : {}),
    } satisfies SipMessage;
  });
}

/** Reason phrases of the final statuses a dial ends with (RFC 3261 §21), for a status LiveKit reported without one. */
const REASONS: Record<number, string> = {
  400: 'Bad Request', 403: 'Forbidden', 404: 'Not Found', 408: 'Request Timeout', 480: 'Temporarily Unavailable',
  484: 'Address Incomplete', 486: 'Busy Here', 487: 'Request Terminated', 488: 'Not Acceptable Here',
  500: 'Server Internal Error', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Server Time-out',
  600: 'Busy Everywhere', 603: 'Decline', 604: 'Does Not Exist Anywhere',
};

/** Whether LiveKit reported anything about the call's SIP leg that a dialog can be built from. */
const hasFacts = (leg: SipLeg | undefined): leg is SipLeg =>
  !!leg && (!!leg.livekit_call_id || !!leg.call_id_full || leg.transitions.length > 0 || !!leg.failure);

/** The dialog of a LiveKit call from what LiveKit reported (sip-leg.ts), each message with its basis. */
function legSteps(call: CallItem, leg: SipLeg, parleyCalls: boolean): Step[] {
  const caller: Step['from'] = parleyCalls ? 'parley' : 'carrier';
  const callee: Step['from'] = parleyCalls ? 'carrier' : 'parley';
  const status = (name: string) => leg.transitions.find((transition) => transition.status === name);
  const label = (transition: { status: string; source: string; event?: string }) =>
    transition.source === 'dial'
      ? `CreateSIPParticipant answered (sip.callStatus=${transition.status})`
      : transition.source === 'worker'
        ? `sip.callStatus=${transition.status} (the agent worker's report)`
        : `sip.callStatus=${transition.status} (${transition.event ?? 'webhook'})`;

  // The INVITE: when the dial left, or when LiveKit received it (inbound), or the first status LiveKit reported.
  const first = leg.transitions[0];
  const [inviteAt, inviteBasis] =
    leg.dial_started_at !== undefined
      ? [leg.dial_started_at, 'CreateSIPParticipant sent']
      : leg.invite_time !== undefined
        ? [leg.invite_time, 'lk.sip.inviteTime']
        : leg.joined_at !== undefined && (!first || leg.joined_at <= first.at)
          ? [leg.joined_at, 'participant_joined']
          : first
            ? [first.at, label(first)]
            : [call.created_timestamp, 'call created_timestamp'];
  const steps: Step[] = [
    { at: inviteAt, from: caller, method: 'INVITE', cseq: 1, sdp: true, basis: inviteBasis },
    { at: inviteAt + 1, from: callee, status: [100, 'Trying', 'INVITE'], cseq: 1, basis: 'implied' },
  ];
  const ringing = status('ringing');
  if (ringing) steps.push({ at: ringing.at, from: callee, status: [180, 'Ringing', 'INVITE'], cseq: 1, basis: label(ringing) });
  const reported = [status('automation'), status('active')].filter((t) => t !== undefined).sort((a, b) => a.at - b.at)[0];
  // LiveKit reported no answer (an inbound caller joins already answered): the call record's start, when it has one.
  const answered = reported
    ? { at: reported.at, basis: label(reported) }
    : call.start_timestamp !== undefined && !leg.failure
      ? { at: call.start_timestamp, basis: 'call start_timestamp' }
      : undefined;
  const hangup = status('hangup');

  if (answered) {
    steps.push(
      { at: answered.at, from: callee, status: [200, 'OK', 'INVITE'], cseq: 1, sdp: true, basis: answered.basis },
      { at: answered.at + 1, from: caller, method: 'ACK', cseq: 1, basis: 'implied' },
    );
    const endAt = hangup?.at ?? (call.call_status === 'registered' || call.call_status === 'ongoing' ? undefined : call.end_timestamp);
    if (endAt === undefined) return steps;
    const endBasis = hangup ? label(hangup) : 'call end_timestamp';
    const reason = call.disconnection_reason;
    if (reason === 'call_transfer' && call.transfer_destination) {
      steps.push(
        { at: endAt - 20, from: 'parley', method: 'REFER', cseq: 2, headers: [`Refer-To: <${referTarget(call.transfer_destination)}>`], basis: 'call record (cold transfer)' },
        { at: endAt - 10, from: 'carrier', status: [202, 'Accepted', 'REFER'], cseq: 2, basis: 'implied' },
      );
    }
    // Who hung up: LiveKit deleting the room hangs up its side; a clean hang-up of the phone party is CLIENT_INITIATED.
    const byParty =
      leg.disconnect_reason === 'ROOM_DELETED'
        ? false
        : leg.disconnect_reason === 'CLIENT_INITIATED'
          ? true
          : reason === 'user_hangup' || reason === 'call_transfer' || reason === undefined;
    const hangsUp: Step['from'] = byParty ? 'carrier' : 'parley';
    const cseq = reason === 'call_transfer' && call.transfer_destination ? 3 : 2;
    steps.push(
      { at: endAt, from: hangsUp, method: 'BYE', cseq, basis: `${endBasis}${leg.disconnect_reason ? `, ${leg.disconnect_reason}` : ''}` },
      { at: endAt + 15, from: hangsUp === 'parley' ? 'carrier' : 'parley', status: [200, 'OK', 'BYE'], cseq, basis: 'implied' },
    );
    return steps;
  }

  if (leg.failure) {
    const code = leg.failure.status_code;
    const phrase = leg.failure.reason || REASONS[code] || 'Unknown';
    const basis = `CreateSIPParticipant failed: SIP ${code}${leg.failure.reason ? ` ${leg.failure.reason}` : ''}`;
    if (code === 487) {
      // Request Terminated: the dialling side gave up ringing and cancelled.
      steps.push(
        { at: leg.failure.at - 30, from: caller, method: 'CANCEL', cseq: 1, basis: 'implied by 487' },
        { at: leg.failure.at - 20, from: callee, status: [200, 'OK', 'CANCEL'], cseq: 1, basis: 'implied' },
      );
    }
    steps.push(
      { at: leg.failure.at, from: callee, status: [code, phrase, 'INVITE'], cseq: 1, basis },
      { at: leg.failure.at + 1, from: caller, method: 'ACK', cseq: 1, basis: 'implied' },
    );
    return steps;
  }

  const endAt = hangup?.at ?? (call.call_status === 'registered' || call.call_status === 'ongoing' ? undefined : call.end_timestamp);
  if (endAt === undefined) return steps;
  // Never answered and LiveKit named no SIP status: the status the call's disconnection reason stands for.
  const reason = call.disconnection_reason;
  const final: [number, string, string] =
    reason === 'dial_busy' ? [486, 'Busy Here', 'INVITE'] : reason === 'dial_no_answer' ? [480, 'Temporarily Unavailable', 'INVITE'] : [503, 'Service Unavailable', 'INVITE'];
  steps.push(
    { at: endAt, from: callee, status: final, cseq: 1, basis: `inferred from disconnection_reason ${reason ?? 'unknown'}${hangup ? ` at ${label(hangup)}` : ''}` },
    { at: endAt + 1, from: caller, method: 'ACK', cseq: 1, basis: 'implied' },
  );
  return steps;
}

/** The host of LIVEKIT_SIP_URI (`sip:host[:port][;params]`), when set. */
function livekitSipHost(): string | undefined {
  const uri = config.LIVEKIT_SIP_URI;
  if (!uri) return undefined;
  const rest = uri.replace(/^sips?:/i, '');
  return rest.split(/[;:]/)[0] || undefined;
}

/** The trace of a phone call; 400 for web calls, which have no SIP leg. */
export function buildSipTrace(call: CallItem): SipTrace {
  if (call.call_type !== 'phone_call') {
    throw badRequest(`Call ${call.call_id} is a web call: only phone calls have a SIP dialog (trace and pcap)`);
  }
  const parleyCalls = call.direction === 'outbound' && call.engine.origin !== 'register-phone-call';
  const leg = call.engine.media === 'livekit' ? call.sip_leg : undefined;
  if (hasFacts(leg)) return livekitTrace(call, leg, parleyCalls);

  const sipCallId = `${hex(call.call_id, 32)}@${config.SIP_HOST}`;
  const messages = renderMessages(call, dialogSteps(call), {
    sipCallId,
    parleyCalls,
    fromUser: call.from_number ?? 'anonymous',
    toUser: call.to_number ?? 'unknown',
    ownHost: config.SIP_HOST,
    carrierHost: CARRIER.ip,
    own: PARLEY,
    carrier: CARRIER,
    userAgent: 'Parley (synthetic trace)',
    extraHeaders: [],
  });
  return {
    call_id: call.call_id,
    sip_call_id: sipCallId,
    synthetic: true,
    source: call.engine.media === 'livekit' ? 'livekit' : 'sandbox',
    note:
      call.engine.media === 'livekit'
        ? 'Reconstructed from the call record: LiveKit reported nothing about this call\'s SIP participant (no webhooks with its attributes, no dial answer). The messages a dialog with this outcome carries, at the times the call recorded. Addresses are documentation addresses (RFC 5737).'
        : 'Reconstructed from the call record: the messages a dialog with this outcome carries, at the times the call recorded. Addresses are documentation addresses (RFC 5737).',
    messages,
  };
}

/** A LiveKit call's trace from its SIP leg's facts (`synthetic: false`). */
function livekitTrace(call: CallItem, leg: SipLeg, parleyCalls: boolean): SipTrace {
  // A dial refused before any webhook named the participant has no Call-ID from LiveKit: Parley's own stands in.
  const sipCallId = leg.call_id_full ?? leg.livekit_call_id ?? `${hex(call.call_id, 32)}@${config.SIP_HOST}`;
  const carrierHost = leg.hostname ?? leg.trunk_host ?? CARRIER.ip;
  // Outbound: From is the workspace's number on the trunk, To the dialled party; inbound the other way.
  const party = leg.phone_number ?? (parleyCalls ? call.to_number : call.from_number) ?? 'unknown';
  const ours = leg.trunk_phone_number ?? (parleyCalls ? call.from_number : call.to_number) ?? 'unknown';
  const messages = renderMessages(call, legSteps(call, leg, parleyCalls), {
    sipCallId,
    parleyCalls,
    fromUser: parleyCalls ? ours : party,
    toUser: parleyCalls ? party : ours,
    ownHost: livekitSipHost() ?? config.SIP_HOST,
    carrierHost,
    own: PARLEY,
    carrier: isIPv4(carrierHost) ? { ip: carrierHost, port: CARRIER.port } : CARRIER,
    userAgent: 'LiveKit SIP (dialog built by Parley from LiveKit\'s reports)',
    extraHeaders: leg.livekit_call_id && leg.livekit_call_id !== sipCallId ? [`X-LiveKit-Call-ID: ${leg.livekit_call_id}`] : [],
  });
  return {
    call_id: call.call_id,
    sip_call_id: sipCallId,
    synthetic: false,
    source: 'livekit_sip_participant',
    note:
      'Built from what LiveKit reported about the call\'s SIP participant: its sip.* attributes and sip.callStatus transitions (LiveKit webhooks) and the dial\'s answer or SIP status (CreateSIPParticipant). Call-ID, numbers, carrier host and times are LiveKit\'s; each message\'s basis names the fact it rests on, and "implied" marks messages the protocol requires around them. Not a packet capture: IP addresses are documentation addresses (RFC 5737) unless LiveKit named the carrier by address.',
    sip_participant: {
      participant_identity: leg.participant_identity ?? null,
      livekit_call_id: leg.livekit_call_id ?? null,
      call_id_full: leg.call_id_full ?? null,
      phone_number: leg.phone_number ?? null,
      trunk_phone_number: leg.trunk_phone_number ?? null,
      hostname: leg.hostname ?? leg.trunk_host ?? null,
      trunk_id: leg.trunk_id ?? null,
      rule_id: leg.rule_id ?? null,
      disconnect_reason: leg.disconnect_reason ?? null,
      failure: leg.failure ? { status_code: leg.failure.status_code, reason: leg.failure.reason || REASONS[leg.failure.status_code] || null, timestamp: leg.failure.at } : null,
      status_transitions: leg.transitions.map((transition) => ({ status: transition.status, timestamp: transition.at, source: transition.source })),
    },
    messages,
  };
}

export async function getCallSipTrace(workspaceId: string, callId: string): Promise<SipTrace> {
  return buildSipTrace(await getCallItem(workspaceId, callId));
}

/** The trace as a libpcap file (UDP over IPv4 in Ethernet frames), for tshark and Wireshark. */
export async function getCallPcap(workspaceId: string, callId: string): Promise<Download> {
  const trace = buildSipTrace(await getCallItem(workspaceId, callId));
  const packets = trace.messages.map((message) => {
    const [srcIp, srcPort] = message.src.split(':');
    const [dstIp, dstPort] = message.dst.split(':');
    return { timestampMs: message.timestamp, srcIp: srcIp!, srcPort: Number(srcPort), dstIp: dstIp!, dstPort: Number(dstPort), payload: Buffer.from(message.raw, 'utf8') };
  });
  return new Download(pcapFile(packets), `${callId}.pcap`);
}
