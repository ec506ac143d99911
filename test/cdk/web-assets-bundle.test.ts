import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { ParleyFunction } from '../../lib/parley-function.ts';
import { functionNamed } from '../../lib/functions.ts';
import { buildWeb, WEB_DIST, type WebManifest } from '../../scripts/build-web.ts';
import { parleyResources } from '../support/cdk.ts';

/**
 * The meta function serves the Voice Orb page and the web SDK from the built browser files
 * shipped beside its bundle: bundled for real (esbuild, as `cdk synth` does), its asset holds
 * `web/manifest.json` and every file it names, beside index.mjs.
 */
describe('the meta function bundle', () => {
  it('carries the built browser files (web/dist as web/) beside index.mjs', () => {
    return (async () => {
      // `npm run build:web` (.ci/run, cdk.json's app) builds web/dist; build it here only when absent.
      if (!existsSync(join(WEB_DIST, 'manifest.json'))) await buildWeb();
      const built = JSON.parse(readFileSync(join(WEB_DIST, 'manifest.json'), 'utf8')) as WebManifest;
      const meta = functionNamed('meta');
      expect(meta.directories).toEqual({ 'web/dist': 'web' });
      // The analytics function names the dashboard page's files from the same manifest.
      expect(functionNamed('analytics').directories).toEqual({ 'web/dist': 'web' });

      const outdir = mkdtempSync(join(tmpdir(), 'parley-cdk-meta-'));
      const app = new App({ outdir });
      const stack = new Stack(app, 'MetaBundle');
      const resources = parleyResources(stack);
      new ParleyFunction(stack, 'MetaFunction', {
        entry: fileURLToPath(new URL('../../functions/meta.ts', import.meta.url)),
        resources,
        access: meta.access,
        files: meta.files,
        directories: meta.directories,
      });
      app.synth();

      const assets = readdirSync(outdir).filter((name) => name.startsWith('asset.') && existsSync(join(outdir, name, 'index.mjs')));
      expect(assets).toHaveLength(1);
      const bundle = join(outdir, assets[0]!);
      const shipped = JSON.parse(readFileSync(join(bundle, 'web', 'manifest.json'), 'utf8')) as WebManifest;
      expect(shipped).toEqual(built);
      for (const name of ['orb.css', 'orb.js', 'parley-web-sdk.js', 'parley-web-sdk.mjs']) {
        const asset = shipped.files[name]!;
        expect(readFileSync(join(bundle, 'web', asset.file)).length, name).toBe(asset.bytes);
      }
      expect(existsSync(join(bundle, 'openapi.json'))).toBe(true);
    })();
  }, 120_000);
});

describe('function bundles (lib/bundling.ts through ParleyFunction)', () => {
  it('give each function its own bundle, split into index.mjs and the chunks it loads on use', () => {
    const outdir = mkdtempSync(join(tmpdir(), 'parley-cdk-split-'));
    const app = new App({ outdir });
    const stack = new Stack(app, 'Split');
    const resources = parleyResources(stack);
    const entries = { WebhookDelivery: 'webhook-delivery', Numbers: 'numbers' } as const;
    for (const [id, name] of Object.entries(entries)) {
      new ParleyFunction(stack, id, { entry: fileURLToPath(new URL(`../../functions/${name}.ts`, import.meta.url)), resources, access: {} });
    }
    const assembly = app.synth();

    const template = assembly.getStackByName('Split').template as { Resources: Record<string, { Type: string; Properties: { Code?: { S3Key?: string }; Handler?: string } }> };
    const functions = Object.entries(template.Resources).filter(([, resource]) => resource.Type === 'AWS::Lambda::Function');
    expect(functions).toHaveLength(2);
    const keys = functions.map(([, resource]) => resource.Properties.Code!.S3Key!);
    // One asset per function: CDK's bundling cache must not hand the second the first's bundle.
    expect(new Set(keys).size).toBe(2);
    for (const [, resource] of functions) expect(resource.Properties.Handler).toBe('index.handler');
    for (const key of keys) {
      const bundle = join(outdir, `asset.${key.replace(/\.zip$/, '')}`);
      const index = readFileSync(join(bundle, 'index.mjs'), 'utf8');
      // Statically imported chunks sit under chunks/, named from the entry; each has its source map.
      const chunks = readdirSync(join(bundle, 'chunks')).filter((name) => name.endsWith('.mjs'));
      expect(chunks.length).toBeGreaterThan(0);
      for (const chunk of chunks) expect(existsSync(join(bundle, 'chunks', `${chunk}.map`)), chunk).toBe(true);
      expect(index).toMatch(/from"\.\/chunks\/chunk-[A-Z0-9]+\.mjs"/);
      expect(existsSync(join(bundle, 'powertools-tracer.mjs'))).toBe(true);
    }
    const handlers = keys.map((key) => readFileSync(join(outdir, `asset.${key.replace(/\.zip$/, '')}`, 'index.mjs'), 'utf8'));
    // The numbers bundle routes /v2/list-phone-numbers; the webhook consumer does not.
    expect(handlers.filter((text) => text.includes('list-phone-numbers'))).toHaveLength(1);
  }, 120_000);
});
