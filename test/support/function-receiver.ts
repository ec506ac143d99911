import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

/**
 * A local HTTP receiver on 127.0.0.1 for custom functions (and anything else Parley posts
 * to a user's URL): records each request, answers from `answer` (default 200 `{"ok":true}`).
 * Closed after the file's tests.
 */
interface ReceivedRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  text: string;
  body: any;
}

export interface FunctionReceiver {
  url: string;
  requests: ReceivedRequest[];
  /** Per path (`/slow`); `delayMs` answers late, so the caller's timeout fires first. */
  answer: (request: ReceivedRequest) => { status?: number; body?: string; delayMs?: number };
}

export async function startFunctionReceiver(): Promise<FunctionReceiver> {
  const receiver: FunctionReceiver = { url: '', requests: [], answer: () => ({ body: '{"ok":true}' }) };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
      const headers = Object.fromEntries(Object.entries(req.headers).map(([name, value]) => [name, String(value)]));
      const request = { method: req.method ?? '', path: req.url ?? '', headers, text, body };
      receiver.requests.push(request);
      const { status = 200, body: reply = '', delayMs = 0 } = receiver.answer(request);
      const timer = setTimeout(() => {
        if (!res.destroyed) res.writeHead(status, { 'content-type': 'application/json' }).end(reply);
      }, delayMs);
      res.on('close', () => clearTimeout(timer));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return receiver;
}
