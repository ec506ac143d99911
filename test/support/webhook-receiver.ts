import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

export interface ReceivedWebhook {
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
  json: { event?: string; call?: Record<string, any>; [field: string]: unknown };
}

const servers: Server[] = [];
afterAll(async () => {
  await Promise.all(
    servers.map(
      (server) =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    ),
  );
});

type Reply = number | { status: number; body: string };

/**
 * A webhook endpoint on 127.0.0.1 that records every request and answers `reply(n)` (default
 * 200 `ok`), `delayMs` after the request arrived (so that overlapping deliveries overlap).
 */
export async function webhookReceiver(reply: (n: number, hit: ReceivedWebhook) => Reply = () => 200, options: { delayMs?: number } = {}) {
  const hits: ReceivedWebhook[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      let json: ReceivedWebhook['json'] = {};
      try {
        json = JSON.parse(body);
      } catch {
        // recorded as is
      }
      const n = hits.length;
      const hit = { at: Date.now(), headers: req.headers, body, json };
      hits.push(hit);
      const answer = reply(n, hit);
      const { status, body: text } = typeof answer === 'number' ? { status: answer, body: 'ok' } : answer;
      setTimeout(() => res.writeHead(status, { 'content-type': 'application/json' }).end(text), options.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
  return {
    url,
    hits,
    events: (callId?: string) => hits.filter((hit) => !callId || hit.json.call?.call_id === callId).map((hit) => hit.json.event),
  };
}

/**
 * Polls `read` until `done` holds (or fails after `timeoutMs`). The default is generous: a
 * wait costs its length only when it fails, and a sandbox call on a loaded 2-CPU CI machine
 * has taken more than 10 s to reach its end.
 */
export async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value)?.slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
