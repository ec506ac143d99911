import { keys } from '../../platform/store/keys.ts';
import { queryAll } from '../../platform/store/query.ts';
import { ConditionFailed, table, TransactionCancelled, type TransactOp } from '../../platform/store/table.ts';
import type { CallItem, LiveLogEntry } from '../items.ts';
import { readEntries, type ControlItem, type LineItem } from '../line-store.ts';
import { liveEntries, transcriptLength } from '../transcript.ts';

/*
 * The live calls' items (docs/calls.md, Live calls; docs/data-model.md):
 * - on the call item, top-level attributes the engine's own writes never set, so a control
 *   and an engine step never overwrite each other: `control_count` and `say_count` (how many
 *   controls, and supervisor-says among them, the call has), `live_patch` (update-live-call's
 *   variables and override, applied by the sandbox agent's next turn), `live_take_over`,
 *   `live_watched` (some WebSocket watches it: pushes look for connections);
 * - in the call's partition: `CONTROL#<index>` (each control, for the monitors and the
 *   sandbox agent's supervisor-says: items of their own, so a call's item does not grow with
 *   its controls), `VIEWER#<participant_id>` (listen, take-over) and `WSCONN#<connection_id>`
 *   (WebSocket monitors), with a `WSCONN#<id>` lookup item for $disconnect. Viewers and
 *   connections carry a TTL a day out, past any call; controls go with the call.
 */

const TTL_SECONDS = 86_400;
const expiresAt = (nowMs: number) => Math.floor(nowMs / 1000) + TTL_SECONDS;

export interface ViewerItem {
  participant_id: string;
  role: 'listener' | 'supervisor';
  joined_timestamp: number;
}

export interface LiveWrite {
  /** The control's entry (its t_index is the transcript length read, checked in the write: the call's line_count). */
  entry: Omit<LiveLogEntry, 't_index' | 'timestamp'>;
  /** Top-level call attributes to set in the same write (never `engine`). */
  set?: Record<string, unknown>;
  /** An extra condition on the call (with its names and values). */
  condition?: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> };
  /** Other items written in the same transaction (a viewer's put or delete). */
  with?: TransactOp[];
}

/**
 * One live control's write on an ongoing call of the workspace, in one transaction: the
 * call (its control count moved, the fields set; conditional on its transcript's length and
 * control count as read, so the control's place among the transcript's entries is where it
 * was read), the control's item, and the other items. Answers 'changed' when the call's
 * condition failed (it moved under the write, or is no longer ongoing: read it again and
 * decide), 'refused' when another item's condition failed (a viewer that is gone, or
 * already there).
 */
export async function writeLiveControl(call: CallItem, write: LiveWrite, nowMs = Date.now()): Promise<'written' | 'changed' | 'refused'> {
  // Entries on the item (a call stored before lines) never change now: only the lines' count can move.
  const length = transcriptLength(call);
  const lineCount = call.line_count ?? 0;
  const controlCount = call.control_count ?? 0;
  const names: Record<string, string> = {
    '#status': 'call_status',
    '#ws': 'workspace_id',
    '#lines': 'line_count',
    '#controls': 'control_count',
    ...(write.condition?.names ?? {}),
  };
  const values: Record<string, unknown> = {
    ':ongoing': 'ongoing',
    ':ws': call.workspace_id,
    ':lines': lineCount,
    ':controls': controlCount,
    ':nextControls': controlCount + 1,
    ...(write.condition?.values ?? {}),
  };
  const sets = ['#controls = :nextControls'];
  if (write.entry.type === 'supervisor_say') {
    names['#says'] = 'say_count';
    values[':zero'] = 0;
    values[':one'] = 1;
    sets.push('#says = if_not_exists(#says, :zero) + :one');
  }
  Object.entries(write.set ?? {}).forEach(([field, value], i) => {
    if (value === undefined) return;
    names[`#f${i}`] = field;
    values[`:f${i}`] = value;
    sets.push(`#f${i} = :f${i}`);
  });
  const counted = (name: string, value: string, read: number) => (read === 0 ? `(attribute_not_exists(${name}) OR ${name} = ${value})` : `${name} = ${value}`);
  const update: TransactOp = {
    Update: {
      Key: keys.call(call.call_id),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: `#status = :ongoing AND #ws = :ws AND ${counted('#lines', ':lines', lineCount)} AND ${counted('#controls', ':controls', controlCount)}${write.condition ? ` AND ${write.condition.expression}` : ''}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
  const control: TransactOp = {
    Put: {
      Item: {
        ...keys.callControl(call.call_id, controlCount),
        workspace_id: call.workspace_id,
        call_id: call.call_id,
        entry: { ...write.entry, timestamp: nowMs, t_index: length },
      } satisfies ControlItem,
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
  try {
    await table.transact([update, control, ...(write.with ?? [])]);
    return 'written';
  } catch (error) {
    // The call's own condition or its control's key (another control got there) or a lost race: read again; another item's condition: refused.
    if (error instanceof TransactionCancelled) return error.conflicted || error.failedAt.includes(0) || error.failedAt.includes(1) ? 'changed' : 'refused';
    throw error;
  }
}

export const putViewerOp = (callId: string, viewer: ViewerItem, options: { mustExist?: boolean } = {}): TransactOp => ({
  Put: {
    Item: { ...keys.callViewer(callId, viewer.participant_id), ...viewer, expires_at: expiresAt(Date.now()) },
    ...(options.mustExist ? { ConditionExpression: 'attribute_exists(pk)' } : { ConditionExpression: 'attribute_not_exists(pk)' }),
  },
});

export const deleteViewerOp = (callId: string, participantId: string): TransactOp => ({
  Delete: { Key: keys.callViewer(callId, participantId), ConditionExpression: 'attribute_exists(pk)' },
});

export async function getViewer(callId: string, participantId: string): Promise<ViewerItem | undefined> {
  return table.get<ViewerItem>(keys.callViewer(callId, participantId));
}

export async function listViewerItems(callId: string): Promise<ViewerItem[]> {
  const items = await queryAll<ViewerItem & Record<string, unknown>>(keys.callViewers(callId));
  return items
    .map(({ participant_id, role, joined_timestamp }) => ({ participant_id, role, joined_timestamp }))
    .sort((a, b) => a.joined_timestamp - b.joined_timestamp);
}

// ---------------------------------------------------------------------------------------
// WebSocket monitor connections

export interface ConnectionItem {
  connection_id: string;
  call_id: string;
  workspace_id: string;
  /** The last frame ID sent to it. */
  cursor: number;
}

/** Records a connection watching a call (and marks the call watched, so its changes look for connections). */
export async function putConnection(connection: ConnectionItem, nowMs = Date.now()): Promise<void> {
  await table.transact([
    { Put: { Item: { ...keys.liveConnection(connection.call_id, connection.connection_id), ...connection, expires_at: expiresAt(nowMs) } } },
    {
      Put: {
        Item: { ...keys.liveConnectionLookup(connection.connection_id), call_id: connection.call_id, workspace_id: connection.workspace_id, expires_at: expiresAt(nowMs) },
      },
    },
    {
      Update: {
        Key: keys.call(connection.call_id),
        UpdateExpression: 'SET live_watched = :true',
        ConditionExpression: 'attribute_exists(pk) AND workspace_id = :ws',
        ExpressionAttributeValues: { ':true': true, ':ws': connection.workspace_id },
      },
    },
  ]);
}

export async function connectionsOf(callId: string): Promise<ConnectionItem[]> {
  return queryAll<ConnectionItem>(keys.liveConnections(callId));
}

export async function connectionLookup(connectionId: string): Promise<{ call_id: string; workspace_id: string } | undefined> {
  return table.get(keys.liveConnectionLookup(connectionId));
}

/**
 * Moves a connection's cursor forward to `cursor` and answers the one it had, or undefined
 * when it was already there or past it (another push sent those frames) or is gone. `last`
 * marks the connection as closing in the same write: whoever moves the cursor onto the
 * call's final frame sends it and closes the socket, so no other push closes it first.
 */
export async function advanceConnection(callId: string, connectionId: string, cursor: number, last = false): Promise<number | undefined> {
  try {
    const old = await table.update<{ cursor: number }>({
      Key: keys.liveConnection(callId, connectionId),
      UpdateExpression: last ? 'SET #c = :c, closing = :true' : 'SET #c = :c',
      ConditionExpression: 'attribute_exists(pk) AND #c < :c',
      ExpressionAttributeNames: { '#c': 'cursor' },
      ExpressionAttributeValues: last ? { ':c': cursor, ':true': true } : { ':c': cursor },
      ReturnValues: 'UPDATED_OLD',
    });
    return old?.cursor ?? 0;
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

/**
 * Claims the close of a connection that has nothing left to send (it resumed after the final
 * frame): true for the one claimant, false when a push that sent the final frame owns it.
 */
export async function claimConnectionClose(callId: string, connectionId: string): Promise<boolean> {
  try {
    await table.update({
      Key: keys.liveConnection(callId, connectionId),
      UpdateExpression: 'SET closing = :true',
      ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(closing)',
      ExpressionAttributeValues: { ':true': true },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

export async function deleteConnection(callId: string, connectionId: string): Promise<void> {
  await table.batchDelete([keys.liveConnection(callId, connectionId), keys.liveConnectionLookup(connectionId)]);
}

/** A call by ID (the pushes' own read; store.ts's findCallItem is above this module). */
export async function readCall(callId: string): Promise<CallItem | undefined> {
  return table.get<CallItem>(keys.call(callId));
}

/** What a monitor has read of a call's partition: its controls and lines as of these counts. */
export interface LiveEntriesRead {
  lines: number;
  controls: number;
  read: { controls: ControlItem[]; lines: LineItem[] };
}

/**
 * The call's transcript and controls as its monitors see them (live/frames.ts): the item's
 * own entries (a call stored before lines and control items), then the items in the order
 * written. `known` is what was read before: the partition is read again only when the
 * call's line or control count moved (an idle poll reads the item alone).
 */
export async function liveEntriesOf(
  call: CallItem,
  known?: LiveEntriesRead,
): Promise<{ entries: Record<string, unknown>[]; controls: LiveLogEntry[]; known: LiveEntriesRead }> {
  const lines = call.line_count ?? 0;
  const controls = call.control_count ?? 0;
  const read =
    known && known.lines === lines && known.controls === controls
      ? known
      : { lines, controls, read: lines || controls ? await readEntries(call.call_id) : { controls: [], lines: [] } };
  const written = read.read.controls.slice(0, controls).map((control) => control.entry);
  return { entries: liveEntries(call, read.read.lines), controls: [...(call.live_log ?? []), ...written], known: read };
}
