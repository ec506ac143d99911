import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WorkerMetrics } from '../src/metrics.ts';
import { TaskProtection, type ProtectionOutcome } from '../src/task-protection.ts';
import { watchWorker } from '../src/worker-watch.ts';
import { startFakeEcsAgent, type FakeEcsAgent } from './fake-ecs-agent.ts';

/**
 * LiveKit Agents' worker HTTP server as @livekit/agents 1.9 serves it (dist/http_server.js):
 * `GET /` 200 `OK` when registered, 503 `not connected to livekit` when not; `GET /worker`
 * the worker's info as JSON with `active_jobs`; anything else 404 `not found`.
 */
interface FakeWorkerServer {
  baseUrl: string;
  registered: boolean;
  activeJobs: number;
  /** `/worker` answers this text instead (a worker in a bad state). */
  brokenInfo?: string;
  /** The paths asked for, in order. */
  hits: string[];
  close(): Promise<void>;
}

async function startFakeWorkerServer(): Promise<FakeWorkerServer> {
  const state = { registered: true, activeJobs: 0, brokenInfo: undefined as string | undefined, hits: [] as string[] };
  const server = createServer((req, res) => {
    state.hits.push(req.url ?? '');
    if (req.url === '/') {
      res.writeHead(state.registered ? 200 : 503);
      res.end(state.registered ? 'OK' : 'not connected to livekit');
    } else if (req.url === '/worker') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        state.brokenInfo ??
          JSON.stringify({ agent_name: 'parley-agent', agent_name_is_env: false, worker_type: 'JT_ROOM', active_jobs: state.activeJobs, sdk_version: '1.9.0', project_type: 'nodejs', protocol_version: 1 }),
      );
    } else {
      res.writeHead(404);
      res.end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return Object.assign(state, {
    baseUrl: `http://127.0.0.1:${port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

let livekit: FakeWorkerServer;
let agent: FakeEcsAgent;

beforeAll(async () => {
  [livekit, agent] = await Promise.all([startFakeWorkerServer(), startFakeEcsAgent()]);
});
afterAll(() => Promise.all([livekit.close(), agent.close()]));
beforeEach(() => {
  livekit.registered = true;
  livekit.activeJobs = 0;
  livekit.brokenInfo = undefined;
  livekit.hits.length = 0;
  agent.requests.length = 0;
  agent.state.protectionEnabled = false;
});

function watch(errors: string[] = [], lines: string[] = []) {
  return watchWorker({
    baseUrl: livekit.baseUrl,
    protection: new TaskProtection({ agentUri: agent.agentUri }),
    metrics: new WorkerMetrics({ stage: 'prod', write: (line) => lines.push(line) }),
    onError: (message) => errors.push(message),
  });
}

const registeredValues = (lines: string[]) => lines.map((line) => (JSON.parse(line) as { WorkerRegistered: number }).WorkerRegistered);

describe('watching the worker for the deployment', () => {
  it('protects the task while the worker runs calls, and lifts it when they end', async () => {
    const watcher = watch();
    await watcher.poll();
    expect(agent.requests).toEqual([]);
    livekit.activeJobs = 1;
    await watcher.poll();
    expect(watcher.activeJobs).toBe(1);
    expect(agent.state.protectionEnabled).toBe(true);
    livekit.activeJobs = 3;
    await watcher.poll();
    livekit.activeJobs = 0;
    await watcher.poll();
    expect(agent.requests).toEqual([{ ProtectionEnabled: true, ExpiresInMinutes: 130 }, { ProtectionEnabled: false }]);
    expect(agent.state.protectionEnabled).toBe(false);
  });

  it('writes WorkerRegistered from the health endpoint: 1 while registered with LiveKit, 0 when not', async () => {
    const lines: string[] = [];
    const watcher = watch([], lines);
    await watcher.poll();
    watcher.beat();
    livekit.registered = false;
    await watcher.poll();
    expect(watcher.registered).toBe(false);
    watcher.beat();
    expect(registeredValues(lines)).toEqual([1, 0]);
  });

  it('counts a worker whose server does not answer as not registered, and leaves the protection as it was', async () => {
    const errors: string[] = [];
    const lines: string[] = [];
    const gone = watchWorker({
      baseUrl: 'http://127.0.0.1:9',
      protection: new TaskProtection({ agentUri: agent.agentUri }),
      metrics: new WorkerMetrics({ write: (line) => lines.push(line) }),
      onError: (message) => errors.push(message),
    });
    await gone.poll();
    gone.beat();
    expect(registeredValues(lines)).toEqual([0]);
    expect(gone.activeJobs).toBeNull();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^worker watch: /);
    expect(agent.requests).toEqual([]);
  });

  it('says what was wrong with a /worker answer without active_jobs', async () => {
    const errors: string[] = [];
    const watcher = watch(errors);
    livekit.brokenInfo = JSON.stringify({ agent_name: 'parley-agent' });
    await watcher.poll();
    expect(errors).toEqual(['worker watch: GET /worker answered HTTP 200 without active_jobs']);
    expect(agent.requests).toEqual([]);
  });

  it('logs a refused protection', async () => {
    const errors: string[] = [];
    const outcomes: ProtectionOutcome[] = [];
    const watcher = watchWorker({
      baseUrl: livekit.baseUrl,
      protection: new TaskProtection({ agentUri: agent.agentUri, onOutcome: (outcome) => outcomes.push(outcome) }),
      metrics: new WorkerMetrics({ write: () => undefined }),
      onError: (message) => errors.push(message),
    });
    agent.denyNext();
    livekit.activeJobs = 1;
    await watcher.poll();
    expect(errors).toEqual(['worker watch: task protection refused (AccessDeniedException): User is not authorized to perform: ecs:UpdateTaskProtection']);
    expect(outcomes).toHaveLength(1);
  });

  it('polls every 2 s and beats every minute once started, and stops', async () => {
    const ticks: { ms: number; run: () => void }[] = [];
    const cleared: unknown[] = [];
    const lines: string[] = [];
    const watcher = watchWorker({
      baseUrl: livekit.baseUrl,
      protection: new TaskProtection({ agentUri: agent.agentUri }),
      metrics: new WorkerMetrics({ write: (line) => lines.push(line) }),
      setInterval: (run, ms) => ticks.push({ ms, run }),
      clearInterval: (timer) => cleared.push(timer),
    }).start();
    expect(ticks.map((tick) => tick.ms)).toEqual([2000, 60_000]);
    livekit.activeJobs = 2;
    ticks[0]!.run();
    ticks[0]!.run(); // while the first poll runs: the same poll, not a second one
    await watcher.poll();
    expect(livekit.hits).toEqual(['/', '/worker']);
    expect(agent.requests).toEqual([{ ProtectionEnabled: true, ExpiresInMinutes: 130 }]);
    ticks[1]!.run();
    expect(registeredValues(lines)).toEqual([1]);
    watcher.stop();
    expect(cleared).toEqual([1, 2]);
  });
});
