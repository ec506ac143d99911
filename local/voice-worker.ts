import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { freePort } from './dynamodb.ts';

/**
 * `npm start`'s voice agent worker (worker/), started when LIVEKIT_URL is set so that calls on
 * the LiveKit server are answered: `node --import tsx worker/src/main.ts dev` from the
 * repository root, with this process's settings (the table, DATA_DIR, the vendor keys), so it
 * reads the same agents and its reports go to the URL the dispatch names, this server's.
 *
 * - Its output is printed line by line, each prefixed `[worker] ` (less the framework's notice
 *   that `dev` mode is deprecated in favour of LiveKit's CLI).
 * - `dev` mode: on SIGTERM the worker closes at once rather than waiting for calls to end
 *   (production's drain), so Ctrl+C stops `npm start` promptly; a call in progress ends then.
 * - It runs in a process group of its own: `stop()` sends SIGTERM to the worker, which
 *   closes its job processes, and after STOP_GRACE_MS kills whatever of the group is left.
 *   This process exiting any other way kills the group too (as local/dynamodb.ts does Java).
 * - The worker is a package of its own; without its node_modules nothing starts and one line
 *   says how to install it. The server runs either way.
 */

export interface LocalWorker {
  readonly pid: number;
  /** The worker's health endpoint (LiveKit Agents' HTTP server: `GET /` is 200 once registered). */
  readonly healthUrl: string;
  /** Resolves with the exit code (or the signal) once the worker has exited. */
  readonly exited: Promise<number | string | null>;
  stop(): Promise<void>;
}

export interface LocalWorkerOptions {
  /** The worker package; default the repository's worker/. */
  workerDir?: string;
  env?: NodeJS.ProcessEnv;
  /** Where its lines and the start-up notes go; default the console. */
  log?: (line: string) => void;
  /** How long stop() waits for the worker to exit before killing its process group. */
  stopGraceMs?: number;
}

const STOP_GRACE_MS = 10_000;
const DEV_MODE_NOTICE = /dev mode is deprecated/;
const repositoryRoot = fileURLToPath(new URL('..', import.meta.url));

/** Why the worker cannot start from `workerDir`, in one line; undefined when it can. */
function workerNotInstalled(workerDir: string): string | undefined {
  if (existsSync(join(workerDir, 'node_modules', '@livekit', 'agents', 'package.json'))) return undefined;
  return 'The voice worker is not started: its packages are not installed (run `npm ci --prefix worker`, then `npm start` again).';
}

/** Starts the worker when LIVEKIT_URL is set and its packages are installed; undefined otherwise. */
export async function startLocalWorker(options: LocalWorkerOptions = {}): Promise<LocalWorker | undefined> {
  const env = { ...(options.env ?? process.env) };
  const log = options.log ?? ((line: string) => console.log(line));
  if (!env.LIVEKIT_URL?.trim()) return undefined;
  const workerDir = options.workerDir ?? join(repositoryRoot, 'worker');
  const missing = workerNotInstalled(workerDir);
  if (missing) {
    log(missing);
    return undefined;
  }
  // Bound to this machine only, on a free port unless one is set: 8081 may well be taken.
  env.WORKER_HEALTH_HOST ??= '127.0.0.1';
  env.WORKER_HEALTH_PORT ??= String(await freePort());
  const healthUrl = `http://${env.WORKER_HEALTH_HOST}:${env.WORKER_HEALTH_PORT}`;
  // Its output goes through a pipe, so its logger would drop colours a terminal shows.
  if (process.stdout.isTTY && env.NO_COLOR === undefined) env.FORCE_COLOR ??= '1';

  const child = spawn(process.execPath, ['--import', 'tsx', join(workerDir, 'src', 'main.ts'), 'dev', '--log-level', 'info'], {
    // The repository root: `--import tsx` resolves from there, and the worker's paths are relative to it.
    cwd: repositoryRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const pid = child.pid;
  if (pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve));
    log(`The voice worker did not start: ${error.message}`);
    return undefined;
  }
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => {
      // `dev` is chosen on purpose (no drain, no warm job processes); the framework's advice
      // to use LiveKit's CLI instead does not apply here.
      if (!DEV_MODE_NOTICE.test(line)) log(`[worker] ${line}`);
    });
  }
  const killGroup = () => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // The group is gone already.
    }
  };
  process.once('exit', killGroup);

  let stopping = false;
  const exited = new Promise<number | string | null>((resolve) => {
    child.once('exit', (code, signal) => {
      if (!stopping) log(`[worker] exited (${code ?? signal}); calls on LiveKit are not answered until \`npm start\` runs again`);
      resolve(code ?? signal);
    });
  });
  log(`Voice worker starting (pid ${pid}, health ${healthUrl}/, LiveKit ${env.LIVEKIT_URL})`);

  return {
    pid,
    healthUrl,
    exited,
    async stop() {
      stopping = true;
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(killGroup, options.stopGraceMs ?? STOP_GRACE_MS);
        await exited;
        clearTimeout(timer);
      }
      // Its job and inference processes, should any outlive it.
      killGroup();
      process.removeListener('exit', killGroup);
    },
  };
}
