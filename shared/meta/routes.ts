import { defineRoutes } from '../platform/http/route.ts';
import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { ApiIndex } from './schemas.ts';

/**
 * Public routes about the API itself. The reference page at /docs is Swagger UI
 * (swagger-ui-dist) over /openapi.json; its two files are served from here too, so the page
 * loads nothing from elsewhere. The Voice Orb page and the built browser files (the web SDK)
 * are served from here as well (shared/meta/orb-page.ts, docs/browser.md).
 */
export const metaRoutes = defineRoutes({ domain: 'meta', access: 'public' }, {
  getApiIndex: {
    method: 'GET', path: '/', status: 200,
    summary: 'Where the API reference and the OpenAPI document are, and the version', response: ApiIndex,
  },
  getOpenApi: {
    method: 'GET', path: '/openapi.json', status: 200,
    summary: 'The OpenAPI 3.1 document of this API', response: lazySchema(() => z.record(z.string(), z.unknown())),
  },
  getDocs: {
    method: 'GET', path: '/docs', status: 200,
    summary: 'The interactive API reference (an HTML page over /openapi.json)',
    produces: 'text/html; charset=utf-8', response: lazySchema(() => z.string()),
  },
  getDocsStyles: {
    method: 'GET', path: '/docs/swagger-ui.css', status: 200,
    summary: "The API reference page's style sheet (Swagger UI)",
    produces: 'text/css; charset=utf-8', response: lazySchema(() => z.string()),
  },
  getDocsScript: {
    method: 'GET', path: '/docs/swagger-ui-bundle.js', status: 200,
    summary: "The API reference page's script (Swagger UI)",
    produces: 'text/javascript; charset=utf-8', response: lazySchema(() => z.string()),
  },
  getOrbPage: {
    method: 'GET', path: '/orb/{token}', status: 200,
    summary: "The Voice Orb page of a share link: the agent's name, one button to talk, the transcript (docs/browser.md)",
    params: lazySchema(() => z.object({ token: z.string().min(1).max(256).describe('The share link token') })),
    produces: 'text/html; charset=utf-8', response: lazySchema(() => z.string()),
  },
  getWebAsset: {
    method: 'GET', path: '/static/{file}', status: 200,
    summary: 'A built browser file by its content-hashed name (the web SDK, the Voice Orb page), cached immutably; manifest.json names the current ones',
    params: lazySchema(() => z.object({ file: z.string().min(1).max(128).describe('A hashed file name from manifest.json, or manifest.json') })),
    produces: 'text/javascript; charset=utf-8', response: lazySchema(() => z.string()),
  },
});
