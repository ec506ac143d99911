import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleOptions } from '../../lib/bundling.ts';
import { PHONE_METADATA_FILE } from '../../lib/functions.ts';
import { PHONE_METADATA_FILE_NAME } from '../../shared/platform/telephony/phone.ts';

/**
 * Files shipped beside a deployed bundle's index.mjs (shared/platform/bundle/bundle-files.ts) are
 * found from a module esbuild put in a chunk under chunks/, as the phone module is in most
 * functions. The bundle runs from a folder outside the project, as in Lambda, so nothing
 * can come from node_modules instead.
 */
const dir = mkdtempSync(join(tmpdir(), 'parley-test-beside-'));
let metafile: Metafile;

beforeAll(async () => {
  metafile = (await build(bundleOptions('test/fixtures/phone-beside.probe.ts', dir))).metafile!;
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = async () => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(dir, 'index.mjs')], { cwd: dir, env: { PATH: process.env.PATH } });
  return JSON.parse(stdout) as { canonical: string | null; pretty: string };
};

describe('a file beside the bundle', () => {
  it('is read by a module in a chunk from beside index.mjs', async () => {
    const phoneOutputs = Object.entries(metafile.outputs).filter(([, output]) => output.inputs['shared/platform/telephony/phone.ts']).map(([path]) => path);
    expect(phoneOutputs).toHaveLength(1);
    expect(phoneOutputs[0]).toMatch(/\/chunks\/chunk-[A-Z0-9]+\.mjs$/);

    // Without the file the module falls back to node_modules, which a deployed function has not.
    await expect(run()).rejects.toThrow(/Cannot find module 'libphonenumber-js\/metadata\.max\.json'/);

    copyFileSync(PHONE_METADATA_FILE, join(dir, PHONE_METADATA_FILE_NAME));
    expect(await run()).toEqual({ canonical: '+14155550123', pretty: '+1 (415) 555-0123' });
  });
});
