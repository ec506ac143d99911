import type { BuildOptions } from 'esbuild';
import { bundleOptionsFor, FUNCTION_BUNDLING, type FunctionBundling } from '../lib/bundling.ts';

/**
 * The bundling the stack deploys (lib/bundling.ts, which ParleyFunction's asset runs), for
 * the benchmark, the bundle tests and the measuring scripts. One definition: nothing here
 * mirrors or parses the stack's options.
 */
export interface CdkBundling extends FunctionBundling {
  source: string;
  /** Kept for the reports that print it: nothing is left unmirrored now. */
  unmirrored: string[];
}

export function readCdkBundling(): CdkBundling {
  return { ...FUNCTION_BUNDLING, source: 'lib/bundling.ts', unmirrored: [] };
}

/** esbuild options writing `entry` to `outfile` (index.mjs), its lazy chunks beside it under chunks/. */
export function esbuildOptions(cdk: CdkBundling, entry: string, outfile: string): BuildOptions {
  return bundleOptionsFor(entry, outfile, cdk);
}
