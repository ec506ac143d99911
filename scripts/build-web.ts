import { createHash } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';

/**
 * `npm run build:web`: the browser files into web/dist (git-ignored), each under a
 * content-hashed name, plus `manifest.json` naming them:
 *
 * - `parley-web-sdk.<hash>.mjs`: `@parley/web-sdk` as an ES module (livekit-client bundled in)
 * - `parley-web-sdk.<hash>.js`: the same as an IIFE that sets `window.ParleyWebSDK`
 * - `orb.<hash>.js`, `orb.<hash>.css`: the Voice Orb page's script (which uses the IIFE) and styles
 * - `dashboard.<hash>.js`, `dashboard.<hash>.css`: the dashboard page's script (Chart.js bundled in) and styles
 *
 * The meta function serves them at `/static/<hashed name>` with an immutable cache
 * header (shared/meta/web-assets.ts) and ships web/dist beside its bundle (lib/). The SDK's
 * deployment default LiveKit URL is LIVEKIT_URL at build time, if set.
 */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const WEB_DIST = join(ROOT, 'web', 'dist');

export interface WebAsset {
  /** The hashed file name under the assets path. */
  file: string;
  /** Subresource Integrity of the file (`sha384-…`). */
  integrity: string;
  contentType: string;
  bytes: number;
}

/** Logical name (`parley-web-sdk.js`) → the built file. */
export interface WebManifest {
  files: Record<string, WebAsset>;
}

const CONTENT_TYPES: Record<string, string> = {
  js: 'text/javascript; charset=utf-8',
  mjs: 'text/javascript; charset=utf-8',
  css: 'text/css; charset=utf-8',
};

interface Entry {
  name: string;
  options: BuildOptions;
}

function entries(livekitUrl: string | undefined): Entry[] {
  const common: BuildOptions = {
    bundle: true,
    minify: true,
    write: false,
    platform: 'browser',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    logLevel: 'silent',
    legalComments: 'eof',
    define: { __PARLEY_DEFAULT_LIVEKIT_URL__: JSON.stringify(livekitUrl ?? '') },
  };
  const sdk = join(ROOT, 'web', 'sdk', 'src', 'index.ts');
  return [
    { name: 'parley-web-sdk.mjs', options: { ...common, entryPoints: [sdk], format: 'esm' } },
    { name: 'parley-web-sdk.js', options: { ...common, entryPoints: [sdk], format: 'iife', globalName: 'ParleyWebSDK' } },
    { name: 'orb.js', options: { ...common, entryPoints: [join(ROOT, 'web', 'orb', 'orb.ts')], format: 'iife' } },
    { name: 'orb.css', options: { ...common, entryPoints: [join(ROOT, 'web', 'orb', 'orb.css')], loader: { '.css': 'css' } } },
    { name: 'dashboard.js', options: { ...common, entryPoints: [join(ROOT, 'web', 'dashboard', 'dashboard.ts')], format: 'iife' } },
    { name: 'dashboard.css', options: { ...common, entryPoints: [join(ROOT, 'web', 'dashboard', 'dashboard.css')], loader: { '.css': 'css' } } },
  ];
}

/**
 * Builds every browser file into `outdir` (replaced whole: a fresh folder is written beside
 * it and renamed over it, so a reader never sees half a build) and answers the manifest.
 */
export async function buildWeb(outdir = WEB_DIST, livekitUrl = process.env.LIVEKIT_URL): Promise<WebManifest> {
  const staging = `${outdir}.building-${process.pid}-${Date.now()}`;
  mkdirSync(staging, { recursive: true });
  try {
    const files: Record<string, WebAsset> = {};
    const built = await Promise.all(
      entries(livekitUrl).map(async ({ name, options }) => {
        const result = await build(options);
        const output = result.outputFiles?.find((file) => !file.path.endsWith('.map'));
        if (!output) throw new Error(`build:web: esbuild wrote nothing for ${name}`);
        return { name, contents: output.contents };
      }),
    );
    for (const { name, contents } of built) {
      const dot = name.lastIndexOf('.');
      const extension = name.slice(dot + 1);
      const hash = createHash('sha256').update(contents).digest('hex').slice(0, 16);
      const file = `${name.slice(0, dot)}.${hash}.${extension}`;
      writeFileSync(join(staging, file), contents);
      files[name] = {
        file,
        integrity: `sha384-${createHash('sha384').update(contents).digest('base64')}`,
        contentType: CONTENT_TYPES[extension]!,
        bytes: contents.length,
      };
    }
    const manifest: WebManifest = { files };
    writeFileSync(join(staging, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    rmSync(outdir, { recursive: true, force: true });
    renameSync(staging, outdir);
    return manifest;
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw error;
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const manifest = await buildWeb();
  for (const [name, asset] of Object.entries(manifest.files)) {
    console.log(`build:web: ${name} → web/dist/${asset.file} (${Math.round(asset.bytes / 1024)} KB)`);
  }
}
