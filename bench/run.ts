import '../local/quiet-aws-sdk.ts';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import {
  BASELINE_ENTRY,
  buildBundle,
  bundleName,
  directDependenciesIn,
  displayPath,
  functionEntries,
  scanNamedImports,
  stubPackages,
  type BuiltBundle,
} from './bundles.ts';
import type { BatchPassMeasurement } from './batch-pass.ts';
import { WEBHOOK_TARGET_RATIO, type WebhookThroughput } from './webhook-delivery.ts';
import { readCdkBundling } from './cdk-bundling.ts';
import { profileImports, type ImportProfile } from './cpu-profile.ts';
import { childEnvironment, measureImports, type ImportSubject, type ImportTiming } from './import-time.ts';
import { measureLatency, type LatencyResult } from './latency.ts';
import { kib, ms, round, roundSummary, table, times } from './stats.ts';
import { P6_TARGETS, type P6Result } from './voice-to-voice.ts';
import { P7_TARGETS, type P7Result } from './analytics-query.ts';
import { P7_ALERT_TARGETS, type P7AlertResult } from './alert-pass.ts';

/**
 * `npm run bench`: the request-path latency against a raw DynamoDB read, and each Lambda
 * bundle's size and cold import time against a bundle of just the DynamoDB client — all
 * as ratios against a baseline measured in the same run. Only 127.0.0.1 is contacted.
 * Results: printed tables and bench/out/results.json. See docs/performance.md.
 */
const TARGETS = {
  latencyRatioP50: 2.0,
  /** P3: p50 of a 1,000-call list-calls page over p50 of the raw reads of the same items. */
  listCallsRatioP50: 1.3,
  /** Every function's cold size ≤ 700 KiB. */
  bundleBytes: 700 * 1024,
  /** The numbers function's cold import ≤ 1.6× the baseline's (1.5× for every other function is a note, not a target). */
  numbersImportRatio: 1.6,
  importRatio: 1.5,
};

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    samples: { type: 'string' },
    warmup: { type: 'string' },
    'warmup-seconds': { type: 'string' },
    'import-runs': { type: 'string' },
    'budget-seconds': { type: 'string' },
    'no-diagnostics': { type: 'boolean', default: false },
    functions: { type: 'string' },
    profile: { type: 'string' },
    'no-calls': { type: 'boolean', default: false },
    strict: { type: 'boolean', default: false },
    'p6-turns': { type: 'string' },
    'p6-calls': { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

if (args.help) {
  console.log(`npm run bench [-- options]
  --quick               fewer samples and processes (a smoke run, not for the record)
  --only=latency|bundles|batches|webhooks|p6|p7
  --p6-turns=N          P6 voice-to-voice: measured turns per vendor variant (default 20)
  --p6-calls=K          P6: calls at once for CPU and memory per call (default 10)
  --samples=N           measured requests per latency variant (default 3000)
  --warmup=N            warm-up requests per latency variant, at least (default 2000)
  --warmup-seconds=N    warm-up duration, at least (default 15)
  --import-runs=N       fresh node processes per bundle (default 15)
  --budget-seconds=N    cap on the latency measurement (default 120)
  --no-diagnostics      skip the breakdown variants, ablation bundles, probes, profiles
  --no-calls            skip the calls variants (P3 list-calls, create-phone-call)
  --functions=a,b       bundle and import only these functions (with the baseline)
  --profile=a,b         CPU-profile these bundles' cold imports (default: account; with diagnostics)
  --strict              exit 1 when a target is missed`);
  process.exit(0);
}

const quick = args.quick;
const intArg = (value: string | undefined, fallback: number) => {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) throw new Error(`Expected a positive integer, got ${value}`);
  return parsed;
};
const settings = {
  samples: intArg(args.samples, quick ? 400 : 3000),
  warmup: intArg(args.warmup, quick ? 300 : 2000),
  warmupMs: intArg(args['warmup-seconds'], quick ? 5 : 15) * 1000,
  importRuns: intArg(args['import-runs'], quick ? 4 : 15),
  budgetMs: intArg(args['budget-seconds'], 120) * 1000,
  profileRuns: quick ? 2 : 5,
  diagnostics: !args['no-diagnostics'],
  calls: args['no-calls']
    ? undefined
    : { listSamples: quick ? 20 : 60, createSamples: quick ? 60 : 200, warmupMs: quick ? 2000 : 4000, budgetMs: quick ? 15_000 : 25_000 },
};
const phases = args.only ? [args.only] : ['bundles', 'latency', 'batches', 'webhooks', 'p6', 'p7'];
if (phases.some((phase) => !['bundles', 'latency', 'batches', 'webhooks', 'p6', 'p7'].includes(phase))) throw new Error('--only is latency, bundles, batches, webhooks, p6 or p7');

const OUT = 'bench/out';
mkdirSync(OUT, { recursive: true });
const log = (line: string) => console.log(`[bench] ${line}`);
const startedAt = new Date();
const loadAtStart = loadavg();

// ------------------------------------------------------------------------------------------
// Bundles: size and cold import time

interface BundleRow {
  name: string;
  file: string;
  /** Loaded by a cold start (the entry and its static chunks); the target applies to these. */
  bytes: number;
  /** Chunks loaded on first use only (import()). */
  lazyBytes: number;
  mapBytes: number;
  sizeMet: boolean;
  importMs: number;
  importRatio: number;
  /** CPU time of the import and its ratio to the baseline's: the steadier reading on a busy machine. */
  importCpuMs: number;
  importCpuRatio: number;
  importMet: boolean;
  /** With --enable-source-maps, as NODE_OPTIONS sets it for the functions in AWS. */
  importMsSourceMaps: number;
  importRatioSourceMaps: number;
  processToReadyMs: number;
  importIqrMs: [number, number];
  runs: number;
  groups: BuiltBundle['groups'];
  topPackages: { name: string; bytes: number }[];
  error?: string;
}

async function bundlesPhase() {
  const cdk = readCdkBundling();
  log(`Bundling with the options of ${cdk.source}: target ${cdk.target}, ${cdk.format}, minify ${cdk.minify}, ` +
    `sourcemap ${cdk.sourcemap}, external [${cdk.external.join(', ')}]`);
  if (cdk.unmirrored.length) log(`WARNING: bundling options not mirrored by the benchmark: ${cdk.unmirrored.join(', ')}`);

  const bundleDir = join(OUT, 'bundles');
  rmSync(bundleDir, { recursive: true, force: true });
  const only = args.functions?.split(',').map((name) => name.trim()).filter(Boolean);
  const entries = functionEntries().filter((entry) => !only || only.includes(bundleName(entry)));
  if (only && entries.length !== only.length) throw new Error(`--functions: unknown function in ${only.join(', ')}`);
  const baseline = await buildBundle(cdk, 'baseline', BASELINE_ENTRY, bundleDir);
  if (baseline.error) throw new Error(`Baseline bundle failed: ${baseline.error}`);
  const functions = await Promise.all(entries.map((entry) => buildBundle(cdk, bundleName(entry), entry, bundleDir)));
  for (const failed of functions.filter((bundle) => bundle.error)) log(`Bundle ${failed.id} failed: ${failed.error}`);
  const built = functions.filter((bundle) => !bundle.error);

  // Ablation bundles and probes (diagnostics).
  const ablations: { package: string; bundle: BuiltBundle }[] = [];
  const probes: BuiltBundle[] = [];
  const variantDir = join(OUT, 'variants');
  rmSync(variantDir, { recursive: true, force: true });
  if (settings.diagnostics) {
    const account = built.find((bundle) => bundle.id === 'account');
    if (account) {
      const named = scanNamedImports();
      const candidates = directDependenciesIn(account).filter((name) => name !== '@aws-sdk/client-dynamodb');
      for (const name of candidates) {
        ablations.push({
          package: name,
          bundle: await buildBundle(cdk, `without:${name}`, account.entry, variantDir, [stubPackages([name], named)]),
        });
      }
      ablations.push({
        package: 'all of the above',
        bundle: await buildBundle(cdk, 'without:all-deps', account.entry, variantDir, [stubPackages(candidates, named)]),
      });
    }
    for (const probe of ['zod-only', 'route-schemas']) {
      probes.push(await buildBundle(cdk, `probe:${probe}`, `bench/probes/${probe}.ts`, variantDir));
    }
  }

  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-import-'));
  const env = childEnvironment(dataDir);
  const exportOf = (bundle: BuiltBundle) => (bundle.id === 'baseline' ? 'client' : 'handler');
  const subjects: ImportSubject[] = [baseline, ...built, ...ablations.map((a) => a.bundle), ...probes]
    .filter((bundle) => !bundle.error)
    .flatMap((bundle) => {
      const plain = { id: bundle.id, file: bundle.file, expectExport: exportOf(bundle) };
      const isVariant = bundle.id.includes(':');
      return isVariant
        ? [plain]
        : [plain, { ...plain, id: `${bundle.id}+source-maps`, nodeFlags: ['--enable-source-maps'] }];
    });
  log(`Cold imports: ${subjects.length} subjects × ${settings.importRuns} fresh node processes, interleaved…`);
  let timings: ImportTiming[];
  let profiles: ImportProfile[] = [];
  try {
    timings = await measureImports(subjects, settings.importRuns, env, (r) => {
      if ((r + 1) % 5 === 0 || r + 1 === settings.importRuns) log(`  round ${r + 1}/${settings.importRuns}`);
    });
    const profileIds = args.profile?.split(',').map((name) => name.trim()) ?? (settings.diagnostics ? ['account'] : []);
    if (profileIds.length) {
      const profiled = [baseline, ...profileIds.map((id) => built.find((b) => b.id === id))]
        .filter((bundle): bundle is BuiltBundle => bundle !== undefined && !bundle.error);
      log(`CPU profiles of ${profiled.map((b) => b.id).join(', ')} (${settings.profileRuns} each)…`);
      profiles = await profileImports(profiled, settings.profileRuns, env);
    }
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
  const timing = (id: string) => timings.find((t) => t.id === id)!;
  const base = timing('baseline');
  const baseMaps = timing('baseline+source-maps');

  const row = (bundle: BuiltBundle): BundleRow => {
    const plain = timing(bundle.id);
    const maps = timings.find((t) => t.id === `${bundle.id}+source-maps`);
    const ratio = plain.importMs / base.importMs;
    return {
      name: bundle.id,
      file: displayPath(bundle.file),
      bytes: bundle.bytes,
      lazyBytes: bundle.lazyBytes,
      mapBytes: bundle.mapBytes,
      sizeMet: bundle.bytes <= TARGETS.bundleBytes,
      importMs: round(plain.importMs),
      importRatio: round(ratio),
      importCpuMs: round(plain.importCpuMs),
      importCpuRatio: round(plain.importCpuMs / base.importCpuMs),
      importMet: ratio <= (bundle.id === 'numbers' ? TARGETS.numbersImportRatio : TARGETS.importRatio),
      importMsSourceMaps: round(maps?.importMs ?? Number.NaN),
      importRatioSourceMaps: round((maps?.importMs ?? Number.NaN) / baseMaps.importMs),
      processToReadyMs: round(plain.processToReadyMs),
      importIqrMs: [round(plain.importIqrMs[0]), round(plain.importIqrMs[1])],
      runs: plain.runs,
      groups: bundle.groups,
      topPackages: bundle.byPackage.slice(0, 15),
      ...(plain.error ? { error: plain.error } : {}),
    };
  };
  const rows = [baseline, ...built].map(row);

  console.log('\nBundles (esbuild as CDK bundles them) and cold import time (median of fresh node processes)\n');
  console.log(
    table(
      ['bundle', 'cold size', 'of 700 KiB', 'lazy', 'zod', 'AWS SDK', 'app', 'other', 'import', '× base', 'CPU', '× base', 'w/ source maps', '× base', 'targets'],
      rows.map((r) => [
        r.name,
        kib(r.bytes),
        `${((100 * r.bytes) / TARGETS.bundleBytes).toFixed(0)}%`,
        kib(r.lazyBytes),
        kib(r.groups.zod),
        kib(r.groups.awsSdk),
        kib(r.groups.app),
        kib(r.groups.other),
        ms(r.importMs, 1),
        r.name === 'baseline' ? '1.00×' : times(r.importRatio),
        ms(r.importCpuMs, 1),
        r.name === 'baseline' ? '1.00×' : times(r.importCpuRatio),
        ms(r.importMsSourceMaps, 1),
        r.name === 'baseline' ? '1.00×' : times(r.importRatioSourceMaps),
        r.name === 'baseline' ? '' : `${r.sizeMet ? 'size ok' : 'SIZE >700KiB'}, ${r.importMet ? 'import ok' : `IMPORT >${r.name === 'numbers' ? TARGETS.numbersImportRatio : TARGETS.importRatio}×`}`,
      ]),
    ),
  );
  for (const failed of functions.filter((bundle) => bundle.error)) console.log(`${failed.id}: bundle failed: ${failed.error}`);
  for (const r of rows.filter((x) => x.error)) console.log(`${r.name}: import failed: ${r.error}`);

  const account = rows.find((r) => r.name === 'account');
  if (account) {
    console.log('\nLargest packages in the account bundle (bytes in the minified output)\n');
    console.log(
      table(
        ['package', 'bytes', 'share'],
        account.topPackages
          .slice(0, 12)
          .map((p) => [p.name, kib(p.bytes), `${((100 * p.bytes) / account.bytes).toFixed(1)}%`]),
      ),
    );
  }

  const accountImport = account?.importMs ?? Number.NaN;
  const ablationRows = ablations.map(({ package: name, bundle }) => {
    const t = bundle.error ? undefined : timings.find((x) => x.id === bundle.id);
    return {
      package: name,
      bytes: bundle.bytes,
      bytesSaved: (account?.bytes ?? Number.NaN) - bundle.bytes,
      importMs: round(t?.importMs ?? Number.NaN),
      importMsSaved: round(accountImport - (t?.importMs ?? Number.NaN)),
      ...(bundle.error || t?.error ? { error: bundle.error ?? t?.error } : {}),
    };
  });
  if (ablationRows.length) {
    console.log('\nAblation: the account bundle with one dependency replaced by an inert stub (its marginal cost)\n');
    console.log(
      table(
        ['stubbed package', 'size', 'bytes saved', 'import', 'import saved'],
        ablationRows.map((r) => [
          r.package,
          kib(r.bytes),
          kib(r.bytesSaved),
          r.error ? `failed: ${r.error.slice(0, 60)}` : ms(r.importMs, 1),
          r.error ? 'n/a' : ms(r.importMsSaved, 1),
        ]),
      ),
    );
  }
  const probeRows = probes.map((bundle) => {
    const t = bundle.error ? undefined : timings.find((x) => x.id === bundle.id);
    return {
      name: bundle.id.split(':')[1]!,
      bytes: bundle.bytes,
      importMs: round(t?.importMs ?? Number.NaN),
      ...(bundle.error || t?.error ? { error: bundle.error ?? t?.error } : {}),
    };
  });
  if (probeRows.length) {
    console.log('\nProbes: zod alone, and zod plus building every schema of the account route tables (what z.lazy defers)\n');
    console.log(
      table(
        ['probe', 'size', 'import'],
        probeRows.map((r) => [r.name, kib(r.bytes), r.error ? `failed: ${r.error.slice(0, 60)}` : ms(r.importMs, 1)]),
      ),
    );
  }
  if (profiles.length) {
    console.log('\nCPU profile of a cold import (median of fresh processes; profiling slows everything down)\n');
    console.log(
      table(
        ['bundle', 'compile module source', 'bundle code', 'GC'],
        profiles.map((p) => [p.id, ms(p.compileMs, 1), ms(p.bundleCodeMs, 1), ms(p.garbageCollectionMs, 1)]),
      ),
    );
    for (const p of profiles.filter((x) => x.id !== 'baseline')) {
      const top = p.bundleCodeByPackage.slice(0, 6).map((x) => `${x.name} ${x.ms.toFixed(1)}`);
      console.log(`  ${p.id} bundle code by package (ms, mean per run): ${top.join(', ')}`);
    }
  }

  return {
    options: cdk,
    importRuns: settings.importRuns,
    childEnvironment: Object.keys(env).filter((k) => k !== 'PATH'),
    baseline: rows[0],
    functions: rows.slice(1),
    failedBundles: functions.filter((b) => b.error).map((b) => ({ name: b.id, error: b.error })),
    ablations: ablationRows,
    probes: probeRows,
    importProfiles: profiles.map((p) => ({
      ...p,
      compileMs: round(p.compileMs),
      bundleCodeMs: round(p.bundleCodeMs),
      garbageCollectionMs: round(p.garbageCollectionMs),
      bundleCodeByPackage: p.bundleCodeByPackage.slice(0, 12).map((x) => ({ name: x.name, ms: round(x.ms) })),
    })),
    met: {
      size: rows.slice(1).every((r) => r.sizeMet),
      importRatio: rows.slice(1).every((r) => r.importMet),
    },
  };
}

// ------------------------------------------------------------------------------------------
// Latency: GET /get-api-key-info against a raw GetItem

/**
 * P4, the batch scheduler pass (bench/batch-pass.ts), in its own process: it needs its own
 * DynamoDB Local and settings, read once per process.
 */
function batchesPhase() {
  log('Batch passes (P4): one pass per scenario on a fresh DynamoDB Local…');
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/batch-pass.ts'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-bench-batches-')), POWERTOOLS_LOG_LEVEL: 'ERROR' },
  });
  if (run.status !== 0) throw new Error(`bench/batch-pass.ts exited ${run.status}`);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { scenarios: BatchPassMeasurement[]; met: boolean };
  console.log('\nBatch pass (P4): dials ÷ min(pending, free capacity, CPS × tick) must be 1.0\n');
  console.log(
    table(
      ['pending', 'limit', 'cps', 'expected', 'dialled', 'ratio', 'pass'],
      result.scenarios.map((s) => [String(s.pending), String(s.limit), String(s.cps), String(s.expected), String(s.dialled), String(s.ratio), ms(s.passMs, 1)]),
    ),
  );
  return result;
}

/**
 * Webhook delivery throughput (bench/webhook-delivery.ts), in its own process with its own
 * DynamoDB Local: deliveries a second through the local queue and the consumer against a raw
 * fetch loop with as many in flight, both to a receiver that answers in 10 s, the receiver
 * webhooks are sized for (docs/scale.md, "Webhook delivery"). DynamoDB Local serves about a
 * hundred writes a second on a busy machine, one at a time, so with a fast receiver it, not
 * the delivery path, would be measured.
 */
function webhooksPhase(): WebhookThroughput {
  const deliveries = quick ? 20 : 40;
  log(`Webhook delivery: ${deliveries} deliveries through the queue and the consumer, then as many raw fetches, 10 in flight…`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/webhook-delivery.ts', `--deliveries=${deliveries}`, '--pollers=1', '--receiver-ms=10000'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-bench-webhooks-')), POWERTOOLS_LOG_LEVEL: 'ERROR' },
  });
  if (run.status !== 0) throw new Error(`bench/webhook-delivery.ts exited ${run.status}`);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as WebhookThroughput;
  console.log(`\nWebhook delivery: queue ÷ raw fetch at the same concurrency (target ≥ ${WEBHOOK_TARGET_RATIO})\n`);
  console.log(
    table(
      ['deliveries', 'in flight', 'receiver', 'queue /s', 'raw fetch /s', 'ratio', "a batch's own time"],
      [[String(result.deliveries), String(result.inFlight), ms(result.receiverMs, 0), String(result.queuePerSecond), String(result.rawPerSecond), String(result.ratio), ms(result.batchOverheadMs, 0)]],
    ),
  );
  return result;
}

/**
 * P7, the analytics query half (bench/analytics-query.ts), in its own process with its own
 * DynamoDB Local: a 90-day query by agent and day over rollups synthesised for 10,000 and
 * 1,000,000 calls.
 */
function analyticsPhase(): P7Result & { alerts: P7AlertResult } {
  log('Analytics queries (P7): rollups of 10,000 and 1,000,000 calls, a 90-day query by agent and day…');
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/analytics-query.ts', `--samples=${quick ? 5 : 15}`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-bench-p7-')), POWERTOOLS_LOG_LEVEL: 'ERROR' },
  });
  if (run.status !== 0) throw new Error(`bench/analytics-query.ts exited ${run.status}`);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as P7Result;
  console.log(`\nP7 queries: p50 < ${P7_TARGETS.p50Ms} ms, and p50 at 1,000,000 calls ≤ ${P7_TARGETS.ratio}× p50 at 10,000\n`);
  console.log(
    table(
      ['calls', 'cells', 'attributes a cell', 'p50', 'p95', 'with p50/p90 latency'],
      result.volumes.map((v) => [v.calls.toLocaleString('en-US'), String(v.cells), String(v.attributesPerCell), ms(v.query.p50, 1), ms(v.query.p95, 1), 'error' in v.percentiles ? v.percentiles.error : ms(v.percentiles.p50, 1)]),
    ),
  );
  console.log(`\nRatio p50(1,000,000)/p50(10,000) = ${result.ratio}`);
  return { ...result, alerts: alertPassPhase() };
}

/** P7, the alert half (bench/alert-pass.ts), in its own process: one tick's pass over 100 and over 10,000 due rules. */
function alertPassPhase(): P7AlertResult {
  log('Alert passes (P7): one alert tick over 100 and over 10,000 due rules…');
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/alert-pass.ts', `--passes=${quick ? 1 : 2}`], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, DATA_DIR: mkdtempSync(join(tmpdir(), 'parley-bench-p7-alerts-')), POWERTOOLS_LOG_LEVEL: 'ERROR' },
  });
  if (run.status !== 0) throw new Error(`bench/alert-pass.ts exited ${run.status}`);
  const result = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as P7AlertResult;
  console.log(`\nP7 alerts: a pass's time a rule at 10,000 rules ≤ ${P7_ALERT_TARGETS.ratio}× at 100\n`);
  console.log(table(['rules', 'workspaces', 'pass p50', 'a rule'], result.volumes.map((v) => [v.rules.toLocaleString('en-US'), String(v.workspaces), ms(v.pass.p50, 0), ms(v.perRuleMs, 2)])));
  console.log(`\nRatio per rule (10,000)/(100) = ${result.ratio}`);
  return result;
}

async function latencyPhase() {
  const result: LatencyResult = await measureLatency({
    samples: settings.samples,
    warmup: settings.warmup,
    warmupMs: settings.warmupMs,
    roundSize: 25,
    budgetMs: settings.budgetMs,
    diagnostics: settings.diagnostics,
    calls: settings.calls,
    log,
  });
  const get = (id: string) => result.variants.find((v) => v.id === id)!.summary;
  const ratio = get('api').p50 / get('ddb-get').p50;
  const ratioP95 = get('api').p95 / get('ddb-get').p95;

  console.log(
    `\nLatency, sequential (one request in flight), ${result.rounds} interleaved rounds in ${(result.elapsedMs / 1000).toFixed(1)} s\n`,
  );
  console.log(
    table(
      ['variant', 'n', 'p50', 'p95', 'p99', 'mean', '× ddb-get p50'],
      result.variants.map((v) => [
        v.id,
        v.summary.n,
        ms(v.summary.p50, 3),
        ms(v.summary.p95, 3),
        ms(v.summary.p99, 3),
        ms(v.summary.mean, 3),
        times(v.summary.p50 / get('ddb-get').p50),
      ]),
    ),
  );
  console.log('');
  for (const v of result.variants) console.log(`  ${v.id.padEnd(10)} ${v.description}`);
  console.log(
    `\nRatio p50(api)/p50(ddb-get) = ${ratio.toFixed(2)} (target ≤ ${TARGETS.latencyRatioP50}: ${ratio <= TARGETS.latencyRatioP50 ? 'met' : 'MISSED'}); ` +
      `p95 ratio ${ratioP95.toFixed(2)}; first/second half of the rounds: ${result.ratioByHalf.map((r) => r.toFixed(2)).join(' / ')}`,
  );

  const [firstHalf, secondHalf] = result.ratioByHalf;
  if (Math.abs(firstHalf - secondHalf) / secondHalf > 0.05) {
    console.log('  Note: the ratio moved by more than 5% between the halves of the run (warm-up or machine noise).');
  }

  let calls: Record<string, unknown> | undefined;
  if (result.calls) {
    const c = result.calls;
    const cget = (id: string) => c.variants.find((v) => v.id === id)!.summary;
    const p3 = cget('list-calls-1000').p50 / cget('raw-list-1000').p50;
    const p3p95 = cget('list-calls-1000').p95 / cget('raw-list-1000').p95;
    const create = cget('create-phone-call').p50 / cget('calls:ddb-get').p50;
    console.log(`\nCalls, sequential, ${c.rounds} interleaved rounds in ${(c.elapsedMs / 1000).toFixed(1)} s (${c.page} calls seeded in ${(c.seededMs / 1000).toFixed(1)} s)\n`);
    console.log(
      table(
        ['variant', 'n', 'p50', 'p95', 'p99', 'mean', '× raw-list p50', '× calls:ddb-get p50'],
        c.variants.map((v) => [
          v.id,
          v.summary.n,
          ms(v.summary.p50, 3),
          ms(v.summary.p95, 3),
          ms(v.summary.p99, 3),
          ms(v.summary.mean, 3),
          times(v.summary.p50 / cget('raw-list-1000').p50),
          times(v.summary.p50 / cget('calls:ddb-get').p50),
        ]),
      ),
    );
    console.log('');
    for (const v of c.variants) console.log(`  ${v.id.padEnd(18)} ${v.description}`);
    console.log(
      `\nP3: p50(list-calls-1000)/p50(raw-list-1000) = ${p3.toFixed(2)} (target ≤ ${TARGETS.listCallsRatioP50}: ${p3 <= TARGETS.listCallsRatioP50 ? 'met' : 'MISSED'}); ` +
        `p95 ratio ${p3p95.toFixed(2)}. create-phone-call p50 = ${create.toFixed(2)}× calls:ddb-get (no target).`,
    );
    calls = {
      p3RatioP50: round(p3),
      p3RatioP95: round(p3p95),
      p3Met: p3 <= TARGETS.listCallsRatioP50,
      createPhoneCallRatioP50: round(create),
      rounds: c.rounds,
      elapsedMs: round(c.elapsedMs, 0),
      seededMs: round(c.seededMs, 0),
      page: c.page,
      variants: c.variants.map((v) => ({ id: v.id, description: v.description, ms: roundSummary(v.summary) })),
    };
  }

  return {
    ...(calls ? { calls } : {}),
    ratioP50: round(ratio),
    ratioP95: round(ratioP95),
    ratioByHalf: result.ratioByHalf.map((r) => round(r)),
    met: ratio <= TARGETS.latencyRatioP50,
    rounds: result.rounds,
    elapsedMs: round(result.elapsedMs, 0),
    roundSize: 25,
    warmup: settings.warmup,
    warmupMs: settings.warmupMs,
    settings: result.settings,
    variants: result.variants.map((v) => ({ id: v.id, description: v.description, ms: roundSummary(v.summary) })),
  };
}

// ------------------------------------------------------------------------------------------
// P6: voice to voice through the worker's session (bench/voice-to-voice.ts)

/** In a process of its own: it starts its own DynamoDB Local and reads Parley's settings once, at load. */
function voiceToVoicePhase(): P6Result {
  const out = join(OUT, 'p6.json');
  rmSync(out, { force: true });
  const turns = intArg(args['p6-turns'], quick ? 5 : 20);
  const calls = intArg(args['p6-calls'], quick ? 3 : 10);
  log(`P6 voice-to-voice: ${turns} turns per vendor variant, then ${calls} calls at once (a few minutes)`);
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'bench/voice-to-voice.ts', `--turns=${turns}`, `--concurrent=${calls}`, `--out=${out}`], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...process.env, WORKER_TEST_LOG_LEVEL: 'fatal' },
  });
  if (run.status !== 0) throw new Error(`bench/voice-to-voice.ts exited with ${run.status}`);
  return JSON.parse(readFileSync(out, 'utf8')) as P6Result;
}

// ------------------------------------------------------------------------------------------

const results: Record<string, unknown> = {
  date: startedAt.toISOString(),
  machine: {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    os: `${platform()} ${release()}`,
    node: process.version,
    loadAverageAtStart: loadAtStart.map((l) => round(l, 2)),
  },
  settings: { ...settings, quick },
  targets: TARGETS,
};

let failed = false;
for (const phase of phases) {
  try {
    results[phase] =
      phase === 'bundles'
        ? await bundlesPhase()
        : phase === 'batches'
          ? batchesPhase()
          : phase === 'webhooks'
            ? webhooksPhase()
            : phase === 'p6'
              ? voiceToVoicePhase()
              : phase === 'p7'
                ? analyticsPhase()
                : await latencyPhase();
  } catch (error) {
    failed = true;
    console.error(`\n[bench] ${phase} failed:`, error);
    results[phase] = { error: error instanceof Error ? error.message : String(error) };
  }
}
(results.machine as Record<string, unknown>).loadAverageAtEnd = loadavg().map((l) => round(l, 2));
results.durationSeconds = round((Date.now() - startedAt.getTime()) / 1000, 1);

const missed: string[] = [];
const latency = results.latency as { met?: boolean; ratioP50?: number } | undefined;
const bundles = results.bundles as
  | { met?: { size: boolean; importRatio: boolean }; failedBundles?: { name: string }[] }
  | undefined;
for (const failedBundle of bundles?.failedBundles ?? []) missed.push(`bundle ${failedBundle.name} failed to build`);
const batches = results.batches as { met?: boolean } | undefined;
if (batches?.met === false) missed.push('a batch pass dialled other than min(pending, free capacity, CPS × tick)');
const webhooks = results.webhooks as WebhookThroughput | undefined;
if (webhooks?.met === false) missed.push(`webhook delivery throughput ratio ${webhooks.ratio} < ${WEBHOOK_TARGET_RATIO}`);
if (latency?.met === false) missed.push(`latency ratio ${latency.ratioP50} > ${TARGETS.latencyRatioP50}`);
const p3 = (latency as { calls?: { p3Met: boolean; p3RatioP50: number } } | undefined)?.calls;
if (p3?.p3Met === false) missed.push(`P3 list-calls ratio ${p3.p3RatioP50} > ${TARGETS.listCallsRatioP50}`);
if (bundles?.met?.size === false) missed.push('a bundle is over 700 KiB');
if (bundles?.met?.importRatio === false) missed.push(`a bundle imports more than ${TARGETS.importRatio}× slower than the baseline`);
const p6 = results.p6 as P6Result | undefined;
if (p6?.met?.total === false) missed.push(`P6 voice-to-voice p50 ${p6.vendors.total.p50} ms > ${P6_TARGETS.totalP50Ms} ms`);
if (p6?.met?.overhead === false) missed.push(`P6 pipeline overhead p50 ${p6.vendors.overhead.p50} ms > ${P6_TARGETS.overheadP50Ms} ms`);
const p7 = results.p7 as P7Result | undefined;
if (p7?.met?.underOneSecond === false) missed.push(`P7 analytics query p50 ${p7.volumes.at(-1)?.query.p50} ms ≥ ${P7_TARGETS.p50Ms} ms`);
if (p7?.met?.ratio === false) missed.push(`P7 analytics query ratio ${p7.ratio} > ${P7_TARGETS.ratio}`);
const p7Alerts = (results.p7 as { alerts?: P7AlertResult } | undefined)?.alerts;
if (p7Alerts?.met?.ratio === false) missed.push(`P7 alert pass ratio a rule ${p7Alerts.ratio} > ${P7_ALERT_TARGETS.ratio}`);
results.targetsMissed = missed;

writeFileSync(join(OUT, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
console.log(`\n[bench] ${missed.length ? `Targets missed: ${missed.join('; ')}` : 'All measured targets met.'}`);
console.log(`[bench] Load average ${loadAtStart.map((l) => l.toFixed(2)).join(' ')} at start, ` +
  `${loadavg().map((l) => l.toFixed(2)).join(' ')} at end (${cpus().length} CPUs). Results: ${OUT}/results.json`);
process.exit(failed || (args.strict && missed.length) ? 1 : 0);
