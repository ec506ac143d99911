import { randomUUID } from 'node:crypto';
import { STATUS_CODES, createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
// The real timers, not the global ones: a test that installs fake timers (vi.useFakeTimers) still
// gets a vendor that answers in wall-clock time, as the real one would.
import { clearTimeout as realClearTimeout, setTimeout as realSetTimeout } from 'node:timers';
import { WebSocketServer, type WebSocket } from 'ws';

/**
 * What the infrastructure shared by the fake vendor servers (fake-deepgram.ts, fake-elevenlabs.ts,
 * fake-cartesia.ts, fake-openai-tts.ts) does: one HTTP server on 127.0.0.1 (port 0) that checks the
 * vendor's auth header, routes plain requests and WebSocket upgrades by path, counts every request,
 * injects failures, and closes everything it opened.
 */

/**
 * A failure the next requests meet, for fallback tests:
 * - `refuse`: the TCP connection is accepted and destroyed without an answer (a connection reset);
 * - `http`: the request (or the WebSocket upgrade) is answered with this HTTP status;
 * - `close`: the connection opens, and the first synthesis or audio it receives closes it with
 *   this WebSocket close code (default 1011; a plain HTTP answer is cut off mid-body instead);
 * - `error`: the first synthesis it receives is answered with the vendor's own error message.
 */
export type VendorFailure =
  | { mode: 'refuse' }
  | { mode: 'http'; status: number; body?: string }
  | { mode: 'close'; code?: number; reason?: string }
  | { mode: 'error'; message?: string; status?: number };

/** What every fake voice (text-to-speech) vendor takes: its key, its latencies and its failures. */
export interface FakeVoiceOptions {
  /** The key to require in the vendor's auth header; absent: any key. */
  apiKey?: string;
  /** Wait between the text that starts a generation and its first audio (default 0). */
  firstByteDelayMs?: number;
  /** Audio per message or body chunk (default 100 ms). */
  chunkMs?: number;
  /** Wait between a generation's audio chunks (default 0: as fast as the connection takes them). */
  chunkIntervalMs?: number;
  /** The synthetic voice's pace (default 60 ms a character). */
  msPerChar?: number;
  /** A failure for every request from the start (see `fail`). */
  failure?: VendorFailure;
}

/** A failure armed for a number of requests (every request when `times` is absent). */
export class FailureSwitch {
  #failure: VendorFailure | undefined;
  #left = Infinity;

  constructor(failure?: VendorFailure) {
    this.#failure = failure;
  }

  set(failure: VendorFailure | undefined, times = Infinity): void {
    this.#failure = failure;
    this.#left = times;
  }

  /** The failure for the connection being opened: `refuse` and `http` act on the request itself. */
  onConnect(): Extract<VendorFailure, { mode: 'refuse' | 'http' }> | undefined {
    const failure = this.#failure;
    if (!failure || (failure.mode !== 'refuse' && failure.mode !== 'http')) return undefined;
    this.#consume();
    return failure;
  }

  /** The failure for the first synthesis (or audio) on an open connection: `close` and `error`. */
  onWork(): Extract<VendorFailure, { mode: 'close' | 'error' }> | undefined {
    const failure = this.#failure;
    if (!failure || (failure.mode !== 'close' && failure.mode !== 'error')) return undefined;
    this.#consume();
    return failure;
  }

  #consume() {
    this.#left -= 1;
    if (this.#left <= 0) this.#failure = undefined;
  }
}

/** A request as the fake saw it, before any WebSocket traffic. */
export interface ConnectionInfo {
  /** Counts from 0 across the fake's lifetime. */
  index: number;
  id: string;
  method: string;
  /** The path without the query string. */
  path: string;
  /** The query parameters; a repeated parameter is an array, in order. */
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  /** Date.now() at arrival. */
  at: number;
}

interface Route {
  /** Answers a plain HTTP request; absent: 404. */
  http?: (request: IncomingMessage, response: ServerResponse, info: ConnectionInfo, failure: FailureSwitch) => void | Promise<void>;
  /** Handles an accepted WebSocket; absent: the upgrade is answered 404. */
  ws?: (socket: WebSocket, info: ConnectionInfo) => void;
  /** Refuses an upgrade before it happens (bad query parameters), as the vendor answers the handshake. */
  validate?: (info: ConnectionInfo) => { status: number; body: string } | undefined;
  /** Headers added to the 101 answer (e.g. Deepgram's `dg-request-id`). */
  upgradeHeaders?: (info: ConnectionInfo) => Record<string, string>;
}

export interface VendorServerOptions {
  /** The header carrying the key, lower case (`authorization`, `xi-api-key`, `x-api-key`). */
  authHeader: string;
  /** Turns the header's value into the key (e.g. strips `Token `); undefined when malformed. */
  keyFrom?: (value: string) => string | undefined;
  /** The key to require; absent: any non-empty key. */
  apiKey?: string;
  /** The vendor's error body for a refused key. */
  unauthorizedBody?: string;
  route: (path: string, method: string) => Route | undefined;
  /** The fake's failure switch, which its handlers also consult. */
  failures: FailureSwitch;
}

export interface VendorServer {
  origin: string;
  port: number;
  connections: ConnectionInfo[];
  /** Every request received (HTTP and upgrades, refused ones included). */
  readonly requests: number;
  close(): Promise<void>;
}

export async function startVendorServer(options: VendorServerOptions): Promise<VendorServer> {
  const connections: ConnectionInfo[] = [];
  const failure = options.failures;
  const sockets = new Set<Socket>();
  let requests = 0;
  const wss = new WebSocketServer({ noServer: true });

  const describe = (req: IncomingMessage): ConnectionInfo => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const query: Record<string, string | string[]> = {};
    for (const key of new Set(url.searchParams.keys())) {
      const values = url.searchParams.getAll(key);
      query[key] = values.length === 1 ? values[0]! : values;
    }
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(',') : value;
    }
    return { index: requests - 1, id: randomUUID(), method: req.method ?? 'GET', path: url.pathname, query, headers, at: Date.now() };
  };

  const authorized = (info: ConnectionInfo) => {
    const raw = info.headers[options.authHeader];
    const key = raw === undefined ? undefined : options.keyFrom ? options.keyFrom(raw) : raw;
    if (!key) return false;
    return options.apiKey === undefined || key === options.apiKey;
  };

  const server = createServer((req, res) => {
    requests += 1;
    const info = describe(req);
    connections.push(info);
    const route = options.route(info.path, info.method);
    const connectFailure = failure.onConnect();
    if (connectFailure?.mode === 'refuse') {
      req.socket.destroy();
      return;
    }
    if (connectFailure?.mode === 'http') {
      res.writeHead(connectFailure.status, { 'content-type': 'application/json' });
      res.end(connectFailure.body ?? JSON.stringify({ error: `injected ${connectFailure.status}` }));
      return;
    }
    if (!authorized(info)) {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(options.unauthorizedBody ?? JSON.stringify({ error: 'invalid api key' }));
      return;
    }
    if (!route?.http) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `no route for ${info.method} ${info.path}` }));
      return;
    }
    void Promise.resolve(route.http(req, res, info, failure)).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(error) }));
    });
  });

  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    requests += 1;
    const info = describe(req);
    connections.push(info);
    const reject = (status: number, body: string) => {
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    };
    const connectFailure = failure.onConnect();
    if (connectFailure?.mode === 'refuse') {
      socket.destroy();
      return;
    }
    if (connectFailure?.mode === 'http') {
      reject(connectFailure.status, connectFailure.body ?? JSON.stringify({ error: `injected ${connectFailure.status}` }));
      return;
    }
    if (!authorized(info)) {
      reject(401, options.unauthorizedBody ?? JSON.stringify({ error: 'invalid api key' }));
      return;
    }
    const route = options.route(info.path, info.method);
    if (!route?.ws) {
      reject(404, JSON.stringify({ error: `no WebSocket at ${info.path}` }));
      return;
    }
    const invalid = route.validate?.(info);
    if (invalid) {
      reject(invalid.status, invalid.body);
      return;
    }
    const extra = route.upgradeHeaders?.(info) ?? {};
    const addHeaders = (headers: string[], request: IncomingMessage) => {
      if (request !== req) return;
      for (const [name, value] of Object.entries(extra)) headers.push(`${name}: ${value}`);
    };
    wss.on('headers', addHeaders);
    wss.handleUpgrade(req, socket, head, (ws) => {
      wss.off('headers', addHeaders);
      route.ws!(ws, info);
    });
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;

  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    connections,
    get requests() {
      return requests;
    },
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        for (const socket of sockets) socket.destroy();
        wss.close();
        server.close(() => resolve());
      })),
  };
}

/** A wall-clock timer that ignores fake timers; cleared by the returned function. */
export function after(ms: number, run: () => void): () => void {
  const timer = realSetTimeout(run, Math.max(0, ms));
  return () => realClearTimeout(timer);
}

/** Resolves after `ms` of wall-clock time (fake timers or not). */
export function sleep(ms: number): Promise<void> {
  return ms > 0 ? new Promise((resolve) => realSetTimeout(resolve, ms)) : Promise.resolve();
}

/** Sends JSON when the socket is still open (a client that went away is not an error here). */
export function sendJson(socket: WebSocket, message: unknown): boolean {
  if (socket.readyState !== socket.OPEN) return false;
  socket.send(JSON.stringify(message));
  return true;
}

export function sendBinary(socket: WebSocket, data: Uint8Array): boolean {
  if (socket.readyState !== socket.OPEN) return false;
  socket.send(data);
  return true;
}

/** Parses a text frame as JSON; undefined when it is binary or not JSON. */
export function parseJson(data: unknown, isBinary: boolean): unknown {
  if (isBinary) return undefined;
  try {
    return JSON.parse(Buffer.isBuffer(data) ? data.toString('utf8') : String(data));
  } catch {
    return undefined;
  }
}

/** A serial queue: work for one context runs in order, whatever its awaits. */
export class SerialQueue {
  #tail: Promise<void> = Promise.resolve();

  push(work: () => Promise<void>): Promise<void> {
    this.#tail = this.#tail.then(work, work).catch(() => undefined);
    return this.#tail;
  }
}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
