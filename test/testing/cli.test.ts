import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { runCli } from '../support/cli.ts';
import { newLlm } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';

/* `npm run cli -- test` against the local server, as a CI job would run it: its exit code is the verdict. */

const app = await startTestApp();
const background = startBackgroundWork([jobNamed('call-steps')]);
afterAll(() => background.stop());
const retell = retellClient(app.url, app.workspace.api_key);
const cli = (args: string[], env: Record<string, string> = {}) => runCli(['test', ...args], env);


describe('npm run cli -- test', () => {
  it('exits 0 when every run passes and 1 when one fails, printing each verdict and explanation', async () => {
    const llm = await newLlm(app.api, { general_prompt: 'You help.', begin_message: 'Hello, Luigi\'s here.' });
    const engine = { type: 'retell-llm' as const, llm_id: llm.llm_id };
    const passing = await retell.tests.createTestCaseDefinition({ name: 'Greets', user_prompt: 'Say "Hi"', metrics: ['The agent says "Luigi"'], response_engine: engine });
    await retell.tests.createTestCaseDefinition({ name: 'Promises cake', user_prompt: 'Say "Hi"', metrics: ['The agent says "free cake"'], response_engine: engine });

    const passed = await cli(['--base-url', app.url, '--llm', llm.llm_id, '--case', passing.test_case_definition_id], { PARLEY_API_KEY: app.workspace.api_key });
    expect(passed.stderr).toBe('');
    expect(passed.code).toBe(0);
    expect(passed.stdout).toMatch(/^Batch test batch_test_[0-9a-f]{24}: 1 case against version 0\nPASS Greets \(test_run_[0-9a-f]{24}\)\n {2}Criterion 1 met: "The agent says "Luigi"": The agent said "Luigi"\n1 passed, 0 failed, 0 errors\n$/);

    // Without --case: every definition of the engine.
    const failed = await cli(['--base-url', app.url, '--api-key', app.workspace.api_key, '--llm', llm.llm_id]);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toContain('FAIL Promises cake');
    expect(failed.stdout).toContain('  Criterion 1 not met: "The agent says "free cake"": The agent never said "free cake"');
    expect(failed.stdout).toContain('PASS Greets');
    expect(failed.stdout).toMatch(/1 passed, 1 failed, 0 errors\n$/);
  });

  it('exits 1 naming the API\'s refusal, and 2 on a usage error', async () => {
    const llm = await newLlm(app.api, { general_prompt: 'You help.' });
    const none = await cli(['--base-url', app.url, '--api-key', app.workspace.api_key, '--llm', llm.llm_id]);
    expect(none).toMatchObject({ code: 1, stderr: 'No test case definitions for this engine: nothing to run\n' });
    const badKey = await cli(['--base-url', app.url, '--api-key', 'key_wrong', '--llm', llm.llm_id]);
    expect(badKey.code).toBe(1);
    expect(badKey.stderr).toBe('listTestCaseDefinitions: 401 Missing or invalid API key / session\n');
    const usage = await cli(['--base-url', app.url, '--api-key', 'k']);
    expect(usage.code).toBe(2);
    expect(usage.stderr.split('\n')[0]).toBe('one of --llm and --flow is required');
  });
});
