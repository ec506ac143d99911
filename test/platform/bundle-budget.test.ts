import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { bundleOptions, bundleOutputs, outputBytes } from '../../lib/bundling.ts';

/**
 * The size target as a gate: every function's cold start loads at most 700 KiB (its
 * index.mjs and the chunks it imports statically; lib/bundling.ts, docs/performance.md
 * "Sizes: cold and lazy"). Built exactly as the stack builds them, in memory. A change that
 * pulls a heavy module back into a cold closure (one static import chain is enough) fails
 * here, naming the function and its size, rather than in a benchmark nobody runs.
 */
const BUDGET_BYTES = 700 * 1024;
// Never written (write: false): the paths only name the outputs in the metafile.
const OUTDIR = join('bench', 'out', 'budget');

const functions = readdirSync('functions')
  .filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts'))
  .map((name) => name.replace(/\.ts$/, ''))
  .sort();
const sizes = new Map<string, { cold: number; lazy: number }>();

beforeAll(async () => {
  // Two at a time: the machine CI runs on has two cores.
  const queue = [...functions];
  const worker = async () => {
    for (let name = queue.shift(); name; name = queue.shift()) {
      const outdir = join(OUTDIR, name);
      const result = await build({ ...bundleOptions(`functions/${name}.ts`, outdir), write: false });
      const metafile: Metafile = result.metafile!;
      const { cold, lazy } = bundleOutputs(metafile, join(outdir, 'index.mjs'));
      sizes.set(name, { cold: outputBytes(metafile, cold), lazy: outputBytes(metafile, lazy) });
    }
  };
  await Promise.all([worker(), worker()]);
}, 300_000);

describe('function bundles', () => {
  it('are built for every function', () => {
    expect([...sizes.keys()].sort()).toEqual(functions);
    expect(functions.length).toBeGreaterThanOrEqual(28);
  });

  it('load at most 700 KiB at a cold start', () => {
    const over = [...sizes].filter(([, { cold }]) => cold > BUDGET_BYTES).map(([name, { cold }]) => `${name}: ${(cold / 1024).toFixed(1)} KiB`);
    expect(over).toEqual([]);
  });

  it('keep SAML, Stripe and LiveKit where only their routes load them', () => {
    // The lazy chunks are real: these functions ship far more than they load at a cold start.
    // (PDF.js is in the extraction worker's own build: test/platform/cold-closure.test.ts.)
    for (const name of ['members', 'billing', 'calls']) {
      const size = sizes.get(name)!;
      expect(size.lazy, name).toBeGreaterThan(250 * 1024);
    }
  });
});
