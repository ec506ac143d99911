import { build } from 'esbuild';
import { statSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path'; import { tmpdir } from 'node:os';
import { esbuildOptions, readCdkBundling } from './bench/cdk-bundling.ts';
const cdk = readCdkBundling(); const dir = mkdtempSync(join(tmpdir(), 'appuse-size-'));
for (const name of process.argv.slice(2)) {
  const file = join(dir, name, 'index.mjs');
  await build({ ...esbuildOptions(cdk, `functions/${name}.ts`, file), logLevel: 'silent' });
  console.log(name, (statSync(file).size/1024).toFixed(1), 'KiB');
}
