import { build } from 'esbuild';
import { LAMBDA_BUNDLE_ALIASES } from '../../lib/bundle-aliases.ts';

/** The project files and packages esbuild puts in a function's bundle (packages left external). */
export async function bundledInputs(entry: string): Promise<string[]> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    platform: 'node',
    format: 'esm',
    logLevel: 'silent',
    packages: 'external',
    alias: { ...LAMBDA_BUNDLE_ALIASES },
  });
  return Object.keys(result.metafile.inputs);
}
