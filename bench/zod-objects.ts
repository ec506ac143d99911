import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Plugin } from 'esbuild';
import { BASELINE_ENTRY, buildBundle, bundleName, functionEntries } from './bundles.ts';
import { readCdkBundling } from './cdk-bundling.ts';
import { childEnvironment } from './import-time.ts';

/**
 * How many zod objects each function builds at its cold import: every function's bundle
 * built as CDK builds it, with zod's `$constructor` (zod/v4/core/core.js) counting the
 * internals it gives each new schema (one per zod object, `z.lazy` included), then imported
 * once in a fresh node process. The count is what a cold start constructs before the first
 * request; schemas built on first use (`lazySchema`, `onFirstUse`) are not in it.
 *
 *   npx tsx bench/zod-objects.ts [--functions=a,b] [--json] [--where]
 *
 * `--where` also names, per function, the source file each object was built from (the first
 * stack frame outside zod, through the bundle's source map).
 *
 * Writes its bundles to bench/out/zod-objects/ (git-ignored). Not part of `npm run bench`:
 * the instrumented bundles are not the shipped ones, so they are not timed.
 */

const COUNTER =
  'globalThis.__parleyZodObjects = (globalThis.__parleyZodObjects ?? 0) + 1; globalThis.__parleyZodWhere?.push(new Error().stack);';
const MARK = '_zodDesc.value = new Internals(def);';

const countZodObjects: Plugin = {
  name: 'count-zod-objects',
  setup(build) {
    build.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]core[\\/]core\.js$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8');
      if (!source.includes(MARK)) throw new Error(`zod's core.js no longer has "${MARK}": update bench/zod-objects.ts`);
      return { contents: source.replace(MARK, `${MARK} ${COUNTER}`), loader: 'js' };
    });
  },
};

const PROBE = `
if (process.argv[2] === 'where') globalThis.__parleyZodWhere = [];
await import(process.argv[1]);
const where = {};
for (const stack of globalThis.__parleyZodWhere ?? []) {
  const frame = stack.split('\\n').slice(1).find((line) => !/node_modules[\\\\/]zod[\\\\/]/.test(line)) ?? '?';
  const file = (/\\(?(?:file:\\/\\/)?([^():]+):\\d+/.exec(frame)?.[1] ?? frame).replace(/^.*?\\/(shared|functions|node_modules)\\//, '$1/');
  where[file] = (where[file] ?? 0) + 1;
}
process.stdout.write(JSON.stringify({ count: globalThis.__parleyZodObjects ?? 0, where }));
process.exit(0);
`;

const args = process.argv.slice(2);
const only = args.find((arg) => arg.startsWith('--functions='))?.slice('--functions='.length).split(',');
const entries = [BASELINE_ENTRY, ...functionEntries().filter((entry) => !only || only.includes(bundleName(entry)))];
const cdk = readCdkBundling();
const outDir = join('bench', 'out', 'zod-objects');
mkdirSync(outDir, { recursive: true });
const dataDir = mkdtempSync(join(tmpdir(), 'parley-zod-objects-'));
const where = args.includes('--where');
const counts: Record<string, number | string> = {};
const places: Record<string, Record<string, number>> = {};
try {
  for (const entry of entries) {
    const id = entry === BASELINE_ENTRY ? 'baseline' : bundleName(entry);
    const bundle = await buildBundle(cdk, id, entry, outDir, [countZodObjects]);
    if (bundle.error) {
      counts[id] = `build failed: ${bundle.error}`;
      continue;
    }
    const flags = where ? ['--enable-source-maps', '--stack-trace-limit=50'] : [];
    const out = execFileSync(
      process.execPath,
      [...flags, '--input-type=module', '-e', PROBE, pathToFileURL(bundle.file).href, where ? 'where' : 'count'],
      { env: childEnvironment(dataDir), encoding: 'utf8' },
    );
    const result = JSON.parse(out) as { count: number; where: Record<string, number> };
    counts[id] = result.count;
    if (where) places[id] = Object.fromEntries(Object.entries(result.where).sort((a, b) => b[1] - a[1]));
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
if (args.includes('--json')) process.stdout.write(`${JSON.stringify(where ? { counts, places } : counts, null, 2)}\n`);
else {
  for (const [id, count] of Object.entries(counts)) {
    process.stdout.write(`${id.padEnd(18)} ${count}\n`);
    for (const [file, n] of Object.entries(places[id] ?? {})) process.stdout.write(`  ${String(n).padStart(5)}  ${file}\n`);
  }
}
