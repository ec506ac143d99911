import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort, startDynamoDbLocal, type RunningDynamoDb } from './dynamodb.ts';
import { ensurePrivateDir, PRIVATE_FILE_MODE } from './private-files.ts';

/**
 * The embedded default: DynamoDB Local persisting under DATA_DIR, with the settings the
 * shared modules read at load. Callers import shared modules only once `prepareLocalStore` has
 * set them (its `alongside` runs then).
 */
export interface RuntimeFile {
  pid: number;
  dynamodb_endpoint: string;
  table_name: string;
  url?: string;
  /** Absolute; absent in files an older version wrote. */
  data_dir?: string;
}

export const dataDir = () => resolve(process.env.DATA_DIR ?? '.data');
const runtimeFile = (dir = dataDir()) => join(dir, 'runtime.json');

/**
 * Every running `npm start` of this user also leaves a copy of its runtime file here, named
 * by pid, so that the CLI finds a server whatever DATA_DIR it was started with.
 */
const serversDir = () => join(tmpdir(), `parley-servers-${userInfo().uid}`);
const serverEntry = (pid: number) => join(serversDir(), `${pid}.json`);

/**
 * Sets the store's settings, checks every setting, starts DynamoDB Local in DATA_DIR and
 * makes the table. `alongside`, if given, runs once the settings are in place and while Java
 * starts (the server's modules load in the seconds a start otherwise spends waiting for the
 * JVM); its result is answered with the store, and the store is stopped if it fails.
 */
export async function prepareLocalStore<Loaded = undefined>(
  alongside?: () => Promise<Loaded>,
): Promise<{ dynamo: RunningDynamoDb; loaded: Loaded }> {
  process.env.DATA_DIR = dataDir();
  process.env.TABLE_NAME ??= 'parley';
  const port = await freePort();
  process.env.DYNAMODB_ENDPOINT = `http://127.0.0.1:${port}`;
  // Every setting is checked (and a bad one throws) before DynamoDB Local starts, so a bad
  // value leaves no Java process behind.
  await import('../shared/platform/config.ts');
  ensurePrivateDir(dataDir());
  const loading = alongside?.();
  // Java failing to start is the error to report; a load failing meanwhile is then moot.
  loading?.catch(() => undefined);
  const dynamo = await startDynamoDbLocal({ dbPath: join(dataDir(), 'dynamodb'), port });
  try {
    const [{ ensureTable }, { dynamo: client }] = await Promise.all([
      import('../shared/platform/store/create-table.ts'),
      import('../shared/platform/store/db.ts'),
    ]);
    await ensureTable(client, process.env.TABLE_NAME);
    return { dynamo, loaded: (await loading) as Loaded };
  } catch (error) {
    await dynamo.stop();
    throw error;
  }
}

export function writeRuntimeFile(contents: RuntimeFile): void {
  const full = { ...contents, data_dir: dataDir() };
  writeFileSync(runtimeFile(), JSON.stringify(full, null, 2), { mode: PRIVATE_FILE_MODE });
  ensurePrivateDir(serversDir());
  writeFileSync(serverEntry(contents.pid), JSON.stringify(full, null, 2), { mode: PRIVATE_FILE_MODE });
}

export function removeRuntimeFile(): void {
  rmSync(runtimeFile(), { force: true });
  rmSync(serverEntry(process.pid), { force: true });
}

function readLive(file: string): RuntimeFile | undefined {
  if (!existsSync(file)) return undefined;
  try {
    const contents = JSON.parse(readFileSync(file, 'utf8')) as RuntimeFile;
    process.kill(contents.pid, 0);
    return contents;
  } catch {
    return undefined;
  }
}

/** The running `npm start` of this data folder (default: DATA_DIR's), if there is one. */
export function runningRuntime(dir = dataDir()): RuntimeFile | undefined {
  const found = readLive(runtimeFile(dir));
  return found && { ...found, data_dir: found.data_dir ?? dir };
}

/**
 * Every running `npm start` of this user, whatever its data folder; entries of processes
 * that died without cleaning up are removed on the way.
 */
export function runningServers(): (RuntimeFile & { data_dir: string })[] {
  if (!existsSync(serversDir())) return [];
  const servers: (RuntimeFile & { data_dir: string })[] = [];
  for (const name of readdirSync(serversDir())) {
    const file = join(serversDir(), name);
    const entry = readLive(file);
    // Only if its data folder still names it: a reused pid is some other process.
    const confirmed = entry?.data_dir ? runningRuntime(entry.data_dir) : undefined;
    if (confirmed && confirmed.pid === entry!.pid) servers.push({ ...confirmed, data_dir: entry!.data_dir! });
    else rmSync(file, { force: true });
  }
  return servers;
}
