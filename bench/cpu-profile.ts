import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { SourceMap, type SourceMapPayload } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packageOf } from './bundles.ts';
import { median } from './stats.ts';

export interface ImportProfile {
  id: string;
  runs: number;
  /** V8 compiling the module source (compileSourceTextModule): grows with the bundle's bytes. */
  compileMs: number;
  /** Running the bundle's own code (top level and what it calls), excluding Node internals. */
  bundleCodeMs: number;
  garbageCollectionMs: number;
  /**
   * Self time of the bundle's functions by the package they come from (via the source
   * map). `(top level)` is module-scope code that esbuild hoists into the bundle's one
   * top-level function plus its module wrappers, which cannot be split by package.
   */
  bundleCodeByPackage: { name: string; ms: number }[];
}

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/**
 * Where a cold import spends its time, from V8 CPU profiles of `runs` fresh processes
 * (sampling every 100 µs). Minified bundles hoist most modules' top-level code into one
 * function, so this splits "parse/compile the file" from "run its code", not by package;
 * the per-package split comes from the ablation bundles instead.
 */
export async function profileImports(
  subjects: { id: string; file: string }[],
  runs: number,
  env: NodeJS.ProcessEnv,
): Promise<ImportProfile[]> {
  const results: ImportProfile[] = [];
  const perSubject = new Map<
    string,
    { compile: number[]; code: number[]; gc: number[]; byPackage: Map<string, number>; map?: SourceMap }
  >(subjects.map((subject) => [subject.id, { compile: [], code: [], gc: [], byPackage: new Map(), map: sourceMapOf(subject.file) }]));
  for (let round = 0; round < runs; round++) {
    for (const subject of subjects) {
      const dir = mkdtempSync(join(tmpdir(), 'parley-bench-prof-'));
      try {
        await new Promise<void>((resolve, reject) => {
          const child = spawn(
            process.execPath,
            [
              '--cpu-prof',
              `--cpu-prof-dir=${dir}`,
              '--cpu-prof-interval=100',
              '--input-type=module',
              '-e',
              'await import(process.argv[1]);',
              pathToFileURL(subject.file).href,
            ],
            { env, stdio: 'ignore' },
          );
          child.once('error', reject);
          child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
        });
        const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
        if (!file) continue;
        const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
        const entry = perSubject.get(subject.id)!;
        const split = splitProfile(profile, pathToFileURL(subject.file).href, entry.map, entry.byPackage);
        entry.compile.push(split.compile);
        entry.code.push(split.code);
        entry.gc.push(split.gc);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  for (const subject of subjects) {
    const entry = perSubject.get(subject.id)!;
    results.push({
      id: subject.id,
      runs: entry.compile.length,
      compileMs: median(entry.compile),
      bundleCodeMs: median(entry.code),
      garbageCollectionMs: median(entry.gc),
      bundleCodeByPackage: [...entry.byPackage]
        .map(([name, micros]) => ({ name, ms: micros / 1000 / Math.max(1, entry.compile.length) }))
        .sort((a, b) => b.ms - a.ms),
    });
  }
  return results;
}

function sourceMapOf(file: string): SourceMap | undefined {
  try {
    return new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as SourceMapPayload);
  } catch {
    return undefined;
  }
}

function splitProfile(profile: CpuProfile, bundleUrl: string, map: SourceMap | undefined, byPackage: Map<string, number>) {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  let compile = 0;
  let code = 0;
  let gc = 0;
  profile.samples.forEach((id, index) => {
    const frame = frames.get(id);
    const micros = profile.timeDeltas[index] ?? 0;
    if (!frame) return;
    if (frame.functionName === 'compileSourceTextModule') compile += micros;
    else if (frame.url === bundleUrl) {
      code += micros;
      // A frame's position is where its function starts; map that back to its source file.
      const entry = map?.findEntry(frame.lineNumber, frame.columnNumber);
      const source = entry && 'originalSource' in entry ? entry.originalSource : undefined;
      const name = source ? packageOf(source.replace(/^file:\/\//, '')) : '(top level)';
      byPackage.set(name, (byPackage.get(name) ?? 0) + micros);
    }
    else if (frame.functionName === '(garbage collector)') gc += micros;
  });
  return { compile: compile / 1000, code: code / 1000, gc: gc / 1000 };
}
