import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import { domainHandler } from '../../shared/platform/http/handler.ts';
import { defineRoutes } from '../../shared/platform/http/route.ts';
import { apiGatewayEvent, lambdaContext } from '../support/events.ts';

const routes = defineRoutes({ domain: 'meta', access: 'public' }, {
  echo: {
    method: 'POST', path: '/v2/echo/{name}', aliases: [{ method: 'POST', path: '/echo/{name}' }],
    status: 201, summary: 'echo',
    params: z.object({ name: z.string().max(5) }),
    body: z.object({ n: z.number() }),
  },
});
const handler = domainHandler(routes, { echo: ({ params, body }) => ({ name: params.name, n: body.n }) });
async function invoke(routeKey: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }, isBase64Encoded = false) {
  const event = apiGatewayEvent({ routeKey, method: 'POST', body, headers, pathParameters: { name: 'ada' }, path: '/v2/echo/ada' });
  event.isBase64Encoded = isBase64Encoded;
  const result = await handler(event, lambdaContext(), { signal: new AbortController().signal });
  if (!result) throw new Error('the handler returned no response');
  return result;
}

describe('domainHandler, invoked as Lambda is', () => {
  it('dispatches the canonical route key and its aliases to the same handler', async () => {
    for (const routeKey of ['POST /v2/echo/{name}', 'POST /echo/{name}']) {
      const result = await invoke(routeKey, '{"n":1}');
      expect(result.statusCode).toBe(201);
      expect(JSON.parse(result.body!)).toEqual({ name: 'ada', n: 1 });
      expect(result.headers?.['x-ratelimit-limit']).toBe('3000');
    }
  });

  it('answers a route key it does not serve with a 404 naming the request', async () => {
    const result = await invoke('$default', '{}');
    expect(result.statusCode).toBe(404);
    expect(JSON.parse(result.body!)).toEqual({ status: 404, message: 'Route POST /v2/echo/ada not found' });
  });

  it('validates with the route schemas before the handler runs', async () => {
    const result = await invoke('POST /echo/{name}', '{"n":"one"}');
    expect(result.statusCode).toBe(400);
    expect(JSON.parse(result.body!)).toEqual({ status: 400, message: 'n: Expected number, received string' });
  });

  it('takes a JSON body only as JSON, as API Gateway hands it over', async () => {
    for (const contentType of ['application/json', 'application/json; charset=utf-8', 'application/merge-patch+json', 'Application/JSON']) {
      expect((await invoke('POST /echo/{name}', '{"n":1}', { 'content-type': contentType })).statusCode).toBe(201);
    }
    const refused: Record<string, string>[] = [{}, { 'content-type': 'text/plain' }, { 'content-type': 'application/json; charset=latin1' }];
    for (const headers of refused) {
      const result = await invoke('POST /echo/{name}', '{"n":1}', headers);
      expect(result.statusCode).toBe(415);
    }
  });

  it('refuses a base64 body that is not UTF-8, and reads one that is', async () => {
    const bad = await invoke('POST /echo/{name}', Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x31, 0xff, 0x7d]).toString('base64'), undefined, true);
    expect(bad.statusCode).toBe(400);
    expect(JSON.parse(bad.body!)).toEqual({ status: 400, message: 'Invalid request body: not valid UTF-8' });
    const good = await invoke('POST /echo/{name}', Buffer.from('{"n":2}').toString('base64'), undefined, true);
    expect(good.statusCode).toBe(201);
  });
});
