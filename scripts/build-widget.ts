import { readFileSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

/**
 * Builds the chat widget (web/widget/widget.ts) into web/widget/dist/widget.js, the file
 * GET /widget.js serves (checked in: docs/browser.md says why). `npm run build:widget`
 * writes it; `--check` fails when the checked-in file differs from a fresh build
 * (test/public/widget-build.test.ts runs the same comparison).
 */
export const WIDGET_SOURCE = new URL('../web/widget/widget.ts', import.meta.url);
export const WIDGET_OUTPUT = new URL('../web/widget/dist/widget.js', import.meta.url);

export async function buildWidget(): Promise<string> {
  const result = await build({
    entryPoints: [WIDGET_SOURCE.pathname],
    bundle: true,
    format: 'iife',
    target: 'es2020',
    minify: true,
    legalComments: 'none',
    write: false,
    charset: 'utf8',
    banner: { js: '/* Parley chat widget: built from web/widget/widget.ts by scripts/build-widget.ts */' },
  });
  return result.outputFiles[0]!.text;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const built = await buildWidget();
  if (process.argv.includes('--check')) {
    if (readFileSync(WIDGET_OUTPUT, 'utf8') !== built) {
      console.error('web/widget/dist/widget.js is out of date: run npm run build:widget');
      process.exit(1);
    }
  } else {
    writeFileSync(WIDGET_OUTPUT, built);
    console.log(`wrote ${WIDGET_OUTPUT.pathname} (${built.length} bytes)`);
  }
}
