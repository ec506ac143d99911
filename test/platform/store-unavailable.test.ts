import { createConnection, createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * The store between this file's server and DynamoDB Local is a switch: it forwards, or
 * accepts connections and never answers (a stalled store), or is closed (an unreachable
 * one). Every request goes through the real HTTP layer.
 */
type Mode = 'forward' | 'stall';
let mode: Mode = 'forward';
const sockets = new Set<Socket>();
const upstream = new URL(process.env.DYNAMODB_ENDPOINT!);

const store: Server = createServer((socket) => {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  socket.on('error', () => socket.destroy());
  if (mode === 'stall') return; // accepted, read, never answered
  const forward = createConnection({ host: upstream.hostname, port: Number(upstream.port) });
  sockets.add(forward);
  forward.on('close', () => sockets.delete(forward));
  forward.on('error', () => socket.destroy());
  socket.pipe(forward).pipe(socket);
});
await new Promise<void>((resolve) => store.listen(0, '127.0.0.1', resolve));
const storePort = (store.address() as AddressInfo).port;

const cutOff = () => {
  for (const socket of sockets) socket.destroy();
};
const closeStore = () =>
  new Promise<void>((resolve) => {
    store.close(() => resolve());
    cutOff();
  });
const reopenStore = () => new Promise<void>((resolve) => store.listen(storePort, '127.0.0.1', resolve));
afterAll(async () => {
  if (store.listening) await closeStore();
});

const TIMEOUT_MS = 300;
const { startTestApp } = await import('../support/app.ts');
const app = await startTestApp({
  DYNAMODB_ENDPOINT: `http://127.0.0.1:${storePort}`,
  AWS_REQUEST_TIMEOUT_MS: String(TIMEOUT_MS),
});
const { call } = await import('../support/http.ts');

/** Generous: two tries of 300 ms plus backoff is well under a second; a hang is the test's timeout. */
const BOUND_MS = 8000;

async function expectUnavailable(path: string, key?: string) {
  const started = Date.now();
  const res = await call(app.url, 'GET', path, { key });
  expect(Date.now() - started).toBeLessThan(BOUND_MS);
  expect(res.status).toBe(503);
  expect(res.headers['retry-after']).toBe('5');
  expect(res.body).toEqual({
    status: 503,
    message: 'Service temporarily unavailable: the data store did not answer. Retry in 5s.',
  });
}

describe('when the store does not answer', () => {
  it('serves normally through the switch', async () => {
    expect((await app.api.get('/workspace')).status).toBe(200);
  });

  it('answers 503 with retry-after when the store stalls, instead of hanging', { timeout: 20_000 }, async () => {
    mode = 'stall';
    cutOff(); // no kept-alive connection from before reaches the store
    await expectUnavailable('/workspace', app.workspace.api_key);
    // The gate needs the store before it can tell a key from none: it fails closed.
    await expectUnavailable('/workspace');
    await expectUnavailable('/openapi.json');
  });

  it('answers 503 with retry-after when the store is unreachable, instead of 500', { timeout: 20_000 }, async () => {
    await closeStore();
    await expectUnavailable('/workspace', app.workspace.api_key);
    await expectUnavailable('/api-keys', app.workspace.api_key);
  });

  it('serves again once the store is back', async () => {
    mode = 'forward';
    await reopenStore();
    expect((await app.api.get('/workspace')).status).toBe(200);
  });
});

describe('every AWS client is bounded and mapped', () => {
  // The stalled store doubles as a KMS, Secrets Manager and SQS endpoint that never answers.
  const stalled = () => `http://127.0.0.1:${storePort}`;

  it.each([
    [
      'KMS',
      async () => {
        const { AwsKeyManagement } = await import('../../shared/platform/crypto/aws-kms.ts');
        await new AwsKeyManagement('alias/test', 'us-east-1', stalled()).generateDataKey({ record: 'test' });
      },
      'the key service',
    ],
    [
      'Secrets Manager',
      async () => {
        const { VendorSettings } = await import('../../shared/platform/aws/secrets.ts');
        await new VendorSettings({ secretId: 'vendor', endpoint: stalled() }).get('X');
      },
      'the secrets store',
    ],
    [
      'SQS',
      async () => {
        // The SDK's service-specific endpoint variable, read when the client is created.
        Object.assign(process.env, {
          AWS_ENDPOINT_URL_SQS: stalled(),
          AWS_ACCESS_KEY_ID: 'test',
          AWS_SECRET_ACCESS_KEY: 'test',
        });
        const { SqsMessageQueue } = await import('../../shared/platform/aws/queue.ts');
        await new SqsMessageQueue(`${stalled()}/000000000000/parley-webhooks`).send({ hello: 'world' });
      },
      'the message queue',
    ],
  ])('%s: a stalled endpoint is a 503 within the timeout', { timeout: 20_000 }, async (_service, attempt, what) => {
    mode = 'stall';
    const { errorResponse } = await import('../../shared/platform/http/respond.ts');
    const started = Date.now();
    const error = await attempt().then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(Date.now() - started).toBeLessThan(BOUND_MS);
    expect(error).toBeDefined();
    const response = errorResponse(error);
    expect(response.statusCode).toBe(503);
    expect(response.headers?.['retry-after']).toBe('5');
    expect(JSON.parse(response.body!).message).toBe(`Service temporarily unavailable: ${what} did not answer. Retry in 5s.`);
  });
});
