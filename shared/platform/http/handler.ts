import middy, { type MiddlewareObj, type MiddyHandlerObject } from '@middy/core';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { admit, CSRF_HEADER, type Admission } from '../auth/gate.ts';
import { sourceAddress } from '../auth/ip.ts';
import { assertPublicStart } from '../auth/public-start.ts';
import { validateConfig } from '../config.ts';
import { invalidUtf8, notJsonContentType, payloadTooLarge, routeNotFound } from '../errors.ts';
import { logger } from '../logger.ts';
import { preflightResponse, responseCorsHeaders, type preflightTable } from './cors.ts';
import { telemetry } from '../observability/telemetry.ts';
import { EventStream, eventStreamChunk, streamEvents, streamSinkOf } from './event-stream.ts';
import { attachmentDisposition } from './download.ts';
import { parseJsonBody } from './json.ts';
import type { parseMultipart } from './multipart.ts';
import { countApiError } from './error-counts.ts';
import { errorResponse, jsonResponse } from './respond.ts';
import { routeKeys, type Handlers, type RequestInfo, type RouteDefinition, type RouteTable } from './route.ts';
import { parseOrThrow } from './validation.ts';

export const MAX_JSON_BODY_BYTES = 25 * 1024 * 1024;

type Event = APIGatewayProxyEventV2;
type Result = APIGatewayProxyStructuredResultV2;

interface Entry {
  id: string;
  route: RouteDefinition;
  handler: (input: never) => unknown;
}

/** What the middlewares hand the handler, on the invocation's own context object. */
interface RequestState {
  entry?: Entry;
  admission?: Admission;
  info: RequestInfo;
  startedAt: number;
}
type ParleyContext = Context & { parley: RequestState };
const stateOf = (context: Context) => (context as ParleyContext).parley;

/**
 * Builds a domain Lambda: API Gateway has already matched the route (event.routeKey), so
 * dispatch is a map lookup. Every request runs: gate (IP limit, key, allowlist, key
 * limit, scope) → input parsing and validation → handler → response, and any error is
 * mapped to HTTP in errorResponse, with the rate-limit headers on every response.
 */
export interface DomainOptions {
  /**
   * The multipart parser (shared/platform/http/multipart.ts), given only by the domains that have
   * multipart routes, so busboy is not in every function's bundle.
   */
  multipart?: typeof parseMultipart;
  /**
   * The function that answers CORS preflights (API Gateway's `OPTIONS /{proxy+}`, the public
   * function): the routes' CORS classes to judge them by (shared/platform/http/cors.ts).
   */
  preflight?: ReturnType<typeof preflightTable>;
}

/**
 * An answer with another success status than the route's (e.g. a create that created
 * nothing answers 200, not 201). Rare by design: routes declare their status.
 */
export class OtherStatus {
  constructor(
    readonly status: 200 | 201 | 202,
    readonly body: unknown,
  ) {}
}

/**
 * An answer in another media type than the route's JSON, chosen per request (the agent
 * playground's `text/event-stream` when the request accepts it): the body is sent as it is.
 */
export class MediaResponse {
  constructor(
    readonly contentType: string,
    readonly body: string,
    readonly headers: Record<string, string> = {},
    /** Another status than the route's (an OAuth token endpoint's RFC 6749 error is a 400 in its own format; SCIM answers its errors in its own media type). */
    readonly status?: number,
    /** Set-Cookie values, one cookie each (API Gateway's `cookies`: a header map holds one Set-Cookie only). */
    readonly cookies: readonly string[] = [],
  ) {}
}

/**
 * Bytes of a type known only per request (a public asset): sent base64-encoded with
 * isBase64Encoded, as API Gateway wants binary bodies, with the given headers.
 */
export class BinaryResponse {
  constructor(
    readonly contentType: string,
    readonly body: Buffer,
    readonly headers: Record<string, string> = {},
  ) {}
}

/**
 * A browser redirect (302 with `location`): the OAuth callback sends the browser back to
 * the dashboard. The target is built by the domain, never taken from the request as is.
 */
export class Redirect {
  constructor(
    readonly location: string,
    /** Set-Cookie values, one cookie each (a browser flow's binding cookie, a session). */
    readonly cookies: readonly string[] = [],
  ) {}
}

/** API Gateway's `cookies` field of a result, when there are any. */
const withCookies = (cookies: readonly string[]) => (cookies.length ? { cookies: [...cookies] } : {});

/** A file answer of a `produces` route: its bytes and the name a browser saves it under. */
export class Download {
  constructor(
    readonly body: Buffer,
    readonly filename: string,
  ) {}
}

export function domainHandler<T extends RouteTable>(routes: T, handlers: Handlers<T>, options: DomainOptions = {}) {
  const preflight = options.preflight;
  const byKey = new Map<string, Entry>();
  for (const [id, route] of Object.entries(routes)) {
    if ((route.bodyType === 'multipart' || route.bodyType === 'json-or-multipart') && !options.multipart) {
      throw new Error(`Route ${id} takes multipart bodies: pass the multipart parser to domainHandler`);
    }
    for (const key of routeKeys(route)) {
      byKey.set(key, { id, route, handler: handlers[id as keyof T] as Entry['handler'] });
    }
  }
  const handler = middy<Event, Result, Error, Context>()
    // Outermost: the trace's handler subsegment spans the rest, and the metrics the request
    // counted (429s and 402s included) are flushed once its answer is final.
    .use(telemetry())
    .use(injectLambdaContext(logger, { resetKeys: true }))
    .use(accessLog())
    .use(gate(byKey))
    .handler(async (event, context) => {
      const { entry, admission, info } = stateOf(context);
      const route = entry!.route;
      const principal = admission?.principal;
      const params = route.params ? parseOrThrow(route.params, event.pathParameters ?? {}, 'params') : {};
      const query = route.query ? parseOrThrow(route.query, event.queryStringParameters ?? {}, 'query') : {};
      const sent = route.body ? await readBody(event, route, options) : undefined;
      // A browser's key starts the agent as configured: judged on the body as sent, before
      // the schema drops what it does not know (shared/platform/auth/public-start.ts).
      if (route.publicKey && principal?.kind === 'public') assertPublicStart(principal.credential ?? {}, sent);
      const input = {
        params,
        query,
        body: route.body ? parseOrThrow(route.body, sent, 'body') : undefined,
        principal,
        request: info,
      };
      const output = await entry!.handler(input as never);
      if (output instanceof EventStream) {
        // Server-sent events: streamed where the runtime can (the local server), else one long-poll chunk.
        const sink = streamSinkOf(context);
        if (!sink) return eventStreamChunk(output, admission?.headers as Record<string, string> | undefined);
        await streamEvents(output, sink, admission?.headers as Record<string, string> | undefined);
        return { statusCode: 200, headers: {}, body: '' };
      }
      if (route.produces && output instanceof Download) {
        return {
          statusCode: route.status,
          headers: { 'content-type': route.produces, 'content-disposition': attachmentDisposition(output.filename), ...admission?.headers },
          body: output.body.toString('base64'),
          isBase64Encoded: true,
        };
      }
      if (route.produces && !(output instanceof MediaResponse)) {
        return { statusCode: route.status, headers: { 'content-type': route.produces, ...admission?.headers }, body: String(output) };
      }
      if (output instanceof OtherStatus) return jsonResponse(output.status, output.body, admission?.headers);
      if (output instanceof BinaryResponse) {
        return {
          statusCode: route.status,
          headers: { 'content-type': output.contentType, 'content-length': String(output.body.length), ...output.headers, ...admission?.headers },
          body: output.body.toString('base64'),
          isBase64Encoded: true,
        };
      }
      if (output instanceof MediaResponse) {
        return {
          statusCode: output.status ?? route.status,
          headers: { 'content-type': output.contentType, ...output.headers, ...admission?.headers },
          body: output.body,
          ...withCookies(output.cookies),
        };
      }
      if (output instanceof Redirect) {
        return { statusCode: 302, headers: { location: output.location, 'cache-control': 'no-store', ...admission?.headers }, body: '', ...withCookies(output.cookies) };
      }
      return jsonResponse(route.status, route.status === 204 ? undefined : output, admission?.headers);
    });
  // The settings are parsed on first use, not at import (a cold start's import stays cheap):
  // an invalid one throws here, out of the invocation and into the function's error log
  // with the setting's name, before a request is admitted or anything is written.
  const served = async (event: Event, context: Context, options?: MiddyHandlerObject): Promise<Result> => {
    validateConfig();
    if (preflight && event.requestContext.http.method === 'OPTIONS') return preflightResponse(preflight, event.rawPath, event.headers);
    return (options ? handler(event, context, options) : handler(event, context)) as Promise<Result>;
  };
  // What this function serves, so a test can hold it to the route table's routes of its domain.
  return Object.assign(served, { routeIds: Object.freeze(Object.keys(routes)) });
}

/**
 * The request-context field naming the assistant's session a dispatched request comes from
 * (shared/conductor/tools/dispatch.ts). API Gateway builds `requestContext` itself, so no
 * client can set it; only a direct invocation (the conductor function, which alone may
 * invoke the domain functions) or the local runtime's in-process stand-in can.
 */
export const CONDUCTOR_CONTEXT_FIELD = 'parleyConductorSessionId';

function gate(byKey: Map<string, Entry>): MiddlewareObj<Event, Result, Error, Context> {
  return {
    before: async (request) => {
      const { event, context } = request;
      const state = stateOf(context);
      state.entry = byKey.get(event.routeKey);
      const access = state.entry ? state.entry.route : ({ access: 'public' } as const);
      state.admission = await admit(access, {
        sourceIp: state.info.sourceIp,
        authorization: event.headers.authorization,
        origin: event.headers.origin,
        cookie: state.info.cookie,
        csrfToken: event.headers[CSRF_HEADER],
      });
      if (!state.entry) throw routeNotFound(event.requestContext.http.method, event.rawPath);
      const marked = (event.requestContext as { [CONDUCTOR_CONTEXT_FIELD]?: unknown })[CONDUCTOR_CONTEXT_FIELD];
      if (typeof marked === 'string' && state.admission.principal) state.admission.principal.conductorSessionId = marked;
    },
  };
}

/** Starts the request state, maps errors to responses, and logs one line per request (never secrets). */
function accessLog(): MiddlewareObj<Event, Result, Error, Context> {
  const finish = (request: { event: Event; context: Context; response: Result | null }) => {
    const state = stateOf(request.context);
    const principal = state.admission?.principal;
    logger.info('request', {
      method: request.event.requestContext.http.method,
      route: state.entry?.id ?? null,
      status: request.response?.statusCode,
      duration_ms: Date.now() - state.startedAt,
      source_ip: state.info.sourceIp,
      workspace_id: principal?.workspaceId,
      credential_id: principal?.credentialId,
    });
  };
  // CORS headers on every answer (docs/browser.md): what the route's class allows this origin.
  const withCors = async (request: { event: Event; context: Context; response: Result | null }) => {
    const state = stateOf(request.context) as RequestState | undefined;
    if (!request.response) return;
    const cors = await responseCorsHeaders(state?.entry?.route, request.event.headers, state?.admission?.principal);
    request.response.headers = { ...cors, ...request.response.headers };
  };
  return {
    before: (request) => {
      const { event, context } = request;
      (context as ParleyContext).parley = {
        startedAt: Date.now(),
        info: {
          requestId: event.requestContext.requestId ?? context.awsRequestId,
          sourceIp: sourceAddress(event.requestContext.http.sourceIp),
          headers: event.headers,
          // Payload v2 moves Cookie headers into `cookies`; the local server leaves them in headers.
          cookie: event.cookies?.join('; ') ?? event.headers.cookie,
          rawBody: event.body == null ? '' : event.isBase64Encoded ? Buffer.from(event.body, 'base64').toString('utf8') : event.body,
        },
      };
    },
    after: async (request) => {
      await withCors(request);
      finish(request);
    },
    onError: async (request) => {
      const state = stateOf(request.context) as RequestState | undefined;
      request.response = errorResponse(request.error, state?.admission?.headers, state?.entry?.route.errorFormat);
      await withCors(request);
      if (state) finish(request);
      // A workspace's error answers feed its alerts (api_errors); the count never fails the answer.
      const workspaceId = state?.admission?.principal?.workspaceId;
      if (workspaceId && request.response.statusCode !== undefined) await countApiError(workspaceId, request.response.statusCode);
    },
  };
}

const MULTIPART_MEDIA_TYPE = /^\s*multipart\//i;

const FORM_MEDIA_TYPE = /^\s*application\/x-www-form-urlencoded\s*(?:;|$)/i;

/** Whether a request's body is an HTML form's (`application/x-www-form-urlencoded`): what a browser's page posts. */
export const isFormBody = (headers: Record<string, string | undefined>) => FORM_MEDIA_TYPE.test(headers['content-type'] ?? headers['Content-Type'] ?? '');

function readBody(event: Event, route: RouteDefinition, options: DomainOptions): unknown {
  const contentType = event.headers['content-type'] ?? event.headers['Content-Type'];
  if (route.bodyType === 'json-or-form' && isFormBody(event.headers)) {
    // An HTML form post (SAML's HTTP-POST binding): each field once, as text.
    const text = event.body == null ? '' : event.isBase64Encoded ? decodeUtf8(Buffer.from(event.body, 'base64')) : event.body;
    if (Buffer.byteLength(text, 'utf8') > (route.maxBodyBytes ?? MAX_JSON_BODY_BYTES)) throw payloadTooLarge('Form body too large');
    return Object.fromEntries(new URLSearchParams(text));
  }
  const multipart =
    route.bodyType === 'multipart' || (route.bodyType === 'json-or-multipart' && MULTIPART_MEDIA_TYPE.test(contentType ?? ''));
  if (!multipart || !options.multipart) return readJsonBody(event, route);
  const raw = event.body == null ? Buffer.alloc(0) : Buffer.from(event.body, event.isBase64Encoded ? 'base64' : 'utf8');
  return options.multipart(raw, contentType, {
    ...route.uploadLimits,
    maxBodyBytes: route.maxBodyBytes ?? MAX_JSON_BODY_BYTES,
  });
}

/** "25 MB", "10 MB": a body cap as its 413 says it. */
const megabytes = (bytes: number) => `${Math.round((bytes / (1024 * 1024)) * 10) / 10} MB`;

/**
 * A JSON route's body: nothing (no bytes) reads as `{}`; otherwise it must say it is JSON
 * (415 before anything else reads it) and be valid UTF-8 (400, never U+FFFD stand-ins).
 * A body without a Content-Type is refused too: every client the spec names (retell-sdk,
 * the examples) sends `application/json`, and guessing would accept what a form or a
 * text/plain request sends.
 */
function readJsonBody(event: Event, route: RouteDefinition): unknown {
  if (event.body === undefined || event.body === null || event.body === '') return {};
  assertJsonContentType(event.headers['content-type'] ?? event.headers['Content-Type']);
  const text = event.isBase64Encoded ? decodeUtf8(Buffer.from(event.body, 'base64')) : event.body;
  const maxBytes = route.maxBodyBytes ?? MAX_JSON_BODY_BYTES;
  if (Buffer.byteLength(text, 'utf8') > maxBytes) {
    throw payloadTooLarge(`JSON body exceeds the ${megabytes(maxBytes)} limit`);
  }
  if (text.trim() === '') return {};
  return parseJsonBody(text, route.maxJsonString);
}

/** `application/json` or a `+json` type (`application/merge-patch+json`), in UTF-8 if a charset is named. */
const JSON_MEDIA_TYPE = /^application\/(?:[\w.-]+\+)?json$/;

function assertJsonContentType(header: string | undefined): void {
  const [mediaType = '', ...parameters] = (header ?? '').split(';').map((part) => part.trim().toLowerCase());
  const charset = parameters.find((parameter) => parameter.startsWith('charset='))?.slice('charset='.length);
  const utf8Charset = charset === undefined || ['utf-8', 'utf8', '"utf-8"'].includes(charset);
  if (!JSON_MEDIA_TYPE.test(mediaType) || !utf8Charset) throw notJsonContentType(header?.trim());
}

// ignoreBOM keeps a byte-order mark in the text, so JSON.parse refuses it as it does in a text body.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Strict UTF-8: a body that is not valid UTF-8 is a 400, not text with U+FFFD in it. */
function decodeUtf8(bytes: Buffer): string {
  try {
    return utf8.decode(bytes);
  } catch {
    throw invalidUtf8();
  }
}
