import type { PublicCapability } from '../auth/scopes.ts';
import type * as z from 'zod';
import type { Principal } from '../auth/gate.ts';
import type { Access } from '../auth/scopes.ts';
import type { Role } from '../auth/roles.ts';
import type { ApiError } from '../errors.ts';

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

/** One Lambda per domain; CDK and the local server read the domain from each route. */
export const DOMAINS = ['account', 'agents', 'agent-tools', 'flows', 'chat-agents', 'voices', 'numbers', 'calls', 'calls-media', 'chats', 'contacts', 'batches', 'billing', 'integrations', 'meta', 'account-data', 'members', 'knowledge-bases', 'public', 'analytics', 'qa', 'conductor'] as const;
export type Domain = (typeof DOMAINS)[number];

/**
 * Routes API Gateway throttles apart from the stage default (lib/ turns each class into
 * per-route limits): `outbound` routes wait on an address the caller chose (test webhook,
 * workflow test, MCP tools, connection tests) and can hold a function for seconds;
 * `vendor` routes call a paid vendor (language model, voices, carrier, caller-ID vendor,
 * payments) and are slow and rare; `conversation` routes also wait on a vendor (a chat's
 * model turn, an SMS to the carrier) but carry conversation traffic at scale, so their
 * limit is sized from the chat turns the platform serves (docs/scale.md).
 * `worker` (the voice worker's reports and retrievals) and `media` (the media server's
 * webhooks) are each one route for every call on the platform, so their limits are sized
 * from the concurrent calls the platform serves (docs/scale.md), not tighter than the default.
 */
export const THROTTLE_CLASSES = ['outbound', 'vendor', 'conversation', 'worker', 'media'] as const;
export type ThrottleClass = (typeof THROTTLE_CLASSES)[number];

/** Errors as a route of its own protocol answers them (RouteDefinition.errorFormat). */
export interface ErrorFormat {
  /** The body's schema name in the OpenAPI document's components. */
  name: string;
  mediaType: string;
  /** The body's shape, for the OpenAPI document. */
  schema: z.ZodType;
  /** An error's JSON body (its status and headers are the error's). */
  body: (error: ApiError) => unknown;
}

interface RouteAlias {
  method: Method;
  path: string;
}

/**
 * A route as data: CDK builds API Gateway routes from it, the local server matches with
 * it, `npm run routes` prints it and the OpenAPI document is generated from it.
 * Paths use API Gateway's `{param}` syntax.
 */
export interface RouteDefinition {
  method: Method;
  path: string;
  aliases?: readonly RouteAlias[];
  domain: Domain;
  access: Access;
  /** A public route that checks a credential of its own: the gate does not count it (GateRoute). */
  ownCredential?: boolean;
  summary: string;
  status: 200 | 201 | 202 | 204;
  /** Objects (usually z.lazy of one): path parameters and query are name → value. */
  params?: z.ZodType<Record<string, unknown>, Record<string, string>>;
  query?: z.ZodType<Record<string, unknown>, Record<string, string>>;
  body?: z.ZodType;
  /**
   * How the body arrives: JSON (the default) or `multipart/form-data`, which the handler
   * parses (shared/platform/http/multipart.ts) into text fields and arrays of uploaded files before
   * `body` validates it; `json-or-multipart` takes either, as the Content-Type says (an
   * import takes `{csv}` text or a CSV file).
   */
  bodyType?: 'json' | 'multipart' | 'json-or-multipart' | 'json-or-form';
  /** Per-request upload limits of a multipart route (defaults: MULTIPART_DEFAULT_LIMITS). */
  uploadLimits?: { maxFileBytes: number; maxFiles: number };
  /** The largest body accepted (413 above it); default MAX_JSON_BODY_BYTES (25 MB). */
  maxBodyBytes?: number;
  /** The longest string a JSON body may hold; default MAX_JSON_STRING (100,000 characters). */
  maxJsonString?: number;
  response?: z.ZodType;
  /**
   * The response's media type when it is not JSON (the API reference page and its files, a
   * call's pcap): the handler returns the body as a string, sent as it is, or a `Download`
   * (bytes and a file name: sent base64-encoded with isBase64Encoded, as API Gateway wants
   * binary bodies, and `content-disposition: attachment`).
   */
  produces?: 'text/html; charset=utf-8' | 'text/css; charset=utf-8' | 'text/javascript; charset=utf-8' | 'application/vnd.tcpdump.pcap' | 'text/event-stream';
  /**
   * The capability a public (browser) key needs to call it: starting web calls or chats
   * (spec Authentication 10). Without it, public keys get 403 here.
   */
  publicKey?: PublicCapability;
  /**
   * The least dashboard role a session needs here when it differs from the default (reads
   * `member`, writes `developer`): `admin` for members, SSO/SAML/SCIM, key deletion;
   * `member` for what any member may do (sign out, leave). shared/platform/auth/roles.ts.
   */
  role?: Role;
  /**
   * CORS of a browser route (docs/browser.md): `public-key-origins` (the default of routes
   * with a `publicKey` capability) answers `access-control-allow-origin` with the request's
   * Origin only when a public key allows it (the key the request was admitted with, or any
   * public key where no key was presented); `same-origin` answers no CORS headers (the share
   * links' routes, used by the page Parley serves itself); `any` (every other route) `*`.
   */
  cors?: 'public-key-origins' | 'same-origin' | 'any';
  /** The workspace's ability to spend is checked before the handler (spec: Routes checked for spend). */
  spendChecked?: boolean;
  /** Tighter API Gateway throttling than the stage default (see THROTTLE_CLASSES). */
  throttle?: ThrottleClass;
  /**
   * Errors in the route's own protocol instead of `{status, message}`, for every failure of
   * a request to it (the gate's, the body's JSON and validation, the handler's, a 503 or a
   * 500): the SCIM routes answer RFC 7644's Error in `application/scim+json`, as SCIM
   * clients read it. The status and headers (retry-after) stay the same.
   */
  errorFormat?: ErrorFormat;
}

export type RouteTable = Record<string, RouteDefinition>;

/** A route entry of a module: the module names its domain and usual access once. */
export type RouteEntry = Omit<RouteDefinition, 'domain' | 'access'> & Partial<Pick<RouteDefinition, 'domain' | 'access'>>;

type WithDefaults<E, D extends Domain, A extends Access> = Omit<E, 'domain' | 'access'> & {
  domain: E extends { domain: infer X extends Domain } ? X : D;
  access: E extends { access: infer X extends Access } ? X : A;
};

/**
 * A route module's table: `defaults` names the Lambda (domain) that serves its routes and
 * the access most of them need, once; an entry states `access` only where it differs.
 */
export function defineRoutes<const D extends Domain, const A extends Access, const T extends Record<string, RouteEntry>>(
  defaults: { domain: D; access: A },
  routes: T,
): { [K in keyof T]: WithDefaults<T[K], D, A> } {
  return Object.fromEntries(
    Object.entries(routes).map(([id, route]) => [id, { ...route, domain: route.domain ?? defaults.domain, access: route.access ?? defaults.access }]),
  ) as { [K in keyof T]: WithDefaults<T[K], D, A> };
}

type Parsed<S> = S extends z.ZodType ? z.output<S> : Record<string, never>;

export interface RequestInfo {
  requestId: string;
  sourceIp: string;
  headers: Record<string, string | undefined>;
  /** The Cookie header as sent (API Gateway's `cookies`, joined). */
  cookie?: string;
  /** The body exactly as sent, for routes that verify a signature over its bytes (LiveKit's webhooks). */
  rawBody: string;
}

interface HandlerInput<R extends RouteDefinition> {
  params: Parsed<R['params']>;
  query: Parsed<R['query']>;
  body: R['body'] extends z.ZodType ? z.output<R['body']> : undefined;
  principal: R['access'] extends 'public' ? undefined : Principal;
  request: RequestInfo;
}

type HandlerOutput<R extends RouteDefinition> = R['status'] extends 204
  ? void
  : R['response'] extends z.ZodType
    ? z.input<R['response']>
    : unknown;

type RouteHandler<R extends RouteDefinition> = (
  input: HandlerInput<R>,
) => Promise<HandlerOutput<R>> | HandlerOutput<R>;

export type Handlers<T extends RouteTable> = { [K in keyof T]: RouteHandler<T[K]> };

/** Every method+path the route answers on: the canonical one first, then its aliases. */
export function routeKeys(route: RouteDefinition): string[] {
  return [
    `${route.method} ${route.path}`,
    ...(route.aliases ?? []).map((alias) => `${alias.method} ${alias.path}`),
  ];
}
