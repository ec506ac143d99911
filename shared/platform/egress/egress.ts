import { request as httpRequest, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { addressRefusal, checkUrl, egressPolicy, EgressRefused, hostRefusal, HTTP_SCHEMES, portOf, type EgressPolicy } from './egress-rules.ts';
import { traced } from '../observability/tracing.ts';

export {
  
  addressRefusal,
  checkUrl,
  destinationUrlRefusal,
  egressPolicy,
  egressPolicyFor,
  EgressRefused,
  
  HTTP_SCHEMES,
  portOf,
  protectLocalPort,
  WEBSOCKET_SCHEMES,
  
} from './egress-rules.ts';

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
 * The rules themselves (schemes, ports, address ranges, names judged without DNS, the
 * production and development policies) are in egress-rules.ts, which request schemas also
 * use to refuse such a URL when it is saved.
 */

interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (tests inject one to play DNS). */
export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

/** The whole exchange (DNS, connect, request, the full response body), unless the caller says otherwise. */
const DEFAULT_EGRESS_TIMEOUT_MS = 10_000;
/** The response body is cut off (the request fails) past this, unless the caller says otherwise. */
const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

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
  // IP literals, localhost and private-network names: judged as a saved URL was.
  const refusal = hostRefusal(bare, port, policy);
  if (refusal) throw new EgressRefused(refusal);
  const literal = isIP(bare);
  if (literal) return { host: bare, port, address: bare, family: literal === 6 ? 6 : 4, lookup: pinnedLookup(bare, literal === 6 ? 6 : 4) };
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
