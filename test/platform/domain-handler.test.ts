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
async function invoke(routeKey: string, body: string) {
  const event = apiGatewayEvent({ routeKey, method: 'POST', body, pathParameters: { name: 'ada' }, path: '/v2/echo/ada' });
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
});
