import { randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocket, WebSocketServer } from 'ws';
import { closeLiveConnection, openLiveConnection, syncLiveConnection } from '../shared/calls/index.ts';
import { admit } from '../shared/platform/auth/gate.ts';
import { sourceAddress } from '../shared/platform/auth/ip.ts';
import { setLocalConnections } from '../shared/platform/aws/ws-connections.ts';
import { errorResponse } from '../shared/platform/http/respond.ts';
import { logger } from '../shared/platform/logger.ts';
import { requestTarget } from './request-target.ts';

/*
 * The WebSocket monitor in the local runtime: what API Gateway's WebSocket API, its Lambda
 * authorizer and the live-ws function do in AWS. An Upgrade to `/v2/calls/{call_id}/ws`
 * passes the same gate as the API (key, IP and key limits, allowlist, scope `calls`), the
 * call must be the key's workspace's (404), then the socket is registered as a connection
 * (shared/calls/live/push.ts) and sent what it has not had (after `?last_event_id=`).
 * Pushes reach it through the stand-in installed here (shared/platform/aws/ws-connections.ts).
 */

const PATH = /^\/v2\/calls\/([^/]+)\/ws$/;
const sockets = new Map<string, WebSocket>();
/** Connections registered but not yet upgraded: what is pushed meanwhile waits here. */
const pending = new Map<string, string[]>();
const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });

setLocalConnections({
  async post(connectionId, data) {
    const waiting = pending.get(connectionId);
    if (waiting) {
      waiting.push(data);
      return true;
    }
    const socket = sockets.get(connectionId);
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    await new Promise<void>((resolve, reject) => socket.send(data, (error) => (error ? reject(error) : resolve())));
    return true;
  },
  async close(connectionId) {
    if (pending.has(connectionId)) {
      pending.get(connectionId)!.push(CLOSE);
      return;
    }
    sockets.get(connectionId)?.close(1000, 'call ended');
  },
});

const CLOSE = '\u0000close';

function refuse(socket: Duplex, error: unknown): void {
  const response = errorResponse(error);
  const body = response.body ?? '';
  socket.end(
    `HTTP/1.1 ${response.statusCode} Refused\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

export async function upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
  const target = requestTarget(req.url ?? '/');
  const match = PATH.exec(target.path);
  if (!match || (req.method ?? 'GET') !== 'GET') {
    socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
    return;
  }
  const callId = decodeURIComponent(match[1]!);
  const query = new URLSearchParams(target.query);
  const cursorText = query.get('last_event_id') ?? (req.headers['last-event-id'] as string | undefined);
  const cursor = cursorText && /^\d{1,15}$/.test(cursorText) ? Number(cursorText) : 0;
  const connectionId = `local_${randomBytes(12).toString('hex')}`;
  pending.set(connectionId, []);
  try {
    const admission = await admit(
      { access: 'calls' },
      { sourceIp: sourceAddress(req.socket.remoteAddress ?? 'unknown'), authorization: req.headers.authorization, origin: req.headers.origin },
    );
    await openLiveConnection(admission.principal!.workspaceId, callId, connectionId, cursor);
  } catch (error) {
    pending.delete(connectionId);
    refuse(socket, error);
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => {
    sockets.set(connectionId, ws);
    const waiting = pending.get(connectionId) ?? [];
    pending.delete(connectionId);
    for (const data of waiting) {
      if (data === CLOSE) ws.close(1000, 'call ended');
      else ws.send(data);
    }
    const sync = () => syncLiveConnection(connectionId).catch((error: unknown) => logger.warn('monitor sync failed', { error }));
    ws.on('message', () => void sync());
    ws.on('close', () => {
      sockets.delete(connectionId);
      closeLiveConnection(connectionId).catch(() => undefined);
    });
    void sync();
  });
}

export function closeAll(): void {
  for (const socket of sockets.values()) socket.terminate();
  sockets.clear();
}
