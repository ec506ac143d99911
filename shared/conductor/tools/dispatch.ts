import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { Principal } from '../../platform/auth/gate.ts';
import { SESSION_COOKIE, cookieValue } from '../../platform/auth/sessions.ts';
import { invokeRoute } from '../../platform/aws/route-invoke.ts';
import { CONDUCTOR_CONTEXT_FIELD } from '../../platform/http/handler.ts';
import type { RequestInfo } from '../../platform/http/route.ts';
import type { Tool, ToolRequest } from './catalog.ts';

/*
 * A tool runs as the caller (docs/assistant.md, "How tools act as the caller"): an API
 * Gateway-shaped request for the tool's route, carrying the caller's own credential and
 * source address, handed to the function that serves the route (in AWS its Lambda is
 * invoked; locally its handler runs in process). The route's gate, role and scope checks,
 * validation and audit run as for any request: the assistant can never do what the caller
 * could not. The request context names the assistant's session (the handler marks the
 * principal with it and the audit log records it); API Gateway builds that context itself,
 * so no client request can carry the mark.
 */

/** Who is asking: the credential and address the conductor route was called with. */
export interface Caller {
  principal: Principal;
  request: RequestInfo;
}

export interface Dispatched {
  status: number;
  body: unknown;
}

/**
 * The caller's credential as a Bearer header. A dashboard session sent as a cookie goes as
 * its token: the conductor route's own gate already checked the cookie's CSRF token where a
 * write needs it, and the tool's request is the server's, not a browser's.
 */
function credentialHeader(request: RequestInfo): string | undefined {
  if (request.headers.authorization) return request.headers.authorization;
  const token = cookieValue(request.cookie, SESSION_COOKIE);
  return token ? `Bearer ${token}` : undefined;
}

let sequence = 0;

export async function dispatch(caller: Caller, sessionId: string | undefined, tool: Pick<Tool, 'method' | 'path' | 'domain'>, input: ToolRequest): Promise<Dispatched> {
  const rawPath = tool.path.replace(/\{([^{}]+)\}/g, (_match, name: string) => encodeURIComponent(input.params[name] ?? ''));
  const query = input.query && Object.keys(input.query).length ? input.query : undefined;
  const body = input.body === undefined ? undefined : JSON.stringify(input.body);
  const authorization = credentialHeader(caller.request);
  const headers: Record<string, string> = {
    accept: 'application/json',
    'user-agent': 'parley-conductor',
    ...(authorization ? { authorization } : {}),
    ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
  };
  const now = Date.now();
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: `${tool.method} ${tool.path}`,
    rawPath,
    rawQueryString: query ? new URLSearchParams(query).toString() : '',
    headers,
    queryStringParameters: query,
    pathParameters: Object.keys(input.params).length ? input.params : undefined,
    body,
    isBase64Encoded: false,
    requestContext: {
      accountId: 'conductor',
      apiId: 'conductor',
      domainName: 'conductor',
      domainPrefix: 'conductor',
      requestId: `${caller.request.requestId}-tool-${++sequence}`,
      routeKey: `${tool.method} ${tool.path}`,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
      http: { method: tool.method, path: rawPath, protocol: 'HTTP/1.1', sourceIp: caller.request.sourceIp, userAgent: 'parley-conductor' },
      ...(sessionId ? { [CONDUCTOR_CONTEXT_FIELD]: sessionId } : {}),
    },
  };
  const result = await invokeRoute(tool.domain, event);
  const text = result.body ?? '';
  let parsed: unknown = text;
  if (text !== '') {
    try {
      parsed = JSON.parse(result.isBase64Encoded ? Buffer.from(text, 'base64').toString('utf8') : text);
    } catch {
      parsed = text;
    }
  } else {
    parsed = undefined;
  }
  return { status: result.statusCode ?? 200, body: parsed };
}
