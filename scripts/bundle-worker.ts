import { copyFileSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions, type Metafile } from 'esbuild';
import { LAMBDA_BUNDLE_ALIASES } from '../lib/bundle-aliases.ts';
import { CHUNKS_DIR, REQUIRE_BANNER } from '../lib/bundling.ts';
import { PHONE_METADATA_FILE_NAME } from '../shared/platform/telephony/phone.ts';

/**
 * `npm run build:worker` (and worker/Dockerfile's build stage): the voice worker's two
 * entries bundled into worker/dist as ES modules, side by side:
 *
 * - `main.mjs`: `worker/src/main.ts`, the process the container runs (`node worker/dist/main.mjs start`);
 * - `agent.mjs`: `worker/src/agent.ts`, which LiveKit Agents' job processes import by path, one
 *   per call. main resolves it beside itself with its own extension (`.ts` from the sources under
 *   tsx, `.mjs` here), so the same code runs both ways.
 *
 * Parley's own code and the root packages it imports (the AWS SDK, the conversation runtime's)
 * are bundled in. The worker package's dependencies (`@livekit/*` with their native binaries
 * per platform, zod) stay external and are installed from worker/package-lock.json on the
 * image's own platform: the job processes LiveKit forks import `@livekit/agents` from
 * node_modules, and the agent module must share that one instance (its job context is
 * module state). Shared code between the entries goes to `chunks/`, the layout
 * shared/platform/bundle/bundle-files.ts resolves files beside the bundle from, as for the functions.
 * Of the Lambda aliases (lib/bundle-aliases.ts) only DDSketch's protobuf stand-in: the
 * conversation runtime counts custom-function calls in the analytics rollups, whose sketch
 * library imports a serializer it never calls and that is not installed. The others stay
 * out: a task takes its credentials from the container credentials endpoint, which the
 * SDK's full default chain reads.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export const WORKER_ENTRIES = { main: 'worker/src/main.ts', agent: 'worker/src/agent.ts' } as const;
export const WORKER_DIST = join(ROOT, 'worker', 'dist');
/**
 * The Node.js major of the worker's image (worker/Dockerfile's base image; a CDK test holds
 * them together): the functions' runtime's, a maintained release (20 left maintenance in
 * April 2026). Development machines on Node 20.19+ run the same code.
 */
export const WORKER_NODE_MAJOR = 24;

/** The worker package's dependencies: external to the bundle, installed in the image. */
export function workerExternals(root = ROOT): string[] {
  const manifest = JSON.parse(readFileSync(join(root, 'worker', 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  return Object.keys(manifest.dependencies ?? {}).sort();
}

export function workerBundleOptions(outdir = WORKER_DIST, entries: Readonly<Record<string, string>> = WORKER_ENTRIES): BuildOptions {
  return {
    entryPoints: Object.entries(entries).map(([out, entry]) => ({ in: resolve(ROOT, entry), out })),
    absWorkingDir: ROOT,
    bundle: true,
    platform: 'node',
    target: `node${WORKER_NODE_MAJOR}`,
    format: 'esm',
    outdir,
    splitting: true,
    chunkNames: `${CHUNKS_DIR}/[name]-[hash]`,
    outExtension: { '.js': '.mjs' },
    // Readable stack traces in the task's log without a minifier's names; the maps carry the rest.
    minify: false,
    sourcemap: true,
    sourcesContent: false,
    external: workerExternals(),
    alias: { 'protobufjs/minimal': LAMBDA_BUNDLE_ALIASES['protobufjs/minimal']! },
    banner: { js: REQUIRE_BANNER },
    mainFields: ['module', 'main'],
    metafile: true,
    logLevel: 'warning',
  };
}

/**
 * Bundles the worker into `outdir` (emptied first), with the phone metadata beside it when the
 * bundle holds the phone module (shared/platform/telephony/phone.ts reads it from there).
 */
export async function bundleWorker(outdir = WORKER_DIST, entries: Readonly<Record<string, string>> = WORKER_ENTRIES): Promise<Metafile> {
  rmSync(outdir, { recursive: true, force: true });
  const { metafile } = await build(workerBundleOptions(outdir, entries));
  if (Object.keys(metafile!.inputs).includes('shared/platform/telephony/phone.ts')) {
    copyFileSync(createRequire(import.meta.url).resolve('libphonenumber-js/metadata.max.json'), join(outdir, PHONE_METADATA_FILE_NAME));
  }
  return metafile!;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const metafile = await bundleWorker();
  const bytes = Object.entries(metafile.outputs)
    .filter(([path]) => !path.endsWith('.map'))
    .reduce((sum, [, output]) => sum + output.bytes, 0);
  console.log(`wrote ${WORKER_DIST} (${Math.round(bytes / 1024)} KiB of JavaScript)`);
}
