import { setLocalRouteInvoker } from '../shared/platform/aws/route-invoke.ts';
import { config } from '../shared/platform/config.ts';
import { domainFunctions } from './functions.ts';
import { localLambdaContext } from './local-context.ts';

/**
 * The local stand-in for invoking a domain's Lambda (shared/platform/aws/route-invoke.ts):
 * the same handler module, called in process with the event as given, as Lambda would run
 * it. Installed by the local server; it lives in local/ so no deployed bundle holds it.
 */
export function installLocalRouteInvoker(): void {
  setLocalRouteInvoker(async (domain, event) => {
    const { handler } = await domainFunctions[domain]();
    return handler(event, localLambdaContext(`parley-${domain}`, config.LOCAL_REQUEST_TIMEOUT_MS), { signal: new AbortController().signal });
  });
}
