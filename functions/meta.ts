import { existsSync, readFileSync } from 'node:fs';
import packageJson from '../package.json' with { type: 'json' };
import { config } from '../shared/platform/config.ts';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { orbPage, webAsset } from '../shared/meta/orb-page.ts';
import { metaRoutes } from '../shared/meta/routes.ts';

/**
 * Serves `GET /`, the checked-in OpenAPI document and the API reference page with its two
 * Swagger UI files, the Voice Orb page and the built browser files (shared/meta/orb-page.ts),
 * and answers API Gateway's $default route with a 404. The document and
 * the Swagger UI files are files beside the deployed bundle (its entry in lib/functions.ts
 * ships them) or in the project locally, read on the first request for each rather than bundled:
 * they are larger than the rest of the function. The page adds one Swagger UI plugin
 * (EveryOperation, below) so that every operation is rendered, however many there are.
 */
const cache = new Map<string, string>();

function readShipped(name: string, localPath: string): string {
  let text = cache.get(name);
  if (text === undefined) {
    const file = [`./${name}`, localPath].map((path) => new URL(path, import.meta.url)).find((url) => existsSync(url));
    if (!file) throw new Error(`${name} is missing from the deployment`);
    text = readFileSync(file, 'utf8');
    cache.set(name, text);
  }
  return text;
}

let openApiDocument: Record<string, unknown> | undefined;
/** PUBLIC_BASE_URL without a trailing slash, read on use: reading a setting at import validates them all (about 190 zod objects). */
function publicBase(): string {
  const configured = config.PUBLIC_BASE_URL ?? '';
  return configured.endsWith('/') ? configured.slice(0, -1) : configured;
}

/** Relative links, so the page works under any base path; nothing is fetched from elsewhere. */
const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Parley API reference</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
</head>
<body>
<div id="api-reference"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script>
// Swagger UI 5 virtualizes the operations list once it has 150 rows (tags plus
// operations): only the rows near the viewport are in the page, so find-in-page, printing
// and a saved page miss the rest, and no setting turns it off. This plugin puts back the
// list Swagger UI renders below that count, built from its own OperationTag and
// OperationContainer components, so every operation is in the page.
function EveryOperation(system) {
  var h = system.React.createElement;
  function Operations(props) {
    var specSelectors = props.specSelectors;
    var getComponent = props.getComponent;
    var tagged = specSelectors.taggedOperations();
    if (tagged.size === 0) return h('h3', null, 'No operations defined in spec!');
    var methods = specSelectors.validOperationMethods();
    var OperationTag = getComponent('OperationTag');
    var OperationContainer = getComponent('OperationContainer', true);
    return h('div', null, tagged.map(function (tagObj, tag) {
      var operations = tagObj.get('operations').map(function (op) {
        var path = op.get('path');
        var method = op.get('method');
        if (methods.indexOf(method) === -1) return null;
        return h(OperationContainer, {
          key: path + '-' + method, specPath: op.get('specPath'), op: op, path: path, method: method, tag: tag,
        });
      }).toArray();
      return h(OperationTag, {
        key: 'operation-' + tag, tagObj: tagObj, tag: tag, getComponent: getComponent,
        oas3Selectors: props.oas3Selectors, layoutSelectors: props.layoutSelectors,
        layoutActions: props.layoutActions, getConfigs: props.getConfigs, specUrl: specSelectors.url(),
      }, h('div', { className: 'operation-tag-content' }, operations));
    }).valueSeq().toArray());
  }
  return { components: { operations: Operations } };
}
window.ui = SwaggerUIBundle({
  url: 'openapi.json',
  dom_id: '#api-reference',
  deepLinking: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: -1,
  validatorUrl: null,
  plugins: [EveryOperation],
});
</script>
</body>
</html>
`;

export const handler = domainHandler(metaRoutes, {
  getApiIndex: () => ({
    name: 'Parley' as const,
    version: packageJson.version,
    docs_url: `${publicBase()}/docs`,
    openapi_url: `${publicBase()}/openapi.json`,
  }),
  getOpenApi: () => (openApiDocument ??= JSON.parse(readShipped('openapi.json', '../openapi.json')) as Record<string, unknown>),
  getDocs: () => DOCS_PAGE,
  getDocsStyles: () => readShipped('swagger-ui.css', '../node_modules/swagger-ui-dist/swagger-ui.css'),
  getDocsScript: () => readShipped('swagger-ui-bundle.js', '../node_modules/swagger-ui-dist/swagger-ui-bundle.js'),
  // Both answer with their own headers (CSP, cache policy): a MediaResponse in the route's media type.
  getOrbPage: () => orbPage() as never,
  getWebAsset: ({ params }) => webAsset(params.file) as never,
});
