import { existsSync, readFileSync } from 'node:fs';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { metaRoutes } from '../shared/meta/routes.ts';

/**
 * Serves the checked-in OpenAPI document and answers API Gateway's $default route with a
 * 404. The document is a file beside the deployed bundle (lib/parley-stack.ts ships it)
 * or at the project root locally, read on the first request for it rather than bundled:
 * it is larger than the rest of the function.
 */
let openApiDocument: Record<string, unknown> | undefined;

function readOpenApiDocument(): Record<string, unknown> {
  const file = ['./openapi.json', '../openapi.json']
    .map((path) => new URL(path, import.meta.url))
    .find((url) => existsSync(url));
  if (!file) throw new Error('openapi.json is missing from the deployment');
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

export const handler = domainHandler(metaRoutes, {
  getOpenApi: () => (openApiDocument ??= readOpenApiDocument()),
});
