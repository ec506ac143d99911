import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { apiClient, call } from '../support/http.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'parley-runtime-'));
// Servers register in TMPDIR (local/runtime.ts): a folder of this file's own keeps the CLI
// from seeing any other server on the machine.
const serversTmp = mkdtempSync(join(tmpdir(), 'parley-runtime-tmp-'));
const env = { ...process.env, DATA_DIR: dataDir, PORT: '0', PARLEY_ENV: 'development', TMPDIR: serversTmp } as NodeJS.ProcessEnv;
delete env.DYNAMODB_ENDPOINT;
delete env.TABLE_NAME;
// As on a user's shell: the entry points themselves must silence the SDK's Node-version warning.
delete env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED;
const running: ChildProcess[] = [];
afterAll(() => running.forEach((child) => child.exitCode === null && child.kill('SIGKILL')));

const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const projectFile = (path: string) => new URL(`../../${path}`, import.meta.url).pathname;

/** `npm start` as a user runs it (npm's start script execs this), until it says where it listens. */
async function start(
  overrides: NodeJS.ProcessEnv = {},
  command: [string, string[]] = [process.execPath, ['--import', 'tsx', 'local/start.ts']],
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(command[0], command[1], { env: { ...env, ...overrides }, stdio: ['ignore', 'pipe', 'pipe'] });
  running.push(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start within 60 s:\n${output}`)), 60_000);
    child.stdout!.on('data', () => {
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}:\n${output}`)));
  });
  return { child, url, output: () => output };
}

/** `npm start` that is expected to fail: its exit code and everything it printed. */
async function failedStart(overrides: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'local/start.ts'], {
    env: { ...env, ...overrides },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

/** Pids of the DynamoDB Local processes (Java) persisting in `folder`, read from /proc. */
function javaFor(folder: string): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return args.some((arg) => arg.includes('DynamoDBLocal')) && args.includes(join(folder, 'dynamodb'));
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** Waits (up to 20 s) for the processes to be gone; answers those still there. */
async function survivors(pids: number[]): Promise<number[]> {
  const alive = () => pids.filter((pid) => existsSync(`/proc/${pid}`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8')));
  for (let i = 0; i < 200 && alive().length; i++) await new Promise((r) => setTimeout(r, 100));
  return alive();
}

/** Whether something accepts connections at the URL's port. */
function answers(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    socket.once('connect', () => socket.destroy() && resolve(true));
    socket.once('error', () => resolve(false));
  });
}

async function stop(child: ChildProcess, folder = env.DATA_DIR!): Promise<void> {
  const java = javaFor(folder);
  expect(java).toHaveLength(1);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  expect(await survivors(java)).toEqual([]);
}

/** The CLI as a user runs it from another folder, with `env` as given (DATA_DIR or not). */
function cli(cliEnv: NodeJS.ProcessEnv, cwd: string, args = ['create-workspace', '--name', 'Acme']) {
  return promisify(execFile)(process.execPath, ['--import', tsxLoader, projectFile('local/cli.ts'), ...args], { env: cliEnv, cwd });
}

describe('npm start and the CLI', () => {
  // Each start is a JVM and the whole server's modules (seconds of CPU): the scenarios share
  // starts where one start can show several things.
  it('refuses a busy port without a trace, then creates a workspace on first start, keeps its folder private, takes CLI workspaces, and keeps data and a call in progress across restarts', async () => {
    // A folder an earlier version left open: the first start closes it.
    chmodSync(dataDir, 0o755);
    mkdirSync(join(dataDir, 'dynamodb'), { mode: 0o755 });
    writeFileSync(join(dataDir, 'dynamodb', 'left-by-an-older-version.db'), '', { mode: 0o644 });

    // A start on a busy port stops its Java, says so in one line, and shows no key.
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const port = (busy.address() as { port: number }).port;
    try {
      const failed = await failedStart({ PORT: String(port) });
      expect(failed.code).toBe(1);
      expect(failed.stderr.trim()).toBe(
        `Parley did not start: port ${port} on 127.0.0.1 is already in use; stop what listens there or set PORT to another port.`,
      );
      expect(failed.stdout).not.toContain('key_');
      expect(javaFor(dataDir)).toEqual([]);
      expect(existsSync(join(dataDir, 'runtime.json'))).toBe(false);
    } finally {
      busy.close();
    }

    // Nothing was created, so the first start that succeeds shows the Default key.
    const first = await start();
    const defaultKey = /Default key \(shown once, store it now\): (key_[0-9a-f]{48})/.exec(first.output())?.[1];
    expect(defaultKey).toBeDefined();
    expect((await call(first.url, 'GET', '/get-api-key-info', { key: defaultKey })).body.name).toBe('Default key');
    expect(existsSync(join(dataDir, 'master.key'))).toBe(true);

    // Folders 0700 and files 0600, the older version's file included.
    const mode = (path: string) => statSync(path).mode & 0o777;
    const existsMode = (path: string) => {
      try {
        return mode(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    };
    expect(mode(dataDir)).toBe(0o700);
    expect(mode(join(dataDir, 'dynamodb'))).toBe(0o700);
    expect(mode(join(dataDir, 'master.key'))).toBe(0o600);
    expect(mode(join(dataDir, 'runtime.json'))).toBe(0o600);
    expect(mode(join(dataDir, 'dynamodb', 'left-by-an-older-version.db'))).toBe(0o600);
    const files = readdirSync(join(dataDir, 'dynamodb'));
    expect(files.length).toBeGreaterThan(1);
    for (const file of files) {
      // SQLite's journal comes and goes with each write: a file gone since the listing is skipped.
      const fileMode = existsMode(join(dataDir, 'dynamodb', file));
      if (fileMode !== undefined) expect([file, fileMode]).toEqual([file, 0o600]);
    }

    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'local/cli.ts', 'create-workspace', '--name', 'Acme'], { env });
    const created = JSON.parse(stdout.trim());
    expect(Object.keys(created)).toEqual(['workspace_id', 'name', 'api_key']);
    expect(created).toMatchObject({ workspace_id: expect.stringMatching(/^ws_[0-9a-f]{24}$/), name: 'Acme' });
    const acme = await call(first.url, 'GET', '/workspace', { key: created.api_key });
    expect(acme.body).toMatchObject({ workspace_id: created.workspace_id, name: 'Acme' });

    await stop(first.child);
    expect(existsSync(join(dataDir, 'runtime.json'))).toBe(false);

    const second = await start();
    expect(second.output()).not.toContain('Created workspace');
    expect((await call(second.url, 'GET', '/get-api-key-info', { key: defaultKey })).status).toBe(200);
    expect((await call(second.url, 'GET', '/workspace', { key: created.api_key })).body.name).toBe('Acme');

    // A restart mid-call loses no call step and no webhook: the sandbox call ends and is analysed once.
    const key = defaultKey!;
    const hooks = await webhookReceiver();
    const { agent } = await newAgent(apiClient(second.url, key), { agent: { webhook_url: hooks.url } });
    const number = freshNumber();
    const imported = await call(second.url, 'POST', '/import-phone-number', {
      key,
      body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
    });
    expect(imported.status).toBe(201);
    // A call long enough to be in progress across the restart; its hang-up is a queued step.
    const placed = await call(second.url, 'POST', '/v2/create-phone-call', {
      key,
      body: { from_number: number, to_number: '+14155550177', metadata: { sandbox_call_ms: 8000, sandbox_user_says: [] } },
    });
    expect(placed.status).toBe(201);
    const callId: string = placed.body.call_id;
    const get = (url: string) => async () => (await call(url, 'GET', `/v2/get-call/${callId}`, { key })).body;
    await eventually(get(second.url), (c) => c.call_status === 'ongoing', 30_000);

    await stop(second.child);
    const third = await start();
    const ended = await eventually(get(third.url), (c) => c.call_analysis !== undefined, 60_000);
    expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(ended.duration_ms).toBeGreaterThanOrEqual(8000);
    const events = await eventually(async () => hooks.events(callId), (list) => list.includes('call_analyzed'), 30_000);
    // Each event once, whichever process sent it.
    expect([...events].sort()).toEqual(['call_analyzed', 'call_ended', 'call_started']);
    await stop(third.child);
  }, 300_000);

  it('the CLI writes to a folder nothing serves, start then serves it; without DATA_DIR the CLI finds the server started with another folder and refuses to guess between two; SIGTERM to `npm start` stops node and Java', async () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'parley-runtime-'));
    const emptyFolder = mkdtempSync(join(tmpdir(), 'parley-runtime-cwd-'));
    const noDataDir = { ...env };
    delete noDataDir.DATA_DIR;

    // Nothing runs on `elsewhere`: the CLI writes straight to its store and says so.
    const offline = await cli({ ...env, DATA_DIR: elsewhere }, emptyFolder, ['create-workspace', '--name', 'Offline']);
    expect(offline.stderr).toContain(`Created in the store in ${elsewhere} (no server is running on it;`);
    const offlineKey = JSON.parse(offline.stdout.trim()).api_key;
    const first = await start({ DATA_DIR: elsewhere });
    expect(first.output()).not.toContain('Created workspace');
    expect((await call(first.url, 'GET', '/workspace', { key: offlineKey })).body.name).toBe('Offline');

    // From a folder without .data, as from a clone whose server was started with DATA_DIR.
    const { stdout, stderr } = await cli(noDataDir, emptyFolder);
    const created = JSON.parse(stdout.trim());
    expect(stderr.trim()).toBe(`Created in the running server ${first.url} (data in ${elsewhere}).`);
    expect((await call(first.url, 'GET', '/workspace', { key: created.api_key })).body).toMatchObject({ name: 'Acme' });
    expect(existsSync(join(emptyFolder, '.data'))).toBe(false);

    // The second server is `npm start` itself, as a user runs it.
    const secondFolder = mkdtempSync(join(tmpdir(), 'parley-runtime-'));
    const second = await start({ DATA_DIR: secondFolder }, ['npm', ['start']]);
    const refused = await cli(noDataDir, emptyFolder).catch((error) => error);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toContain('2 Parley servers are running');
    expect(refused.stderr).toContain(`DATA_DIR=${elsewhere} npm run cli`);
    expect(refused.stderr).toContain(`DATA_DIR=${secondFolder} npm run cli`);
    // Naming one picks it.
    const picked = await cli({ ...noDataDir, DATA_DIR: secondFolder }, emptyFolder, ['create-workspace', '--name', 'Picked']);
    const pickedKey = JSON.parse(picked.stdout.trim()).api_key;
    expect((await call(second.url, 'GET', '/workspace', { key: pickedKey })).body).toMatchObject({ name: 'Picked' });

    // SIGTERM to npm (not to the node it started) stops node and Java, frees the port and unregisters.
    const java = javaFor(secondFolder);
    expect(java).toHaveLength(1);
    expect(await answers(second.url)).toBe(true);
    const exited = new Promise((resolve) => second.child.once('exit', resolve));
    second.child.kill('SIGTERM');
    await exited;
    expect(await survivors(java)).toEqual([]);
    expect(await answers(second.url)).toBe(false);
    expect(existsSync(join(secondFolder, 'runtime.json'))).toBe(false);

    await stop(first.child, elsewhere);
    // Both unregistered: with no server left the CLI writes to ./.data and says so.
    const last = await cli(noDataDir, emptyFolder, ['create-workspace', '--name', 'Offline']);
    expect(last.stderr).toContain(`Created in the store in ${join(emptyFolder, '.data')} (no server is running on it;`);
  }, 300_000);

  it('a start with a bad setting prints one line per problem, no stack trace, and starts no Java', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'parley-runtime-'));
    const failed = await failedStart({ DATA_DIR: folder, PORT: 'abc', RATE_LIMIT_PER_KEY: '0' });
    expect(failed.code).toBe(1);
    expect(failed.stderr.trim().split('\n')).toEqual([
      'Parley did not start: invalid setting PORT: Invalid input: expected number, received NaN',
      'Parley did not start: invalid setting RATE_LIMIT_PER_KEY: Too small: expected number to be >=1',
    ]);
    expect(failed.stdout).toBe('');
    expect(javaFor(folder)).toEqual([]);
  }, 60_000);

  it('refuses a CLI call without a name', async () => {
    const failure = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'local/cli.ts', 'create-workspace'], { env }).catch((e) => e);
    expect(failure.code).toBe(2);
    expect(failure.stderr).toContain('--name is required');
  });
});
