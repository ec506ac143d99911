import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { render } from '../../shared/agent-tools/workflows.ts';
import { TEMPLATE_REFERENCE } from '../../shared/agent-tools/schemas.ts';

/*
 * Every regular expression literal in code that meets requests, run against inputs built
 * to make a backtracking pattern super-linear: a long run of each character the pattern
 * names (and of common separators), then a character that makes the match fail. A linear
 * pattern finishes each in well under a millisecond at this length; a quadratic one takes
 * seconds. The lint rules (regexp/no-super-linear-*) catch the class when code is written;
 * this proves it for the patterns as they are. `new RegExp` is not found here: the two uses
 * build patterns from digits and `*` (validated) and from fixed ID prefixes.
 */

const ROOTS = ['shared', 'functions', 'local'];
const RUN = 50_000;
/** Generous: the slowest linear run here is about a millisecond; a quadratic one is seconds. */
const BOUND_MS = 300;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface Found {
  where: string;
  regex: RegExp;
}

function regexLiterals(): Found[] {
  const found: Found[] = [];
  for (const file of ROOTS.flatMap(sourceFiles)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        const text = node.getText(source);
        const slash = text.lastIndexOf('/');
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        found.push({ where: `${relative('.', file)}:${line} ${text}`, regex: new RegExp(text.slice(1, slash), text.slice(slash + 1)) });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

const SEPARATORS = [' ', '\t', '\n', '/', '.', ',', ':', ';', '-', '_', '{', '}', '[', ']', '"', "'", '\\', '=', '&', '@', '*', '+', '#', '?', '%', '`'];
const WORDS = ['a', 'A', '0', 'é'];

/** Characters the pattern's source names (escapes unwrapped), plus separators and word characters. */
function attackCharacters(regex: RegExp): string[] {
  const named = [...regex.source.replace(/\\(.)/g, '$1')].filter((ch) => ch >= ' ' && ch <= '~');
  return [...new Set([...named, ...SEPARATORS, ...WORDS])];
}

function attacks(regex: RegExp): string[] {
  const out: string[] = [];
  for (const ch of attackCharacters(regex)) {
    out.push(ch.repeat(RUN) + '\u0001', '\u0001' + ch.repeat(RUN));
  }
  out.push('{{' + ' '.repeat(RUN), '{{' + ' '.repeat(RUN) + '}', '{{ '.repeat(RUN / 3), 'a.'.repeat(RUN / 2) + ' ', 'A '.repeat(RUN / 2) + '!');
  out.push('for ' + 'Acme '.repeat(RUN / 5) + '\u0001', 'bearer ' + ' '.repeat(RUN) + 'x', '```' + ' '.repeat(RUN) + '\n');
  return out;
}

/** Runs the pattern the way code uses it: a global pattern over the whole text, otherwise one search. */
function exercise(regex: RegExp, input: string): number {
  const fresh = new RegExp(regex.source, regex.flags);
  const started = performance.now();
  if (fresh.global) input.replace(fresh, '');
  else fresh.exec(input);
  return performance.now() - started;
}

describe('regular expressions applied to requests', () => {
  const literals = regexLiterals();

  it('are all found (the scan reads the code it should)', () => {
    expect(literals.length).toBeGreaterThan(50);
    expect(literals.some(({ where }) => where.startsWith('shared/agent-tools/schemas.ts'))).toBe(true);
  });

  it('finish in milliseconds on their worst inputs', () => {
    const slow: string[] = [];
    for (const { where, regex } of literals) {
      for (const input of attacks(regex)) {
        // A pattern that backtracks catastrophically is slow on every run; a run slowed by a
        // loaded machine (the whole suite on 2 CPUs, a GC pause) is not: the best of three decides.
        let ms = exercise(regex, input);
        for (let again = 0; again < 2 && ms > BOUND_MS; again += 1) ms = Math.min(ms, exercise(regex, input));
        if (ms > BOUND_MS) slow.push(`${where} took ${Math.round(ms)} ms on ${JSON.stringify(input.slice(0, 12))}… (${input.length} chars)`);
      }
    }
    expect(slow).toEqual([]);
  });

  it('find {{ variables }} with spaces inside the braces, and render them', () => {
    const text = 'Hi {{ first_name }}, {{last_name}}! {{  }} {{ a b }} {not} {{{x}}}';
    expect([...text.matchAll(TEMPLATE_REFERENCE)].map((match) => match[1]!.trim())).toEqual(['first_name', 'last_name', '', 'a b', 'x']);
    // `{{ a b }}` names no variable value here, so it renders empty like an unset one.
    expect(render(text, { first_name: 'Ada', last_name: 'Lovelace', x: 'X' })).toBe('Hi Ada, Lovelace!   {not} {X}');
  });
});
