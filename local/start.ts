import './quiet-aws-sdk.ts';
import type { RunningDynamoDb } from './dynamodb.ts';
import { prepareLocalStore, removeRuntimeFile, runningRuntime, writeRuntimeFile } from './runtime.ts';
import type { LocalServer } from './server.ts';
import { startFailureLines } from './start-errors.ts';
import type { LocalWorker } from './voice-worker.ts';

/**
 * `npm start`: DynamoDB Local + the table, the same Lambda handlers over HTTP on
 * 127.0.0.1:${PORT:-8080}, and the queue consumer and schedules in-process. With LIVEKIT_URL
 * set, the voice agent worker as well (local/voice-worker.ts), once the server listens.
 *
 * Every way out (a start-up error, SIGINT, SIGTERM, SIGHUP) goes through `shutdown`, which
 * stops what has started so far, DynamoDB Local's Java process included; local/dynamodb.ts
 * also kills Java when this process exits any other way. A start-up error prints one line
 * per problem, without a stack trace. The first workspace's key is printed only once the
 * server listens.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';

let dynamo: RunningDynamoDb | undefined;
let server: LocalServer | undefined;
let background: { stop(): Promise<void> } | undefined;
let worker: LocalWorker | undefined;
let registered = false;
let stopping = false;

async function shutdown(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    // The worker first: a call it ends still reports to the server.
    const steps = [() => worker?.stop(), () => background?.stop(), () => server?.close(), () => dynamo?.stop()];
    for (const step of steps) await Promise.resolve(step()).catch(() => undefined);
    if (registered) removeRuntimeFile();
    process.exit(code);
  }
  return new Promise<never>(() => undefined);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    console.log(`\n${signal}: stopping`);
    void shutdown(0);
  });
}

// Started by npm (or a test), this process is the one signals reach (package.json's start
// script execs node, so no shell stands in between). If whatever started it dies without
// passing a signal on (killed outright), this process is re-parented: stop then as well.
const parent = process.ppid;
setInterval(() => process.ppid !== parent && !stopping && void shutdown(0), 1000).unref();

try {
  const already = runningRuntime();
  if (already) {
    throw new Error(`Parley is already running from this data folder (pid ${already.pid}, ${already.url ?? ''}).`);
  }
  const prepared = await prepareLocalStore(() =>
    Promise.all([
      import('../shared/platform/config.ts'),
      import('../shared/account/workspaces.ts'),
      import('./server.ts'),
      import('./background.ts'),
    ]),
  );
  dynamo = prepared.dynamo;
  const [{ config }, { createWorkspace, hasAnyWorkspace }, { startLocalServer }, { startBackgroundWork }] = prepared.loaded;

  server = await startLocalServer({ port: config.PORT, host: '127.0.0.1' });
  const created = (await hasAnyWorkspace()) ? undefined : await createWorkspace('Default workspace');
  background = startBackgroundWork();
  writeRuntimeFile({
    pid: process.pid,
    dynamodb_endpoint: dynamo.endpoint,
    table_name: config.TABLE_NAME,
    url: server.url,
  });
  registered = true;
  if (created) {
    console.log(`Created workspace ${created.workspace_id} ("${created.name}").`);
    console.log(`Its Default key (shown once, store it now): ${created.api_key}`);
  }
  console.log(`Parley listening on ${server.url} (data in ${config.DATA_DIR})`);
  if (config.LIVEKIT_URL) {
    const { startLocalWorker } = await import('./voice-worker.ts');
    worker = await startLocalWorker();
  }
} catch (error) {
  if (!stopping) {
    for (const line of startFailureLines(error)) console.error(line);
    await shutdown(1);
  }
}
