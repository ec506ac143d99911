import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { median, percentile, roundOrder } from './stats.ts';

/** One module to cold-import in fresh `node` processes. */
export interface ImportSubject {
  id: string;
  file: string;
  /** Export that must exist after the import (proves the module loaded, not just parsed). */
  expectExport: string;
  /** Extra node flags, e.g. --enable-source-maps as the functions' NODE_OPTIONS set in AWS. */
  nodeFlags?: string[];
}

export interface ImportTiming {
  id: string;
  runs: number;
  /** Median time of the `await import()` alone, measured inside the child. */
  importMs: number;
  /**
   * Median CPU time (user + system, every thread of the child) spent in the import: barely
   * moved by other work on the machine, where the wall time is (docs/performance.md).
   */
  importCpuMs: number;
  /** Median time from process start (performance.timeOrigin) to the end of the import. */
  processToReadyMs: number;
  /** Median wall time of the whole child process as seen by the parent (spawn → exit). */
  wallMs: number;
  /** 25th and 75th percentile of the import time: how much the runs spread. */
  importIqrMs: [number, number];
  samples: number[];
  error?: string;
}

/**
 * Imports the module given as argv[1], then reports timings as JSON on stdout. Everything
 * this needs is Node built-in, so the child loads nothing but the bundle.
 */
const PROBE = `
const cpuBefore = process.cpuUsage();
const started = performance.now();
const module = await import(process.argv[1]);
const done = performance.now();
const cpu = process.cpuUsage(cpuBefore);
if (module[process.argv[2]] === undefined) throw new Error('export ' + process.argv[2] + ' missing');
process.stdout.write(JSON.stringify({ importMs: done - started, importCpuMs: (cpu.user + cpu.system) / 1000, processToReadyMs: done }));
process.exit(0);
`;

/**
 * The settings a handler module reads at load, and nothing from this shell: a Lambda
 * starts with a known environment too. AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED
 * stops the SDK's "Node < 22" warning, which Lambda's Node 24 would never print.
 */
export function childEnvironment(dataDir: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    TABLE_NAME: 'parley-bench',
    AWS_REGION: 'us-east-1',
    DATA_DIR: dataDir,
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
}

interface ProbeResult {
  importMs: number;
  importCpuMs: number;
  processToReadyMs: number;
  wallMs: number;
}

function probe(subject: ImportSubject, env: NodeJS.ProcessEnv): Promise<ProbeResult> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(
      process.execPath,
      [
        ...(subject.nodeFlags ?? []),
        '--input-type=module',
        '-e',
        PROBE,
        pathToFileURL(subject.file).href,
        subject.expectExport,
      ],
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const wallMs = performance.now() - started;
      if (code !== 0) {
        reject(new Error(`exit ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ').slice(0, 300)}`));
        return;
      }
      try {
        resolve({ ...(JSON.parse(stdout) as Omit<ProbeResult, 'wallMs'>), wallMs });
      } catch {
        reject(new Error(`unreadable probe output: ${stdout.slice(0, 200)}`));
      }
    });
  });
}

/**
 * Cold-imports every subject `runs` times, one process at a time, interleaved: each round
 * runs every subject once, in a changing order (stats.ts roundOrder), so machine noise
 * is spread over all subjects instead of landing on whichever ran during it.
 */
export async function measureImports(
  subjects: ImportSubject[],
  runs: number,
  env: NodeJS.ProcessEnv,
  onRound?: (round: number) => void,
): Promise<ImportTiming[]> {
  const results = new Map<string, ProbeResult[]>(subjects.map((subject) => [subject.id, []]));
  const errors = new Map<string, string>();
  for (let round = 0; round < runs; round++) {
    for (const subject of roundOrder(subjects, round)) {
      if (errors.has(subject.id)) continue;
      try {
        results.get(subject.id)!.push(await probe(subject, env));
      } catch (error) {
        errors.set(subject.id, error instanceof Error ? error.message : String(error));
      }
    }
    onRound?.(round);
  }
  return subjects.map((subject) => {
    const probes = results.get(subject.id)!;
    const sorted = probes.map((p) => p.importMs).sort((a, b) => a - b);
    return {
      id: subject.id,
      runs: probes.length,
      importMs: median(probes.map((p) => p.importMs)),
      importCpuMs: median(probes.map((p) => p.importCpuMs)),
      processToReadyMs: median(probes.map((p) => p.processToReadyMs)),
      wallMs: median(probes.map((p) => p.wallMs)),
      importIqrMs: [percentile(sorted, 25), percentile(sorted, 75)],
      samples: probes.map((p) => p.importMs),
      ...(errors.has(subject.id) ? { error: errors.get(subject.id) } : {}),
    };
  });
}
