import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunctionSync, bundleOutputs, checkColdBudget, COLD_BUDGET_BYTES, outputBytes } from '../../lib/bundling.ts';

/**
 * The size target is a gate of the stack's bundling (lib/bundling.ts): every function whose
 * cold start loads more than 700 KiB fails `npm run synth` (which CI runs on every change,
 * bundling every function) and `cdk deploy`, naming the function. Shown here on two probes of
 * the same heavy clients, one importing them statically and one through import().
 */
const dir = mkdtempSync(join(tmpdir(), 'parley-test-bundle-budget-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the cold-size budget of the stack bundling', () => {
  it('is 700 KiB', () => {
    expect(COLD_BUDGET_BYTES).toBe(700 * 1024);
  });

  it('stops a bundle whose cold start loads more, naming it and its size', () => {
    expect(() => bundleFunctionSync('test/fixtures/over-budget.probe.ts', join(dir, 'over'))).toThrow(
      /^test\/fixtures\/over-budget\.probe\.ts: a cold start would load \d+\.\d KiB, over the 700 KiB budget\. A static import chain pulls a heavy module into the cold closure: reach it through import\(\)/,
    );
  });

  it('passes the same clients loaded through import(), whose chunks are not counted', () => {
    const file = join(dir, 'under', 'index.mjs');
    const metafile = bundleFunctionSync('test/fixtures/under-budget.probe.ts', join(dir, 'under'));
    const { cold, lazy } = bundleOutputs(metafile, file);
    expect(outputBytes(metafile, cold)).toBeLessThan(10 * 1024);
    expect(outputBytes(metafile, lazy)).toBeGreaterThan(COLD_BUDGET_BYTES);
    // The boundary is inclusive: exactly the budget passes, a byte less does not.
    const bytes = outputBytes(metafile, cold);
    expect(checkColdBudget('under', metafile, file, bytes)).toBe(bytes);
    expect(() => checkColdBudget('under', metafile, file, bytes - 1)).toThrow(/^under: a cold start would load/);
  });
});
