/**
 * `npx tsx scripts/telemetry-cost.ts [--runs=N] [--functions=a,b]`: what Powertools
 * Metrics and Tracer (shared/platform/observability/metrics.ts, tracing.ts) cost a cold start, measured
 * the way `npm run bench` measures bundles (bench/bundles.ts, bench/import-time.ts):
 *
 * 1. Each function's bundle built as CDK builds it, and again with both packages replaced
 *    by inert stubs (the bench's ablation): the size and the cold import time they add.
 * 2. The tracer's own load, which happens on a function's first invocation in Lambda
 *    (startTracing, from the file CDK writes beside the bundle): a module that awaits it at
 *    its top level against one that only imports tracing.ts, both in an environment set up
 *    as Lambda's.
 *
 * Results: a table, and bench/out/telemetry/results.json. Only local processes run.
 */
import { execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { buildBundle, scanNamedImports, stubPackages, type BuiltBundle } from '../bench/bundles.ts';
import { readCdkBundling } from '../bench/cdk-bundling.ts';
import { childEnvironment, measureImports, type ImportSubject } from '../bench/import-time.ts';
import { kib, ms, round, table, times } from '../bench/stats.ts';
import { tracerSidecarCommand } from '../lib/parley-function.ts';
import { TRACER_SIDECAR } from '../shared/platform/observability/tracing.ts';

const { values: args } = parseArgs({
  options: { runs: { type: 'string', default: '11' }, functions: { type: 'string', default: 'account,numbers,webhook-delivery,calls' } },
});
const runs = Number(args.runs);
const functions = args.functions!.split(',').filter(Boolean);
const PACKAGES = ['@aws-lambda-powertools/metrics', '@aws-lambda-powertools/tracer'];

const outDir = resolve('bench/out/telemetry');
mkdirSync(outDir, { recursive: true });
const cdk = readCdkBundling();
const stub = stubPackages(PACKAGES, scanNamedImports());

const built: { name: string; with: BuiltBundle; without: BuiltBundle }[] = [];
for (const name of functions) {
  const entry = `functions/${name}.ts`;
  built.push({
    name,
    with: await buildBundle(cdk, `${name}`, entry, outDir),
    without: await buildBundle(cdk, `${name}-without-telemetry`, entry, outDir, [stub]),
  });
}
for (const { name, with: w, without } of built) {
  for (const bundle of [w, without]) if (bundle.error) throw new Error(`${name}: ${bundle.error}`);
}

const env = childEnvironment(mkdtempSync(join(tmpdir(), 'parley-telemetry-cost-')));
const subjects: ImportSubject[] = built.flatMap(({ name, with: w, without }) => [
  { id: name, file: w.file, expectExport: 'handler' },
  { id: `${name}-without-telemetry`, file: without.file, expectExport: 'handler' },
]);
console.log(`Cold imports: ${subjects.length} bundles × ${runs} fresh processes, interleaved…`);
const timings = new Map((await measureImports(subjects, runs, env)).map((timing) => [timing.id, timing]));

// The tracer's load on the first invocation in Lambda.
const probeDir = join(outDir, 'tracer-load');
mkdirSync(probeDir, { recursive: true });
const tracingModule = resolve('shared/platform/observability/tracing.ts');
writeFileSync(join(probeDir, 'loaded.ts'), `import { startTracing } from ${JSON.stringify(tracingModule)};\nexport const ready = (await startTracing()) !== undefined;\n`);
writeFileSync(join(probeDir, 'imported.ts'), `import { startTracing } from ${JSON.stringify(tracingModule)};\nexport const ready = typeof startTracing === 'function';\n`);
const loaded = await buildBundle(cdk, 'tracer-load/loaded-bundle', join(probeDir, 'loaded.ts'), outDir);
const imported = await buildBundle(cdk, 'tracer-load/imported-bundle', join(probeDir, 'imported.ts'), outDir);
// The tracer beside the bundle, as CDK writes it for every function.
execSync(tracerSidecarCommand(process.cwd(), dirname(loaded.file)));
const sidecarBytes = statSync(join(dirname(loaded.file), TRACER_SIDECAR)).size;
const lambdaEnv = {
  ...env,
  AWS_LAMBDA_FUNCTION_NAME: 'parley-cost',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
  _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
  // Nothing listens there: the tracer only sends when a subsegment closes, and none does here.
  AWS_XRAY_DAEMON_ADDRESS: '127.0.0.1:2000',
};
console.log('Tracer load in a Lambda environment…');
const tracer = new Map(
  (
    await measureImports(
      [
        { id: 'tracing.ts imported', file: imported.file, expectExport: 'ready' },
        { id: 'tracing.ts + startTracing()', file: loaded.file, expectExport: 'ready' },
      ],
      runs,
      lambdaEnv,
    )
  ).map((timing) => [timing.id, timing]),
);

const rows = built.map(({ name, with: w, without }) => {
  const a = timings.get(name)!;
  const b = timings.get(`${name}-without-telemetry`)!;
  return {
    function: name,
    bytes: w.bytes,
    bytesWithout: without.bytes,
    addedBytes: w.bytes - without.bytes,
    telemetryBytes: w.byPackage.filter((entry) => /^(@aws-lambda-powertools\/(metrics|tracer)|aws-xray-sdk-core|cls-hooked|semver|shimmer|emitter-listener|async-hook-jl|stack-chain|atomic-batcher|@aws\/lambda-invoke-store)$/.test(entry.name)).reduce((sum, entry) => sum + entry.bytes, 0),
    importMs: round(a.importMs),
    importMsWithout: round(b.importMs),
    importRatio: round(a.importMs / b.importMs),
    errors: [a.error, b.error].filter(Boolean),
  };
});
const importedMs = tracer.get('tracing.ts imported')!.importMs;
const loadedMs = tracer.get('tracing.ts + startTracing()')!.importMs;

console.log(
  `\n${table(
    ['function', 'bundle', 'without telemetry', 'added', 'import', 'without', 'ratio'],
    rows.map((r) => [r.function, kib(r.bytes), kib(r.bytesWithout), kib(r.addedBytes), ms(r.importMs, 1), ms(r.importMsWithout, 1), times(r.importRatio)]),
  )}`,
);
console.log(
  `\nTracer load on the first invocation in Lambda: ${ms(loadedMs - importedMs, 1)} ` +
    `(tracing.ts with startTracing() ${ms(loadedMs, 1)}, imported only ${ms(importedMs, 1)}; the tracer's file ${kib(sidecarBytes)})`,
);
writeFileSync(
  join(outDir, 'results.json'),
  JSON.stringify({ at: new Date().toISOString(), runs, rows, tracerLoad: { importedMs, loadedMs, addedMs: round(loadedMs - importedMs), sidecarBytes } }, null, 2),
);
