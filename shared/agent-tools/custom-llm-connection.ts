import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { newId } from '../platform/ids.ts';
import { trimTrailing } from '../platform/text/text.ts';
import { wire } from '../platform/naming.ts';
import { EgressRefused, WEBSOCKET_SCHEMES, checkDestination, type CheckedDestination } from '../platform/egress/egress.ts';

/*
 * `POST /test-custom-llm-connection`: does a custom LLM's WebSocket server accept a call?
 * A call connects to `<llm_websocket_url>/<call_id>` (the compatible API's custom-LLM
 * protocol), so the test does the same with a fresh call-shaped ID, completes the opening
 * handshake (RFC 6455: 101 Switching Protocols with the right Sec-WebSocket-Accept) within
 * the timeout, then closes with 1000.
 *
 * No WebSocket library: the handshake is one HTTP request, which node:http speaks
 * ('upgrade' event), and a test needs nothing after it. Node 20 (the local runtime) has
 * no global WebSocket without a flag, and a dependency would sit in this bundle for one
 * request.
 */

export interface ConnectionResult {
  success: boolean;
  latency_ms: number | null;
  error: string | null;
}

const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC11B65';

/** A masked close frame with status 1000 (client frames must be masked). */
function closeFrame(): Buffer {
  const mask = randomBytes(4);
  const payload = Buffer.from([0x03, 0xe8]);
  for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!;
  return Buffer.concat([Buffer.from([0x88, 0x80 | payload.length]), mask, payload]);
}

/** The URL a call would open: the given one with `/<call_id>` appended to its path. */
function callUrl(llmWebsocketUrl: string, callId: string): URL {
  const url = new URL(llmWebsocketUrl);
  url.pathname = `${trimTrailing(url.pathname, '/')}/${callId}`;
  return url;
}

export async function testCustomLlmConnection(input: { llm_websocket_url: string; timeout_ms: number }): Promise<ConnectionResult> {
  const url = callUrl(input.llm_websocket_url, newId('call'));
  const key = randomBytes(16).toString('base64');
  const expectedAccept = createHash('sha1').update(key + WEBSOCKET_GUID).digest('base64');
  const started = performance.now();
  const latency = () => Math.round(performance.now() - started);

  // Through the egress guard: the host's addresses are checked, and the connection is
  // pinned to the checked one (`lookup` below); TLS still verifies the host name.
  let destination: CheckedDestination;
  try {
    ({ destination } = await checkDestination(url, { schemes: WEBSOCKET_SCHEMES, signal: AbortSignal.timeout(input.timeout_ms) }));
  } catch (error) {
    const failed = (message: string): ConnectionResult => ({ success: false, latency_ms: null, error: message });
    if (error instanceof EgressRefused) return failed(error.message);
    if (error instanceof Error && error.name === 'TimeoutError') return failed(`Timed out after ${input.timeout_ms} ms`);
    const cause = (error as { cause?: NodeJS.ErrnoException }).cause;
    return failed(`Connection failed: ${cause?.code ?? (error instanceof Error ? error.message : 'unknown error')}`);
  }
  const remainingMs = Math.max(1, input.timeout_ms - (performance.now() - started));

  return new Promise<ConnectionResult>((resolve) => {
    let settled = false;
    const finish = (result: ConnectionResult, socket?: Socket) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (socket) {
        socket.on('error', () => undefined);
        socket.end(closeFrame());
        setTimeout(() => socket.destroy(), 1000).unref();
      }
      req.destroy();
      resolve(result);
    };
    const fail = (error: string) => finish({ success: false, latency_ms: null, error });
    const timer = setTimeout(() => fail(`Timed out after ${input.timeout_ms} ms`), remainingMs);

    const send = url.protocol === 'wss:' ? httpsRequest : httpRequest;
    const req: ClientRequest = send({
      protocol: url.protocol === 'wss:' ? 'https:' : 'http:',
      hostname: url.hostname.replace(/^\[|\]$/g, ''),
      port: url.port || (url.protocol === 'wss:' ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      lookup: destination.lookup,
      method: 'GET',
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-version': '13',
        'sec-websocket-key': key,
        'user-agent': `${wire.service}-custom-llm-test/1`,
      },
      agent: false,
    });
    req.on('upgrade', (res, socket) => {
      const accept = res.headers['sec-websocket-accept'];
      // Node emits 'upgrade' for 101 answers only; any other status arrives as 'response'.
      if (String(res.headers.upgrade ?? '').toLowerCase() !== 'websocket') {
        finish({ success: false, latency_ms: null, error: 'Server switched to another protocol than WebSocket' }, socket);
      } else if (accept !== expectedAccept) {
        finish({ success: false, latency_ms: null, error: 'Server answered with a wrong Sec-WebSocket-Accept' }, socket);
      } else {
        finish({ success: true, latency_ms: latency(), error: null }, socket);
      }
    });
    req.on('response', (res) => {
      res.resume();
      fail(`Server answered HTTP ${res.statusCode} instead of switching to WebSocket`);
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      fail(error.code ? `Connection failed: ${error.code}` : `Connection failed: ${error.message}`);
    });
    req.end();
  });
}
