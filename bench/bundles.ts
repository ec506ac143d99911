import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { analyzeMetafile, build, type Metafile, type Plugin } from 'esbuild';
import { bundleOutputs, inputsOf, outputBytes, type WorkerEntries } from '../lib/bundling.ts';
import { esbuildOptions, type CdkBundling } from './cdk-bundling.ts';

/** One bundle written to bench/out, with what went into it. */
export interface BuiltBundle {
  /** functions/<name>.ts → <name>; the baseline is `baseline`; variants are `<variant>:<name>`. */
  id: string;
  entry: string;
  file: string;
  /** What a cold start loads: the entry and the chunks it imports statically (lib/bundling.ts). */
  bytes: number;
  /** The chunks loaded only through import(), on first use. */
  lazyBytes: number;
  /** Source maps of every output. */
  mapBytes: number;
  /** Bytes in the output per package (node_modules) or per project file group. */
  byPackage: { name: string; bytes: number }[];
  groups: Record<'zod' | 'awsSdk' | 'app' | 'other', number>;
  error?: string;
}

export const BASELINE_ENTRY = 'bench/baseline-client.ts';

export function functionEntries(dir = 'functions'): string[] {
  return readdirSync(dir)
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts') && !name.endsWith('.test.ts'))
    .sort()
    .map((name) => join(dir, name));
}

export async function buildBundle(
  cdk: CdkBundling,
  id: string,
  entry: string,
  outDir: string,
  plugins: Plugin[] = [],
  /** The function's worker scripts (its manifest entry, lib/functions.ts), built beside it as the stack does. */
  workers: WorkerEntries = {},
): Promise<BuiltBundle> {
  const dir = join(outDir, id.replace(/[:/]/g, '__'));
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const file = join(dir, cdk.format === 'esm' ? 'index.mjs' : 'index.js');
  try {
    const result = await build({ ...esbuildOptions(cdk, entry, file), plugins });
    // Each worker script is a build of its own beside the entry, as lib/bundling.ts bundles it.
    for (const [name, source] of Object.entries(workers)) await build({ ...esbuildOptions(cdk, source, join(dir, `${name}.mjs`)), plugins });
    const metafile = result.metafile!;
    writeFileSync(join(dir, 'meta.json'), JSON.stringify(metafile));
    writeFileSync(join(dir, 'analysis.txt'), await analyzeMetafile(metafile, { verbose: false }));
    const outputs = bundleOutputs(metafile, file);
    const byPackage = bytesByPackage(metafile, outputs.cold);
    return {
      id,
      entry,
      file,
      bytes: outputBytes(metafile, outputs.cold),
      lazyBytes: outputBytes(metafile, outputs.lazy),
      mapBytes: cdk.sourcemap ? [...outputs.cold, ...outputs.lazy].reduce((sum, path) => sum + statSync(`${path}.map`).size, 0) : 0,
      byPackage,
      groups: groupBytes(byPackage),
    };
  } catch (error) {
    return {
      id,
      entry,
      file,
      bytes: Number.NaN,
      lazyBytes: Number.NaN,
      mapBytes: Number.NaN,
      byPackage: [],
      groups: { zod: 0, awsSdk: 0, app: 0, other: 0 },
      error: error instanceof Error ? error.message.split('\n')[0] : String(error),
    };
  }
}

/** Name of the package an input belongs to, or the project-relative file. */
export function packageOf(input: string): string {
  const parts = input.split('node_modules/');
  if (parts.length === 1) return input.replace(/^(\.\.\/)+/, '');
  const segments = parts[parts.length - 1]!.split('/');
  return segments[0]!.startsWith('@') ? `${segments[0]}/${segments[1]}` : segments[0]!;
}

/** Bytes per package (or project file) in the given outputs: the cold start's, for the tables. */
function bytesByPackage(metafile: Metafile, outputs: readonly string[]): { name: string; bytes: number }[] {
  const totals = new Map<string, number>();
  for (const [input, bytesInOutput] of inputsOf(metafile, outputs)) {
    const name = packageOf(input);
    totals.set(name, (totals.get(name) ?? 0) + bytesInOutput);
  }
  return [...totals].map(([name, bytes]) => ({ name, bytes })).sort((a, b) => b.bytes - a.bytes);
}

function groupBytes(byPackage: { name: string; bytes: number }[]): BuiltBundle['groups'] {
  const groups = { zod: 0, awsSdk: 0, app: 0, other: 0 };
  for (const { name, bytes } of byPackage) {
    if (name === 'zod') groups.zod += bytes;
    else if (/^@(aws-sdk|smithy|aws-crypto|aws)\//.test(name)) groups.awsSdk += bytes;
    else if (!name.includes('/node_modules') && /^(shared|functions|bench|openapi\.json|local)\b/.test(name)) groups.app += bytes;
    else groups.other += bytes;
  }
  return groups;
}

/**
 * Ablation: replaces a package with a stub whose every export is an inert Proxy (any
 * property, call or `new` returns the proxy), so the bundle still loads and runs its
 * top level. The import time saved is that package's marginal cost, including the work
 * the app does with it at load (e.g. building zod schemas).
 */
export function stubPackages(packages: string[], namedImports: Map<string, Set<string>>): Plugin {
  const escaped = packages.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&'));
  const filter = new RegExp(`^(${escaped.join('|')})(/.*)?$`);
  return {
    name: 'bench-stub-packages',
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter }, (args) => ({ path: args.path, namespace: 'bench-stub' }));
      pluginBuild.onLoad({ filter: /.*/, namespace: 'bench-stub' }, (args) => {
        const names = [...(namedImports.get(args.path) ?? [])].filter((name) => name !== 'default');
        return {
          loader: 'js',
          contents: [
            'const handler = {',
            "  get: (_target, key) => key === 'then' ? undefined : key === Symbol.toPrimitive ? () => '' :",
            '    key === Symbol.iterator ? function* () {} : stub,',
            '  apply: () => stub,',
            '  construct: () => stub,',
            '};',
            'const stub = new Proxy(function () {}, handler);',
            'export default stub;',
            // Export specifiers take any identifier name, reserved words included (z.enum, z.null).
            ...names.map((name) => `export { stub as ${name} };`),
          ].join('\n'),
        };
      });
    },
  };
}

/** Value imports (not `import type`) per module specifier across the project's sources. */
export function scanNamedImports(dirs = ['functions', 'shared']): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
      entry.isDirectory() ? walk(join(dir, entry.name)) : entry.name.endsWith('.ts') ? [join(dir, entry.name)] : [],
    );
  for (const file of dirs.flatMap(walk)) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/import\s+(?!type\b)([^'";]*?)\s+from\s+'([^'.][^']*)'/g)) {
      const [, clause, specifier] = match as unknown as [string, string, string];
      const names = found.get(specifier) ?? new Set<string>();
      const braces = /\{([^}]*)\}/.exec(clause)?.[1];
      for (const part of braces?.split(',') ?? []) {
        const name = part.trim().replace(/^type\s+/, '');
        if (!name || part.trim().startsWith('type ')) continue;
        names.add(name.split(/\s+as\s+/)[0]!.trim());
      }
      if (/^\s*\w+\s*(,|$)/.test(clause)) names.add('default');
      // `import * as z from 'zod'`: the members the file reads off the namespace.
      const namespace = /\*\s+as\s+(\w+)/.exec(clause)?.[1];
      if (namespace) {
        for (const use of text.matchAll(new RegExp(`\\b${namespace}\\.(\\w+)`, 'g'))) names.add(use[1]!);
      }
      found.set(specifier, names);
    }
  }
  return found;
}

/** Direct dependencies (package.json) that ended up in a bundle, biggest first. */
export function directDependenciesIn(bundle: BuiltBundle, packageJson = 'package.json'): string[] {
  const dependencies = Object.keys(
    (JSON.parse(readFileSync(packageJson, 'utf8')) as { dependencies?: Record<string, string> }).dependencies ?? {},
  );
  const present = new Set(bundle.byPackage.map((entry) => entry.name));
  return dependencies
    .filter((name) => present.has(name))
    .sort(
      (a, b) =>
        (bundle.byPackage.find((entry) => entry.name === b)?.bytes ?? 0) -
        (bundle.byPackage.find((entry) => entry.name === a)?.bytes ?? 0),
    );
}

export const bundleName = (entry: string) => basename(entry).replace(/\.ts$/, '');
export const displayPath = (file: string) => relative(process.cwd(), file) || dirname(file);
