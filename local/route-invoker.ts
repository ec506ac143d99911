import { randomUUID } from 'node:crypto';
import type { Context } from 'aws-lambda';
import { setLocalRouteInvoker } from '../shared/platform/aws/route-invoke.ts';
import type { Domain } from '../shared/platform/http/route.ts';
import { domainFunctions } from './functions.ts';

/**
 * The local stand-in for invoking a domain's Lambda (shared/platform/aws/route-invoke.ts):
 * the same handler module, called in process with the event as given, as Lambda would run
 * it. Installed by the local server; it lives in local/ so no deployed bundle holds it.
 */
export function installLocalRouteInvoker(): void {
  setLocalRouteInvoker(async (domain, event) => {
    const { handler } = await domainFunctions[domain]();
    return handler(event, invocationContext(domain), { signal: new AbortController().signal });
  });
}

function invocationContext(domain: Domain): Context {
  const deadline = Date.now() + 29_000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: `parley-${domain}`,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:parley-${domain}`,
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/parley-${domain}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
