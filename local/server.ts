import { installLocalQueues } from './queues.ts';
import { installLocalRouteInvoker } from './route-invoker.ts';
import { config } from '../shared/platform/config.ts';
import { protectLocalPort } from '../shared/platform/egress/egress.ts';
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { localLambdaContext } from './local-context.ts';
import { badRequest, payloadTooLarge } from '../shared/platform/errors.ts';
import { MAX_JSON_BODY_BYTES } from '../shared/platform/http/handler.ts';
import { preflightResponse, preflightTable } from '../shared/platform/http/cors.ts';
import { errorResponse } from '../shared/platform/http/respond.ts';
import type { Domain } from '../shared/platform/http/route.ts';
import { servedRoutes } from '../shared/route-table.ts';
import { domainFunctions, type HttpHandler } from './functions.ts';
import { InvocationSlots, LOCAL_CONCURRENCY } from './invocation-slots.ts';
import { installLocalObjectStore, LOCAL_OBJECTS_PATH, type FolderObjectStore } from './object-store.ts';
import { requestTarget, type RequestTarget } from './request-target.ts';

interface Match {
  routeKey: string;
  domain: Domain;
  pathParameters?: Record<string, string>;
  /** A route's own body cap above the 25 MB default (knowledge base uploads); API Gateway caps far lower in AWS. */
  maxBodyBytes?: number;
}

/**
 * Does locally what API Gateway's HTTP API does in AWS: matches the method and path
 * against the route table (static segments win over parameters), builds a payload v2
 * event with the socket's address as sourceIp, and invokes the domain's Lambda handler.
 * Unmatched requests go to the $default route (the meta function), which answers 404.
 */
/** Routes only this runtime serves (local/sandbox-routes.ts), matched like the table's. */
const LOCAL_ONLY_KEYS = new Set(['POST /sandbox/inbound-call']);
function localOnlyRoutes(): { key: string; method: string; path: string; domain: Domain }[] {
  return [...LOCAL_ONLY_KEYS].map((key) => {
    const [method, path] = key.split(' ') as [string, string];
    return { key, method, path, domain: 'calls' };
  });
}

function createRouter() {
  const exact = new Map<string, Match>();
  const templated: { method: string; segments: string[]; match: Match }[] = [];
  for (const route of [...servedRoutes(), ...localOnlyRoutes()]) {
    const maxBodyBytes = (route as { route?: { maxBodyBytes?: number } }).route?.maxBodyBytes;
    const match: Match = { routeKey: route.key, domain: route.domain, ...(maxBodyBytes && maxBodyBytes > MAX_JSON_BODY_BYTES ? { maxBodyBytes } : {}) };
    if (route.path.includes('{')) {
      templated.push({ method: route.method, segments: route.path.split('/'), match });
    } else {
      exact.set(`${route.method} ${route.path}`, match);
    }
  }
  // API Gateway prefers the most specific route: fewer parameters first.
  templated.sort(
    (a, b) => a.segments.filter((s) => s.startsWith('{')).length - b.segments.filter((s) => s.startsWith('{')).length,
  );

  return function match(method: string, path: string): Match {
    // API Gateway matches the path as sent, without collapsing `//` or resolving `.`:
    // an empty segment (`//x`, `/x//y`, a trailing `/`) matches no route, so it is the
    // $default route's 404, never a neighbouring route.
    if (!path.startsWith('/') || (path !== '/' && path.slice(1).split('/').includes(''))) {
      return { routeKey: '$default', domain: 'meta' };
    }
    const direct = exact.get(`${method} ${path}`);
    if (direct) return direct;
    const segments = path.split('/');
    for (const candidate of templated) {
      if (candidate.method !== method || candidate.segments.length !== segments.length) continue;
      const params: Record<string, string> = {};
      const fits = candidate.segments.every((segment, i) => {
        const actual = segments[i]!;
        if (segment.startsWith('{')) {
          if (actual === '') return false;
          params[segment.slice(1, -1)] = decodeSegment(actual);
          return true;
        }
        return segment === actual;
      });
      if (fits) return { ...candidate.match, pathParameters: params };
    }
    return { routeKey: '$default', domain: 'meta' };
  };
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw badRequest(`Invalid percent-encoding in path segment "${segment.slice(0, 100)}"`);
  }
}

const CORS_HEADERS = {
  'access-control-allow-origin': '*',
  'access-control-allow-headers': 'authorization,content-type',
  'access-control-allow-methods': 'GET,POST,PATCH,PUT,DELETE,OPTIONS',
  'access-control-max-age': '600',
};

export interface LocalServer {
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

export async function startLocalServer(options: { port: number; host?: string }): Promise<LocalServer> {
  const match = createRouter();
  const slots = new InvocationSlots(LOCAL_CONCURRENCY);
  const handlers = new Map<Domain, Promise<HttpHandler>>();
  const handlerFor = (domain: Domain) => {
    let loaded = handlers.get(domain);
    if (!loaded) {
      loaded = domainFunctions[domain]().then((module) => module.handler);
      handlers.set(domain, loaded);
    }
    return loaded;
  };

  let objects: FolderObjectStore | undefined;
  const server = createServer((req, res) => {
    // The object store stand-in's signed URLs (recordings): answered here, as S3 answers its own.
    if (objects && req.method === 'GET' && req.url?.startsWith(LOCAL_OBJECTS_PATH)) {
      const target = requestTarget(req.url);
      objects.serve(target.path, target.query, res).catch((error) => send(res, errorResponse(error)));
      return;
    }
    // Presigned uploads (knowledge-base files past API Gateway's request limit): a PUT to the signed URL, as to S3.
    if (objects && req.method === 'PUT' && req.url?.startsWith(LOCAL_OBJECTS_PATH)) {
      const target = requestTarget(req.url);
      objects.receive(target.path, target.query, req, res).catch((error) => send(res, errorResponse(error)));
      return;
    }
    handle(req, res, match, handlerFor, slots).catch((error) => {
      send(res, errorResponse(error));
    });
  });
  // WebSocket monitors of calls (GET /v2/calls/{call_id}/ws with Upgrade): held here, as API Gateway's WebSocket API holds them in AWS.
  const monitors = await import('./live-monitors.ts');
  server.on('upgrade', (req, socket, head) => {
    monitors.upgrade(req, socket, head).catch(() => socket.destroy());
  });
  server.keepAliveTimeout = 65_000;
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => resolve());
  });
  // Queues stand in for SQS here. Installed once listening (a start that fails on a busy
  // port never begins reading the stored messages back), yet before the first request can
  // queue anything: this runs in the listen callback's continuation, ahead of any request event.
  installLocalQueues();
  // The assistant's tools run the domain handlers in process here (Lambda invocations in AWS).
  installLocalRouteInvoker();
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // Recordings go to a folder under DATA_DIR unless a bucket is named (then S3, as in AWS).
  if (!config.RECORDINGS_BUCKET || !config.KNOWLEDGE_BASE_BUCKET) objects = installLocalObjectStore(url);
  // Outbound requests a tenant chooses (webhooks, workflow steps) must never reach this API.
  protectLocalPort(port, 'API');
  return {
    url,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        monitors.closeAll();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(
  req: IncomingMessage,
  res: ServerResponse,
  match: ReturnType<typeof createRouter>,
  handlerFor: (domain: Domain) => Promise<HttpHandler>,
  slots: InvocationSlots,
): Promise<void> {
  const method = (req.method ?? 'GET').toUpperCase();
  const target = requestTarget(req.url ?? '/');
  if (method === 'OPTIONS') {
    // CORS preflights: judged by the routes' CORS classes, as the public function does behind API Gateway.
    const headers: Record<string, string> = {};
    for (const [name, values] of Object.entries(req.headersDistinct)) if (values !== undefined) headers[name] = values.join(',');
    sendRaw(res, await preflightResponse(PREFLIGHT, target.path, headers));
    return;
  }
  const route = match(method, target.path);
  const body = await readBody(req, route.maxBodyBytes ?? MAX_JSON_BODY_BYTES);
  if (body === 'too-large') {
    res.setHeader('connection', 'close');
    const multipart = /multipart\//i.test(req.headers['content-type'] ?? '');
    const limit = `${Math.round((route.maxBodyBytes ?? MAX_JSON_BODY_BYTES) / (1024 * 1024))} MB`;
    send(res, errorResponse(payloadTooLarge(`${multipart ? 'Request' : 'JSON'} body exceeds the ${limit} limit`)));
    req.destroy();
    return;
  }
  const event = buildEvent(req, method, target, route, body);
  const handler = LOCAL_ONLY_KEYS.has(route.routeKey) ? ((await import('./sandbox-routes.ts')).sandboxHandler as HttpHandler) : await handlerFor(route.domain);
  const context = localLambdaContext(`parley-${route.domain}`, config.LOCAL_REQUEST_TIMEOUT_MS);
  if (STREAM_ROUTES.has(route.routeKey)) {
    // Server-sent events stream for real here (shared/platform/http/event-stream.ts): no 29 s deadline, a sink on the socket.
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    Object.assign(context, {
      getRemainingTimeInMillis: () => 24 * 3_600_000,
      parleyStreamSink: {
        start: (status: number, headers: Record<string, string>) => {
          res.writeHead(status, { ...CORS_HEADERS, ...headers });
          res.flushHeaders();
        },
        write: (chunk: string) => void res.write(chunk),
        end: () => res.end(),
        signal: gone.signal,
      },
    });
  }
  // The handler set the CORS headers its route's class allows (shared/platform/http/cors.ts).
  sendRaw(res, await slots.run(() => handler(event, context, { signal: new AbortController().signal })));
}

const PREFLIGHT = preflightTable(servedRoutes().map((served) => served.route));

/** Routes that answer server-sent events (`produces: text/event-stream`), by route key. */
const STREAM_ROUTES = new Set(
  servedRoutes()
    .filter((served) => served.route.produces === 'text/event-stream')
    .map((served) => served.key),
);

function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer | 'too-large'> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        if (!tooLarge) resolve('too-large');
        tooLarge = true;
        req.pause();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => !tooLarge && resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function buildEvent(req: IncomingMessage, method: string, target: RequestTarget, route: Match, body: Buffer): APIGatewayProxyEventV2 {
  // API Gateway (payload v2) joins a repeated header's values with commas. Node's
  // req.headers keeps only the first of some (authorization, content-type, ...), which
  // would let a second credential slip past unseen: headersDistinct keeps every value.
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(req.headersDistinct)) {
    if (values !== undefined) headers[name] = values.join(',');
  }
  // API Gateway joins repeated query parameters with commas.
  const query: Record<string, string> = {};
  for (const [name, value] of new URLSearchParams(target.query)) query[name] = name in query ? `${query[name]},${value}` : value;
  const contentType = headers['content-type'] ?? '';
  // Text types arrive as text; anything else, and any body that is not valid UTF-8, as
  // base64, so the handler sees the bytes sent (and can refuse them) rather than U+FFFD.
  const binary =
    body.length > 0 && ((contentType !== '' && !/json|text|x-www-form-urlencoded/i.test(contentType)) || !isUtf8(body));
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: route.routeKey,
    rawPath: target.path,
    rawQueryString: target.query,
    headers,
    queryStringParameters: Object.keys(query).length ? query : undefined,
    pathParameters: route.pathParameters,
    body: body.length ? body.toString(binary ? 'base64' : 'utf8') : undefined,
    isBase64Encoded: binary,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: headers.host ?? 'localhost',
      domainPrefix: 'local',
      requestId: randomUUID(),
      routeKey: route.routeKey,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
      http: {
        method,
        path: target.path,
        protocol: `HTTP/${req.httpVersion}`,
        sourceIp: req.socket.remoteAddress ?? 'unknown',
        userAgent: headers['user-agent'] ?? '',
      },
    },
  };
}

/** An answer the server built itself (an oversized body, an object URL): CORS as every route but the browser ones. */
function send(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  sendRaw(res, { ...result, headers: { ...CORS_HEADERS, ...result.headers } });
}

function sendRaw(res: ServerResponse, result: APIGatewayProxyStructuredResultV2): void {
  if (res.headersSent) return;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(result.headers ?? {})) headers[name] = String(value);
  const body = result.body === undefined ? undefined : Buffer.from(result.body, result.isBase64Encoded ? 'base64' : 'utf8');
  if (body) headers['content-length'] = String(body.length);
  // API Gateway sends each of `cookies` as a Set-Cookie header of its own.
  if (result.cookies?.length) {
    res.setHeader('set-cookie', [...(headers['set-cookie'] ? [headers['set-cookie']] : []), ...result.cookies]);
    delete headers['set-cookie'];
  }
  res.writeHead(result.statusCode ?? 200, headers);
  res.end(body);
}
