import { request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import { config, type Config } from './config.ts';
import { onFirstUse } from './lazy.ts';
import { traced } from './tracing.ts';

/*
 * The egress guard: every request to a destination a user chose (workflow HTTP steps,
 * webhooks, MCP servers, the custom LLM WebSocket test, SIP OPTIONS probes) goes through
 * here, so none can reach the platform's own network (docs/security.md, "Egress guard").
 *
 * 1. The URL: http:/https: only (ws:/wss: for the WebSocket handshake), no credentials in
 *    it, none of the Fetch standard's "bad ports" (what fetch() refused before the guard).
 * 2. The host: resolved once (every address, A and AAAA); if ANY address is not public
 *    the request is refused. Literal IPs are checked as they are (WHATWG URL parsing has
 *    already turned `2130706433`, `0x7f.1` and `[::ffff:127.0.0.1]` into canonical forms).
 *    IPv4 embedded in IPv6 (IPv4-mapped, SIIT, NAT64 64:ff9b::/96, 6to4) is judged as its
 *    IPv4 address; other IPv6 must be global unicast (2000::/3) outside the special blocks.
 * 3. The connection: pinned to the address that was checked (node:http with a `lookup`
 *    that answers only that address), so a second DNS answer cannot rebind it; TLS still
 *    sends SNI for, and verifies the certificate against, the host name.
 * 4. The answer: a redirect is returned as it is (never followed); the body is capped
 *    (maxResponseBytes) and the whole exchange, body included, is bounded (timeoutMs).
 *
 * In production nothing but public unicast addresses passes. In development and tests
 * loopback is allowed (local webhook receivers, test fakes on 127.0.0.1) except the local
 * runtime's own DynamoDB Local and API ports, on any loopback address or any address of
 * this machine. Private, link-local, CGNAT and the rest stay refused everywhere: a local
 * receiver listens on loopback, and a developer's LAN (router, NAS, other services) is
 * exactly what a hostile workflow would want to reach.
 */

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (tests inject one to play DNS). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export interface EgressPolicy {
  /** Loopback destinations are allowed (development and tests only). */
  allowLoopback: boolean;
  /** Ports of the local runtime's own services (port → what), refused on this machine's addresses. */
  protectedLocalPorts: ReadonlyMap<number, string>;
}

export const HTTP_SCHEMES = ['http:', 'https:'] as const;
export const WEBSOCKET_SCHEMES = ['ws:', 'wss:'] as const;
/** The whole exchange (DNS, connect, request, the full response body), unless the caller says otherwise. */
export const DEFAULT_EGRESS_TIMEOUT_MS = 10_000;
/** The response body is cut off (the request fails) past this, unless the caller says otherwise. */
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/** The Fetch standard's bad ports (https://fetch.spec.whatwg.org/#bad-port): fetch() already refused them. */
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** Request headers the guard sets itself (framing, connection) or derives from the URL (host). */
const CONTROLLED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
]);

// ---------------------------------------------------------------------------------------
// Errors

/** The destination is not allowed; the message says why and is safe to show to the user. */
export class EgressRefused extends Error {
  constructor(reason: string) {
    super(`Destination not allowed: ${reason}`);
    this.name = 'EgressRefused';
  }
}

/** The response body went past the cap. */
export class EgressResponseTooLarge extends Error {
  constructor(readonly limitBytes: number) {
    super(`Response exceeds ${formatBytes(limitBytes)}`);
    this.name = 'EgressResponseTooLarge';
  }
}

/**
 * DNS or network failure; `cause` is the original error, whose `code` (ENOTFOUND,
 * ECONNREFUSED, …) callers report, as they did with fetch()'s `TypeError.cause`.
 */
export class EgressNetworkError extends Error {
  constructor(cause: NodeJS.ErrnoException) {
    super(cause.code ? `Request failed: ${cause.code}` : `Request failed: ${cause.message}`, { cause });
    this.name = 'EgressNetworkError';
  }
}

const formatBytes = (bytes: number) =>
  bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MB` : bytes % 1024 === 0 ? `${bytes / 1024} KB` : `${bytes} bytes`;

// ---------------------------------------------------------------------------------------
// Address policy

/** The policy for a set of settings: production refuses loopback; elsewhere the runtime's own ports are refused. */
export function egressPolicyFor(settings: Pick<Config, 'PARLEY_ENV' | 'DYNAMODB_ENDPOINT' | 'PORT'>): EgressPolicy {
  if (settings.PARLEY_ENV === 'production') return { allowLoopback: false, protectedLocalPorts: new Map() };
  const ports = new Map<number, string>();
  if (settings.DYNAMODB_ENDPOINT) {
    try {
      const endpoint = new URL(settings.DYNAMODB_ENDPOINT);
      ports.set(Number(endpoint.port || (endpoint.protocol === 'https:' ? 443 : 80)), 'DynamoDB Local');
    } catch {
      // Not a URL: the DynamoDB client would fail on it too.
    }
  }
  if (settings.PORT > 0 && !ports.has(settings.PORT)) ports.set(settings.PORT, 'API');
  return { allowLoopback: true, protectedLocalPorts: ports };
}

/** This process's policy, from its settings (made on first use, when the settings are read). */
export const egressPolicy: EgressPolicy = onFirstUse(() => egressPolicyFor(config));

/**
 * Adds a port the local runtime learns only once it listens (the API on `PORT=0`, as tests
 * and `startLocalServer({port: 0})` use) to this process's refused ports. No effect in
 * production, where no local service listens.
 */
export function protectLocalPort(port: number, name: string): void {
  if (egressPolicy.allowLoopback && port > 0) (egressPolicy.protectedLocalPorts as Map<number, string>).set(port, name);
}

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * The special-purpose range an address falls in, by ipaddr.js's `range()` names, or
 * `unicast` for a public address. IPv4 inside IPv6 is judged as the IPv4 address;
 * IPv6 outside 2000::/3 that ipaddr.js calls unicast is `reserved`. Not an IP: `invalid`.
 */
export function addressRange(text: string): string {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (!isIP(bare)) return 'invalid';
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(bare);
  } catch {
    return 'invalid';
  }
  if (address.kind() === 'ipv4') return address.range();
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  const parts = v6.parts;
  const embedded = (high: number, low: number) =>
    new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]).range();
  switch (range) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return embedded(parts[6]!, parts[7]!);
    case 'rfc6052': // NAT64: 64:ff9b::a.b.c.d is translated to a.b.c.d; the RFC 8215 local-use block stays reserved
      return v6.match(NAT64_WELL_KNOWN) ? embedded(parts[6]!, parts[7]!) : 'reserved';
    case '6to4': // 2002:AABB:CCDD::/48 is routed through a.b.c.d
      return embedded(parts[1]!, parts[2]!);
    case 'unicast':
      return v6.match(GLOBAL_UNICAST_V6) ? 'unicast' : 'reserved';
    default:
      return range;
  }
}

const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback',
  private: 'a private',
  linkLocal: 'a link-local',
  uniqueLocal: 'a unique-local',
  carrierGradeNat: 'a carrier-grade NAT (shared)',
  multicast: 'a multicast',
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  invalid: 'an invalid',
};

function isOwnAddress(address: string): boolean {
  const canonical = ipaddr.process(address).toString();
  return Object.values(networkInterfaces()).some((list) =>
    (list ?? []).some((entry) => {
      try {
        return ipaddr.process(entry.address).toString() === canonical;
      } catch {
        return false;
      }
    }),
  );
}

/**
 * Why `address:port` may not be reached under `policy` (e.g. `a private address`), or
 * undefined when it may.
 */
export function addressRefusal(address: string, port: number, policy: EgressPolicy = egressPolicy): string | undefined {
  const range = addressRange(address);
  const own = policy.protectedLocalPorts.get(port);
  if (range === 'loopback' && policy.allowLoopback) return own ? `the local runtime's own ${own}` : undefined;
  if (range !== 'unicast') return `${RANGE_WORDS[range] ?? 'a reserved'} address`;
  // A public address of this machine reaches the local runtime's services as loopback does.
  if (own && policy.allowLoopback && isOwnAddress(address)) return `the local runtime's own ${own}`;
  return undefined;
}

// ---------------------------------------------------------------------------------------
// Resolution

/** node:dns is imported on the first lookup: a function that never resolves a name does not load it at cold start. */
const systemResolver: Resolver = async (host) =>
  (await (await import('node:dns')).promises.lookup(host, { all: true, verbatim: true })).map(({ address, family }) => ({
    address,
    family: family === 6 ? 6 : 4,
  }));

export interface ResolveOptions {
  resolver?: Resolver;
  policy?: EgressPolicy;
  signal?: AbortSignal;
}

/** A destination whose every address passed the policy; connections go to `address`. */
export interface CheckedDestination {
  /** The host as the caller named it (an IPv6 literal without brackets). */
  host: string;
  port: number;
  /** The address connections are pinned to (the first of the checked ones). */
  address: string;
  family: 4 | 6;
  /** For node:http/net/tls `lookup`: answers only the checked address, whatever it is asked. */
  lookup: LookupFunction;
}

function pinnedLookup(address: string, family: 4 | 6): LookupFunction {
  return ((_hostname: string, options: { all?: boolean } | undefined, callback: (...args: unknown[]) => void) => {
    if (typeof options === 'function') (options as (...args: unknown[]) => void)(null, address, family);
    else if (options?.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

function abortable<T>(work: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return work;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/**
 * Resolves `host` (every address) and checks each against the policy for `port`. Throws
 * EgressRefused when any address is not allowed, EgressNetworkError when DNS fails.
 */
export async function resolveDestination(host: string, port: number, options: ResolveOptions = {}): Promise<CheckedDestination> {
  const policy = options.policy ?? egressPolicy;
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const literal = isIP(bare);
  if (literal) {
    const refusal = addressRefusal(bare, port, policy);
    if (refusal) throw new EgressRefused(`${bare.includes(':') ? `[${bare}]` : bare}${own(refusal) ? `:${port}` : ''} is ${refusal}`);
    return { host: bare, port, address: bare, family: literal === 6 ? 6 : 4, lookup: pinnedLookup(bare, literal === 6 ? 6 : 4) };
  }
  let addresses: ResolvedAddress[];
  try {
    addresses = await abortable((options.resolver ?? systemResolver)(bare), options.signal);
  } catch (error) {
    if (options.signal?.aborted) throw options.signal.reason;
    throw new EgressNetworkError(error as NodeJS.ErrnoException);
  }
  if (addresses.length === 0) throw new EgressNetworkError(Object.assign(new Error(`No address for ${bare}`), { code: 'ENOTFOUND' }));
  for (const { address } of addresses) {
    const refusal = addressRefusal(address, port, policy);
    if (refusal) throw new EgressRefused(`${bare}${own(refusal) ? `:${port}` : ''} resolves to ${refusal}`);
  }
  const { address, family } = addresses[0]!;
  return { host: bare, port, address, family, lookup: pinnedLookup(address, family) };
}

const own = (refusal: string) => refusal.startsWith('the local runtime');

export interface UrlCheckOptions extends ResolveOptions {
  /** Allowed schemes (default http: and https:). */
  schemes?: readonly string[];
}

/** Parses and checks a URL's form: scheme, no credentials, not a bad port. */
export function checkUrl(input: string | URL, schemes: readonly string[] = HTTP_SCHEMES): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new EgressRefused('not a valid URL');
  }
  if (!schemes.includes(url.protocol)) {
    throw new EgressRefused(`${url.protocol} URLs are not allowed (${schemes.join(' or ')} only)`);
  }
  if (url.username || url.password) throw new EgressRefused('URLs with credentials are not allowed; send them in a header');
  if (BAD_PORTS.has(portOf(url))) throw new EgressRefused(`port ${portOf(url)} is not allowed`);
  return url;
}

/** The URL's port, or its scheme's default. */
export function portOf(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' || url.protocol === 'wss:' ? 443 : 80;
}

/** checkUrl, then resolveDestination for its host and port. */
export async function checkDestination(
  input: string | URL,
  options: UrlCheckOptions = {},
): Promise<{ url: URL; destination: CheckedDestination }> {
  const url = checkUrl(input, options.schemes);
  return { url, destination: await resolveDestination(url.hostname, portOf(url), options) };
}

// ---------------------------------------------------------------------------------------
// Requests

export interface EgressRequestInit extends ResolveOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The whole exchange, body included (default DEFAULT_EGRESS_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Cap on the response body (default DEFAULT_MAX_RESPONSE_BYTES). */
  maxResponseBytes?: number;
  /** Certificate authorities to trust instead of the default ones (tests). Verification is never turned off. */
  ca?: string | string[];
}

const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * fetch(), guarded: checks the URL and every address of its host, connects to the checked
 * address only, never follows a redirect (a 3xx is answered as it is), caps the body and
 * the total time. Answers a WHATWG Response whose body stream errors with
 * EgressResponseTooLarge past the cap or with the abort reason (a TimeoutError) past the
 * time. Throws EgressRefused, EgressNetworkError, or the abort reason.
 */
export function egressFetch(input: string | URL, init: EgressRequestInit = {}): Promise<Response> {
  // An `egress` trace subsegment in Lambda (until the headers: the body streams after it closes).
  return traced('egress', () => guardedFetch(input, init));
}

async function guardedFetch(input: string | URL, init: EgressRequestInit): Promise<Response> {
  const url = checkUrl(input, HTTP_SCHEMES);
  const timeoutMs = init.timeoutMs ?? DEFAULT_EGRESS_TIMEOUT_MS;
  const maxBytes = init.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
  const destination = await resolveDestination(url.hostname, portOf(url), { ...init, signal });
  signal.throwIfAborted();

  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(init.headers ?? {})) {
    if (!CONTROLLED_HEADERS.has(name.toLowerCase())) headers[name] = value;
  }
  const body = typeof init.body === 'string' ? Buffer.from(init.body, 'utf8') : init.body;
  if (body !== undefined) headers['content-length'] = String(body.byteLength);

  return new Promise<Response>((resolve, reject) => {
    let settled = false;
    let failBody: ((error: unknown) => void) | undefined;
    let req: ClientRequest;
    const cleanup = () => signal.removeEventListener('abort', onAbort);
    const fail = (error: unknown) => {
      cleanup();
      if (!settled) {
        settled = true;
        reject(error);
      } else failBody?.(error);
    };
    function onAbort() {
      const reason: unknown = signal.reason;
      fail(reason);
      req?.destroy(reason instanceof Error ? reason : new Error('aborted'));
    }
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, {
        method: init.method ?? 'GET',
        headers,
        lookup: destination.lookup,
        // One connection per request: a pooled socket could have been opened for another address.
        agent: false,
        ...(init.ca ? { ca: init.ca } : {}),
      });
    } catch (error) {
      // Invalid header names or values are refused by node:http before anything is sent.
      fail(new EgressNetworkError(error as NodeJS.ErrnoException));
      return;
    }
    req.on('error', (error: NodeJS.ErrnoException) => fail(signal.aborted ? signal.reason : new EgressNetworkError(error)));
    req.on('response', (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      const length = Number(res.headers['content-length']);
      if (status < 200 || status > 599) {
        fail(new EgressNetworkError(Object.assign(new Error(`Invalid HTTP status ${status}`), { code: 'EPROTO' })));
        req.destroy();
        return;
      }
      if (Number.isFinite(length) && length > maxBytes) {
        fail(new EgressResponseTooLarge(maxBytes));
        req.destroy();
        return;
      }
      const responseHeaders = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
        try {
          responseHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        } catch {
          // A header Headers cannot hold (invalid characters) is dropped.
        }
      }
      let stream: ReadableStream<Uint8Array> | null = null;
      if (NULL_BODY_STATUSES.has(status) || init.method === 'HEAD') {
        res.resume();
        res.on('end', cleanup);
      } else {
        let received = 0;
        let done = false;
        stream = new ReadableStream<Uint8Array>({
          start(controller) {
            failBody = (error: unknown) => {
              if (done) return;
              done = true;
              controller.error(error);
            };
            res.on('data', (chunk: Buffer) => {
              if (done) return;
              received += chunk.byteLength;
              if (received > maxBytes) {
                fail(new EgressResponseTooLarge(maxBytes));
                req.destroy();
                return;
              }
              controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
              if ((controller.desiredSize ?? 1) <= 0) res.pause();
            });
            res.on('end', () => {
              cleanup();
              if (done) return;
              done = true;
              controller.close();
            });
            res.on('error', (error: NodeJS.ErrnoException) => fail(signal.aborted ? signal.reason : new EgressNetworkError(error)));
            res.on('aborted', () => fail(signal.aborted ? signal.reason : new EgressNetworkError(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))));
          },
          pull() {
            res.resume();
          },
          cancel() {
            done = true;
            cleanup();
            req.destroy();
          },
        });
      }
      settled = true;
      let response: Response;
      try {
        response = new Response(stream, { status, statusText: res.statusMessage ?? '', headers: responseHeaders });
      } catch {
        response = new Response(stream, { status, headers: responseHeaders });
      }
      resolve(response);
    });
    req.end(body);
  });
}
