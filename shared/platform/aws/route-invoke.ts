import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { config } from '../config.ts';
import type { Domain } from '../http/route.ts';

/**
 * Runs one API request through the function that serves its route, as API Gateway would:
 * the assistant's tools (shared/conductor/tools/dispatch.ts) go through the very handler
 * chain a client's request does (gate, role and scope, validation, audit). In AWS the
 * owning Lambda is invoked (its name from ROUTE_FUNCTION_NAMES, set by CDK on the functions
 * that dispatch; ./lambda-invoke.ts); locally an in-process stand-in calls the handler
 * (local/route-invoker.ts installs it), so no deployed bundle holds the local one.
 */
export type RouteInvoker = (domain: Domain, event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyStructuredResultV2>;

let localInvoker: RouteInvoker | undefined;

/** Installs the in-process stand-in used when ROUTE_FUNCTION_NAMES is not set (the local runtime). */
export function setLocalRouteInvoker(invoker: RouteInvoker): void {
  localInvoker = invoker;
}

export async function invokeRoute(domain: Domain, event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const names = config.ROUTE_FUNCTION_NAMES;
  if (!names) {
    if (!localInvoker) throw new Error('ROUTE_FUNCTION_NAMES is not set and no local route invoker is installed');
    return localInvoker(domain, event);
  }
  const name = names[domain];
  if (!name) throw new Error(`ROUTE_FUNCTION_NAMES names no function for the ${domain} routes`);
  const { invokeLambda } = await import('./lambda-invoke.ts');
  return invokeLambda(name, event);
}
