import type { APIGatewayProxyResult, APIGatewayRequestAuthorizerEvent, APIGatewayAuthorizerResult, Context } from 'aws-lambda';
import { assertCallOf, closeLiveConnection, openLiveConnection, syncLiveConnection } from '../shared/calls/index.ts';
import { admit } from '../shared/platform/auth/gate.ts';
import { sourceAddress } from '../shared/platform/auth/ip.ts';
import { useManagementEndpoint } from '../shared/platform/aws/ws-connections.ts';
import { ApiError } from '../shared/platform/errors.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';

/*
 * The WebSocket monitor in AWS (docs/calls.md, Live calls): API Gateway's WebSocket API
 * (lib/live-monitor-stack.ts) invokes this function as the $connect route's Lambda authorizer and
 * for its $connect, $disconnect and $default routes. The authorizer runs the same gate as
 * the HTTP API (the key in `Authorization`, IP and key limits, allowlist, scope `calls`) and
 * allows the connection only to a call of the key's workspace (`?call_id=`); $connect
 * records the connection (a `WSCONN#` item in the call's partition, `?last_event_id=` its
 * cursor); any message (`{"action":"sync"}`) sends what the connection has not had; pushes
 * come from whichever function writes the call (shared/calls/live/push.ts).
 */

interface WebSocketEvent {
  requestContext: { routeKey: string; connectionId: string; domainName: string; stage: string; authorizer?: Record<string, unknown> };
  queryStringParameters?: Record<string, string | undefined> | null;
}

type Event = APIGatewayRequestAuthorizerEvent | WebSocketEvent;

const isAuthorizer = (event: Event): event is APIGatewayRequestAuthorizerEvent => (event as { type?: string }).type === 'REQUEST';

async function handle(event: Event, context: Context): Promise<APIGatewayAuthorizerResult | APIGatewayProxyResult> {
  logger.addContext(context);
  if (isAuthorizer(event)) return authorize(event);
  const { routeKey, connectionId, domainName, stage } = event.requestContext;
  useManagementEndpoint(`https://${domainName}/${stage}`);
  try {
    if (routeKey === '$connect') {
      const callId = event.queryStringParameters?.call_id ?? '';
      const cursorText = event.queryStringParameters?.last_event_id;
      const cursor = cursorText && /^\d{1,15}$/.test(cursorText) ? Number(cursorText) : 0;
      await openLiveConnection(String(event.requestContext.authorizer?.workspace_id ?? ''), callId, connectionId, cursor);
    } else if (routeKey === '$disconnect') {
      await closeLiveConnection(connectionId);
    } else {
      await syncLiveConnection(connectionId);
    }
    return { statusCode: 200, body: '' };
  } catch (error) {
    if (error instanceof ApiError) return { statusCode: error.status, body: JSON.stringify({ status: error.status, message: error.message }) };
    throw error;
  }
}

async function authorize(event: APIGatewayRequestAuthorizerEvent): Promise<APIGatewayAuthorizerResult> {
  const deny = { principalId: 'anonymous', policyDocument: policy('Deny', event.methodArn) };
  try {
    const admission = await admit(
      { access: 'calls' },
      {
        sourceIp: sourceAddress(event.requestContext.identity.sourceIp),
        authorization: event.headers?.Authorization ?? event.headers?.authorization,
        origin: event.headers?.Origin ?? event.headers?.origin,
      },
    );
    const workspaceId = admission.principal!.workspaceId;
    await assertCallOf(workspaceId, event.queryStringParameters?.call_id ?? '');
    return { principalId: admission.principal!.credentialId, policyDocument: policy('Allow', event.methodArn), context: { workspace_id: workspaceId } };
  } catch (error) {
    if (error instanceof ApiError) return deny;
    throw error;
  }
}

const policy = (effect: 'Allow' | 'Deny', resource: string) => ({
  Version: '2012-10-17',
  Statement: [{ Action: 'execute-api:Invoke', Effect: effect, Resource: resource }],
});

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
