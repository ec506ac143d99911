import { randomBytes } from 'node:crypto';
import type { Socket as UdpSocket } from 'node:dgram';
import { isIP, Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { badRequest } from '../../platform/errors.ts';
import { EgressNetworkError, EgressRefused, resolveDestination, type Resolver } from '../../platform/egress/egress.ts';
import { parseSipUri, SIP_URI_MESSAGE, transportFor, type SipTransport, type SipUri } from '../sip-uri.ts';

export {  parseSipUri,     } from '../sip-uri.ts';

/*
 * SIP OPTIONS probe (RFC 3261 §11): "does this termination URI answer SIP?". Used by
 * `POST /test-sip-connection` and the phone-number connection test.
 *
 * One request, one transaction: resolve the host (node:dns; SRV `_sip._tcp` / `_sip._udp`
 * / `_sips._tcp` first when the URI names a host without a port, as RFC 3263 §4.2 does,
 * then A/AAAA), connect over the URI's transport (TCP by default, as the carriers' trunks
 * use; UDP when `;transport=udp`; TLS for `sips:` or `;transport=tls`), send OPTIONS and
 * read the first final response (1xx are skipped). Over UDP the request is retransmitted
 * on RFC 3261's timer E schedule (500 ms doubling up to 4 s). Every network outcome is a
 * result, never an exception: refused, timeout, DNS failure, malformed response, closed
 * connection, TLS failure, other network errors.
 *
 * `reachable` is true when the far end answered with any final SIP response: a 403 or 404
 * still proves a SIP server is listening there (what the check is for); the status tells
 * the caller whether it also accepts us.
 *
 * node:dns and node:dgram are imported when a probe needs them, not with the module: they
 * are not among the built-ins every function loads anyway (node:net and node:tls come with
 * the AWS SDK's node:https), and loading them cost the numbers function's cold import about
 * 3 ms (docs/performance.md, "Bundles and import time").
 */

type SipProbeErrorCode =
  | 'refused'
  | 'timeout'
  | 'dns_failure'
  | 'malformed_response'
  | 'connection_closed'
  | 'tls_failure'
  | 'network_error'
  | 'invalid_uri';

export interface SipProbeResult {
  /** A final SIP response came back (any status). */
  reachable: boolean;
  status_code: number | null;
  reason: string | null;
  /** From sending the request to the final response (null without one). */
  latency_ms: number | null;
  transport: SipTransport;
  /** The address the request went to (`ip:port`, `[ipv6]:port`), null before DNS resolved. */
  address: string | null;
  /** Why there is no response: refused, timeout, dns_failure, malformed_response, … */
  error_code: SipProbeErrorCode | null;
  error: string | null;
}

export interface ProbeOptions {
  timeoutMs: number;
  /** Overrides the URI's transport. */
  transport?: SipTransport;
  /** TLS only: accept a certificate that does not verify (tests). Default false. */
  allowUntrustedCertificate?: boolean;
  /** DNS servers for the SRV lookup (`ip[:port]`); default the system's (tests point it at a fake). */
  dnsServers?: string[];
  /** A/AAAA resolution (default the system's; tests inject one). */
  resolver?: Resolver;
}

const MAX_RESPONSE_BYTES = 64 * 1024;
const T1_MS = 500;
const T2_MS = 4000;

interface Target {
  address: string;
  port: number;
}

class ProbeFailure {
  constructor(
    readonly code: SipProbeErrorCode,
    readonly message: string,
  ) {}
}

export async function probeSipUri(uriText: string, options: ProbeOptions): Promise<SipProbeResult> {
  const uri = parseSipUri(uriText);
  const transport = uri ? transportFor(uri, options.transport) : (options.transport ?? 'tcp');
  const result = (fields: Partial<SipProbeResult>): SipProbeResult => ({
    reachable: false,
    status_code: null,
    reason: null,
    latency_ms: null,
    transport,
    address: null,
    error_code: null,
    error: null,
    ...fields,
  });
  if (!uri) return result({ error_code: 'invalid_uri', error: SIP_URI_MESSAGE });
  if (uri.scheme === 'sips' && transport !== 'tls') {
    return result({ error_code: 'invalid_uri', error: 'A sips: URI must be reached over TLS' });
  }

  const deadline = Date.now() + options.timeoutMs;
  let target: Target;
  try {
    target = await withDeadline(resolveTarget(uri, transport, deadline, options), deadline, () =>
      new ProbeFailure('timeout', `DNS lookup of ${uri.host} did not finish within ${options.timeoutMs} ms`),
    );
  } catch (error) {
    // The egress guard refused the destination: not a network outcome but a value not allowed.
    if (error instanceof EgressRefused) throw badRequest(error.message);
    const failure = error instanceof ProbeFailure ? error : new ProbeFailure('dns_failure', `DNS lookup of ${uri.host} failed`);
    return result({ error_code: failure.code, error: failure.message });
  }
  const address = targetText(target);
  try {
    const response = await (transport === 'udp'
      ? exchangeUdp(uri, target, deadline, options.timeoutMs)
      : exchangeStream(uri, target, transport, deadline, options));
    return result({ reachable: true, address, ...response });
  } catch (error) {
    const failure =
      error instanceof ProbeFailure ? error : new ProbeFailure('network_error', error instanceof Error ? error.message : String(error));
    return result({ address, error_code: failure.code, error: failure.message });
  }
}

/**
 * The address and port to send to, through the egress guard: every address of the host
 * (the SRV target's, when SRV named one) must pass the address policy, and the probe
 * connects to the checked address itself (never resolves again). Throws EgressRefused.
 */
async function resolveTarget(uri: SipUri, transport: SipTransport, deadline: number, options: ProbeOptions): Promise<Target> {
  const { dnsServers } = options;
  const defaultPort = transport === 'tls' ? 5061 : 5060;
  if (isIP(uri.host)) {
    const checked = await resolveDestination(uri.host, uri.port ?? defaultPort);
    return { address: checked.address, port: checked.port };
  }
  let host = uri.host;
  let port = uri.port;
  if (port === undefined) {
    const service = transport === 'tls' ? '_sips._tcp' : transport === 'udp' ? '_sip._udp' : '_sip._tcp';
    // SRV is optional (most trunks publish only A records): a slow or failing SRV lookup
    // falls back to A/AAAA with time left for it.
    const { Resolver } = (await import('node:dns')).promises;
    const resolver = new Resolver({ timeout: Math.max(100, Math.min(2000, Math.floor((deadline - Date.now()) / 3))), tries: 1 });
    if (dnsServers) resolver.setServers(dnsServers);
    const records = await resolver.resolveSrv(`${service}.${uri.host}`).catch(() => []);
    const best = records.sort((a, b) => a.priority - b.priority || b.weight - a.weight)[0];
    if (best && best.name !== '' && best.name !== '.') {
      host = best.name;
      port = best.port;
    }
  }
  try {
    const checked = await resolveDestination(host, port ?? defaultPort, { resolver: options.resolver });
    return { address: checked.address, port: checked.port };
  } catch (error) {
    if (!(error instanceof EgressNetworkError)) throw error;
    const code = (error.cause as NodeJS.ErrnoException).code;
    throw new ProbeFailure(
      'dns_failure',
      code === 'ENOTFOUND' ? `Host ${host} not found (DNS)` : `DNS lookup of ${host} failed (${code ?? 'error'})`,
    );
  }
}

function withDeadline<T>(work: Promise<T>, deadline: number, onTimeout: () => ProbeFailure): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(onTimeout()), Math.max(0, deadline - Date.now()));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** `ip:port`, with an IPv6 address in brackets. */
const targetText = (target: Target) =>
  isIP(target.address) === 6 ? `[${target.address}]:${target.port}` : `${target.address}:${target.port}`;

const token = (bytes = 8) => randomBytes(bytes).toString('hex');

interface Transaction {
  message: Buffer;
  callId: string;
}

/** The OPTIONS request, with Via/Contact naming the local end of the connection. */
function buildRequest(uri: SipUri, transport: SipTransport, localAddress: string, localPort: number): Transaction {
  const callId = `${token(12)}@parley`;
  const local = isIP(localAddress) === 6 ? `[${localAddress}]` : localAddress;
  const toUri = `${uri.scheme}:${uri.user ? `${uri.user}@` : ''}${isIP(uri.host) === 6 ? `[${uri.host}]` : uri.host}${uri.port ? `:${uri.port}` : ''}`;
  const lines = [
    `OPTIONS ${uri.requestUri} SIP/2.0`,
    `Via: SIP/2.0/${transport.toUpperCase()} ${local}:${localPort};branch=z9hG4bK${token(10)};rport`,
    'Max-Forwards: 70',
    `From: <sip:parley@${local}>;tag=${token(6)}`,
    `To: <${toUri}>`,
    `Call-ID: ${callId}`,
    'CSeq: 1 OPTIONS',
    `Contact: <sip:parley@${local}:${localPort};transport=${transport}>`,
    'Accept: application/sdp',
    'User-Agent: Parley-connection-test/1',
    'Content-Length: 0',
    '',
    '',
  ];
  return { message: Buffer.from(lines.join('\r\n'), 'utf8'), callId };
}

interface ParsedResponse {
  status_code: number;
  reason: string;
  /** Total bytes of the message (head + body) when complete, else undefined. */
  length?: number;
  callId?: string;
}

/**
 * Parses one SIP response from the start of `data`. Returns undefined while the head is
 * incomplete; throws a malformed-response failure for anything that is not a SIP response.
 */
function parseResponse(data: Buffer, datagram: boolean): ParsedResponse | undefined {
  const text = data.toString('latin1');
  const firstLineEnd = text.indexOf('\r\n');
  if (firstLineEnd < 0 && text.length < 512 && !datagram) return undefined;
  const statusLine = firstLineEnd >= 0 ? text.slice(0, firstLineEnd) : text.slice(0, 200);
  const status = /^SIP\/2\.0 ([1-6]\d\d) ([^\r\n]*)$/.exec(statusLine);
  if (!status) throw new ProbeFailure('malformed_response', `Not a SIP response: ${JSON.stringify(statusLine.slice(0, 120))}`);
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) {
    if (datagram) throw new ProbeFailure('malformed_response', 'SIP response without the blank line that ends its headers');
    return undefined;
  }
  const headers = new Map<string, string>();
  for (const line of text.slice(firstLineEnd + 2, headEnd).split(/\r\n(?![ \t])/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new ProbeFailure('malformed_response', `Malformed SIP header line: ${JSON.stringify(line.slice(0, 120))}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    headers.set(COMPACT[name] ?? name, line.slice(colon + 1).trim());
  }
  const lengthText = headers.get('content-length');
  const bodyLength = lengthText === undefined ? (datagram ? data.length - headEnd - 4 : 0) : Number(lengthText);
  if (!Number.isInteger(bodyLength) || bodyLength < 0) throw new ProbeFailure('malformed_response', 'SIP response with an invalid Content-Length');
  const total = headEnd + 4 + bodyLength;
  return {
    status_code: Number(status[1]),
    reason: status[2]!.trim(),
    length: data.length >= total ? total : undefined,
    callId: headers.get('call-id'),
  };
}

const COMPACT: Record<string, string> = { l: 'content-length', i: 'call-id', v: 'via', f: 'from', t: 'to' };

type Answer = Pick<SipProbeResult, 'status_code' | 'reason' | 'latency_ms'>;

function exchangeStream(
  uri: SipUri,
  target: Target,
  transport: 'tcp' | 'tls',
  deadline: number,
  options: ProbeOptions,
): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    let sentAt = 0;
    let buffered = Buffer.alloc(0);
    let transaction: Transaction | undefined;
    const socket: Socket =
      transport === 'tls'
        ? tlsConnect({
            host: target.address,
            port: target.port,
            servername: isIP(uri.host) ? undefined : uri.host,
            rejectUnauthorized: !options.allowUntrustedCertificate,
          })
        : new Socket().connect(target.port, target.address);
    const finish = (outcome: Answer | ProbeFailure) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.removeAllListeners('data');
      socket.on('error', () => undefined);
      socket.destroy();
      if (outcome instanceof ProbeFailure) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(
      () =>
        finish(
          new ProbeFailure(
            'timeout',
            transaction
              ? `No SIP response within ${options.timeoutMs} ms`
              : connected
                ? `TLS handshake with ${targetText(target)} did not finish within ${options.timeoutMs} ms`
                : `Could not connect to ${targetText(target)} within ${options.timeoutMs} ms`,
          ),
        ),
      Math.max(0, deadline - Date.now()),
    );
    let connected = false;
    socket.once('connect', () => {
      connected = true;
    });
    socket.once(transport === 'tls' ? 'secureConnect' : 'connect', () => {
      transaction = buildRequest(uri, transport, socket.localAddress ?? '0.0.0.0', socket.localPort ?? 0);
      sentAt = performance.now();
      socket.write(transaction.message);
    });
    socket.on('data', (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      try {
        for (;;) {
          const response = parseResponse(buffered, false);
          if (!response || response.length === undefined) {
            if (buffered.length > MAX_RESPONSE_BYTES) throw new ProbeFailure('malformed_response', 'SIP response over 64 KB');
            return;
          }
          buffered = buffered.subarray(response.length);
          if (response.status_code >= 200 && (!response.callId || response.callId === transaction?.callId)) {
            finish({ status_code: response.status_code, reason: response.reason, latency_ms: Math.round(performance.now() - sentAt) });
            return;
          }
        }
      } catch (error) {
        finish(error instanceof ProbeFailure ? error : new ProbeFailure('malformed_response', String(error)));
      }
    });
    socket.on('end', () =>
      finish(
        buffered.length
          ? new ProbeFailure('malformed_response', 'Connection closed in the middle of a SIP response')
          : new ProbeFailure('connection_closed', 'Connection closed without a SIP response'),
      ),
    );
    socket.on('close', () => finish(new ProbeFailure('connection_closed', 'Connection closed without a SIP response')));
    socket.on('error', (error: NodeJS.ErrnoException) => finish(networkFailure(error, target, transport)));
  });
}

async function exchangeUdp(uri: SipUri, target: Target, deadline: number, timeoutMs: number): Promise<Answer> {
  const { createSocket } = await import('node:dgram');
  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    let sentAt = 0;
    let retransmit: NodeJS.Timeout | undefined;
    let transaction: Transaction | undefined;
    const socket: UdpSocket = createSocket(isIP(target.address) === 6 ? 'udp6' : 'udp4');
    const finish = (outcome: Answer | ProbeFailure) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(retransmit);
      socket.removeAllListeners('message');
      socket.on('error', () => undefined);
      try {
        socket.close();
      } catch {
        // already closed
      }
      if (outcome instanceof ProbeFailure) reject(outcome);
      else resolve(outcome);
    };
    const timer = setTimeout(
      () => finish(new ProbeFailure('timeout', `No SIP response within ${timeoutMs} ms`)),
      Math.max(0, deadline - Date.now()),
    );
    const send = (interval: number) => {
      if (settled || !transaction) return;
      socket.send(transaction.message);
      retransmit = setTimeout(() => send(Math.min(interval * 2, T2_MS)), interval);
    };
    socket.on('error', (error: NodeJS.ErrnoException) => finish(networkFailure(error, target, 'udp')));
    socket.connect(target.port, target.address, () => {
      const local = socket.address();
      transaction = buildRequest(uri, 'udp', local.address, local.port);
      sentAt = performance.now();
      send(T1_MS);
    });
    socket.on('message', (datagram: Buffer) => {
      try {
        const response = parseResponse(datagram, true);
        if (!response) return;
        if (response.callId && response.callId !== transaction?.callId) return;
        if (response.status_code < 200) {
          // A provisional answer stops retransmission (RFC 3261 §17.1.2.2 keeps T2 spacing); wait for the final one.
          clearTimeout(retransmit);
          return;
        }
        finish({ status_code: response.status_code, reason: response.reason, latency_ms: Math.round(performance.now() - sentAt) });
      } catch (error) {
        finish(error instanceof ProbeFailure ? error : new ProbeFailure('malformed_response', String(error)));
      }
    });
  });
}

function networkFailure(error: NodeJS.ErrnoException, target: Target, transport: SipTransport): ProbeFailure {
  const where = `${targetText(target)} (${transport.toUpperCase()})`;
  switch (error.code) {
    case 'ECONNREFUSED':
      return new ProbeFailure('refused', `Connection refused by ${where}`);
    case 'ECONNRESET':
    case 'EPIPE':
      return new ProbeFailure('connection_closed', `Connection reset by ${where}`);
    case 'ETIMEDOUT':
      return new ProbeFailure('timeout', `Connection to ${where} timed out`);
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return new ProbeFailure('network_error', `No route to ${where}`);
    default:
      if (transport === 'tls' && (error.code?.startsWith('ERR_TLS') || /certificate|ssl|tls/i.test(error.message))) {
        return new ProbeFailure('tls_failure', `TLS handshake with ${where} failed: ${error.message}`);
      }
      return new ProbeFailure('network_error', `${error.code ?? 'Network error'} reaching ${where}: ${error.message}`);
  }
}
