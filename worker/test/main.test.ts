import { ServerMessage, WorkerMessage, WorkerStatus } from '@livekit/protocol';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocketServer } from 'ws';

/*
 * The worker process (worker/src/main.ts) against a stand-in for LiveKit's agent endpoint
 * (`/agent`, the worker protocol's register and status messages): it registers under the
 * agent name, answers its health endpoint, and on SIGTERM tells LiveKit it takes no more
 * jobs before it exits.
 */

const root = fileURLToPath(new URL('../..', import.meta.url));

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function agentEndpoint() {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0, path: '/agent' });
  await once(server, 'listening');
  const registrations: { agentName: string; authorization?: string }[] = [];
  const statuses: WorkerStatus[] = [];
  server.on('connection', (socket, request) => {
    socket.on('message', (data: Buffer) => {
      const message = WorkerMessage.fromBinary(new Uint8Array(data));
      if (message.message.case === 'register') {
        registrations.push({ agentName: message.message.value.agentName, ...(request.headers.authorization ? { authorization: request.headers.authorization } : {}) });
        socket.send(new ServerMessage({ message: { case: 'register', value: { workerId: 'AW_test', serverInfo: {} } } }).toBinary());
      } else if (message.message.case === 'updateWorker' && message.message.value.status !== undefined) {
        statuses.push(message.message.value.status);
      }
    });
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `ws://127.0.0.1:${(server.address() as { port: number }).port}`, registrations, statuses };
}

async function eventually<T>(read: () => Promise<T> | T, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const health = async (port: number, path: string) => {
  try {
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    return { status: response.status, text: await response.text() };
  } catch {
    return { status: 0, text: '' };
  }
};

describe('the worker process', () => {
  it('registers under its agent name, reports healthy, and on SIGTERM stops taking jobs and exits 143', async () => {
    const livekit = await agentEndpoint();
    const port = await freePort();
    const worker = spawn(process.execPath, ['--import', 'tsx', 'worker/src/main.ts'], {
      cwd: root,
      env: {
        ...process.env,
        LIVEKIT_URL: livekit.url,
        LIVEKIT_API_KEY: 'APItest',
        LIVEKIT_API_SECRET: 'a-test-secret-of-at-least-32-characters',
        LIVEKIT_AGENT_NAME: 'parley-agent-test',
        WORKER_HEALTH_HOST: '127.0.0.1',
        WORKER_HEALTH_PORT: String(port),
        WORKER_IDLE_PROCESSES: '1',
        LOG_LEVEL: 'debug',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    worker.stdout.on('data', (chunk) => (output += chunk));
    worker.stderr.on('data', (chunk) => (output += chunk));
    const exited = once(worker, 'exit') as Promise<[number | null, string | null]>;
    afterAll(() => {
      if (worker.exitCode === null) worker.kill('SIGKILL');
    });

    // Starting takes a while: the framework starts its inference process and a warm job process first.
    const healthy = await eventually(() => health(port, '/'), (answer) => answer.status === 200, 75_000).catch((error) => {
      throw new Error(`${error.message}\n${output}`);
    });
    expect(healthy).toEqual({ status: 200, text: 'OK' });
    expect(livekit.registrations).toEqual([{ agentName: 'parley-agent-test', authorization: expect.stringMatching(/^Bearer \S+$/) }]);
    const info = await health(port, '/worker');
    expect(JSON.parse(info.text)).toMatchObject({ agent_name: 'parley-agent-test', active_jobs: 0, worker_type: 'JT_ROOM' });

    // A warm job process still starting when SIGTERM arrives holds the exit up to the
    // framework's process close timeout (60 s); once it is ready, nothing running, the exit is prompt.
    await eventually(() => output, (text) => text.includes('"msg":"job runner initialized"'), 60_000);
    const termAt = Date.now();
    worker.kill('SIGTERM');
    const [code] = await exited;
    expect(Date.now() - termAt).toBeLessThan(10_000);
    expect(code).toBe(143);
    expect(livekit.statuses).toContain(WorkerStatus.WS_FULL);
    expect((await health(port, '/')).status).toBe(0);
  }, 120_000);
});
