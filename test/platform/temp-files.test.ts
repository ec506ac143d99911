import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

/**
 * A whole vitest run (global setup, a test file's setup, a file that writes a data folder,
 * a temporary folder and a CDK synth) in a temp folder of its own leaves nothing there, and
 * prints no AWS SDK Node-version warning although nothing in its environment silences it.
 */
it('a test run removes every temporary file it made and prints no SDK warning', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'parley-probe-run-'));
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: tmp };
  for (const name of Object.keys(env)) if (name.startsWith('VITEST') || name === 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED') delete env[name];
  const vitest = new URL('../../node_modules/vitest/vitest.mjs', import.meta.url).pathname;
  const run = await promisify(execFile)(
    process.execPath,
    [vitest, 'run', '--config', 'test/fixtures/vitest.probe.config.ts'],
    { env, cwd: new URL('../..', import.meta.url).pathname },
  );
  expect(run.stdout).toMatch(/1 passed/);
  expect(`${run.stdout}\n${run.stderr}`).not.toContain('NodeVersionSupportWarning');
  expect(readdirSync(tmp)).toEqual([]);
}, 120_000);
