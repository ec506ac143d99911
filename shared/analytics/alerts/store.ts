import { conflict, notFound } from '../../platform/errors.ts';
import { ALERT_DUE_PARTITIONS, keys } from '../../platform/store/keys.ts';
import { createWithinLimit, transactCounted } from '../../platform/store/listing-count.ts';
import { ConditionFailed, defineEntity, table, TransactionCancelled } from '../../platform/store/table.ts';
import type { Alert, AlertEvent, AlertState } from './schemas.ts';

/*
 * Alert items (docs/data-model.md):
 * - rules in the workspace's alerts partition `WS#<ws>#ALERT` (`ALERT#<id>`, time-ordered),
 *   beside the counter `COUNT` changed in the same transaction as each create and delete;
 * - the due index: an enabled rule's next evaluation, `ALERTDUE#<0..3>` /
 *   `<due ms>#<ws>#<alert id>`, which the tick reads by due time. The rule holds
 *   `next_evaluation_timestamp`; a due entry whose time is not the rule's is stale, and
 *   whoever finds it puts the rule's own (the same key, so an idempotent put) and deletes it;
 * - events in `WS#<ws>#ALERTEVENT` (`EVENT#<id>`, time-ordered: newest first), kept 90 days.
 *
 * A rule's `transitions` counts its changes of state: every change is written on condition
 * it is still the count read, so two evaluations at once (two ticks, a tick and
 * POST /alerts/{id}/evaluate) record and send one change, never two.
 */

export type AlertItem = Omit<Alert, 'filters'> & {
  workspace_id: string;
  filters?: { agent_id?: string };
  transitions: number;
  revision: number;
  /** frequency_minutes in ms: the claim adds it to the pass's minute in its update expression. */
  frequency_ms: number;
  /** The pass that last took the rule (claimDueAlert): its own claim, retried, is told from another's. */
  claimed_by?: string;
};

export type AlertEventItem = AlertEvent & { workspace_id: string; expires_at: number };

const EVENT_RETENTION_SECONDS = 90 * 86_400;

const rules = defineEntity<AlertItem & { pk: string; sk: string }, [workspaceId: string, alertId: string]>({
  key: keys.alert,
  notFound: (_workspaceId, alertId) => alertNotFound(alertId),
});

const alertNotFound = (alertId: string) => notFound(`Alert ${alertId} not found`);

const dueKey = (workspaceId: string, alertId: string, dueMs: number) => keys.alertDue(workspaceId, alertId, dueMs);
const dueItem = (workspaceId: string, alertId: string, dueMs: number) => ({ ...dueKey(workspaceId, alertId, dueMs), workspace_id: workspaceId, alert_id: alertId, due_at: dueMs });

export const getAlertItem = (workspaceId: string, alertId: string): Promise<AlertItem> => rules.mustGet(workspaceId, alertId);

/** The workspace's rules, newest first (at most MAX_ALERTS: one list). */
export function listAlertItems(workspaceId: string): Promise<AlertItem[]> {
  const partition = keys.alerts(workspaceId);
  return table.queryAll<AlertItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: false,
  });
}

/** Writes a new rule (and its due entry when enabled) and counts it: 409 past `limit`. */
export async function createAlertItem(item: AlertItem, limit: number): Promise<void> {
  await createWithinLimit({
    create: rules.createOp(item, item.workspace_id, item.alert_id),
    counter: keys.alertCount(item.workspace_id),
    limit,
    also: item.next_evaluation_timestamp === null ? [] : [{ Put: { Item: dueItem(item.workspace_id, item.alert_id, item.next_evaluation_timestamp) } }],
    overLimit: () => conflict(`A workspace can have at most ${limit} alert rules; delete one to make another`),
  });
}

/**
 * Writes a rule's edited settings (never its state, change count or last value, which
 * evaluations write) on condition nobody else edited it since it was read (`revision`), and
 * moves its due entry when its next evaluation changed. Answers false when another edit
 * came first (the caller reads and applies the patch again); 404 when the rule is gone.
 */
export async function replaceAlertItem(read: AlertItem, next: AlertItem): Promise<boolean> {
  const set: Record<string, unknown> = {
    name: next.name,
    metric: next.metric,
    comparator: next.comparator,
    threshold: next.threshold,
    window_minutes: next.window_minutes,
    frequency_minutes: next.frequency_minutes,
    frequency_ms: next.frequency_ms,
    webhook_url: next.webhook_url,
    enabled: next.enabled,
    revision: next.revision,
    last_modification_timestamp: next.last_modification_timestamp,
    ...(next.filters ? { filters: next.filters } : {}),
    ...(read.next_evaluation_timestamp === next.next_evaluation_timestamp ? {} : { next_evaluation_timestamp: next.next_evaluation_timestamp }),
  };
  let gone = false;
  const written = await rules.setFields(
    [read.workspace_id, read.alert_id],
    { set, remove: next.filters ? [] : ['filters'], condition: 'revision = :read', values: { ':read': read.revision } },
    (current) => {
      gone = !current;
      return undefined;
    },
  );
  if (gone) throw alertNotFound(read.alert_id);
  if (!written) return false;
  if (read.next_evaluation_timestamp !== next.next_evaluation_timestamp) {
    if (next.next_evaluation_timestamp !== null) await table.put({ Item: dueItem(next.workspace_id, next.alert_id, next.next_evaluation_timestamp) });
    if (read.next_evaluation_timestamp !== null) await table.delete({ Key: dueKey(read.workspace_id, read.alert_id, read.next_evaluation_timestamp) });
  }
  return true;
}

/** Deletes a rule and uncounts it (404 when it is not there), then its due entry. */
export async function deleteAlertItem(workspaceId: string, alertId: string): Promise<void> {
  const item = await rules.get(workspaceId, alertId);
  try {
    await transactCounted([
      rules.removeOp(workspaceId, alertId),
      { Update: { Key: keys.alertCount(workspaceId), UpdateExpression: 'ADD n :minus', ExpressionAttributeValues: { ':minus': -1 } } },
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && error.failedAt.includes(0)) throw alertNotFound(alertId);
    throw error;
  }
  // A due entry left behind (a crash here) finds no rule at its tick and is deleted there.
  if (item?.next_evaluation_timestamp != null) await table.delete({ Key: dueKey(workspaceId, alertId, item.next_evaluation_timestamp) });
}

export interface DueEntry {
  workspace_id: string;
  alert_id: string;
  due_at: number;
}

/** The entries of one due partition due at or before `now`, oldest first (keys only: a few bytes a rule). */
export function dueEntries(partition: number, now: number): Promise<DueEntry[]> {
  const { pk } = keys.alertDuePartition(partition);
  return table.queryAll<DueEntry>({
    KeyConditionExpression: 'pk = :pk AND sk < :until',
    ExpressionAttributeValues: { ':pk': pk, ':until': `${String(now + 1).padStart(15, '0')}#` },
    ProjectionExpression: 'workspace_id, alert_id, due_at',
  });
}

export const DUE_PARTITION_COUNT = ALERT_DUE_PARTITIONS;

/**
 * The due-index writes of a pass, sent together in batch writes (25 an item-set request)
 * instead of a put and a delete per rule. Per key the last write asked wins, as if each had
 * been sent in order: a rule whose stale entry and own entry are both in the pass puts its
 * next entry once. A pass that stops before sending them leaves each claimed rule's old
 * entry, which is stale (its time is no longer the rule's): the next pass that reads it puts
 * the rule's own entry then (claimDueAlert), so nothing is lost, only an evaluation is late.
 */
export class DueMoves {
  private readonly writes = new Map<string, { put: boolean; item: ReturnType<typeof dueItem> }>();

  put(workspaceId: string, alertId: string, dueMs: number): void {
    const item = dueItem(workspaceId, alertId, dueMs);
    this.writes.set(`${item.pk}\u0000${item.sk}`, { put: true, item });
  }

  delete(workspaceId: string, alertId: string, dueMs: number): void {
    const item = dueItem(workspaceId, alertId, dueMs);
    this.writes.set(`${item.pk}\u0000${item.sk}`, { put: false, item });
  }

  /**
   * Sends what was asked since the last send: the puts, then the deletes (each key has one
   * write left, so the order among keys does not matter, but a delete never goes before a put
   * has: puts that fail leave every old entry, stale and so set right by the next pass, never a
   * rule without one).
   */
  async send(): Promise<void> {
    const writes = [...this.writes.values()];
    this.writes.clear();
    // A few batch requests of 25 at once rather than one after another.
    const sliced = <T>(list: T[]) => Array.from({ length: Math.ceil(list.length / DUE_BATCH) }, (_, index) => list.slice(index * DUE_BATCH, (index + 1) * DUE_BATCH));
    await Promise.all(sliced(writes.filter((write) => write.put).map((write) => write.item)).map((slice) => table.batchPut(slice)));
    await Promise.all(sliced(writes.filter((write) => !write.put).map(({ item }) => ({ pk: item.pk, sk: item.sk }))).map((slice) => table.batchDelete(slice)));
  }
}

/** Due-index writes per concurrent batch call (4 requests of 25, one after another). */
const DUE_BATCH = 100;

/**
 * Takes a due rule for evaluation: moves its next evaluation from `entry.due_at` to `base`
 * (the pass's minute) plus the rule's frequency, on condition it is still `entry.due_at` (one
 * taker among overlapping ticks), and records `now` as its last evaluation, answering the rule
 * as written; the due entry's move is asked of `moves`. Answers undefined when the entry was
 * stale (the rule deleted, disabled, or due at another time), after asking to set the index right.
 * The claim names its pass (`pass`): when the SDK retries a claim whose first attempt was
 * written but whose answer was lost (a timeout), the retry's condition fails on the pass's own
 * write, which is the rule as claimed, not a stale entry.
 */
export async function claimDueAlert(entry: DueEntry, base: number, now: number, moves: DueMoves, pass: string): Promise<AlertItem | undefined> {
  let claimed: AlertItem | undefined;
  let current: AlertItem | undefined;
  try {
    claimed = await table.update<AlertItem>({
      Key: keys.alert(entry.workspace_id, entry.alert_id),
      UpdateExpression: 'SET next_evaluation_timestamp = :base + frequency_ms, last_evaluation_timestamp = :now, claimed_by = :pass',
      ConditionExpression: 'next_evaluation_timestamp = :due AND enabled = :true',
      ExpressionAttributeValues: { ':base': base, ':now': now, ':pass': pass, ':due': entry.due_at, ':true': true },
      ReturnValues: 'ALL_NEW',
      ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    current = error.item as AlertItem | undefined;
    if (current?.claimed_by === pass && current.enabled && current.next_evaluation_timestamp === base + current.frequency_ms) claimed = current;
  }
  const due = claimed ? claimed.next_evaluation_timestamp : current?.enabled ? current.next_evaluation_timestamp : null;
  if (due !== null && due !== undefined) moves.put(entry.workspace_id, entry.alert_id, due);
  if (due !== entry.due_at) moves.delete(entry.workspace_id, entry.alert_id, entry.due_at);
  return claimed;
}

export interface Observation {
  value: number | null;
  at: number;
}

/**
 * Records an evaluation that changed the rule's state: the rule's new state and value, and
 * the event, in one transaction on condition the rule's transitions are still `seen`.
 * Answers false when another evaluation changed it first (nothing is written).
 */
export async function writeTransition(rule: AlertItem, state: AlertState, observation: Observation, event: AlertEventItem | undefined): Promise<boolean> {
  try {
    await table.transact([
      {
        Update: {
          Key: keys.alert(rule.workspace_id, rule.alert_id),
          UpdateExpression: 'SET #state = :state, last_value = :value, last_evaluation_timestamp = :at ADD transitions :one',
          ConditionExpression: 'transitions = :seen',
          ExpressionAttributeNames: { '#state': 'state' },
          ExpressionAttributeValues: { ':state': state, ':value': observation.value, ':at': observation.at, ':one': 1, ':seen': rule.transitions },
        },
      },
      ...(event ? [{ Put: { Item: { ...event, ...keys.alertEvent(rule.workspace_id, event.alert_event_id) }, ConditionExpression: 'attribute_not_exists(pk)' } }] : []),
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

/** Records an evaluation that left the state as it was (its value and time), unless the rule changed state meanwhile. */
export async function writeObservation(rule: AlertItem, observation: Observation): Promise<void> {
  try {
    await table.update({
      Key: keys.alert(rule.workspace_id, rule.alert_id),
      UpdateExpression: 'SET last_value = :value, last_evaluation_timestamp = :at',
      ConditionExpression: 'transitions = :seen',
      ExpressionAttributeValues: { ':value': observation.value, ':at': observation.at, ':seen': rule.transitions },
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

export const eventExpiry = (nowMs: number) => Math.floor(nowMs / 1000) + EVENT_RETENTION_SECONDS;

/** The workspace's alert events, newest first, `limit` after `after` (an alert_event_id). */
export async function listAlertEventItems(workspaceId: string, limit: number, after?: string): Promise<AlertEventItem[]> {
  const partition = keys.alertEvents(workspaceId);
  const page = await table.queryPage<AlertEventItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: false,
    Limit: limit,
    ...(after ? { ExclusiveStartKey: keys.alertEvent(workspaceId, after) } : {}),
  });
  return page.items;
}
