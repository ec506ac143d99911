import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Principal } from '../auth/gate.ts';
import { someKeyAllowsOrigin } from '../auth/public-origins.ts';
import { routeKeys, type RouteDefinition } from './route.ts';

/*
 * CORS, answered by Parley itself (locally and behind API Gateway, whose own CORS setting
 * would overwrite every integration's headers with one fixed list): docs/browser.md.
 *
 * - Routes a public (browser) key may call, and the public chat routes: the request's Origin
 *   is answered only when a public key allows it. A request admitted with a public key was
 *   checked against that key's origins by the gate; otherwise (a preflight, a chat secret, a
 *   refusal before any key was read) the origin index says whether any public key allows it.
 * - The share links' routes: no CORS headers; the Voice Orb page is served by Parley itself.
 * - Every other route: `*`, as before (secret keys are not meant for browsers; `*` never
 *   lets a browser send cookies).
 */

type CorsClass = NonNullable<RouteDefinition['cors']>;

const ALLOW_HEADERS = 'authorization,content-type';
const ALLOW_METHODS = 'GET,POST,PATCH,PUT,DELETE,OPTIONS';
const MAX_AGE_SECONDS = '600';

const corsClass = (route: Pick<RouteDefinition, 'cors' | 'publicKey'> | undefined): CorsClass =>
  route?.cors ?? (route?.publicKey ? 'public-key-origins' : 'any');

/** The request's Origin header as a browser sends it (`null` from opaque origins counts as none). */
function originOf(headers: Record<string, string | undefined>): string | undefined {
  const origin = headers.origin ?? headers.Origin;
  return origin && origin !== 'null' && !origin.includes(',') ? origin : undefined;
}

/** The CORS headers of an actual (non-preflight) response. */
export async function responseCorsHeaders(
  route: Pick<RouteDefinition, 'cors' | 'publicKey'> | undefined,
  headers: Record<string, string | undefined>,
  principal: Principal | undefined,
): Promise<Record<string, string>> {
  const kind = corsClass(route);
  if (kind === 'any') return { 'access-control-allow-origin': '*' };
  if (kind === 'same-origin') return {};
  const origin = originOf(headers);
  if (!origin) return { vary: 'origin' };
  const allowed = principal?.kind === 'public' ? true : await someKeyAllowsOrigin(origin).catch(() => false);
  return allowed ? { 'access-control-allow-origin': origin, vary: 'origin' } : { vary: 'origin' };
}

interface Template {
  method: string;
  segments: string[];
  cors: CorsClass;
}

/** The routes a preflight is judged against (the ones whose CORS is not `any` suffice). */
export function preflightTable(routes: Iterable<RouteDefinition>): Template[] {
  const templates: Template[] = [];
  for (const route of routes) {
    const cors = corsClass(route);
    if (cors === 'any') continue;
    for (const key of routeKeys(route)) {
      const [method, path] = key.split(' ') as [string, string];
      templates.push({ method, segments: path.split('/'), cors });
    }
  }
  return templates;
}

function classOf(templates: readonly Template[], method: string, path: string): CorsClass {
  const segments = path.split('/');
  const found = templates.find(
    (t) =>
      t.method === method &&
      t.segments.length === segments.length &&
      t.segments.every((segment, i) => segment === segments[i] || (segment.startsWith('{') && segments[i] !== '')),
  );
  return found?.cors ?? 'any';
}

/**
 * The answer to a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`): 204, with
 * the allow headers only when the target route's class lets the origin in.
 */
export async function preflightResponse(
  templates: readonly Template[],
  path: string,
  headers: Record<string, string | undefined>,
): Promise<APIGatewayProxyStructuredResultV2> {
  const method = (headers['access-control-request-method'] ?? '').toUpperCase();
  const kind = classOf(templates, method, path);
  const allow = { 'access-control-allow-headers': ALLOW_HEADERS, 'access-control-allow-methods': ALLOW_METHODS, 'access-control-max-age': MAX_AGE_SECONDS };
  if (kind === 'any') return { statusCode: 204, headers: { 'access-control-allow-origin': '*', ...allow }, body: '' };
  const origin = originOf(headers);
  if (kind === 'same-origin' || !origin) return { statusCode: 204, headers: { vary: 'origin' }, body: '' };
  const allowed = await someKeyAllowsOrigin(origin);
  return { statusCode: 204, headers: allowed ? { 'access-control-allow-origin': origin, vary: 'origin', ...allow } : { vary: 'origin' }, body: '' };
}
