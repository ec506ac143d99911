import { createHash } from 'node:crypto';
import { config } from '../platform/config.ts';
import { badRequest } from '../platform/errors.ts';
import { Download } from '../platform/http/handler.ts';
import { pcapFile } from '../platform/pcap.ts';
import type { SipTrace } from './artifact-schemas.ts';
import { getCallItem, type CallItem } from './store.ts';

/*
 * A phone call's SIP dialog (docs/calls.md, Call artifacts), as JSON
 * (`GET /v2/get-call-sip-trace/{call_id}`) and as a libpcap file of UDP datagrams
 * (`GET /get-call-pcap/{call_id}`).
 *
 * Parley does not sit on the SIP path: the sandbox has none at all, and on LiveKit the SIP
 * service speaks to the carrier. So the dialog is reconstructed from what the call recorded
 * (direction, when it was created, answered and ended, why it ended, transfers), with the
 * messages a real dialog of that outcome carries (INVITE, 100, 180, 200, ACK, BYE … or
 * 486, CANCEL/487, 503), and answered with `synthetic: true`. Its addresses are
 * documentation addresses (RFC 5737): 192.0.2.10 is Parley's side, 198.51.100.20 the
 * carrier's. It is meant for tooling and for reading the call's shape, not as evidence of
 * what a carrier sent.
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

/** The trace of a phone call; 400 for web calls, which have no SIP leg. */
export function buildSipTrace(call: CallItem): SipTrace {
  if (call.call_type !== 'phone_call') {
    throw badRequest(`Call ${call.call_id} is a web call: only phone calls have a SIP dialog (trace and pcap)`);
  }
  const parleyCalls = call.direction === 'outbound' && call.engine.origin !== 'register-phone-call';
  const sipCallId = `${hex(call.call_id, 32)}@${config.SIP_HOST}`;
  const fromUser = call.from_number ?? 'anonymous';
  const toUser = call.to_number ?? 'unknown';
  const callerTag = hex(`${call.call_id}:caller`, 10);
  const calleeTag = hex(`${call.call_id}:callee`, 10);
  const fromHeader = `From: <sip:${fromUser}@${parleyCalls ? config.SIP_HOST : CARRIER.ip}>;tag=${callerTag}`;
  const toUri = `sip:${toUser}@${parleyCalls ? CARRIER.ip : config.SIP_HOST}`;
  let last = 0;
  const messages: SipMessage[] = dialogSteps(call).map((step, index) => {
    const at = Math.max(step.at, last + 1);
    last = at;
    const sender = step.from === 'parley' ? PARLEY : CARRIER;
    const receiver = step.from === 'parley' ? CARRIER : PARLEY;
    // Requests of the caller go on the dialog's From/To; the callee's requests (its BYE) swap them.
    const byCaller = (step.from === 'parley') === parleyCalls;
    const established = step.status ? step.status[0] !== 100 : index > 2;
    const toHeader = `To: <${toUri}>${established ? `;tag=${calleeTag}` : ''}`;
    const fromTo = step.method && !byCaller ? [`From: <${toUri}>;tag=${calleeTag}`, `To: ${fromHeader.slice(6)}`] : [fromHeader, toHeader];
    const body = step.sdp ? sdp(sender.ip, hex(call.call_id, 8)) : '';
    const firstLine = step.method ? `${step.method} ${step.method === 'REFER' || !byCaller ? `sip:${fromUser}@${CARRIER.ip}` : toUri} SIP/2.0` : `SIP/2.0 ${step.status![0]} ${step.status![1]}`;
    const cseqMethod = step.method ?? step.status![2];
    const branch = `z9hG4bK${hex(`${call.call_id}:${step.cseq}:${cseqMethod}:${byCaller}`, 16)}`;
    const lines = [
      firstLine,
      `Via: SIP/2.0/UDP ${(step.method ? sender : receiver).ip}:${(step.method ? sender : receiver).port};branch=${branch}`,
      ...(step.method ? ['Max-Forwards: 70'] : []),
      ...fromTo,
      `Call-ID: ${sipCallId}`,
      `CSeq: ${step.cseq} ${cseqMethod}`,
      ...(step.method === 'INVITE' || step.status?.[0] === 200 ? [`Contact: <sip:${sender.ip}:${sender.port}>`] : []),
      ...(step.headers ?? []),
      'User-Agent: Parley (synthetic trace)',
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
    };
  });
  return {
    call_id: call.call_id,
    sip_call_id: sipCallId,
    synthetic: true,
    source: call.engine.media === 'livekit' ? 'livekit' : 'sandbox',
    note: 'Reconstructed from the call record: the messages a dialog with this outcome carries, at the times the call recorded. Addresses are documentation addresses (RFC 5737).',
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
