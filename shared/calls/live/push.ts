import { connectionPoster } from '../../platform/aws/ws-connections.ts';
import { notFound } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import type { CallItem, LiveLogEntry } from '../items.ts';
import { framesAfter } from './frames.ts';
import { advanceConnection, claimConnectionClose, connectionLookup, connectionsOf, deleteConnection, liveEntriesOf, putConnection, readCall } from './store.ts';

/*
 * The WebSocket monitor (`GET /v2/calls/{call_id}/ws`, docs/calls.md Live calls). Every
 * write of a call (transitionCall, the live controls) calls `publishCallChange`, which sends
 * each connection watching the call the frames after its cursor (live/frames.ts), as JSON
 * text messages `{id, event, data}`, through API Gateway's management API in AWS or the
 * local server's sockets (shared/platform/aws/ws-connections.ts). The cursor is moved
 * before sending (a conditional write), so two writers racing send each frame once; their
 * messages may then arrive out of order, and a client keeps the highest ID it has. The push
 * that moves the cursor onto the final call_status sends it, then closes the connection and
 * forgets it; a push that lost the race sends and closes nothing.
 */

/** Sends every watching connection what changed; never fails the write that called it. */
export async function publishCallChange(call: CallItem): Promise<void> {
  if (!(call as { live_watched?: boolean }).live_watched) return;
  try {
    const connections = await connectionsOf(call.call_id);
    if (connections.length === 0) return;
    const { entries, controls } = await liveEntriesOf(call);
    await Promise.all(connections.map((connection) => syncConnection(call, entries, controls, connection.connection_id, connection.cursor)));
  } catch (error) {
    logger.warn('pushing a call change to its monitors failed', { call_id: call.call_id, error });
  }
}

async function syncConnection(
  call: CallItem,
  entries: readonly Record<string, unknown>[],
  controls: readonly LiveLogEntry[],
  connectionId: string,
  cursor: number,
): Promise<void> {
  const poster = await connectionPoster();
  if (!poster) return;
  const { frames, cursor: next, done } = framesAfter(call, entries, controls, cursor);
  if (frames.length) {
    const from = await advanceConnection(call.call_id, connectionId, next, done);
    // Another push moved the cursor first: it sends these frames and, at the end, closes.
    if (from === undefined) return;
    for (const frame of frames.filter((f) => f.id > from)) {
      if (!(await poster.post(connectionId, JSON.stringify(frame)))) {
        await deleteConnection(call.call_id, connectionId);
        return;
      }
    }
  } else if (!done || !(await claimConnectionClose(call.call_id, connectionId))) {
    return;
  }
  if (done) {
    await poster.close(connectionId).catch((error: unknown) => logger.warn('closing a monitor failed', { connectionId, error }));
    await deleteConnection(call.call_id, connectionId);
  }
}

/**
 * A monitor connected (the local server's upgrade, API Gateway's $connect): recorded with
 * the cursor it resumes after (`last_event_id`). The call must be the workspace's (404).
 */
export async function openLiveConnection(workspaceId: string, callId: string, connectionId: string, cursor = 0): Promise<void> {
  const call = await readCall(callId);
  if (!call || call.workspace_id !== workspaceId) throw notFound('Call not found');
  await putConnection({ connection_id: connectionId, call_id: callId, workspace_id: workspaceId, cursor });
}

/** Sends a connection what it has not had yet (right after it opened, or when the client asks: `{"action":"sync"}`). */
export async function syncLiveConnection(connectionId: string): Promise<void> {
  const lookup = await connectionLookup(connectionId);
  if (!lookup) return;
  const [call, connection] = await Promise.all([readCall(lookup.call_id), connectionsOf(lookup.call_id)]);
  const mine = connection.find((c) => c.connection_id === connectionId);
  if (!call || !mine) return;
  const { entries, controls } = await liveEntriesOf(call);
  await syncConnection(call, entries, controls, connectionId, mine.cursor);
}

/** A monitor went away ($disconnect, the socket closed). */
export async function closeLiveConnection(connectionId: string): Promise<void> {
  const lookup = await connectionLookup(connectionId);
  if (lookup) await deleteConnection(lookup.call_id, connectionId);
}
