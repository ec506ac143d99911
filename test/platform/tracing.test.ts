import { exec, execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { SQSClient } from '@aws-sdk/client-sqs';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { esbuildOptions, readCdkBundling } from '../../bench/cdk-bundling.ts';
import { tracerSidecarCommand } from '../../lib/parley-function.ts';
import {
  activeTracer,
  closeInvocation,
  openInvocation,
  startTracing,
  traceAwsClient,
  traced,
  TRACER_SIDECAR,
  tracingWanted,
} from '../../shared/platform/observability/tracing.ts';

/*
 * X-Ray tracing (shared/platform/observability/tracing.ts): nothing at all outside Lambda, and in a
 * process set up as Lambda sets one up, the invocation's `## <handler>` subsegment with the
 * vendor calls' subsegments under it, sent to the X-Ray daemon's UDP address, and AWS
 * clients instrumented. The template side (active tracing and the X-Ray grant on every
 * function, the access log's integration fields) is in test/cdk/stack.test.ts.
 */
const PROBE = fileURLToPath(new URL('../fixtures/lambda-trace.probe.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TRACE_ROOT = '1-5759e988-bd862e3fe1be46a994272793';
const LAMBDA_PARENT = '53995c3f42cd8ad8';

describe('tracing outside Lambda', () => {
  it('loads nothing and runs every call as it is', async () => {
    expect(tracingWanted()).toBe(false);
    expect(await startTracing()).toBeUndefined();
    expect(activeTracer()).toBeUndefined();
    expect(await traced('llm', async () => 42)).toBe(42);
    const failure = new Error('refused');
    await expect(traced('twilio', () => Promise.reject(failure))).rejects.toBe(failure);
    const opened = await openInvocation();
    expect(opened).toBeUndefined();
    expect(() => closeInvocation(opened, failure)).not.toThrow();
    const client = new SQSClient({ region: 'us-east-1' });
    const before = client.middlewareStack.identify();
    expect(traceAwsClient(client)).toBe(client);
    expect(client.middlewareStack.identify()).toEqual(before);
    expect(activeTracer()).toBeUndefined();
    client.destroy();
  });
});

/** Runs the probe (its sources, or a bundle of it) as a Lambda invocation (with `env` on top) and collects what reached the fake daemon. */
async function invokeProbe(env: Record<string, string> = {}, file = PROBE) {
  const daemon = createSocket('udp4');
  const documents: Record<string, any>[] = [];
  daemon.on('message', (packet) => {
    const [header, body] = packet.toString('utf8').split('\n');
    expect(JSON.parse(header!)).toEqual({ format: 'json', version: 1 });
    documents.push(JSON.parse(body!));
  });
  await new Promise<void>((resolve) => daemon.bind(0, '127.0.0.1', resolve));
  try {
    const { stdout } = await promisify(execFile)(process.execPath, file === PROBE ? ['--import', 'tsx', PROBE] : [file], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        TMPDIR: process.env.TMPDIR,
        AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
        AWS_LAMBDA_FUNCTION_NAME: 'parley-test',
        LAMBDA_TASK_ROOT: ROOT,
        _HANDLER: 'index.handler',
        _X_AMZN_TRACE_ID: `Root=${TRACE_ROOT};Parent=${LAMBDA_PARENT};Sampled=1`,
        AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
        AWS_REGION: 'us-east-1',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        ...env,
      },
    });
    // UDP on the loopback arrives before the process's exit is reported; a short grace anyway.
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { result: JSON.parse(stdout), documents };
  } finally {
    daemon.close();
  }
}

describe('tracing in Lambda', () => {
  it('sends the handler subsegment and each vendor call under it to the X-Ray daemon, and instruments AWS clients', async () => {
    const { result, documents } = await invokeProbe();
    expect(result).toMatchObject({ value: 42, failed: 'refused', opened: true, loaded: true });
    expect(result.middleware).toContain('XRaySDKInstrumentation - build');
    const byName = Object.fromEntries(documents.map((document) => [document.name, document]));
    expect(Object.keys(byName).sort()).toEqual(['## index.handler', 'llm', 'twilio']);
    const handler = byName['## index.handler']!;
    expect(handler).toMatchObject({
      type: 'subsegment',
      trace_id: TRACE_ROOT,
      parent_id: LAMBDA_PARENT,
      annotations: { Service: 'parley', route: 'getCall' },
    });
    expect(byName.llm).toMatchObject({ type: 'subsegment', trace_id: TRACE_ROOT, parent_id: handler.id, annotations: { vendor: 'llm' } });
    expect(byName.llm!.fault).toBeUndefined();
    expect(byName.twilio).toMatchObject({ parent_id: handler.id, annotations: { vendor: 'twilio' }, fault: true });
    expect(byName.twilio!.cause.exceptions[0]).toMatchObject({ message: 'refused', type: 'Error' });
  }, 60_000);

  it('runs from a deployed bundle with the tracer in its own file beside it, not in the bundle', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-test-tracer-'));
    const bundle = join(dir, 'index.mjs');
    const built = await build({ ...esbuildOptions(readCdkBundling(), PROBE, bundle), logLevel: 'silent' });
    const inputs = Object.keys(built.metafile!.inputs);
    expect(inputs.filter((input) => /aws-xray-sdk-core|@aws-lambda-powertools\/tracer/.test(input))).toEqual([]);
    // As in most functions, the tracing module is in a chunk under chunks/, and still finds the sidecar beside index.mjs.
    const tracingOutputs = Object.entries(built.metafile!.outputs).filter(([, output]) => output.inputs['shared/platform/observability/tracing.ts']).map(([path]) => path);
    expect(tracingOutputs).toHaveLength(1);
    expect(tracingOutputs[0]).toMatch(/\/chunks\/chunk-[A-Z0-9]+\.mjs$/);
    // The command CDK runs after bundling each function (lib/parley-function.ts).
    await promisify(exec)(tracerSidecarCommand(ROOT, dir));
    expect(statSync(join(dir, TRACER_SIDECAR)).size).toBeGreaterThan(50_000);

    const { result, documents } = await invokeProbe({}, bundle);
    expect(result).toMatchObject({ value: 42, failed: 'refused', opened: true, loaded: true });
    expect(result.middleware).toContain('XRaySDKInstrumentation - build');
    expect(documents.map((document) => document.name).sort()).toEqual(['## index.handler', 'llm', 'twilio']);
  }, 90_000);

  it('runs untraced when a deployed bundle finds no tracer beside it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'parley-test-tracer-'));
    const bundle = join(dir, 'index.mjs');
    await build({ ...esbuildOptions(readCdkBundling(), PROBE, bundle), logLevel: 'silent' });
    const { result, documents } = await invokeProbe({ POWERTOOLS_LOG_LEVEL: 'SILENT' }, bundle);
    expect(result).toMatchObject({ value: 42, failed: 'refused', opened: false, loaded: false });
    expect(documents).toEqual([]);
  }, 90_000);

  it('loads nothing and sends nothing when POWERTOOLS_TRACE_ENABLED is false', async () => {
    const { result, documents } = await invokeProbe({ POWERTOOLS_TRACE_ENABLED: 'false' });
    expect(result).toMatchObject({ value: 42, failed: 'refused', opened: false, loaded: false });
    expect(result.middleware).not.toContain('XRaySDKInstrumentation - build');
    expect(documents).toEqual([]);
  }, 60_000);
});
