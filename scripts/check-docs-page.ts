import '../local/quiet-aws-sdk.ts';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startDynamoDbLocal } from '../local/dynamodb.ts';

/**
 * `npm run check:docs` (CI runs it): serves the API on a free port and has headless
 * Chromium (Debian's `chromium`, or CHROMIUM) load /docs. Fails unless the page rendered
 * one operation for every route of the table, each with its method and path. Nothing but
 * 127.0.0.1 is contacted.
 */
const chromium = process.env.CHROMIUM ?? '/usr/bin/chromium';
const work = mkdtempSync(join(tmpdir(), 'parley-docs-check-'));
const dynamo = await startDynamoDbLocal();
let failed = false;
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
        `--user-data-dir=${join(work, 'chromium')}`,
        // Virtual time runs the page's scripts, its fetch of /openapi.json and the render.
        '--virtual-time-budget=30000',
        '--dump-dom',
        `${server.url}/docs`,
      ],
      { maxBuffer: 64 * 1024 * 1024, timeout: 120_000 },
    );
    const rendered = new Set(
      [
        ...dom.matchAll(
          /<span class="opblock-summary-method">(\w+)<\/span><div class="opblock-summary-path-description-wrapper"><span class="opblock-summary-path" data-path="([^"]+)"/g,
        ),
      ].map(
        ([, method, path]) => `${method} ${path!.replace(/&amp;/g, '&')}`,
      ),
    );
    const missing = servedRoutes().filter((route) => !rendered.has(route.key));
    if (missing.length) {
      failed = true;
      console.error(
        `check:docs: /docs rendered ${rendered.size} operations; missing ${missing.length} of ${servedRoutes().length}:`,
      );
      for (const route of missing.slice(0, 20)) console.error(`  ${route.key}`);
    } else {
      console.log(`check:docs: /docs rendered all ${rendered.size} operations in headless Chromium`);
    }
  } finally {
    await server.close();
  }
} finally {
  await dynamo.stop();
  rmSync(work, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
