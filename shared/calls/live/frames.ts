import type { CallItem, LiveLogEntry } from '../items.ts';

/*
 * What a live monitor (the SSE stream, the WebSocket) receives about a call, computed from
 * the call item, its transcript entries in the order they were written (transcript.ts
 * liveEntries: the lines by position, only as many as the item's `line_count`) and its
 * controls (live/store.ts liveEntriesOf: as many as its `control_count`), so every reader
 * (any Lambda, any poll) numbers it the same way. The frames, in order, and their IDs
 * (docs/calls.md, Live calls):
 *
 *   1            call_status registered (always)
 *   2            call_status ongoing (when the call got there)
 *   3 … 2+T+L    the transcript's entries (T of them) and the live controls (L of them),
 *                merged: a control written when the transcript had k entries comes after
 *                entry k-1 and before entry k
 *   3+T+L        the final call_status (ended, not_connected, error), last
 *
 * Transcript entries and controls are only ever appended (and only while the call is
 * ongoing), a line's position is taken with the call's line count in one transaction, and a
 * control's place is checked against that count in its own write (live/store.ts), so an
 * ID always names the same frame: a client resumes after the last ID it has (Last-Event-ID)
 * and misses nothing. A worker report that arrives late is written where it arrived (its
 * place in get-call's transcript is by its sequence).
 */

export interface LiveFrame {
  id: number;
  event: 'call_status' | 'transcript' | 'live_control';
  data: Record<string, unknown>;
}

const isFinal = (status: string | undefined) => status === 'ended' || status === 'not_connected' || status === 'error';

/** Every frame of the call so far, in order (`entries` and `controls`: as written, live/store.ts liveEntriesOf). */
export function liveFrames(call: CallItem, entries: readonly Record<string, unknown>[], controls: readonly LiveLogEntry[]): LiveFrame[] {
  const frames: LiveFrame[] = [{ id: 1, event: 'call_status', data: { call_id: call.call_id, call_status: 'registered' } }];
  const reachedOngoing = call.call_status === 'ongoing' || (isFinal(call.call_status) && call.start_timestamp !== undefined && call.start_timestamp !== null);
  if (reachedOngoing) {
    frames.push({ id: 2, event: 'call_status', data: { call_id: call.call_id, call_status: 'ongoing', start_timestamp: call.start_timestamp } });
  }
  const transcript = entries;
  const log = controls;
  let id = 3;
  let next = 0;
  const controlsAt = (k: number) => {
    while (next < log.length && log[next]!.t_index <= k) {
      const { t_index: _position, ...entry } = log[next]!;
      frames.push({ id: id++, event: 'live_control', data: { call_id: call.call_id, ...entry } });
      next++;
    }
  };
  transcript.forEach((entry, index) => {
    controlsAt(index);
    frames.push({ id: id++, event: 'transcript', data: { call_id: call.call_id, index, ...entry } });
  });
  controlsAt(Number.MAX_SAFE_INTEGER);
  if (isFinal(call.call_status)) {
    frames.push({
      id: id++,
      event: 'call_status',
      data: {
        call_id: call.call_id,
        call_status: call.call_status,
        disconnection_reason: call.disconnection_reason,
        end_timestamp: call.end_timestamp,
        duration_ms: call.duration_ms,
      },
    });
  }
  return frames;
}

/** The frames after `cursor`, the cursor after them, and whether nothing more will come. */
export function framesAfter(
  call: CallItem,
  entries: readonly Record<string, unknown>[],
  controls: readonly LiveLogEntry[],
  cursor: number,
): { frames: LiveFrame[]; cursor: number; done: boolean } {
  const all = liveFrames(call, entries, controls);
  const frames = all.filter((frame) => frame.id > cursor);
  const last = all.at(-1)!;
  return { frames, cursor: Math.max(cursor, last.id), done: isFinal(call.call_status) };
}
