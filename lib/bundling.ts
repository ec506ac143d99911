import { basename, dirname, extname, join, relative, resolve } from 'node:path';
import { buildSync, type BuildOptions, type Metafile } from 'esbuild';
import { CHUNKS_DIR } from '../shared/platform/bundle/bundle-files.ts';
import { LAMBDA_BUNDLE_ALIASES } from './bundle-aliases.ts';

/**
 * How every function is bundled: one definition read by the stack (ParleyFunction's local
 * bundling), the benchmark, the bundle tests and the measuring scripts, so none of them
 * mirrors another's options.
 *
 * Code splitting (esbuild `splitting`, ES modules): the entry is `index.mjs`; a module the
 * code reaches only through `import()` (the S3 client, LiveKit's SDK, PDF.js, Stripe, SAML...)
 * goes to its own file under `chunks/`, which Node loads on the first call that needs it, so a
 * cold start loads only the entry and the chunks it imports statically ("cold bytes";
 * docs/performance.md). Code shared by the entry and a lazy chunk goes to a chunk of its own
 * that both import, so nothing is loaded twice.
 */
export interface FunctionBundling {
  target: string;
  format: 'esm';
  minify: boolean;
  sourcemap: boolean;
  sourcesContent: boolean;
  mainFields: string[];
  banner: string;
  external: string[];
  splitting: boolean;
}

/** Bundled dependencies written as CommonJS still call require(): each chunk gets its own (the voice worker's bundle too: scripts/bundle-worker.ts). */
export const REQUIRE_BANNER =
  "import { createRequire as __parleyCreateRequire } from 'node:module'; const require = __parleyCreateRequire(import.meta.url);";

/** The Node.js major the functions run on (PARLEY_RUNTIME in lib/parley-function.ts; a CDK test holds them together). */
const RUNTIME_NODE_MAJOR = 24;

export const FUNCTION_BUNDLING: FunctionBundling = {
  target: `node${RUNTIME_NODE_MAJOR}`,
  format: 'esm',
  minify: true,
  sourcemap: true,
  // The stack traces need the mappings only; the sources would double the upload.
  sourcesContent: false,
  mainFields: ['module', 'main'],
  banner: REQUIRE_BANNER,
  // Bundle the AWS SDK too, so production runs the SDK version the tests ran with.
  external: [],
  splitting: true,
};

/** The folder, under a bundle's directory, of the chunks beside `index.mjs` (the code finds files beside index.mjs through it). */
export { CHUNKS_DIR };

/**
 * esbuild options for a function: `entry` bundled to `<outdir>/<name>.mjs` (`index` unless
 * named), its lazy chunks under `<outdir>/chunks/`, with a metafile.
 */
export function bundleOptions(entry: string, outdir: string, bundling: FunctionBundling = FUNCTION_BUNDLING, name = 'index'): BuildOptions {
  return {
    entryPoints: [{ in: entry, out: name }],
    bundle: true,
    platform: 'node',
    target: bundling.target,
    format: bundling.format,
    outdir,
    splitting: bundling.splitting,
    chunkNames: `${CHUNKS_DIR}/[name]-[hash]`,
    outExtension: { '.js': '.mjs' },
    minify: bundling.minify,
    sourcemap: bundling.sourcemap,
    sourcesContent: bundling.sourcesContent,
    external: bundling.external,
    banner: { js: bundling.banner },
    mainFields: bundling.mainFields,
    alias: { ...LAMBDA_BUNDLE_ALIASES },
    metafile: true,
    logLevel: 'silent',
  };
}

/** Options that write the entry to `outfile` exactly (its chunks beside it, under chunks/). */
export function bundleOptionsFor(entry: string, outfile: string, bundling: FunctionBundling = FUNCTION_BUNDLING): BuildOptions {
  return bundleOptions(entry, dirname(outfile), bundling, basename(outfile, extname(outfile)));
}

/**
 * Worker scripts a function starts (shared/knowledge-bases/capped-worker.ts), by name: their source
 * files, each built as `<outdir>/<name>.mjs` beside the function's index.mjs, its own chunks
 * under chunks/ too (content-hashed names, so a chunk both builds make is the same file).
 * A build of its own rather than an entry of the function's: a second entry would share
 * modules with the function's cold closure and split it into more files
 * (docs/performance.md), and the parsers a worker carries are then in its build alone.
 */
export type WorkerEntries = Readonly<Record<string, string>>;

/**
 * Bundles a function, then its worker scripts, into `outdir` (CDK's local bundling is
 * synchronous); the function's metafile. A bundle whose cold start loads more than
 * COLD_BUDGET_BYTES throws: the synth, and so every deploy, stops there.
 */
export function bundleFunctionSync(entry: string, outdir: string, workers: WorkerEntries = {}): Metafile {
  const metafile = buildSync(bundleOptions(entry, outdir)).metafile!;
  checkColdBudget(relative(process.cwd(), resolve(entry)), metafile, join(outdir, 'index.mjs'));
  for (const [name, source] of Object.entries(workers)) buildSync(bundleOptions(source, outdir, FUNCTION_BUNDLING, name));
  return metafile;
}

/**
 * The size target as a gate: what a function's cold start loads (its index.mjs and the chunks
 * it imports statically) is at most 700 KiB (docs/performance.md, "Sizes: cold and lazy").
 * Checked where the stack bundles each function, so a change that pulls a heavy module back
 * into a cold closure (one static import chain is enough) fails `cdk synth` and `cdk deploy`,
 * naming the function, rather than in a benchmark nobody runs.
 */
export const COLD_BUDGET_BYTES = 700 * 1024;

/** The bundle's cold bytes; throws, naming `name` and the size, past `budget`. */
export function checkColdBudget(name: string, metafile: Metafile, entryFile: string, budget = COLD_BUDGET_BYTES): number {
  const cold = outputBytes(metafile, bundleOutputs(metafile, entryFile).cold);
  if (cold > budget) {
    throw new Error(
      `${name}: a cold start would load ${(cold / 1024).toFixed(1)} KiB, over the ${(budget / 1024).toFixed(0)} KiB budget. ` +
        'A static import chain pulls a heavy module into the cold closure: reach it through import() (docs/performance.md, "Sizes: cold and lazy").',
    );
  }
  return cold;
}

/** Where an output path of a metafile (relative to the working directory) is. */
const same = (a: string, b: string) => resolve(a) === resolve(b);

export interface BundleOutputs {
  /** The entry file and every chunk it imports statically, transitively: what a cold start loads. */
  cold: string[];
  /** The chunks loaded only through import(), on first use. */
  lazy: string[];
}

/** The outputs of a bundle (source maps left out), split into what a cold start loads and what loads later. */
export function bundleOutputs(metafile: Metafile, entryFile: string): BundleOutputs {
  const outputs = metafile.outputs;
  const paths = Object.keys(outputs).filter((path) => !path.endsWith('.map'));
  const entry = paths.find((path) => same(path, entryFile));
  if (!entry) throw new Error(`${entryFile} is not an output of this build`);
  const cold = new Set<string>();
  const queue = [entry];
  while (queue.length) {
    const path = queue.pop()!;
    if (cold.has(path)) continue;
    cold.add(path);
    for (const { path: imported, kind } of outputs[path]!.imports) if (kind === 'import-statement' && outputs[imported]) queue.push(imported);
  }
  return { cold: [...cold], lazy: paths.filter((path) => !cold.has(path)) };
}

/** Bytes of the given outputs. */
export const outputBytes = (metafile: Metafile, paths: readonly string[]): number => paths.reduce((sum, path) => sum + metafile.outputs[path]!.bytes, 0);

/** The inputs (project files and package files) in the given outputs, with their bytes there. */
export function inputsOf(metafile: Metafile, paths: readonly string[]): Map<string, number> {
  const inputs = new Map<string, number>();
  for (const path of paths) for (const [input, { bytesInOutput }] of Object.entries(metafile.outputs[path]!.inputs)) inputs.set(input, (inputs.get(input) ?? 0) + bytesInOutput);
  return inputs;
}

/** The inputs a cold start of the bundle loads (the entry's static closure). */
export const coldInputs = (metafile: Metafile, entryFile: string): Map<string, number> => inputsOf(metafile, bundleOutputs(metafile, entryFile).cold);
