import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative } from 'node:path';
import { ESLint } from 'eslint';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { bundledInputs } from '../support/bundle.ts';

/*
 * The layout's rules (docs/architecture.md, "The rules"), checked on the code as it is: no
 * import cycles in shared/, local/ and functions/ (type imports included), the lint rule
 * that keeps platform below the domains and domains behind their index.ts really refuses
 * violations, and no deployed function bundles the local runtime's stand-ins.
 */

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/**
 * Every import of each file: runtime and type-only imports and re-exports, `import()`
 * calls and `import('…')` types. A type-only cycle is erased at run time but still ties
 * the files together: neither can be read, moved or split without the other.
 */
function importGraph(roots: readonly string[]): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of roots.flatMap(sourceFiles)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const targets: string[] = [];
    const add = (specifier: string) => {
      if (specifier.startsWith('.')) targets.push(normalize(join(dirname(file), specifier)));
    };
    const visit = (node: ts.Node) => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        add(node.moduleSpecifier.text);
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        add(node.moduleSpecifier.text);
      } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const [argument] = node.arguments;
        if (argument && ts.isStringLiteral(argument)) add(argument.text);
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
        add(node.argument.literal.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
    graph.set(file, targets);
  }
  return graph;
}

function cycles(graph: Map<string, string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (!graph.has(next)) continue;
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

describe('the layout', () => {
  it('has no import cycles in shared/, local/ and functions/, type imports included', () => {
    const graph = importGraph(['shared', 'local', 'functions']);
    expect(graph.size).toBeGreaterThan(80);
    expect(cycles(graph).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('finds a cycle when there is one (the check can fail)', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
    ]);
    expect(cycles(graph)).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });

  it('counts type-only imports, re-exports and import() types as edges (a type-only cycle is found)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-test-cycles-'));
    try {
      writeFileSync(join(dir, 'store.ts'), "import type { Kyc } from './kyc.ts';\nexport type KycItem = Kyc & { pk: string };\n");
      writeFileSync(join(dir, 'kyc.ts'), "export type { KycItem } from './store.ts';\nexport interface Kyc { status: string }\n");
      writeFileSync(join(dir, 'mock.ts'), "export const vendor: import('./vendor.ts').Vendor = { kind: 'mock' };\n");
      writeFileSync(join(dir, 'vendor.ts'), "export interface Vendor { kind: string }\nexport const load = () => import('./mock.ts');\n");
      const found = cycles(importGraph([dir])).map((cycle) => cycle.map((file) => relative(dir, file)));
      expect(found).toEqual([
        ['kyc.ts', 'store.ts', 'kyc.ts'],
        ['mock.ts', 'vendor.ts', 'mock.ts'],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const eslint = new ESLint();
  const lint = async (filePath: string, code: string) => {
    const [result] = await eslint.lintText(code, { filePath });
    return result!.messages.filter((message) => message.ruleId === 'no-restricted-imports').map((message) => message.message);
  };

  it.each([
    ['shared/platform/http/handler.ts', "import { getAgent } from '../../agents/agents.ts';"],
    ['shared/platform/http/handler.ts', "import { getAgent } from '../../agents/index.ts';"],
    ['shared/platform/errors.ts', "import { telephonyProvider } from '../vendors/telephony/index.ts';"],
    ['shared/platform/config.ts', "import { localWebhookQueue } from '../../local/queues.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { resolveAgentVersion } from '../../agents/agents.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { localWebhookQueue } from '../../../local/queues.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { routeTable } from '../../route-table.ts';"],
    ['shared/vendors/telephony/mock.ts', "import { canonicalE164 } from '../../numbers/validation.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { db } from '../../platform/store/db.ts';"],
    ['shared/contacts/contacts.ts', "import { getCall } from '../calls/history.ts';"],
    ['shared/contacts/contacts.ts', "import { getAgent } from '../agents/records.ts';"],
    ['shared/calls/calls.ts', "import { contactVariables } from '../contacts/memory.ts';"],
    ['shared/calls/calls.ts', "import { contactVariables } from '../contacts/lookups.ts';"],
    ['shared/account-data/exports.ts', "import { listChats } from '../chats/records/stored-chats.ts';"],
    ['shared/agents/llms/llms.ts', "import { executeTool } from '../../integrations/apps.ts';"],
    ['shared/agents/tools/transfer-checks.ts', "import { createAsset } from '../../account-data/assets.ts';"],
    ['shared/account-data/exports.ts', "import { listChats } from '../chats/stored-chats.ts';"],
    ['shared/account-data/privacy.ts', "import { deleteCall } from '../calls/erasure/deletion.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { assertRunnable } from '../../agents/versions/runnable.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { assertRunnable } from '../../agents/bindings.ts';"],
    ['shared/agents/voice-agents/agents.ts', "import { localWebhookQueue } from '../../../local/queues.ts';"],
    ['shared/agents/voice-agents/agents.ts', "import { routeTable } from '../../route-table.ts';"],
    ['shared/agents/voice-agents/agents.ts', "import { db } from '../../platform/store/db.ts';"],
    ['shared/agents/voice-agents/agents.ts', "import { listVoices } from '../../voices/voices.ts';"],
    ['shared/calls/live/control.ts', "import { getAgent } from '../../agents/lookups.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { assertRunnable } from '../../calls/bindings.ts';"],
    ['shared/platform/auth/credentials.ts', "import { db } from '../store/db.ts';"],
    ['shared/calls/live/control.ts', "import { getAgent } from '../../agents/records.ts';"],
    ['shared/calls/live/control.ts', "import { localWebhookQueue } from '../../../local/queues.ts';"],
    ['shared/calls/live/control.ts', "import { routeTable } from '../../route-table.ts';"],
  ])('refuses %s importing %s', async (filePath, code) => {
    expect(await lint(filePath, `${code}\nexport const x = 1;\n`)).toHaveLength(1);
  });

  it.each([
    ['shared/platform/http/handler.ts', "import { admit } from '../auth/gate.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { resolveAgentVersion } from '../../agents/index.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { table } from '../../platform/store/table.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { telephonyProvider } from '../../vendors/telephony/index.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { takeDialToken } from '../cps-limiter.ts';"],
    ['shared/batches/batches.ts', "import { onCallLifecycle } from '../calls/records/index.ts';"],
    ['shared/agents/tools/app-usages.ts', "import { appToolProblems } from '../../integrations/app-refs/index.ts';"],
    ['shared/agents/tools/transfer-checks.ts', "import { audioAssetProblem } from '../../account-data/asset-refs/index.ts';"],
    ['shared/account-data/privacy.ts', "import { deleteCall } from '../calls/erasure/index.ts';"],
    ['shared/account-data/exports.ts', "import { listChats } from '../chats/records/index.ts';"],
    ['shared/numbers/phone-numbers/phone-numbers.ts', "import { assertRunnable } from '../../agents/bindings/index.ts';"],
    ['shared/vendors/telephony/mock.ts', "import { canonicalE164 } from '../../platform/telephony/phone.ts';"],
    ['shared/calls/calls.ts', "import { contactVariables } from '../contacts/lookups/index.ts';"],
    ['shared/calls/calls.ts', "import { getAgent } from '../agents/lookups/index.ts';"],
    ['shared/calls/calls.ts', "import { getAgent } from '../agents/voice-agents/index.ts';"],
    ['shared/calls/live/control.ts', "import { logger } from '../../platform/logger.ts';"],
    ['shared/calls/live/control.ts', "import { findCallItem } from '../store.ts';"],
    ['shared/calls/live/control.ts', "import { finishCall } from '../engine/finish.ts';"],
    ['shared/calls/live/control.ts', "import { resolveAgentVersion } from '../../agents/index.ts';"],
    ['shared/calls/live/control.ts', "import { getAgent } from '../../agents/lookups/index.ts';"],
    ['shared/agents/voice-agents/agents.ts', "import { assertVoiceUsable } from '../../voices/index.ts';"],
    ['shared/agents/voice-agents/agents.ts', "import { badRequest } from '../../platform/errors.ts';"],
    ['shared/agents/voice-agents/agents.ts', "import { agentTags } from '../store.ts';"],
    ['shared/agents/voice-agents/agents.ts', "import { kindOfAgentId } from '../versions/runnable.ts';"],
  ])('allows %s importing %s', async (filePath, code) => {
    expect(await lint(filePath, `${code}\nexport const x = 1;\n`)).toEqual([]);
  });

  it("refuses domain code that decides by an error's HTTP status", async () => {
    const code = [
      "import { ApiError } from '../platform/errors.ts';",
      'export async function f(g: () => Promise<void>) {',
      '  try {',
      '    await g();',
      '  } catch (error) {',
      '    if (error instanceof ApiError && error.status === 404) return;',
      '    throw error;',
      '  }',
      '}',
      '',
    ].join('\n');
    const [result] = await eslint.lintText(code, {
      filePath: 'shared/numbers/phone-numbers/phone-numbers.ts',
    });
    const refused = result!.messages.filter((message) => message.ruleId === 'no-restricted-syntax');
    expect(refused.map((message) => message.message)).toContain('Catch errors by kind (instanceof NotFound, Conflict, VendorFailed…), not by HTTP status.');
  });

  it('bundles no local stand-in into any deployed function', async () => {
    const entries = readdirSync('functions').filter((name) => name.endsWith('.ts'));
    expect(entries.length).toBeGreaterThan(8);
    const offenders: string[] = [];
    for (const entry of entries) {
      for (const input of await bundledInputs(`functions/${entry}`)) if (input.startsWith('local/')) offenders.push(`${entry}: ${input}`);
    }
    expect(offenders).toEqual([]);
  }, 60_000);
});
