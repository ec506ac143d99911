import { cli, WorkerOptions } from '@livekit/agents';
import { fileURLToPath } from 'node:url';
import { logger } from '../../shared/platform/logger.ts';
import { liveKitCredentials, workerSettings } from './config.ts';
import { watchWorker } from './worker-watch.ts';

/*
 * The agent worker process: registers with the LiveKit server under LIVEKIT_AGENT_NAME
 * (explicit dispatch: it joins only the rooms Parley dispatches it to) and runs one job per
 * call in a child process of its own (agent.ts).
 *
 * Run: `node --import tsx worker/src/main.ts [start]` from the repository root (`start`, the
 * framework's production mode, is the default). What the framework does, in that mode:
 * - Health: an HTTP server on WORKER_HEALTH_HOST:WORKER_HEALTH_PORT (default 0.0.0.0:8081).
 *   `GET /` answers 200 `OK` while the worker is registered with LiveKit (its WebSocket
 *   open, the inference process alive), else 503 with the reason; `GET /worker` answers
 *   JSON `{agent_name, active_jobs, sdk_version, …}`.
 * - SIGTERM (and SIGINT): the worker tells LiveKit it is full (no new jobs; one offered
 *   meanwhile is refused), idle job processes are closed, and it waits for every running
 *   job to end, up to WORKER_DRAIN_TIMEOUT_MS; then it closes and exits 143. A call keeps
 *   its job until the call ends. (In `dev` mode it does not wait.)
 * - Load: the worker reports its CPU load; above WORKER_LOAD_THRESHOLD (default 0.7) LiveKit
 *   dispatches to other workers.
 */

// `start` unless a command is given: the container's command stays `node … main.ts`.
if (!process.argv.slice(2).some((arg) => !arg.startsWith('-'))) process.argv.push('start');

const settings = workerSettings();
const { apiKey, apiSecret } = await liveKitCredentials();

cli.runApp(
  new WorkerOptions({
    agent: fileURLToPath(new URL('./agent.ts', import.meta.url)),
    agentName: settings.LIVEKIT_AGENT_NAME,
    wsURL: settings.LIVEKIT_URL,
    apiKey,
    apiSecret,
    host: settings.WORKER_HEALTH_HOST,
    port: settings.WORKER_HEALTH_PORT,
    drainTimeout: settings.WORKER_DRAIN_TIMEOUT_MS,
    ...(settings.WORKER_IDLE_PROCESSES !== undefined ? { numIdleProcesses: settings.WORKER_IDLE_PROCESSES } : {}),
    ...(settings.WORKER_LOAD_THRESHOLD !== undefined ? { loadThreshold: settings.WORKER_LOAD_THRESHOLD } : {}),
  }),
);

// Reads the worker's own health server: scale-in protection while calls run, and the
// heartbeat behind the "no worker registered" alarm (docs/operations.md, The voice worker).
watchWorker({
  baseUrl: `http://127.0.0.1:${settings.WORKER_HEALTH_PORT}`,
  onError: (message) => logger.warn('worker watch', { message }),
}).start();
