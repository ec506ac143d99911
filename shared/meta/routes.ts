import { defineRoutes } from '../platform/http/route.ts';
import * as z from 'zod';
import { ApiIndex } from './schemas.ts';

/**
 * Public routes about the API itself. The reference page at /docs is Swagger UI
 * (swagger-ui-dist) over /openapi.json; its two files are served from here too, so the page
 * loads nothing from elsewhere.
 */
export const metaRoutes = defineRoutes({ domain: 'meta', access: 'public' }, {
  getApiIndex: {
    method: 'GET', path: '/', status: 200,
    summary: 'Where the API reference and the OpenAPI document are, and the version', response: ApiIndex,
  },
  getOpenApi: {
    method: 'GET', path: '/openapi.json', status: 200,
    summary: 'The OpenAPI 3.1 document of this API', response: z.record(z.string(), z.unknown()),
  },
  getDocs: {
    method: 'GET', path: '/docs', status: 200,
    summary: 'The interactive API reference (an HTML page over /openapi.json)',
    produces: 'text/html; charset=utf-8', response: z.string(),
  },
  getDocsStyles: {
    method: 'GET', path: '/docs/swagger-ui.css', status: 200,
    summary: "The API reference page's style sheet (Swagger UI)",
    produces: 'text/css; charset=utf-8', response: z.string(),
  },
  getDocsScript: {
    method: 'GET', path: '/docs/swagger-ui-bundle.js', status: 200,
    summary: "The API reference page's script (Swagger UI)",
    produces: 'text/javascript; charset=utf-8', response: z.string(),
  },
});
