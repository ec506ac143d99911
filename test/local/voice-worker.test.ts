import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ServerMessage, WorkerMessage } from '@livekit/protocol';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';
import { startLocalWorker } from '../../local/voice-worker.ts';

/*
 * `npm start` with LIVEKIT_URL set also runs the voice agent worker (local/voice-worker.ts).
 * LiveKit is a stand-in for its agent endpoint (`/agent`, the worker protocol's register
 * message), as in worker/test/main.test.ts.
 */

const dataDir = mkdtempSync(join(tmpdir(), 'parley-worker-start-'));
const serversTmp = mkdtempSync(join(tmpdir(), 'parley-worker-start-tmp-'));
const env = { ...process.env, DATA_DIR: dataDir, PORT: '0', PARLEY_ENV: 'development', TMPDIR: serversTmp } as NodeJS.ProcessEnv;
delete env.DYNAMODB_ENDPOINT;
delete env.TABLE_NAME;
delete env.LIVEKIT_URL;
const running: ChildProcess[] = [];
afterAll(() => running.forEach((child) => child.exitCode === null && child.kill('SIGKILL')));

async function agentEndpoint() {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/agent' });
  await once(server, 'listening');
  const registrations: string[] = [];
  let open = 0;
  server.on('connection', (socket) => {
    open++;
    socket.once('close', () => open--);
    socket.on('message', (data: Buffer) => {
      const message = WorkerMessage.fromBinary(new Uint8Array(data));
      if (message.message.case !== 'register') return;
      registrations.push(message.message.value.agentName);
      socket.send(new ServerMessage({ message: { case: 'register', value: { workerId: 'AW_local', serverInfo: {} } } }).toBinary());
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `ws://127.0.0.1:${(server.address() as { port: number }).port}`, registrations, open: () => open };
}

async function eventually<T>(read: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs: number, what: () => string): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${JSON.stringify(value)}\n${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const status = (url: string) =>
  fetch(url).then(
    (response) => response.status,
    () => 0,
  );
const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));

/** The live processes of a process group (the worker and the job and inference processes it forks). */
function group(pgid: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        return state !== 'Z' && Number(pgrp) === pgid;
      } catch {
        return false;
      }
    })
    .map(Number);
}

describe('npm start with LIVEKIT_URL', () => {
  it('starts the worker, which registers under the agent name and logs with a prefix, and stops it with the server', async () => {
    const livekit = await agentEndpoint();
    const child = spawn(process.execPath, ['--import', 'tsx', 'local/start.ts'], {
      env: { ...env, LIVEKIT_URL: livekit.url, LIVEKIT_AGENT_NAME: 'parley-agent-local' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const exited = once(child, 'exit') as Promise<[number | null]>;

    const started = await eventually(
      () => /Voice worker starting \(pid (\d+), health (http:\/\/127\.0\.0\.1:\d+)\/, LiveKit (\S+)\)/.exec(output),
      Boolean,
      60_000,
      () => output,
    );
    const [, pid, health, url] = started!;
    expect(url).toBe(livekit.url);
    // After the server: its line comes first.
    expect(output.indexOf('Parley listening on http://127.0.0.1:')).toBeLessThan(output.indexOf('Voice worker starting'));
    await eventually(() => status(`${health}/`), (code) => code === 200, 60_000, () => output);
    expect(livekit.registrations).toEqual(['parley-agent-local']);
    const worker = (await (await fetch(`${health}/worker`)).json()) as { agent_name: string; active_jobs: number };
    expect(worker).toMatchObject({ agent_name: 'parley-agent-local', active_jobs: 0 });
    // The framework's own lines, prefixed.
    expect(output).toMatch(/^\[worker\] .*registered worker/m);
    expect(output).not.toMatch(/^(?!\[worker\] ).*registered worker/m);
    expect(output).not.toContain('dev mode is deprecated');

    // Its own process group: the worker and the inference process it forks.
    expect(group(Number(pid)).length).toBeGreaterThanOrEqual(2);

    child.kill('SIGTERM');
    const [code] = await exited;
    expect(code).toBe(0);
    expect(alive(Number(pid))).toBe(false);
    expect(group(Number(pid))).toEqual([]);
    expect(await status(`${health}/`)).toBe(0);
    await eventually(() => livekit.open(), (open) => open === 0, 5_000, () => output);
  }, 120_000);
});

/**
 * A stand-in worker package: its main prints what it was started with, forks a child of its
 * own (as the framework forks job processes), and ignores SIGTERM, or exits with FAKE_EXIT.
 */
function standInWorker(): string {
  const workerDir = mkdtempSync(join(tmpdir(), 'parley-fake-worker-'));
  mkdirSync(join(workerDir, 'node_modules', '@livekit', 'agents'), { recursive: true });
  writeFileSync(join(workerDir, 'node_modules', '@livekit', 'agents', 'package.json'), '{}');
  mkdirSync(join(workerDir, 'src'));
  writeFileSync(
    join(workerDir, 'src', 'main.ts'),
    `import { spawn } from 'node:child_process';
if (process.env.FAKE_EXIT) process.exit(Number(process.env.FAKE_EXIT));
const child = spawn('sleep', ['300'], { stdio: 'ignore' });
process.on('SIGTERM', () => console.log('ignoring SIGTERM'));
console.error('args ' + process.argv.slice(2).join(' '));
console.log('health ' + process.env.WORKER_HEALTH_HOST + ' ' + process.env.TABLE_NAME);
console.log('child ' + child.pid);
setInterval(() => undefined, 1000);
`,
  );
  return workerDir;
}

async function until(lines: string[], match: RegExp): Promise<RegExpExecArray> {
  return (await eventually(() => lines.map((line) => match.exec(line)).find(Boolean), Boolean, 30_000, () => lines.join('\n')))!;
}

describe('startLocalWorker', () => {
  it('starts the worker with the server\'s settings, prefixes both its outputs, and kills its process group when it does not stop', async () => {
    const lines: string[] = [];
    const worker = await startLocalWorker({
      workerDir: standInWorker(),
      env: { ...process.env, LIVEKIT_URL: 'ws://127.0.0.1:7880', TABLE_NAME: 'parley-local' },
      log: (line) => lines.push(line),
      stopGraceMs: 500,
    });
    expect(worker).toBeDefined();
    const [, childPid] = await until(lines, /^\[worker\] child (\d+)$/);
    expect(lines).toContain('[worker] args dev --log-level info');
    expect(lines).toContain('[worker] health 127.0.0.1 parley-local');
    expect(lines[0]).toBe(`Voice worker starting (pid ${worker!.pid}, health ${worker!.healthUrl}/, LiveKit ws://127.0.0.1:7880)`);
    // The worker and its child (and tsx's esbuild service) in a group of their own.
    expect(group(worker!.pid)).toEqual(expect.arrayContaining([worker!.pid, Number(childPid)]));

    const stopping = Date.now();
    await worker!.stop();
    expect(Date.now() - stopping).toBeGreaterThanOrEqual(500);
    expect(lines).toContain('[worker] ignoring SIGTERM');
    expect(await worker!.exited).toBe('SIGKILL');
    expect(group(worker!.pid)).toEqual([]);
    // Stopped on purpose: no note that calls go unanswered.
    expect(lines.filter((line) => line.includes('exited'))).toEqual([]);
  });

  it('says so when the worker exits by itself, and stop() then does nothing more', async () => {
    const lines: string[] = [];
    const worker = await startLocalWorker({
      workerDir: standInWorker(),
      env: { ...process.env, LIVEKIT_URL: 'ws://127.0.0.1:7880', FAKE_EXIT: '3' },
      log: (line) => lines.push(line),
    });
    expect(await worker!.exited).toBe(3);
    expect(lines.at(-1)).toBe('[worker] exited (3); calls on LiveKit are not answered until `npm start` runs again');
    await worker!.stop();
  });

  it('starts nothing without LIVEKIT_URL, and says nothing', async () => {
    const lines: string[] = [];
    expect(await startLocalWorker({ env: { PATH: process.env.PATH }, log: (line) => lines.push(line) })).toBeUndefined();
    expect(await startLocalWorker({ env: { LIVEKIT_URL: '  ' }, log: (line) => lines.push(line) })).toBeUndefined();
    expect(lines).toEqual([]);
  });

  it('says in one line how to install the worker when its packages are missing, and starts nothing', async () => {
    const lines: string[] = [];
    const workerDir = mkdtempSync(join(tmpdir(), 'parley-no-worker-'));
    expect(await startLocalWorker({ workerDir, env: { LIVEKIT_URL: 'ws://127.0.0.1:7880' }, log: (line) => lines.push(line) })).toBeUndefined();
    expect(lines).toEqual(['The voice worker is not started: its packages are not installed (run `npm ci --prefix worker`, then `npm start` again).']);
  });
});
