import { prepareLocalStore, removeRuntimeFile, runningRuntime, writeRuntimeFile } from './runtime.ts';

/**
 * `npm start`: DynamoDB Local + the table, the same Lambda handlers over HTTP on
 * 127.0.0.1:${PORT:-8080}, and the queue consumer and schedules in-process.
 */
process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
const already = runningRuntime();
if (already) {
  console.error(`Parley is already running from this data folder (pid ${already.pid}, ${already.url ?? ''}).`);
  process.exit(1);
}

const dynamo = await prepareLocalStore();
const { config } = await import('../shared/platform/config.ts');
const { createWorkspace, hasAnyWorkspace } = await import('../shared/account/workspaces.ts');
const { startLocalServer } = await import('./server.ts');
const { startBackgroundWork } = await import('./background.ts');

if (!(await hasAnyWorkspace())) {
  const created = await createWorkspace('Default workspace');
  console.log(`Created workspace ${created.workspace_id} ("${created.name}").`);
  console.log(`Its Default key (shown once, store it now): ${created.api_key}`);
}

const server = await startLocalServer({ port: config.PORT, host: '127.0.0.1' });
const background = startBackgroundWork();
writeRuntimeFile({
  pid: process.pid,
  dynamodb_endpoint: dynamo.endpoint,
  table_name: config.TABLE_NAME,
  url: server.url,
});
console.log(`Parley listening on ${server.url} (data in ${config.DATA_DIR})`);

let stopping = false;
async function stop(signal: string) {
  if (stopping) return;
  stopping = true;
  console.log(`\n${signal}: stopping`);
  await background.stop();
  await server.close();
  await dynamo.stop();
  removeRuntimeFile();
  process.exit(0);
}
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
