import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build, type Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { esbuildOptions, readCdkBundling } from '../../bench/cdk-bundling.ts';
import { bundleOutputs, coldInputs, inputsOf } from '../../lib/bundling.ts';
import { createWorkspace } from '../../shared/account/workspaces.ts';
import { apiGatewayEvent, lambdaContext } from '../support/events.ts';

/**
 * The deployed bundles take the AWS clients from shared/platform/aws/lambda-sdk/ (bundle
 * aliases, lib/bundle-aliases.ts) and read their settings on first use
 * (shared/platform/config.ts): built exactly as CDK builds them, they still serve requests
 * against DynamoDB, refuse a bad key through a failed conditional write (the SDK's error
 * types survive the aliases), and stop on an invalid setting with its name.
 */
const dir = mkdtempSync(join(tmpdir(), 'parley-test-bundles-'));
const bundles: Record<string, { file: string; metafile: Metafile }> = {};

beforeAll(async () => {
  const cdk = readCdkBundling();
  for (const name of ['account', 'numbers', 'contacts', 'export-jobs', 'account-data', 'flows']) {
    const file = join(dir, name, 'index.mjs');
    const result = await build({ ...esbuildOptions(cdk, `functions/${name}.ts`, file), logLevel: 'silent' });
    bundles[name] = { file, metafile: result.metafile! };
  }
}, 120_000);

/** Imports a bundle in a fresh node process (as a cold start does) and invokes its handler once per event. */
async function invoke(name: string, events: unknown[], env: Record<string, string> = {}) {
  const script = `
    const { handler } = await import(process.argv[1]);
    process.stderr.write('imported' + String.fromCharCode(10));
    const results = [];
    for (const event of JSON.parse(process.argv[2])) results.push(await handler(event, JSON.parse(process.argv[3])));
    process.stdout.write(JSON.stringify(results));`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--input-type=module', '-e', script, bundles[name]!.file, JSON.stringify(events), JSON.stringify(lambdaContext())],
    {
      env: {
        PATH: process.env.PATH,
        TABLE_NAME: process.env.TABLE_NAME,
        DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT,
        DATA_DIR: process.env.DATA_DIR,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'local',
        AWS_SECRET_ACCESS_KEY: 'local',
        PARLEY_ENV: 'test',
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...env,
      },
    },
  );
  return JSON.parse(stdout) as { statusCode: number; body: string }[];
}

const get = (routeKey: string, apiKey: string) =>
  apiGatewayEvent({ routeKey, headers: { authorization: `Bearer ${apiKey}` } });

describe('deployed Lambda bundles', () => {
  it('put what the code reaches only through import() in chunks a cold start does not load', () => {
    // Music files are measured by one route of account-data; the S3 client serves its assets.
    const { metafile, file } = bundles['account-data']!;
    const { cold, lazy } = bundleOutputs(metafile, file);
    expect(cold.length).toBeGreaterThan(1);
    const lazyInputs = [...inputsOf(metafile, lazy).keys()];
    const coldFiles = [...coldInputs(metafile, file).keys()];
    for (const pkg of ['music-metadata', '@aws-sdk/client-s3']) {
      expect(lazyInputs.filter((input) => input.includes(`node_modules/${pkg}/`)).length, pkg).toBeGreaterThan(0);
      expect(coldFiles.filter((input) => input.includes(`node_modules/${pkg}/`)), pkg).toEqual([]);
    }
    // What the entry uses and a lazy chunk uses too is loaded once, from a chunk they share: zod is in no lazy chunk.
    expect(lazyInputs.filter((input) => input.includes('node_modules/zod/'))).toEqual([]);
    // The SDK's own import()s (event streams, the browser sniffer) are not loaded at all in Node.
    const numbers = bundles.numbers!;
    expect([...coldInputs(numbers.metafile, numbers.file).keys()].filter((input) => /node_modules\/(bowser|@smithy\/core\/dist-es\/submodules\/event-streams)\//.test(input))).toEqual([]);
  });

  it('keep the calls engine, LiveKit and ws out of a function that only reads calls (calls/records/index.ts)', () => {
    const inputs = Object.keys(bundles.contacts!.metafile.inputs);
    expect(inputs).toContain('shared/calls/records/index.ts');
    expect(inputs.filter((input) => /^shared\/(calls\/(index|engine|media|recordings)|conversation\/)|node_modules\/(ws|livekit-server-sdk|@livekit)\//.test(input))).toEqual([]);
  });

  it('keep the conversation runtime, ws and the calls engine out of export-jobs and account-data (chats/records/index.ts, calls/erasure/index.ts)', () => {
    for (const name of ['export-jobs', 'account-data']) {
      const inputs = Object.keys(bundles[name]!.metafile.inputs);
      expect(inputs, name).toContain('shared/chats/records/index.ts');
      expect(inputs, name).toContain('shared/calls/erasure/index.ts');
      expect(
        inputs.filter((input) => /^shared\/(calls\/(index|calls|engine)|chats\/(index|chats|sms)|batches\/scheduler|conversation\/[\w/-]+)\.ts$|node_modules\/ws\//.test(input)),
        name,
      ).toEqual([]);
      // Recordings name the media adapter, whose LiveKit client is never called here: esbuild drops all but its import stubs.
      const liveKitBytes = [...coldInputs(bundles[name]!.metafile, bundles[name]!.file)]
        .filter(([input]) => /node_modules\/(@livekit|livekit-server-sdk)\//.test(input))
        .reduce((sum, [, bytes]) => sum + bytes, 0);
      expect(liveKitBytes, name).toBeLessThan(1024);
    }
    // An export job runs no API route: none of the settings, assets or uploads account-data's index holds.
    const jobInputs = Object.keys(bundles['export-jobs']!.metafile.inputs);
    expect(jobInputs.filter((input) => /^shared\/account-data\/(index|settings|assets|asset-uploads|audio-length)\.ts$|node_modules\/music-metadata\//.test(input))).toEqual([]);
  });

  it('keep account data\'s S3 client and music-metadata out of flows, which checks hold-music assets (account-data/asset-refs/)', () => {
    const inputs = Object.keys(bundles.flows!.metafile.inputs);
    expect(inputs).toContain('shared/account-data/asset-refs/index.ts');
    expect(inputs.filter((input) => /^shared\/account-data\/(index|assets|asset-uploads|audio-length|exports|privacy)\.ts$|node_modules\/(music-metadata|@aws-sdk\/client-s3)\//.test(input))).toEqual([]);
  });

  it('keep the agent schemas, the voice catalogue and the built-ins loaded on use out of the numbers cold import', () => {
    const { inputs } = bundles.numbers!.metafile;
    const files = Object.keys(inputs);
    // Numbers reaches agents through the narrow entry only (shared/agents/bindings/index.ts).
    expect(files).toContain('shared/agents/bindings/index.ts');
    expect(files.filter((input) => /^shared\/(agents\/(index|[\w-]+\/([\w-]+-schemas|agents|chat-agents|conversation-flows|llms))\.ts|voices\/)/.test(input))).toEqual([]);
    // node:dns and node:dgram load when a probe or a lookup needs them; node:stream/web is a lazy stand-in.
    const builtins = Object.values(inputs).flatMap(({ imports }) => imports.filter((entry) => /^node:(dns|dgram|stream\/web)$/.test(entry.path)));
    expect(builtins.filter((entry) => entry.kind !== 'dynamic-import')).toEqual([]);
    expect(new Set(builtins.map((entry) => entry.path))).toEqual(new Set(['node:dns', 'node:dgram']));
  });

  it('keep only the AWS commands Parley sends', () => {
    for (const [name, { metafile }] of Object.entries(bundles)) {
      const inputs = Object.keys(metafile.inputs);
      expect(inputs.filter((input) => /@aws-sdk\/client-dynamodb\/dist-es\/(DynamoDB|commands\/ListTablesCommand)\.js$/.test(input))).toEqual([]);
      expect(inputs.filter((input) => /@aws-sdk\/client-kms\/dist-es\/KMS\.js$/.test(input))).toEqual([]);
      expect(inputs.filter((input) => input.includes('lambda-sdk/client-dynamodb.js'))).toHaveLength(1);
      // Sessions take jose's sign and verify entry points, not its index (which kept JWE, JWKS, ...).
      if (name === 'export-jobs') continue; // no HTTP gate, no sessions
      expect(inputs.filter((input) => /jose\/dist\/webapi\/(index|jwe\/|jwks\/)/.test(input))).toEqual([]);
      expect(inputs.filter((input) => /jose\/dist\/webapi\/jwt\/(sign|verify)\.js$/.test(input))).toHaveLength(2);
    }
  });

  it('serve requests against the table, and refuse an unknown key through a failed conditional write', async () => {
    const workspace = await createWorkspace('Bundle test');
    const [info, unknown] = await invoke('account', [
      get('GET /get-api-key-info', workspace.api_key),
      get('GET /get-api-key-info', `${workspace.api_key.slice(0, -4)}zzzz`),
    ]);
    expect(info!.statusCode).toBe(200);
    expect(JSON.parse(info!.body)).toMatchObject({ name: 'Default key', org_name: 'Bundle test' });
    expect(unknown!.statusCode).toBe(401);
    const [numbers] = await invoke('numbers', [get('GET /v2/list-phone-numbers', workspace.api_key)]);
    expect(numbers!.statusCode).toBe(200);
    expect(JSON.parse(numbers!.body)).toMatchObject({ items: [] });
  });

  it('import without reading the settings, and stop on an invalid one, naming it, before a request does any work', async () => {
    const workspace = await createWorkspace('Bundle settings test');
    const cases: { name: string; setting: Record<string, string>; message: string }[] = [
      { name: 'account', setting: { RATE_LIMIT_PER_KEY: 'abc' }, message: 'Invalid Parley settings: RATE_LIMIT_PER_KEY: ' },
      // Parsed by the numbers domain itself (checkWithSettings), failing with the settings.
      {
        name: 'numbers',
        setting: { TWILIO_INBOUND_ALLOWED_ADDRESSES: '198.51.100.7, nope' },
        message: 'Invalid Parley settings: TWILIO_INBOUND_ALLOWED_ADDRESSES: "nope" is not an IP or CIDR block',
      },
    ];
    for (const { name, setting, message } of cases) {
      const failure = (await invoke(name, [get('GET /get-api-key-info', workspace.api_key)], setting).catch(
        (error: Error) => error,
      )) as Error & { stderr?: string };
      expect(failure, name).toBeInstanceOf(Error);
      expect(failure.stderr, name).toMatch(/^imported\n/);
      expect(failure.message, name).toContain(message);
    }
  });
});
