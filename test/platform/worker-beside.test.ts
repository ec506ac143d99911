import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunctionSync } from '../../lib/bundling.ts';
import { functionNamed } from '../../lib/functions.ts';
import { docxOf, pdfOf } from '../support/kb-fixtures.ts';

/**
 * The extraction worker of a deployed function (shared/knowledge-bases/extract.ts starts it):
 * a probe using extractText is bundled with kb-jobs' worker scripts, as the stack bundles the
 * function (lib/bundling.ts), and run from a folder outside the project, as in Lambda, so
 * neither the worker nor a parser can come from the sources or node_modules.
 */
const dir = mkdtempSync(join(tmpdir(), 'parley-test-worker-beside-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = async (bundle: string) => {
  const { stdout } = await promisify(execFile)(process.execPath, [join(bundle, 'index.mjs'), join(dir, 'a.pdf'), join(dir, 'a.docx')], {
    cwd: bundle,
    env: { PATH: process.env.PATH },
  });
  return JSON.parse(stdout) as { pdf: string; docx: string };
};

describe('the extraction worker beside a bundle', () => {
  it('is declared for kb-jobs and knowledge-bases, built beside index.mjs, and reads documents from there', async () => {
    expect(functionNamed('kb-jobs').workers).toEqual({ 'extract-worker': 'shared/knowledge-bases/extract-worker.ts' });
    expect(functionNamed('knowledge-bases').workers).toEqual(functionNamed('kb-jobs').workers);
    writeFileSync(join(dir, 'a.pdf'), pdfOf(['A page from a bundle.']));
    writeFileSync(join(dir, 'a.docx'), await docxOf(['A paragraph from a bundle.']));

    const without = join(dir, 'without');
    bundleFunctionSync('test/fixtures/extract-beside.probe.ts', without);
    await expect(run(without)).rejects.toThrow(/extract-worker\.mjs/);

    const deployed = join(dir, 'deployed');
    bundleFunctionSync('test/fixtures/extract-beside.probe.ts', deployed, functionNamed('kb-jobs').workers);
    expect(readdirSync(deployed).filter((name) => name.endsWith('.mjs')).sort()).toEqual(['extract-worker.mjs', 'index.mjs']);
    expect(await run(deployed)).toEqual({ pdf: 'A page from a bundle.', docx: 'A paragraph from a bundle.' });
  }, 120_000);
});
