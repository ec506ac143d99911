import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { fakeSrvDns } from '../support/fake-dns.ts';
import { TEST_TLS } from '../support/tls.ts';
import { parseSipUri, probeSipUri } from '../../shared/numbers/connection-tests/sip-options.ts';
import { startTestApp } from '../support/app.ts';

const app = await startTestApp();

/*
 * A small SIP responder on 127.0.0.1, over TCP and UDP: it records each request it gets
 * and answers with the status it was given (copying Via, From, To, Call-ID and CSeq, as a
 * UAS does), or never answers, or answers with something that is not SIP.
 */
type Behaviour = { status: number; reason: string } | 'silent' | 'garbage' | 'provisional-then-200';

interface Responder {
  port: number;
  requests: string[];
}

function reply(request: string, behaviour: Behaviour): string[] {
  if (behaviour === 'silent') return [];
  if (behaviour === 'garbage') return ['HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n'];
  const headers = request
    .split('\r\n')
    .filter((line) => /^(Via|From|To|Call-ID|CSeq):/i.test(line))
    .map((line) => (/^To:/i.test(line) ? `${line};tag=resp1` : line));
  const answer = (status: number, reason: string) =>
    [`SIP/2.0 ${status} ${reason}`, ...headers, 'Allow: INVITE, ACK, CANCEL, OPTIONS, BYE', 'Content-Length: 0', '', ''].join('\r\n');
  if (behaviour === 'provisional-then-200') return [answer(100, 'Trying'), answer(200, 'OK')];
  return [answer(behaviour.status, behaviour.reason)];
}

const servers: Array<Server | UdpSocket> = [];
afterAll(() => {
  for (const server of servers) server.close();
});

async function tcpResponder(behaviour: Behaviour, options: { tls?: boolean } = {}): Promise<Responder> {
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const onConnection = (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    socket.on('data', (chunk) => {
      buffered += chunk.toString('utf8');
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const request = buffered.slice(0, end + 4);
      buffered = buffered.slice(end + 4);
      requests.push(request);
      // Answers arrive split across writes, as TCP may deliver them.
      const answer = reply(request, behaviour).join('');
      if (answer) {
        socket.write(answer.slice(0, 10));
        setTimeout(() => socket.write(answer.slice(10)), 5);
      }
    });
  };
  const server: Server = options.tls ? createTlsServer(TEST_TLS, onConnection) : createServer(onConnection);
  const close = server.close.bind(server);
  server.close = (callback) => {
    for (const socket of sockets) socket.destroy();
    return close(callback);
  };
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as AddressInfo).port, requests };
}

async function udpResponder(behaviour: Behaviour, options: { dropFirst?: number } = {}): Promise<Responder> {
  const requests: string[] = [];
  const socket = createSocket('udp4');
  let dropped = 0;
  socket.on('message', (datagram, remote) => {
    const request = datagram.toString('utf8');
    requests.push(request);
    if (dropped < (options.dropFirst ?? 0)) {
      dropped++;
      return;
    }
    for (const message of reply(request, behaviour)) socket.send(message, remote.port, remote.address);
  });
  servers.push(socket);
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { port: socket.address().port, requests };
}

/** A port nothing listens on (bound, read, released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const test = (body: Record<string, unknown>) => app.api.post('/test-sip-connection', { body });

describe('POST /test-sip-connection', () => {
  it('reports a 200 OK over TCP (the default) with its latency, and sends a well-formed OPTIONS', async () => {
    const responder = await tcpResponder({ status: 200, reason: 'OK' });
    const res = await test({ termination_uri: `sip:127.0.0.1:${responder.port}` });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      reachable: true,
      status_code: 200,
      reason: 'OK',
      latency_ms: expect.any(Number),
      transport: 'tcp',
      address: `127.0.0.1:${responder.port}`,
      error_code: null,
      error: null,
    });
    expect(res.body.latency_ms).toBeGreaterThanOrEqual(0);
    expect(res.body.latency_ms).toBeLessThan(5000);

    expect(responder.requests).toHaveLength(1);
    const [requestLine, ...headerLines] = responder.requests[0]!.trimEnd().split('\r\n');
    expect(requestLine).toBe(`OPTIONS sip:127.0.0.1:${responder.port} SIP/2.0`);
    const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]));
    expect(headers.Via).toMatch(/^SIP\/2\.0\/TCP 127\.0\.0\.1:\d+;branch=z9hG4bK[0-9a-f]+;rport$/);
    expect(headers['Max-Forwards']).toBe('70');
    expect(headers.From).toMatch(/^<sip:parley@127\.0\.0\.1>;tag=[0-9a-f]+$/);
    expect(headers.To).toBe(`<sip:127.0.0.1:${responder.port}>`);
    expect(headers['Call-ID']).toMatch(/^[0-9a-f]+@parley$/);
    expect(headers.CSeq).toBe('1 OPTIONS');
    expect(headers.Contact).toMatch(/^<sip:parley@127\.0\.0\.1:\d+;transport=tcp>$/);
    expect(headers['Content-Length']).toBe('0');
  });

  it('reports a 200 OK over UDP when the URI says so', async () => {
    const responder = await udpResponder({ status: 200, reason: 'OK' });
    const res = await test({ termination_uri: `sip:127.0.0.1:${responder.port};transport=udp` });
    expect(res.body).toMatchObject({ reachable: true, status_code: 200, reason: 'OK', transport: 'udp', error_code: null });
    expect(responder.requests[0]).toMatch(/^OPTIONS sip:127\.0\.0\.1:\d+;transport=udp SIP\/2\.0\r\nVia: SIP\/2\.0\/UDP /);
  });

  it('retransmits over UDP until an answer comes (timer E)', async () => {
    const responder = await udpResponder({ status: 200, reason: 'OK' }, { dropFirst: 1 });
    const res = await test({ termination_uri: `sip:127.0.0.1:${responder.port}`, transport: 'UDP' });
    expect(res.body).toMatchObject({ reachable: true, status_code: 200, transport: 'udp' });
    expect(responder.requests).toHaveLength(2);
    expect(responder.requests[1]).toBe(responder.requests[0]);
    expect(res.body.latency_ms).toBeGreaterThanOrEqual(400);
  });

  it('skips a provisional answer and reports the final one', async () => {
    const tcp = await tcpResponder('provisional-then-200');
    const udp = await udpResponder('provisional-then-200');
    expect((await test({ termination_uri: `sip:127.0.0.1:${tcp.port}` })).body).toMatchObject({ status_code: 200, reachable: true });
    expect((await test({ termination_uri: `sip:127.0.0.1:${udp.port};transport=udp` })).body).toMatchObject({
      status_code: 200,
      reachable: true,
    });
  });

  it.each([
    ['tcp', 403, 'Forbidden'],
    ['udp', 404, 'Not Found'],
    ['tcp', 503, 'Service Unavailable'],
  ] as const)('reports a %s answer of %i as reachable with its status', async (transport, status, reason) => {
    const responder = transport === 'tcp' ? await tcpResponder({ status, reason }) : await udpResponder({ status, reason });
    const res = await test({ termination_uri: `sip:127.0.0.1:${responder.port};transport=${transport}` });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ reachable: true, status_code: status, reason, transport, error_code: null, error: null });
  });

  it.each(['tcp', 'udp'] as const)('reports a timeout when nothing answers over %s, within the timeout', async (transport) => {
    const responder = transport === 'tcp' ? await tcpResponder('silent') : await udpResponder('silent');
    const started = Date.now();
    const res = await test({ termination_uri: `sip:127.0.0.1:${responder.port};transport=${transport}`, timeout_ms: 800 });
    const elapsed = Date.now() - started;
    expect(res.body).toEqual({
      reachable: false,
      status_code: null,
      reason: null,
      latency_ms: null,
      transport,
      address: `127.0.0.1:${responder.port}`,
      error_code: 'timeout',
      error: 'No SIP response within 800 ms',
    });
    expect(elapsed).toBeGreaterThanOrEqual(750);
    expect(elapsed).toBeLessThan(5000);
    expect(responder.requests.length).toBeGreaterThanOrEqual(1);
  });

  it('reports a refused connection on a closed TCP port', async () => {
    const port = await closedPort();
    const res = await test({ termination_uri: `sip:127.0.0.1:${port}` });
    expect(res.body).toMatchObject({
      reachable: false,
      status_code: null,
      error_code: 'refused',
      error: `Connection refused by 127.0.0.1:${port} (TCP)`,
    });
  });

  it('writes an IPv6 target in brackets', async () => {
    const port = await closedPort();
    const res = await test({ termination_uri: `sip:[::1]:${port}`, timeout_ms: 1000 });
    expect(res.body).toMatchObject({ reachable: false, address: `[::1]:${port}` });
    // Refused where the machine has IPv6 loopback; a network error (or timeout) where it has not.
    if (res.body.error_code === 'refused') expect(res.body.error).toBe(`Connection refused by [::1]:${port} (TCP)`);
    else expect(['network_error', 'timeout']).toContain(res.body.error_code);
  });

  it('reports a closed UDP port as refused (ICMP port unreachable) or, where that is filtered, a timeout', async () => {
    const port = await closedPort();
    const res = await test({ termination_uri: `sip:127.0.0.1:${port};transport=udp`, timeout_ms: 1000 });
    expect(res.body.reachable).toBe(false);
    expect(['refused', 'timeout']).toContain(res.body.error_code);
  });

  it('reports a DNS failure for a host that does not exist', async () => {
    const res = await test({ termination_uri: 'sip:trunk.parley-test.invalid:5060;transport=tcp', timeout_ms: 3000 });
    expect(res.body).toMatchObject({ reachable: false, address: null, error_code: 'dns_failure', transport: 'tcp' });
    expect(res.body.error).toMatch(/trunk\.parley-test\.invalid/);
  });

  it('resolves a host name (localhost)', async () => {
    const responder = await tcpResponder({ status: 200, reason: 'OK' });
    const res = await test({ termination_uri: `sip:trunk@localhost:${responder.port}` });
    // localhost may resolve to ::1 first, where nothing listens: either way the outcome is explicit.
    if (res.body.address === `127.0.0.1:${responder.port}`) expect(res.body).toMatchObject({ reachable: true, status_code: 200 });
    else expect(res.body).toMatchObject({ reachable: false, error_code: 'refused' });
  });

  it('follows the SRV record of a host named without a port (RFC 3263), per transport', async () => {
    const tcp = await tcpResponder({ status: 200, reason: 'OK' });
    const udp = await udpResponder({ status: 486, reason: 'Busy Here' });
    const dnsServer = await fakeSrvDns({
      '_sip._tcp.trunk.parley.test': [10, 5, tcp.port, '127.0.0.1'],
      '_sip._udp.trunk.parley.test': [10, 5, udp.port, '127.0.0.1'],
    });
    const overTcp = await probeSipUri('sip:trunk.parley.test', { timeoutMs: 3000, dnsServers: [dnsServer.server] });
    expect(overTcp).toMatchObject({ reachable: true, status_code: 200, transport: 'tcp', address: `127.0.0.1:${tcp.port}` });
    const overUdp = await probeSipUri('sip:trunk.parley.test;transport=udp', { timeoutMs: 3000, dnsServers: [dnsServer.server] });
    expect(overUdp).toMatchObject({ reachable: true, status_code: 486, transport: 'udp', address: `127.0.0.1:${udp.port}` });
    expect(dnsServer.asked).toEqual(['_sip._tcp.trunk.parley.test', '_sip._udp.trunk.parley.test']);
    // The Request-URI and To keep the name the URI gave, not the SRV target.
    expect(tcp.requests[0]).toMatch(/^OPTIONS sip:trunk\.parley\.test SIP\/2\.0\r\n/);
    expect(tcp.requests[0]).toMatch(/\r\nTo: <sip:trunk\.parley\.test>\r\n/);
  });

  it('falls back to A/AAAA when there is no SRV record, and reports the name that does not resolve', async () => {
    const dnsServer = await fakeSrvDns({});
    const result = await probeSipUri('sip:trunk.parley-test.invalid', { timeoutMs: 3000, dnsServers: [dnsServer.server] });
    expect(dnsServer.asked).toEqual(['_sip._tcp.trunk.parley-test.invalid']);
    // ENOTFOUND where a resolver answers, EAI_AGAIN where none is reachable: a DNS failure either way.
    expect(result).toMatchObject({ reachable: false, address: null, error_code: 'dns_failure' });
    expect(result.error).toMatch(/^(Host trunk\.parley-test\.invalid not found \(DNS\)|DNS lookup of trunk\.parley-test\.invalid failed)/);
  });

  it('reports an answer that is not SIP as a malformed response', async () => {
    const tcp = await tcpResponder('garbage');
    const udp = await udpResponder('garbage');
    for (const [uri, transport] of [
      [`sip:127.0.0.1:${tcp.port}`, 'tcp'],
      [`sip:127.0.0.1:${udp.port};transport=udp`, 'udp'],
    ] as const) {
      const res = await test({ termination_uri: uri });
      expect(res.body).toMatchObject({ reachable: false, transport, error_code: 'malformed_response' });
      expect(res.body.error).toBe('Not a SIP response: "HTTP/1.1 400 Bad Request"');
    }
  });

  it('speaks TLS for a sips: URI', async () => {
    const responder = await tcpResponder({ status: 200, reason: 'OK' }, { tls: true });
    const result = await probeSipUri(`sips:127.0.0.1:${responder.port}`, { timeoutMs: 3000, allowUntrustedCertificate: true });
    expect(result).toMatchObject({ reachable: true, status_code: 200, transport: 'tls', error_code: null });
    expect(responder.requests[0]).toMatch(/^OPTIONS sips:127\.0\.0\.1:\d+ SIP\/2\.0\r\nVia: SIP\/2\.0\/TLS /);
  });

  it('reports a TLS failure for a certificate that does not verify (the API never skips verification)', async () => {
    const responder = await tcpResponder({ status: 200, reason: 'OK' }, { tls: true });
    const res = await test({ termination_uri: `sip:127.0.0.1:${responder.port};transport=tls`, timeout_ms: 3000 });
    expect(res.body).toMatchObject({ reachable: false, transport: 'tls', error_code: 'tls_failure' });
    expect(res.body.error).toMatch(/^TLS handshake with 127\.0\.0\.1:\d+ \(TLS\) failed: self[- ]signed certificate/);
    expect(responder.requests).toHaveLength(0);
  });

  it('reports a TLS failure when the far end does not speak TLS', async () => {
    const responder = await tcpResponder({ status: 200, reason: 'OK' });
    const res = await test({ termination_uri: `sips:127.0.0.1:${responder.port}`, timeout_ms: 2000 });
    expect(res.body).toMatchObject({
      reachable: false,
      transport: 'tls',
      error_code: 'timeout',
      error: `TLS handshake with 127.0.0.1:${responder.port} did not finish within 2000 ms`,
    });
  });

  it.each([
    [{}, 'termination_uri: Required'],
    [{ termination_uri: 'http://example.com' }, 'termination_uri: Must be a SIP URI (sip:host[:port][;transport=tcp|udp|tls], or sips:)'],
    [{ termination_uri: 'sip:' }, 'termination_uri: Must be a SIP URI (sip:host[:port][;transport=tcp|udp|tls], or sips:)'],
    [{ termination_uri: 'sip:host:99999' }, 'termination_uri: Must be a SIP URI (sip:host[:port][;transport=tcp|udp|tls], or sips:)'],
    [{ termination_uri: 'sip:host;transport=sctp' }, 'termination_uri: Must be a SIP URI (sip:host[:port][;transport=tcp|udp|tls], or sips:)'],
    [{ termination_uri: 'sip:ho st.example.com' }, 'termination_uri: Must be a SIP URI (sip:host[:port][;transport=tcp|udp|tls], or sips:)'],
    [{ termination_uri: 'sip:trunk.example.com\n' }, 'termination_uri: Must be a SIP URI (sip:host[:port][;transport=tcp|udp|tls], or sips:)'],
    [{ termination_uri: 42 }, 'termination_uri: Expected string, received number'],
    [{ termination_uri: 'sip:a.example.com', transport: 'ws' }, 'transport: Expected one of "tcp", "udp", "tls", "TCP", "UDP", "TLS"'],
    [{ termination_uri: 'sips:a.example.com', transport: 'udp' }, 'transport: Must be tls for a sips: URI'],
    [{ termination_uri: 'sip:a.example.com', timeout_ms: 100 }, 'timeout_ms: Must be at least 500'],
    [{ termination_uri: 'sip:a.example.com', timeout_ms: 10_001 }, 'timeout_ms: Must be at most 10000'],
    [{ termination_uri: 'sip:a.example.com', timeout_ms: 1.5 }, 'timeout_ms: Must be a whole number'],
  ])('answers 400 for bad input %j', async (body, message) => {
    const res = await test(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message });
  });

  it('needs the numbers scope', async () => {
    const created = await app.api.post('/api-keys', { body: { name: 'agents only', scopes: ['agents'] } });
    const res = await app.api.withKey(created.body.api_key).post('/test-sip-connection', { body: { termination_uri: 'sip:a.example.com' } });
    expect(res.status).toBe(403);
  });
});

describe('parseSipUri', () => {
  it.each([
    ['sip:example.pstn.twilio.com', { scheme: 'sip', host: 'example.pstn.twilio.com' }],
    ['SIP:Trunk.Example.com:5080;transport=TCP', { scheme: 'sip', host: 'Trunk.Example.com', port: 5080, transport: 'tcp' }],
    ['sips:user@10.0.0.1', { scheme: 'sips', user: 'user', host: '10.0.0.1' }],
    ['sip:[2001:db8::1]:5062;transport=udp;lr', { host: '2001:db8::1', port: 5062, transport: 'udp' }],
    ['sip:+14155550100@gw.example.com?subject=x', { user: '+14155550100', requestUri: 'sip:+14155550100@gw.example.com' }],
  ])('parses %s', (uri, expected) => {
    expect(parseSipUri(uri)).toMatchObject(expected);
  });

  it.each(['', 'sip', 'tel:+14155550100', 'sip:[2001:db8::1', 'sip:1.2.3', 'sip:-bad.example.com', 'sips:host;transport=udp', 'sip:host:0'])(
    'rejects %j',
    (uri) => {
      expect(parseSipUri(uri)).toBeUndefined();
    },
  );

  it('never throws for network outcomes, even on a bad URI', async () => {
    await expect(probeSipUri('nonsense', { timeoutMs: 500 })).resolves.toMatchObject({ reachable: false, error_code: 'invalid_uri' });
  });
});
