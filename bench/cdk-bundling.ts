import { existsSync, readFileSync } from 'node:fs';
import type { BuildOptions } from 'esbuild';
import { LAMBDA_BUNDLE_ALIASES } from '../lib/bundle-aliases.ts';

/**
 * The esbuild options CDK's NodejsFunction passes for our functions, mirrored for the
 * benchmark. CDK runs `esbuild --bundle <entry> --target=… --platform=node --format=…
 * --outfile=index.mjs [--minify] [--sourcemap] [--sources-content=false]
 * [--external:…] [--banner:js=…] [--main-fields=…]` (aws-cdk-lib/aws-lambda-nodejs
 * bundling.js, buildEsbuildArgs). The values are read from the `bundling` block of
 * lib/parley-function.ts when it is there, so the benchmark follows changes to it;
 * options the benchmark does not know how to mirror are reported, not silently ignored.
 */
export interface CdkBundling {
  source: string;
  target: string;
  format: 'esm' | 'cjs';
  minify: boolean;
  sourcemap: boolean;
  sourcesContent: boolean;
  mainFields?: string[];
  banner?: string;
  external: string[];
  /** Options found in the bundling block that this mirror does not apply. */
  unmirrored: string[];
}

const DEFAULTS: Omit<CdkBundling, 'source' | 'unmirrored'> = {
  target: 'node22',
  format: 'esm',
  minify: true,
  sourcemap: true,
  sourcesContent: false,
  mainFields: ['module', 'main'],
  banner:
    "import { createRequire as __parleyCreateRequire } from 'node:module'; const require = __parleyCreateRequire(import.meta.url);",
  external: [],
};

const KNOWN = new Set([
  'forceDockerBundling',
  'minify',
  'sourceMap',
  'sourcesContent',
  'target',
  'format',
  'mainFields',
  'banner',
  'externalModules',
  // Mirrored from lib/bundle-aliases.ts itself (esbuildOptions below).
  'esbuildArgs',
  // Hooks that only copy data files beside the bundle (openapi.json for meta) leave the
  // bundle itself unchanged.
  'commandHooks',
  'beforeBundling',
  'beforeInstall',
  'afterBundling',
]);

export function readCdkBundling(file = 'lib/parley-function.ts'): CdkBundling {
  if (!existsSync(file)) return { ...DEFAULTS, source: 'defaults (lib/parley-function.ts not found)', unmirrored: [] };
  const text = readFileSync(file, 'utf8');
  const block = extractBlock(text, 'bundling:');
  if (!block) return { ...DEFAULTS, source: `defaults (no bundling block in ${file})`, unmirrored: [] };

  const bool = (name: string, fallback: boolean) => {
    const match = new RegExp(`\\b${name}:\\s*(true|false)\\b`).exec(block);
    return match ? match[1] === 'true' : fallback;
  };
  const string = (name: string) => new RegExp(`\\b${name}:\\s*(['"\`])((?:\\\\.|(?!\\1).)*)\\1`, 's').exec(block)?.[2];
  const list = (name: string) => {
    const match = new RegExp(`\\b${name}:\\s*\\[([^\\]]*)\\]`).exec(block);
    return match ? [...match[1]!.matchAll(/['"]([^'"]+)['"]/g)].map((m) => m[1]!) : undefined;
  };
  const format = /\bformat:\s*OutputFormat\.(ESM|CJS)\b/.exec(block)?.[1];
  const options = [...block.matchAll(/^\s*(\w+):/gm)].map((m) => m[1]!);

  return {
    source: file,
    // The target is derived from the runtime (esbuildTarget(PARLEY_RUNTIME): nodejs24.x → node24).
    target: string('target') ?? runtimeTarget(text, block) ?? DEFAULTS.target,
    format: format ? (format.toLowerCase() as 'esm' | 'cjs') : DEFAULTS.format,
    minify: bool('minify', false),
    sourcemap: bool('sourceMap', false),
    sourcesContent: bool('sourcesContent', true),
    mainFields: list('mainFields'),
    banner: string('banner'),
    // CDK's default (no externalModules) leaves @aws-sdk/* out; ours bundles everything.
    external: list('externalModules') ?? ['@aws-sdk/*'],
    unmirrored: options.filter((name) => !KNOWN.has(name)),
  };
}

/** `node<N>` when the block's target is `esbuildTarget(PARLEY_RUNTIME)` and the file sets PARLEY_RUNTIME to NODEJS_<N>_X. */
function runtimeTarget(text: string, block: string): string | undefined {
  if (!/\btarget:\s*esbuildTarget\(PARLEY_RUNTIME\)/.test(block)) return undefined;
  const version = /\bPARLEY_RUNTIME = lambda\.Runtime\.NODEJS_(\d+)_X\b/.exec(text)?.[1];
  return version ? `node${version}` : undefined;
}

/** The text between the braces that follow `marker`, balancing nested braces. */
function extractBlock(text: string, marker: string): string | undefined {
  const start = text.indexOf(marker);
  if (start < 0) return undefined;
  const open = text.indexOf('{', start);
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    if (text[i] === '{') depth++;
    if (text[i] === '}' && --depth === 0) return text.slice(open + 1, i);
  }
  return undefined;
}

export function esbuildOptions(cdk: CdkBundling, entry: string, outfile: string): BuildOptions {
  return {
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    target: cdk.target,
    format: cdk.format,
    outfile,
    minify: cdk.minify,
    sourcemap: cdk.sourcemap,
    sourcesContent: cdk.sourcesContent,
    external: cdk.external,
    ...(cdk.banner ? { banner: { js: cdk.banner } } : {}),
    ...(cdk.mainFields ? { mainFields: cdk.mainFields } : {}),
    alias: { ...LAMBDA_BUNDLE_ALIASES },
    metafile: true,
    logLevel: 'silent',
  };
}
