import { config } from '../../platform/config.ts';
import { EventStream } from '../../platform/http/event-stream.ts';
import { framesAfter } from './frames.ts';
import { liveEntriesOf, type LiveEntriesRead } from './store.ts';
import { findCallItem, getCallItem } from '../store.ts';

/*
 * The live transcript stream (`GET /v2/calls/{call_id}/stream`, server-sent events;
 * docs/calls.md Live calls). The frames are live/frames.ts's, each with its ID, so a client
 * resumes with `Last-Event-ID` (or `?last_event_id=`). The stream reads the call item every
 * LIVE_STREAM_POLL_MS (250 ms), and its lines and controls only when their counts moved, and
 * ends after the final call_status frame. The local
 * runtime streams one response; behind API Gateway each response is a long-poll chunk
 * (shared/platform/http/event-stream.ts).
 */

/** Retry delay EventSource is given between chunks. */
const STREAM_RETRY_MS = 250;

export async function callStream(workspaceId: string, callId: string, lastEventId: number | undefined): Promise<EventStream> {
  await getCallItem(workspaceId, callId);
  let known: LiveEntriesRead | undefined;
  return new EventStream({
    cursor: lastEventId ?? 0,
    pollMs: config.LIVE_STREAM_POLL_MS,
    chunkMs: config.LIVE_STREAM_CHUNK_MS,
    retryMs: STREAM_RETRY_MS,
    poll: async (cursor) => {
      const call = await findCallItem(callId);
      if (!call) return { frames: [], cursor, done: true };
      const read = await liveEntriesOf(call, known);
      known = read.known;
      return framesAfter(call, read.entries, read.controls, cursor);
    },
  });
}

/** The Last-Event-ID header (or the query's last_event_id): a whole number, else from the start. */
export function lastEventId(header: string | undefined, query: number | undefined): number | undefined {
  if (header !== undefined && /^\d{1,15}$/.test(header.trim())) return Number(header.trim());
  return query;
}

/** Where a WebSocket monitor connects: the WebSocket API in AWS (the call in the query), the same path locally. */
export async function monitorInfo(workspaceId: string, callId: string, localBase: string) {
  await getCallItem(workspaceId, callId);
  const websocketUrl = config.LIVE_WS_URL
    ? `${config.LIVE_WS_URL}?call_id=${encodeURIComponent(callId)}`
    : `${localBase.replace(/^http/, 'ws')}/v2/calls/${encodeURIComponent(callId)}/ws`;
  return { call_id: callId, websocket_url: websocketUrl, protocol: 'parley.live.v1' };
}
