import openApiDocument from '../openapi.json' with { type: 'json' };
import { domainHandler } from '../shared/http/handler.ts';
import { metaRoutes } from '../shared/routes/meta.ts';

/** Serves the checked-in OpenAPI document and answers API Gateway's $default route with a 404. */
export const handler = domainHandler(metaRoutes, {
  getOpenApi: () => openApiDocument,
});
