import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/*
 * An item type's key is declared once, in shared/platform/store/keys.ts; docs/data-model.md
 * explains each access pattern in words and names the keys it uses. These checks keep the
 * two from drifting: every key word the code builds is in the doc, and every key word the
 * doc names is one the code builds.
 */

const keysSource = readFileSync('shared/platform/store/keys.ts', 'utf8');
/** The key builders and their parts (the table definition and object-store keys are not item keys). */
const keyBuilders = keysSource
  .slice(keysSource.indexOf('export interface ItemKey'), keysSource.indexOf('export const rateWindowAttribute'))
  .replace(/\/\*[\s\S]*?\*\//g, '')
  .replace(/\/\/.*$/gm, '');

/** The constant words of the key strings keys.ts builds: `WS`, `AGENT`, `V`, `WORKSPACE`, `CPS`… */
function codeKeyWords(): Set<string> {
  const words = new Set<string>();
  for (const literal of keyBuilders.matchAll(/`([^`]*)`|'([^'\n]*)'/g)) {
    const text = (literal[1] ?? literal[2]!).replace(/\$\{[^}]*\}/g, '~');
    for (const word of text.matchAll(/(?:^|[#~])([A-Z][A-Z0-9_]*)(?=#|$|~)/g)) words.add(word[1]!);
  }
  return words;
}

const doc = readFileSync('docs/data-model.md', 'utf8');
const codeSpans = [...doc.matchAll(/`([^`]+)`/g)].map((span) => span[1]!);

/** The key words the doc names: next to a `#` in a code span, or a whole `pk=`/`sk=` value. */
function docKeyWords(): Set<string> {
  const words = new Set<string>();
  for (const span of codeSpans) {
    for (const word of span.matchAll(/(?<![A-Za-z0-9_])([A-Z][A-Z0-9_]*)(?=#)|(?<=#)([A-Z][A-Z0-9_]*)(?![A-Za-z0-9_])/g)) words.add((word[1] ?? word[2])!);
    for (const word of span.matchAll(/\b(?:pk|sk)\s*=\s*([A-Z][A-Z0-9_]*)\b/g)) words.add(word[1]!);
  }
  return words;
}

describe('docs/data-model.md and the key builders', () => {
  it('documents every key word the code builds', () => {
    const documented = new Set(codeSpans.flatMap((span) => span.match(/[A-Z][A-Z0-9_]*/g) ?? []));
    expect([...codeKeyWords()].filter((word) => !documented.has(word)).sort()).toEqual([]);
  });

  it('names no key the code does not build', () => {
    const built = codeKeyWords();
    expect([...docKeyWords()].filter((word) => !built.has(word)).sort()).toEqual([]);
  });

  it('has no key builder that nothing uses (an item type nobody reads or writes)', () => {
    const names = [...keyBuilders.matchAll(/^ {2}([a-zA-Z0-9]+): \(/gm)].map((match) => match[1]!);
    expect(names.length).toBeGreaterThan(150);
    const uses = execFileSync('grep', ['-rhoE', '\\bkeys\\.[a-zA-Z0-9]+', 'shared', 'functions', 'local', 'scripts', 'lib', 'test', '--include=*.ts'], { maxBuffer: 64 * 1024 * 1024 })
      .toString()
      .split('\n')
      .map((use) => use.slice('keys.'.length));
    const used = new Set(uses);
    expect(names.filter((name) => !used.has(name))).toEqual([]);
  });
});
