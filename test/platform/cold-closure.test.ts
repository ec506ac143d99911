import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build, type Metafile } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bundleOptions, bundleOutputs, coldInputs, inputsOf } from '../../lib/bundling.ts';

/**
 * The cold closure of the four functions over the 700 KiB target that loads what only some
 * requests need through `import()` (docs/performance.md, "Sizes: cold and lazy"): the conversation
 * runtime, the pre-call workflows, the SIP trace and live controls, the numbers' API module,
 * the LLM vendor, the Secrets Manager client, the session tokens' jose, the payment vendor,
 * the app catalogue and the knowledge-base retrieval;
 * the KMS client, agent_override's LLM and flow schemas, SAML (members), Stripe (billing)
 * and LiveKit's server SDK (calls), and in calls the live controls,
 * deleting and scrubbing (functions/calls/on-demand.ts); in kb-jobs and
 * knowledge-bases the extraction worker's machinery. Built as the stack builds them
 * (lib/bundling.ts), each module must be in a chunk the entry does not import statically
 * (esbuild decides by reachability: one static import chain from the entry would pull it
 * back into a cold chunk), and still in the bundle, loaded on first use. Paths are prefixes
 * from the project root (LiveKit's own copy of jose, under its node_modules, is another
 * engineer's boundary).
 */
const dir = mkdtempSync(join(tmpdir(), 'parley-test-cold-closure-'));
const bundles: Record<string, { file: string; metafile: Metafile }> = {};

/** Loaded on first use everywhere they are reached. */
const EVERYWHERE = [
  'shared/conversation/runtime.ts',
  'shared/conversation/engines/model-turn.ts',
  'shared/conversation/conversation.ts',
  'shared/conversation/transfers/transfer-agent.ts',
  'shared/integrations/index.ts',
  'node_modules/oauth4webapi/',
  'shared/vendors/llm/index.ts',
  'shared/platform/aws/lambda-sdk/client-secrets-manager.js',
  'shared/billing/payments/stripe-events.ts',
  'shared/vendors/payments/index.ts',
  'shared/integrations/app-refs/index.ts',
  // The KMS client, loaded on the first secret sealed or opened.
  'shared/platform/crypto/aws-kms.ts',
  'shared/platform/aws/lambda-sdk/client-kms.js',
  'node_modules/@aws-sdk/client-kms/',
];

/** The LLM and flow schemas: calls, chats and public read agents through agents/lookups/; agent_override's schema loads them on first use. */
const AGENT_SCHEMAS = ['shared/agents/flows/flow-schemas.ts', 'shared/agents/llms/llm-schemas.ts'];
const OVERRIDE = ['shared/calls/agent-override-schema.ts', ...AGENT_SCHEMAS];

/** Not in the bundle at all any more: contacts' schemas and imports (contacts/lookups/), the agents index (agents/lookups/), batches' API module. */
const GONE: Record<string, string[]> = {
  calls: ['shared/contacts/index.ts', 'shared/contacts/schemas.ts', 'shared/contacts/import-schemas.ts', 'shared/contacts/imports.ts', 'shared/batches/batches.ts', 'shared/batches/schemas.ts'],
  public: ['shared/contacts/import-schemas.ts', 'shared/contacts/imports.ts'],
  'call-steps': ['shared/contacts/index.ts', 'shared/contacts/schemas.ts', 'shared/contacts/import-schemas.ts', 'shared/batches/batches.ts', 'shared/batches/schemas.ts'],
  chats: [],
};

const LAZY: Record<string, string[]> = {
  calls: [
    ...EVERYWHERE,
    ...OVERRIDE,
    'shared/platform/auth/jose-session.ts',
    'node_modules/jose/',
    'shared/agent-tools/workflows.ts',
    'shared/calls/artifacts/sip-trace.ts',
    'shared/calls/live/control.ts',
    'shared/numbers/phone-numbers/phone-numbers.ts',
    'shared/calls/artifacts/scrubbing.ts',
    'shared/calls/erasure/deletion.ts',
    // LiveKit's server SDK, for the calls that reach a room.
    'node_modules/livekit-server-sdk/',
  ],
  // SAML and the payment vendor's SDK load only with the routes that use them.
  members: ['node_modules/@node-saml/'],
  billing: ['node_modules/stripe/'],
  // The extraction worker's starter (shared/knowledge-bases/extract.ts): its machinery loads with the first document.
  'kb-jobs': ['shared/knowledge-bases/capped-worker.ts'],
  'knowledge-bases': ['shared/knowledge-bases/capped-worker.ts'],
  public: [...EVERYWHERE, 'shared/platform/auth/jose-session.ts', 'node_modules/jose/', 'shared/agent-tools/workflows.ts', 'shared/knowledge-bases/retrieval.ts', ...OVERRIDE],
  'call-steps': [...EVERYWHERE, ...OVERRIDE, 'shared/agent-tools/workflows.ts', 'shared/numbers/phone-numbers/phone-numbers.ts'],
  chats: [...EVERYWHERE, ...AGENT_SCHEMAS, 'shared/platform/auth/jose-session.ts', 'node_modules/jose/'],
  // The numbers function's 1.6× import target: what only the KYC, SIP trunk, caller ID and SIP probe
  // routes need (functions/numbers/on-demand.ts), and the KMS client (on the first secret sealed or opened).
  numbers: [
    'functions/numbers/on-demand.ts',
    'shared/numbers/telephony/kyc.ts',
    'shared/numbers/telephony/sip-trunks.ts',
    'shared/numbers/telephony/caller-ids.ts',
    'shared/vendors/caller-id/',
    'shared/numbers/connection-tests/sip-options.ts',
    'shared/platform/egress/egress.ts',
    'shared/platform/crypto/aws-kms.ts',
    'node_modules/@aws-sdk/client-kms/',
    'shared/platform/aws/lambda-sdk/client-kms.js',
  ],
};

beforeAll(async () => {
  await Promise.all(
    Object.keys(LAZY).map(async (name) => {
      const result = await build({ ...bundleOptions(`functions/${name}.ts`, join(dir, name)), write: true });
      bundles[name] = { file: join(dir, name, 'index.mjs'), metafile: result.metafile! };
    }),
  );
}, 120_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the cold closure of calls, public, call-steps, chats, numbers, members, billing, kb-jobs and knowledge-bases', () => {
  for (const [name, modules] of Object.entries(LAZY)) {
    it(`${name}: loads what few requests need on first use, not at its cold start`, () => {
      const { metafile, file } = bundles[name]!;
      const cold = [...coldInputs(metafile, file).keys()];
      const lazy = [...inputsOf(metafile, bundleOutputs(metafile, file).lazy).keys()];
      for (const module of modules) {
        expect(cold.filter((input) => input.startsWith(module)), `${name}: ${module} at cold start`).toEqual([]);
        expect(lazy.filter((input) => input.startsWith(module)).length, `${name}: ${module} in a lazy chunk`).toBeGreaterThan(0);
      }
    });
  }

  it('numbers: loads what few of its routes need through one import() target, so its cold start stays in few files', () => {
    const { metafile, file } = bundles.numbers!;
    const cold = [...coldInputs(metafile, file).keys()];
    // What the schemas check (SIP URIs) and every route uses stays cold; the probe does not.
    for (const module of ['shared/numbers/sip-uri.ts', 'shared/numbers/phone-numbers/phone-numbers.ts', 'shared/platform/crypto/envelope.ts', 'shared/numbers/inbound-addresses.ts']) {
      expect(cold, module).toContain(module);
    }
    // Each import() target sharing code with the entry may split the cold code into one more file
    // (esbuild: a chunk per set of entry points reaching a module); 8 with the one on-demand target and the KMS client's chunk.
    expect(bundleOutputs(metafile, file).cold.length).toBeLessThanOrEqual(8);
  });

  for (const [name, modules] of Object.entries(GONE)) {
    it(`${name}: bundles no contacts schemas or imports, nor the batch API module, for the lookups it makes`, () => {
      const inputs = Object.keys(bundles[name]!.metafile.inputs);
      for (const module of modules) expect(inputs, `${name}: ${module}`).not.toContain(module);
    });
  }

  it('loads on-demand.ts only in the calls function, so its modules are no chunks of public or call-steps', () => {
    const rare = /^(functions\/calls\/on-demand|shared\/calls\/(artifacts\/sip-trace|artifacts\/scrubbing|live\/control|live\/events|erasure\/deletion))\.ts$/;
    const inCalls = Object.keys(bundles.calls!.metafile.inputs).filter((input) => rare.test(input));
    expect(inCalls.sort()).toEqual([
      'functions/calls/on-demand.ts',
      'shared/calls/artifacts/scrubbing.ts',
      'shared/calls/artifacts/sip-trace.ts',
      'shared/calls/erasure/deletion.ts',
      'shared/calls/live/control.ts',
    ]);
    // Scrubbing and deletion are also reached through the data storage setting (a lazy chunk of
    // the engine's); the barrel, the traces and the live controls only through it. The media
    // webhook and the worker's reports (live/events.ts) are calls-media's, not in calls at all.
    expect(Object.keys(bundles.calls!.metafile.inputs)).not.toContain('shared/calls/live/events.ts');
    const onlyThroughTheBarrel = /^(functions\/calls\/on-demand|shared\/calls\/(artifacts\/sip-trace|live\/control|live\/events))\.ts$/;
    for (const name of ['public', 'call-steps', 'chats']) {
      const inputs = Object.keys(bundles[name]!.metafile.inputs);
      expect(inputs.filter((input) => onlyThroughTheBarrel.test(input)), name).toEqual([]);
    }
  });

  it('kb-jobs, knowledge-bases: carry no document parser, which the extraction worker\'s own build holds (lib/bundling.ts)', () => {
    for (const name of ['kb-jobs', 'knowledge-bases']) {
      const inputs = Object.keys(bundles[name]!.metafile.inputs);
      const parsers = ['node_modules/unpdf/', 'node_modules/mammoth/', 'node_modules/jszip/', 'node_modules/yauzl/', 'node_modules/csv-parse/', 'shared/knowledge-bases/document-text.ts', 'shared/knowledge-bases/zip.ts'];
      expect(inputs.filter((input) => parsers.some((parser) => input.startsWith(parser))), name).toEqual([]);
    }
  });

  it('keep what the facades answer without the runtime in the cold closure (transfer options, notes, limits)', () => {
    const { metafile, file } = bundles.calls!;
    const cold = [...coldInputs(metafile, file).keys()];
    for (const module of ['shared/conversation/index.ts', 'shared/conversation/transfers/index.ts', 'shared/conversation/transfers/transfer-options.ts', 'shared/conversation/state.ts', 'shared/agent-tools/index.ts', 'shared/numbers/index.ts', 'shared/calls/agent-override.ts', 'shared/agents/lookups/index.ts', 'shared/contacts/lookups/index.ts', 'shared/batches/counters.ts', 'shared/platform/crypto/envelope.ts']) {
      expect(cold, module).toContain(module);
    }
  });
});
