import '../local/quiet-aws-sdk.ts';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startDynamoDbLocal } from '../local/dynamodb.ts';

/**
 * `npm run check:docs` (CI runs it): serves the API on a free port and has headless
 * Chromium (Debian's `chromium`, or CHROMIUM) load /docs. Fails unless the page rendered
 * one operation for every route of the table, each with its method and path. A second
 * load serves the same page over the document padded to PADDED_OPERATIONS operations and
 * requires every one of those too, so the page keeps rendering them all as the API grows
 * (Swagger UI 5 on its own renders only the rows near the viewport once there are 150).
 * Nothing but 127.0.0.1 is contacted.
 */
const chromium = process.env.CHROMIUM ?? '/usr/bin/chromium';
const PADDED_OPERATIONS = 400;
const work = mkdtempSync(join(tmpdir(), 'parley-docs-check-'));
const dynamo = await startDynamoDbLocal();
let failed = false;

/** The `METHOD /path` of every operation headless Chromium rendered at `url`. */
async function renderedOperations(url: string, profile: string): Promise<Set<string>> {
  const { stdout: dom } = await promisify(execFile)(
    chromium,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      `--user-data-dir=${join(work, profile)}`,
      // Virtual time runs the page's scripts, its fetch of /openapi.json and the render.
      '--virtual-time-budget=30000',
      '--dump-dom',
      url,
    ],
    { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
  );
  return new Set(
    [
      ...dom.matchAll(
        /<span class="opblock-summary-method">(\w+)<\/span><div class="opblock-summary-path-description-wrapper"><span class="opblock-summary-path" data-path="([^"]+)"/g,
      ),
    ].map(([, method, path]) => `${method} ${path!.replace(/&amp;/g, '&')}`),
  );
}

/** Reports what `expected` holds that `rendered` lacks; true when nothing is missing. */
function report(what: string, expected: string[], rendered: Set<string>): boolean {
  const missing = expected.filter((key) => !rendered.has(key));
  if (missing.length) {
    console.error(`check:docs: ${what} rendered ${rendered.size} operations; missing ${missing.length} of ${expected.length}:`);
    for (const key of missing.slice(0, 20)) console.error(`  ${key}`);
    return false;
  }
  console.log(`check:docs: ${what} rendered all ${expected.length} operations in headless Chromium`);
  return true;
}

try {
  Object.assign(process.env, {
    DYNAMODB_ENDPOINT: dynamo.endpoint,
    TABLE_NAME: 'parley-docs-check',
    DATA_DIR: join(work, 'data'),
    POWERTOOLS_LOG_LEVEL: 'SILENT',
  });
  const [{ ensureTable }, { dynamo: client }, { startLocalServer }, { servedRoutes }] = await Promise.all([
    import('../shared/platform/store/create-table.ts'),
    import('../shared/platform/store/db.ts'),
    import('../local/server.ts'),
    import('../shared/route-table.ts'),
  ]);
  await ensureTable(client, 'parley-docs-check');
  const server = await startLocalServer({ port: 0 });
  try {
    // The same page and files, over the document padded with trivial GET operations.
    const document = (await (await fetch(`${server.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const methods = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);
    const operations = () =>
      Object.entries(document.paths).flatMap(([path, item]) =>
        Object.keys(item).filter((method) => methods.has(method)).map((method) => `${method.toUpperCase()} ${path}`),
      );
    for (let n = 1; operations().length < PADDED_OPERATIONS; n += 1) {
      document.paths[`/docs-check-padding-${n}`] = {
        get: { operationId: `docsCheckPadding${n}`, summary: `Padding ${n}`, responses: { 200: { description: 'OK' } } },
      };
    }
    const padded = JSON.stringify(document);
    const proxy = createServer((request, response) => {
      const path = request.url ?? '/';
      if (path === '/openapi.json') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(padded);
        return;
      }
      fetch(`${server.url}${path}`).then(
        async (upstream) => {
          response.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'text/plain' });
          response.end(Buffer.from(await upstream.arrayBuffer()));
        },
        () => response.writeHead(502).end(),
      );
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = proxy.address() as AddressInfo;
      // Both loads at once: the check stays well under a minute.
      const [real, padding] = await Promise.all([
        renderedOperations(`${server.url}/docs`, 'chromium'),
        renderedOperations(`http://127.0.0.1:${port}/docs`, 'chromium-padded'),
      ]);
      if (!report('/docs', servedRoutes().map((route) => route.key), real)) failed = true;
      if (!report(`/docs over a document padded to ${PADDED_OPERATIONS}`, operations(), padding)) failed = true;
    } finally {
      await new Promise((resolve) => proxy.close(resolve));
    }
  } finally {
    await server.close();
  }
} finally {
  await dynamo.stop();
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
