import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { startDynamoDbLocal, type RunningDynamoDb } from './dynamodb.ts';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from './private-files.ts';

/**
 * The embedded default: DynamoDB Local persisting under DATA_DIR, with the settings the
 * shared modules read at load. Callers import shared modules only after `prepare()`.
 */
export interface RuntimeFile {
  pid: number;
  dynamodb_endpoint: string;
  table_name: string;
  url?: string;
}

export const dataDir = () => resolve(process.env.DATA_DIR ?? '.data');
const runtimeFile = () => join(dataDir(), 'runtime.json');

export async function prepareLocalStore(): Promise<RunningDynamoDb> {
  process.env.DATA_DIR = dataDir();
  process.env.TABLE_NAME ??= 'parley';
  ensurePrivateDir(dataDir());
  const dynamo = await startDynamoDbLocal({ dbPath: join(dataDir(), 'dynamodb') });
  process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;
  const [{ ensureTable }, { dynamo: client }] = await Promise.all([
    import('../shared/platform/store/create-table.ts'),
    import('../shared/platform/store/db.ts'),
  ]);
  await ensureTable(client, process.env.TABLE_NAME);
  return dynamo;
}

export function writeRuntimeFile(contents: RuntimeFile): void {
  writeFileSync(runtimeFile(), JSON.stringify(contents, null, 2), { mode: PRIVATE_FILE_MODE });
}

export function removeRuntimeFile(): void {
  rmSync(runtimeFile(), { force: true });
}

/** The running `npm start` of this data folder, if there is one. */
export function runningRuntime(): RuntimeFile | undefined {
  if (!existsSync(runtimeFile())) return undefined;
  try {
    const contents = JSON.parse(readFileSync(runtimeFile(), 'utf8')) as RuntimeFile;
    process.kill(contents.pid, 0);
    return contents;
  } catch {
    return undefined;
  }
}
