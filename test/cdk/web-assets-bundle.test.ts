import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { describe, expect, it } from 'vitest';
import { ParleyFunction } from '../../lib/parley-function.ts';
import { DOMAIN_ACCESS, DOMAIN_DIRECTORIES, DOMAIN_FILES } from '../../lib/parley-stack.ts';
import { buildWeb, WEB_DIST, type WebManifest } from '../../scripts/build-web.ts';

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
      expect(DOMAIN_DIRECTORIES.meta).toEqual({ 'web/dist': 'web' });

      const outdir = mkdtempSync(join(tmpdir(), 'parley-cdk-meta-'));
      const app = new App({ outdir });
      const stack = new Stack(app, 'MetaBundle');
      const key = new kms.Key(stack, 'Key');
      const resources = {
        key,
        table: new dynamodb.Table(stack, 'Table', { partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING } }),
        webhookQueue: new sqs.Queue(stack, 'Queue'),
        callStepsQueue: new sqs.Queue(stack, 'CallStepsQueue'),
        contactJobsQueue: new sqs.Queue(stack, 'ContactJobsQueue'),
        exportJobsQueue: new sqs.Queue(stack, 'ExportJobsQueue'),
        integrationJobsQueue: new sqs.Queue(stack, 'IntegrationJobsQueue'),
        kbJobsQueue: new sqs.Queue(stack, 'KbJobsQueue'),
        vendorSecret: new secretsmanager.Secret(stack, 'Secret'),
        recordingsBucket: new s3.Bucket(stack, 'Recordings'),
        knowledgeBaseBucket: new s3.Bucket(stack, 'KnowledgeBases'),
      };
      new ParleyFunction(stack, 'MetaFunction', {
        entry: fileURLToPath(new URL('../../functions/meta.ts', import.meta.url)),
        resources,
        access: DOMAIN_ACCESS.meta,
        files: DOMAIN_FILES.meta,
        directories: DOMAIN_DIRECTORIES.meta,
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
