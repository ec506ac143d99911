import * as z from 'zod';
import { defineRoutes } from '../platform/http/route.ts';

export const metaRoutes = defineRoutes({ domain: 'meta', access: 'public' }, {
  getOpenApi: {
    method: 'GET', path: '/openapi.json', status: 200,
    summary: 'The OpenAPI 3.1 document of this API', response: z.record(z.string(), z.unknown()),
  },
});
