import { parseArgs } from 'node:util';
import { prepareLocalStore, runningRuntime } from './runtime.ts';

/**
 * `npm run cli -- create-workspace --name <name>` prints `{workspace_id, name, api_key}`.
 * Targets, in order: a deployed table (TABLE_NAME and KMS_KEY_ID set, AWS credentials in
 * the environment); the running `npm start` of DATA_DIR; else DATA_DIR's store directly.
 */
const usage = 'usage: npm run cli -- create-workspace --name <name>';
const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { name: { type: 'string' } },
});
if (positionals[0] !== 'create-workspace' || positionals.length !== 1) {
  console.error(usage);
  process.exit(2);
}
const name = values.name?.trim();
if (!name || name.length > 200) {
  console.error('--name is required (1 to 200 characters)');
  process.exit(2);
}

process.env.POWERTOOLS_LOG_LEVEL ??= 'WARN';
const deployed = Boolean(process.env.TABLE_NAME && process.env.KMS_KEY_ID && !process.env.DYNAMODB_ENDPOINT);
let stopStore: (() => Promise<void>) | undefined;
if (!deployed) {
  const running = runningRuntime();
  if (running) {
    process.env.DYNAMODB_ENDPOINT = running.dynamodb_endpoint;
    process.env.TABLE_NAME = running.table_name;
  } else {
    const dynamo = await prepareLocalStore();
    stopStore = () => dynamo.stop();
  }
}

try {
  const { createWorkspace } = await import('../shared/account/workspaces.ts');
  console.log(JSON.stringify(await createWorkspace(name)));
} finally {
  await stopStore?.();
}
