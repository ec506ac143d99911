import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.ts';

const dataDir = mkdtempSync(join(tmpdir(), 'parley-runtime-'));
const env = { ...process.env, DATA_DIR: dataDir, PORT: '0', PARLEY_ENV: 'development' } as NodeJS.ProcessEnv;
delete env.DYNAMODB_ENDPOINT;
delete env.TABLE_NAME;
const running: ChildProcess[] = [];
afterAll(() => running.forEach((child) => child.exitCode === null && child.kill('SIGKILL')));

/** `npm start` as a user runs it, until it says where it listens. */
async function start(): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  // node --import tsx, not npx: a signal then reaches the runtime itself, as Ctrl+C does under npm start.
  const child = spawn(process.execPath, ['--import', 'tsx', 'local/start.ts'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
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

async function stop(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

describe('npm start and the CLI', () => {
  it('creates a workspace on first start, serves it, takes CLI workspaces, and keeps data across restarts', async () => {
    const first = await start();
    const defaultKey = /Default key \(shown once, store it now\): (key_[0-9a-f]{48})/.exec(first.output())?.[1];
    expect(defaultKey).toBeDefined();
    expect((await call(first.url, 'GET', '/get-api-key-info', { key: defaultKey })).body.name).toBe('Default key');
    expect(existsSync(join(dataDir, 'master.key'))).toBe(true);

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
    await stop(second.child);
  }, 180_000);

  it('writes straight to the data folder when nothing is running, and start then serves that workspace', async () => {
    const otherDir = mkdtempSync(join(tmpdir(), 'parley-runtime-'));
    const otherEnv = { ...env, DATA_DIR: otherDir };
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'local/cli.ts', 'create-workspace', '--name', 'Offline'],
      { env: otherEnv },
    );
    const created = JSON.parse(stdout.trim());
    const previous = env.DATA_DIR;
    env.DATA_DIR = otherDir;
    try {
      const server = await start();
      expect(server.output()).not.toContain('Created workspace');
      expect((await call(server.url, 'GET', '/workspace', { key: created.api_key })).body.name).toBe('Offline');
      await stop(server.child);
    } finally {
      env.DATA_DIR = previous;
    }
  }, 180_000);

  it('keeps the data folder private: folders 0700, files 0600, even ones an earlier version left open', async () => {
    const privateDir = mkdtempSync(join(tmpdir(), 'parley-private-'));
    chmodSync(privateDir, 0o755);
    mkdirSync(join(privateDir, 'dynamodb'), { mode: 0o755 });
    writeFileSync(join(privateDir, 'dynamodb', 'left-by-an-older-version.db'), '', { mode: 0o644 });
    const previous = env.DATA_DIR;
    env.DATA_DIR = privateDir;
    try {
      const started = await start();
      // A write, so DynamoDB Local has created or touched its files.
      expect(started.output()).toContain('Created workspace');
      const mode = (path: string) => statSync(path).mode & 0o777;
      expect(mode(privateDir)).toBe(0o700);
      expect(mode(join(privateDir, 'dynamodb'))).toBe(0o700);
      expect(mode(join(privateDir, 'master.key'))).toBe(0o600);
      expect(mode(join(privateDir, 'runtime.json'))).toBe(0o600);
      const files = readdirSync(join(privateDir, 'dynamodb'));
      expect(files.length).toBeGreaterThan(1);
      for (const file of files) expect([file, mode(join(privateDir, 'dynamodb', file))]).toEqual([file, 0o600]);
      await stop(started.child);
    } finally {
      env.DATA_DIR = previous;
      rmSync(privateDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('refuses a CLI call without a name', async () => {
    const failure = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'local/cli.ts', 'create-workspace'], { env }).catch((e) => e);
    expect(failure.code).toBe(2);
    expect(failure.stderr).toContain('--name is required');
  });
});
