import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
// @ts-expect-error pcap-parser ships no types: parse(stream) emits globalHeader, packet ({header, data}) and end.
import pcapParser from 'pcap-parser';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const ws = await app.newWorkspace();
const { agent, number } = await newAgentWithNumber(ws.api);

async function finishedCall(to: string, metadata: Record<string, unknown> = { sandbox_call_ms: 800, sandbox_user_says: [] }) {
  const created = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: to, metadata } });
  expect(created.status).toBe(201);
  return eventually(
    async () => (await ws.api.get(`/v2/get-call/${created.body.call_id}`)).body,
    (call) => call.call_status === 'ended' || call.call_status === 'not_connected',
    30_000,
  );
}

interface Frame {
  seconds: number;
  micros: number;
  udp: { src: string; dst: string; srcPort: number; dstPort: number };
  sip: string;
}

/** The pcap's frames through pcap-parser, each decoded as Ethernet → IPv4 → UDP with its checksums checked. */
function parsePcap(bytes: Buffer): Promise<{ linkType: number; frames: Frame[] }> {
  return new Promise((resolve, reject) => {
    const parser = pcapParser.parse(Readable.from([bytes]));
    let linkType = -1;
    const frames: Frame[] = [];
    parser.on('globalHeader', (header: { linkLayerType: number; majorVersion: number; minorVersion: number }) => {
      expect([header.majorVersion, header.minorVersion]).toEqual([2, 4]);
      linkType = header.linkLayerType;
    });
    parser.on('packet', (packet: { header: { timestampSeconds: number; timestampMicroseconds: number; capturedLength: number }; data: Buffer }) => {
      const data = packet.data;
      expect(data.length).toBe(packet.header.capturedLength);
      expect(data.readUInt16BE(12)).toBe(0x0800); // IPv4
      const ip = data.subarray(14, 34);
      expect(ip[9]).toBe(17); // UDP
      let sum = 0;
      for (let i = 0; i < 20; i += 2) sum += ip.readUInt16BE(i);
      while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
      expect(sum).toBe(0xffff); // the IPv4 header checksum holds
      const udp = data.subarray(34, 42);
      expect(udp.readUInt16BE(4)).toBe(data.length - 34);
      frames.push({
        seconds: packet.header.timestampSeconds,
        micros: packet.header.timestampMicroseconds,
        udp: { src: [...ip.subarray(12, 16)].join('.'), dst: [...ip.subarray(16, 20)].join('.'), srcPort: udp.readUInt16BE(0), dstPort: udp.readUInt16BE(2) },
        sip: data.subarray(42).toString('utf8'),
      });
    });
    parser.on('end', () => resolve({ linkType, frames }));
    parser.on('error', reject);
  });
}

const firstLine = (sip: string) => sip.split('\r\n')[0]!;
const tshark = (() => {
  try {
    execFileSync('tshark', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('SIP trace and pcap', () => {
  it('an answered outbound call: INVITE, 100, 180, 200, ACK, BYE, 200, stated as synthetic', async () => {
    const call = await finishedCall('+14155555555');
    expect(call.disconnection_reason).toBe('user_hangup');
    const trace = await ws.api.get(`/v2/get-call-sip-trace/${call.call_id}`);
    expect(trace.status).toBe(200);
    expect(trace.body).toMatchObject({ call_id: call.call_id, synthetic: true, source: 'sandbox' });
    const lines = trace.body.messages.map((m: any) => `${m.direction} ${m.method ?? `${m.status_code} ${m.reason}`} (${m.cseq})`);
    expect(lines).toEqual([
      'sent INVITE (1 INVITE)',
      'received 100 Trying (1 INVITE)',
      'received 180 Ringing (1 INVITE)',
      'received 200 OK (1 INVITE)',
      'sent ACK (1 ACK)',
      'received BYE (2 BYE)', // the callee hung up
      'sent 200 OK (2 BYE)',
    ]);
    const invite = trace.body.messages[0];
    expect(invite.raw).toMatch(/^INVITE sip:\+14155555555@198\.51\.100\.20 SIP\/2\.0\r\n/);
    expect(invite.raw).toContain(`From: <sip:${number}@`);
    expect(invite.raw).toContain(`Call-ID: ${trace.body.sip_call_id}`);
    expect(invite.raw).toContain('Content-Type: application/sdp');
    expect(trace.body.messages[3].timestamp).toBe(call.start_timestamp);
    expect(trace.body.messages[5].timestamp).toBe(call.end_timestamp);
    const times = trace.body.messages.map((m: any) => m.timestamp);
    expect([...times].sort((a, b) => a - b)).toEqual(times);

    const pcap = await fetch(`${app.url}/get-call-pcap/${call.call_id}`, { headers: { authorization: `Bearer ${ws.api_key}` } });
    expect(pcap.status).toBe(200);
    expect(pcap.headers.get('content-type')).toBe('application/vnd.tcpdump.pcap');
    expect(pcap.headers.get('content-disposition')).toBe(`attachment; filename="${call.call_id}.pcap"`);
    const bytes = Buffer.from(await pcap.arrayBuffer());
    const parsed = await parsePcap(bytes);
    expect(parsed.linkType).toBe(1);
    expect(parsed.frames.map((frame) => firstLine(frame.sip))).toEqual(trace.body.messages.map((m: any) => firstLine(m.raw)));
    expect(parsed.frames[0]!.udp).toEqual({ src: '192.0.2.10', dst: '198.51.100.20', srcPort: 5060, dstPort: 5060 });
    expect(parsed.frames[0]!.seconds * 1000 + parsed.frames[0]!.micros / 1000).toBe(trace.body.messages[0].timestamp);

    if (tshark) {
      // Wireshark's own dissector agrees (tshark is installed on the developers' machines; CI may lack it).
      const file = join(tmpdir(), `${call.call_id}.pcap`);
      writeFileSync(file, bytes);
      const out = execFileSync('tshark', ['-r', file, '-Y', 'sip', '-T', 'fields', '-e', 'sip.Method', '-e', 'sip.Status-Code'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      expect(out.trim().split('\n').map((line) => line.trim())).toEqual(['INVITE', '100', '180', '200', 'ACK', 'BYE', '200']);
    }
  });

  it.each([
    ['0001', ['INVITE', '100 Trying', '486 Busy Here', 'ACK']],
    ['0002', ['INVITE', '100 Trying', '180 Ringing', 'CANCEL', '200 OK', '487 Request Terminated', 'ACK']],
    ['0004', ['INVITE', '100 Trying', '503 Service Unavailable', 'ACK']],
  ])('a number ending %s gets the dialog of its outcome', async (lastFour, expected) => {
    const call = await finishedCall(`+1415555${lastFour}`);
    const trace = await ws.api.get(`/v2/get-call-sip-trace/${call.call_id}`);
    expect(trace.body.messages.map((m: any) => m.method ?? `${m.status_code} ${m.reason}`)).toEqual(expected);
    const parsed = await parsePcap(Buffer.from(await (await fetch(`${app.url}/get-call-pcap/${call.call_id}`, { headers: { authorization: `Bearer ${ws.api_key}` } })).arrayBuffer()));
    expect(parsed.frames).toHaveLength(expected.length);
  });

  it('web calls have no SIP dialog (400); another workspace\'s call is 404', async () => {
    const web = await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } });
    expect(web.status).toBe(201);
    for (const path of [`/v2/get-call-sip-trace/${web.body.call_id}`, `/get-call-pcap/${web.body.call_id}`]) {
      const refused = await ws.api.get(path);
      expect(refused.status).toBe(400);
      expect(refused.body).toEqual({ status: 400, message: `Call ${web.body.call_id} is a web call: only phone calls have a SIP dialog (trace and pcap)` });
    }
    await ws.api.post(`/v2/stop-call/${web.body.call_id}`);
    const other = await app.newWorkspace();
    const call = await finishedCall('+14155555555');
    expect((await other.api.get(`/v2/get-call-sip-trace/${call.call_id}`)).body).toEqual({ status: 404, message: 'Call not found' });
    expect((await other.api.get(`/get-call-pcap/${call.call_id}`)).status).toBe(404);
  });
});
