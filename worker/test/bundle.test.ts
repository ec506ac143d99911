import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { workerBundleOptions } from '../../scripts/bundle-worker.ts';

/*
 * The worker as its image runs it: the ES-module bundle `npm run build:worker` makes, loaded
 * by plain Node (not tsx, which the other worker tests run under and which forgives what an
 * ES module may not do, such as reading `__dirname`). Built beside worker/node_modules, where
 * the image installs the bundle's externals.
 */

const outdir = mkdtempSync(join(import.meta.dirname, '..', '.bundle-'));
afterAll(() => rmSync(outdir, { recursive: true, force: true }));

describe('the bundled worker', () => {
  it('loads the agent module a job process imports, with LiveKit Agents left to the installed package', async () => {
    await build(workerBundleOptions(outdir));
    const files = [join(outdir, 'agent.mjs'), join(outdir, 'main.mjs'), ...readdirSync(join(outdir, 'chunks')).filter((name) => name.endsWith('.mjs')).map((name) => join(outdir, 'chunks', name))];
    // No copy of the framework in the bundle: its modules (and fluent-ffmpeg, which it pulls
    // in) are the installed package's, so the worker and the framework share one instance.
    for (const file of files) expect(readFileSync(file, 'utf8'), file).not.toMatch(/FfmpegCommand|node_modules\/@livekit\/agents\/dist/);

    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--input-type=module', '-e', `const agent = await import(${JSON.stringify(join(outdir, 'agent.mjs'))}); console.log(JSON.stringify(Object.keys(agent).sort()));`],
      { timeout: 60_000 },
    );
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toContain('default');
  }, 120_000);
});
