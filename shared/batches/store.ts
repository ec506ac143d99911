import { conflict, notFound } from '../platform/errors.ts';
import { keys, type ItemKey } from '../platform/store/keys.ts';
import { queryAll } from '../platform/store/query.ts';
import { defineEntity, table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import type { BatchStatus, CallTimeWindowInput, TaskStatus } from './schemas.ts';
import { batchDueShard } from './shards.ts';

/*
 * The batches domain's items (docs/batch-calls.md, docs/data-model.md):
 *
 * - the batch record, `WS#<ws>` / `BATCHCALL#<id>`, with `gsi1pk = BATCHDUE#<shard>` and
 *   `gsi1sk = <due>#<id>` while it is planned or ongoing (the due-batch index, sharded by
 *   workspace so that each shard is passed on its own and no one partition holds them all);
 * - its partition `WS#<ws>#BATCH#<id>`: `COUNTERS`, `TASK#<index>`, `PENDING#<index>` for
 *   each task not yet claimed, `CLAIM#<index>` for each task claimed and not yet resolved.
 */

export const SCHEDULABLE: readonly BatchStatus[] = ['planned', 'ongoing'];

export interface BatchItem {
  pk: string;
  sk: string;
  type: 'batch_call';
  workspace_id: string;
  batch_call_id: string;
  name: string;
  from_number: string;
  status: BatchStatus;
  trigger_timestamp: number;
  reserved_concurrency: number;
  call_time_window?: CallTimeWindowInput;
  honor_internal_dnc: boolean;
  created_timestamp: number;
  total_task_count: number;
  /**
   * The tasks' override agents, each referenced (agents' references) from the create until
   * the batch is sent, stopped or deleted, so such an agent cannot be deleted while the batch
   * may still dial it. Never changes after the create.
   */
  agent_references?: string[];
  gsi1pk?: string;
  gsi1sk?: string;
}

export const COUNTER_FIELDS = ['sent_count', 'picked_up_count', 'successful_count', 'failed_count', 'skipped_count', 'cancelled_count'] as const;
export type CounterField = (typeof COUNTER_FIELDS)[number];
export type Counters = Record<CounterField, number>;

export interface TaskItem {
  pk: string;
  sk: string;
  task_index: number;
  to_number: string;
  retell_llm_dynamic_variables: Record<string, string>;
  metadata: unknown;
  override_agent_id?: string;
  override_agent_version?: string;
  /** As given (wire form), checked at create and again at dial (calls' checkedAgentOverride). */
  agent_override?: Record<string, unknown>;
  custom_sip_headers?: Record<string, string>;
  status: TaskStatus;
  call_id?: string;
  error?: string;
  /** When the task was claimed (epoch ms): fixes its call's ID. */
  claimed_at?: number;
  /** The claim's holder: only it releases the task back to pending. */
  claim_token?: string;
  /** The task's call connected (counted once in picked_up_count). */
  picked_up?: boolean;
  /** The task's call's analysis verdict as counted in successful_count. */
  successful?: boolean;
}

export interface ClaimItem {
  pk: string;
  sk: string;
  task_index: number;
  claimed_at: number;
  claim_token: string;
}

export type NewTask = Omit<TaskItem, 'pk' | 'sk' | 'status'>;

const batchNotFound = () => notFound('Batch call not found');

const batches = defineEntity<BatchItem, [workspaceId: string, batchCallId: string]>({ key: keys.batchCall, notFound: batchNotFound });


const dueKeys = (workspaceId: string, dueMs: number, batchCallId: string) => ({
  ...keys.batchDueIndex(batchDueShard(workspaceId)),
  gsi1sk: keys.batchDueSort(dueMs, batchCallId),
});

// ── The record and its counters ────────────────────────────────────────────────────

export async function getBatch(workspaceId: string, batchCallId: string): Promise<BatchItem | undefined> {
  const item = await batches.get(workspaceId, batchCallId);
  return item?.workspace_id === workspaceId ? item : undefined;
}

export async function mustGetBatch(workspaceId: string, batchCallId: string): Promise<BatchItem> {
  const item = await getBatch(workspaceId, batchCallId);
  if (!item) throw batchNotFound();
  return item;
}

export const listBatchItems = (workspaceId: string) => queryAll<BatchItem>(keys.batchCalls(workspaceId));

export async function countersOf(items: readonly { workspace_id: string; batch_call_id: string }[]): Promise<Map<string, Counters>> {
  const found = await table.batchGet<Partial<Counters> & { batch_call_id: string }>(
    items.map((item) => keys.batchCounters(item.workspace_id, item.batch_call_id)),
  );
  return new Map(found.map((item) => [item.batch_call_id, Object.fromEntries(COUNTER_FIELDS.map((field) => [field, item[field] ?? 0])) as Counters]));
}

/** Writes the record and its counters: the batch exists from here on (its tasks were written first). */
/** Writes the record and its counters, with `also` (the agent references) in the same transaction. */
export async function putBatch(batch: Omit<BatchItem, 'pk' | 'sk' | 'gsi1pk' | 'gsi1sk'>, dueMs: number | undefined, also: readonly TransactOp[] = []): Promise<BatchItem> {
  const item: BatchItem = {
    ...batch,
    ...keys.batchCall(batch.workspace_id, batch.batch_call_id),
    ...(dueMs !== undefined ? dueKeys(batch.workspace_id, dueMs, batch.batch_call_id) : {}),
  };
  await table.transact([
    { Put: { Item: item, ConditionExpression: 'attribute_not_exists(pk)' } },
    {
      Put: {
        Item: {
          ...keys.batchCounters(batch.workspace_id, batch.batch_call_id),
          batch_call_id: batch.batch_call_id,
          ...Object.fromEntries(COUNTER_FIELDS.map((field) => [field, 0])),
        },
      },
    },
    ...also,
  ]).catch((error: unknown) => {
    // An override agent deleted between the create's check and this write (its reference's condition).
    if (error instanceof TransactionCancelled) throw conflict('An override agent of the batch was deleted while it was being created; check the agents and try again');
    throw error;
  });
  return item;
}

/**
 * Moves a batch from one of `from` to `to`, in or out of the due index, conditional on the
 * state read. Answers the new record, or undefined when the batch was not in `from`.
 */
export async function moveBatch(
  workspaceId: string,
  batchCallId: string,
  change: { from: readonly BatchStatus[]; to: BatchStatus; dueMs?: number; set?: Record<string, unknown>; also?: readonly TransactOp[] },
): Promise<BatchItem | undefined> {
  const schedulable = SCHEDULABLE.includes(change.to);
  const names: Record<string, string> = { '#status': 'status' };
  const values: Record<string, unknown> = { ':to': change.to };
  const sets = ['#status = :to'];
  const fields: Record<string, unknown> = {
    ...(change.set ?? {}),
    ...(schedulable && change.dueMs !== undefined ? dueKeys(workspaceId, change.dueMs, batchCallId) : {}),
  };
  Object.entries(fields).forEach(([field, value], i) => {
    names[`#f${i}`] = field;
    values[`:f${i}`] = value;
    sets.push(`#f${i} = :f${i}`);
  });
  const from = change.from.map((status, i) => {
    values[`:from${i}`] = status;
    return `:from${i}`;
  });
  const update = {
    UpdateExpression: `SET ${sets.join(', ')}${schedulable ? '' : ' REMOVE gsi1pk, gsi1sk'}`,
    ConditionExpression: `attribute_exists(pk) AND #status IN (${from.join(', ')})`,
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
  if (!change.also?.length) return batches.update([workspaceId, batchCallId], update);
  try {
    // With the agent references released in the same transaction: only the move that wins releases them.
    await table.transact([{ Update: { ...update, Key: batches.key(workspaceId, batchCallId) } }, ...change.also]);
  } catch (error) {
    if (error instanceof TransactionCancelled) return undefined;
    throw error;
  }
  return getBatch(workspaceId, batchCallId);
}

/** Moves a schedulable batch's entry in the due index (it waits for its window). */
export async function setBatchDue(workspaceId: string, batchCallId: string, dueMs: number): Promise<void> {
  // Only while it is in the due index: a batch that left it meanwhile stays out. The shard is
  // written too, so a batch indexed before a change of BATCH_DUE_SHARDS moves to its new one.
  const due = dueKeys(workspaceId, dueMs, batchCallId);
  await batches.update([workspaceId, batchCallId], {
    UpdateExpression: 'SET gsi1pk = :shard, gsi1sk = :due',
    ConditionExpression: 'attribute_exists(gsi1pk)',
    ExpressionAttributeValues: { ':shard': due.gsi1pk, ':due': due.gsi1sk },
  });
}

/**
 * Deletes the record as it was read (conditional on its status being unchanged), with
 * `also` (the agent references) in the same transaction; answers false when the status
 * moved meanwhile (read again and retry). From then on no task of it can be claimed.
 */
export async function deleteBatchRecordAsRead(workspaceId: string, read: BatchItem, also: readonly TransactOp[]): Promise<boolean> {
  try {
    await table.transact([
      {
        Delete: {
          Key: keys.batchCall(workspaceId, read.batch_call_id),
          ConditionExpression: 'attribute_exists(pk) AND #status = :status',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':status': read.status },
        },
      },
      ...also,
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

/** Removes the batch's partition (tasks, markers, counters). */
export async function deleteBatchPartition(workspaceId: string, batchCallId: string): Promise<void> {
  const items = await queryAll<ItemKey>(keys.batchPartition(workspaceId, batchCallId), 'pk, sk');
  await table.batchDelete(items.map(({ pk, sk }) => ({ pk, sk })));
}

/**
 * Batches indexed before the due index had shards sit in its old single partition, which no
 * pass reads: this moves up to `limit` of them to their workspace's shard (the entry keeps
 * its due time), so a deploy strands no planned or ongoing batch. Answers how many it moved.
 */
export async function rehomeUnshardedDueBatches(limit = 100): Promise<number> {
  const page = await table.queryPage<{ workspace_id: string; batch_call_id: string; gsi1sk: string }>({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.batchDueUnsharded().gsi1pk },
    Limit: limit,
  });
  await Promise.all(page.items.map((entry) => setBatchDue(entry.workspace_id, entry.batch_call_id, Number(entry.gsi1sk.split('#')[0]))));
  return page.items.length;
}

/** One shard of the due-batch index: every schedulable batch in it due at or before `nowMs` (all pages). */
export async function dueBatchEntries(shard: number, nowMs: number): Promise<{ workspace_id: string; batch_call_id: string }[]> {
  return table.queryAll<{ workspace_id: string; batch_call_id: string }>({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk < :upto',
    ExpressionAttributeValues: { ':pk': keys.batchDueIndex(shard).gsi1pk, ':upto': keys.batchDueSort(nowMs + 1, '') },
    ProjectionExpression: 'workspace_id, batch_call_id',
  });
}

/** Whether one shard of the due-batch index has a batch due at or before `nowMs` (one read of one entry). */
export async function anyBatchDue(shard: number, nowMs: number): Promise<boolean> {
  const page = await table.queryPage({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk < :upto',
    ExpressionAttributeValues: { ':pk': keys.batchDueIndex(shard).gsi1pk, ':upto': keys.batchDueSort(nowMs + 1, '') },
    ProjectionExpression: 'batch_call_id',
    Limit: 1,
  });
  return page.items.length > 0;
}

// ── Tasks ──────────────────────────────────────────────────────────────────────────

/** Batch writes in flight at once while a batch's tasks are written. */
const WRITE_PARALLELISM = 4;

/**
 * Writes the tasks, each pending (its item and its PENDING marker), with batch writes of 25:
 * the puts are unconditional (a new batch's IDs), so a transaction would buy nothing the
 * caller relies on (createBatch writes the record last and removes the tasks if a write
 * fails) and would cost twice the write units and several times the time.
 */
export async function writeTasks(workspaceId: string, batchCallId: string, tasks: readonly NewTask[]): Promise<void> {
  const items = tasks.flatMap((task) => [
    { ...task, ...keys.batchTask(workspaceId, batchCallId, task.task_index), status: 'pending' },
    { ...keys.batchPendingTask(workspaceId, batchCallId, task.task_index), task_index: task.task_index },
  ]);
  const slice = Math.ceil(items.length / WRITE_PARALLELISM / 25) * 25;
  const slices = Array.from({ length: Math.ceil(items.length / slice) }, (_, i) => items.slice(i * slice, (i + 1) * slice));
  await Promise.all(slices.map((part) => table.batchPut(part)));
}

export const allTasks = (workspaceId: string, batchCallId: string) => queryAll<TaskItem>(keys.batchTasks(workspaceId, batchCallId));

/** The first `limit` pending tasks' indexes, in order. */
export async function pendingTaskIndexes(workspaceId: string, batchCallId: string, limit: number): Promise<number[]> {
  if (limit <= 0) return [];
  const partition = keys.batchPendingTasks(workspaceId, batchCallId);
  const page = await table.queryPage<{ task_index: number }>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ProjectionExpression: 'task_index',
    Limit: limit,
  });
  return page.items.map((item) => item.task_index);
}

export const openClaims = (workspaceId: string, batchCallId: string) => queryAll<ClaimItem>(keys.batchTaskClaims(workspaceId, batchCallId));

export const getTasks = (workspaceId: string, batchCallId: string, indexes: readonly number[]) =>
  table.batchGet<TaskItem>(indexes.map((index) => keys.batchTask(workspaceId, batchCallId, index)));

export const getTask = (workspaceId: string, batchCallId: string, index: number) => table.get<TaskItem>(keys.batchTask(workspaceId, batchCallId, index));

/**
 * Claims a pending task for one dial: its PENDING marker goes, a CLAIM marker comes, the
 * task becomes `dialing` with the claim's time and token, and all only while the batch is
 * still schedulable. Of concurrent claimers exactly one wins; answers whether it was this one.
 */
export async function claimTask(workspaceId: string, batchCallId: string, index: number, claimedAt: number, token: string): Promise<boolean> {
  try {
    await table.transact([
      { Delete: { Key: keys.batchPendingTask(workspaceId, batchCallId, index), ConditionExpression: 'attribute_exists(pk)' } },
      {
        Put: {
          Item: { ...keys.batchTaskClaim(workspaceId, batchCallId, index), task_index: index, claimed_at: claimedAt, claim_token: token },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      {
        Update: {
          Key: keys.batchTask(workspaceId, batchCallId, index),
          UpdateExpression: 'SET #status = :dialing, claimed_at = :at, claim_token = :token',
          ConditionExpression: '#status = :pending',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':dialing': 'dialing', ':pending': 'pending', ':at': claimedAt, ':token': token },
        },
      },
      {
        ConditionCheck: {
          Key: keys.batchCall(workspaceId, batchCallId),
          ConditionExpression: '#status IN (:planned, :ongoing)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':planned': 'planned', ':ongoing': 'ongoing' },
        },
      },
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

/**
 * Resolves a claimed task (`dialing`) once: its final status with its call and error, its
 * CLAIM marker removed and its counter bumped, in one transaction. Answers false when the
 * task was no longer dialing (another pass resolved it, or the batch was deleted).
 */
export async function resolveTask(
  workspaceId: string,
  batchCallId: string,
  index: number,
  outcome: { status: Extract<TaskStatus, 'called' | 'failed' | 'skipped'>; callId?: string; error?: string; counter?: CounterField },
): Promise<boolean> {
  const sets = ['#status = :to'];
  const values: Record<string, unknown> = { ':to': outcome.status, ':dialing': 'dialing' };
  if (outcome.callId) {
    sets.push('call_id = :call');
    values[':call'] = outcome.callId;
  }
  if (outcome.error) {
    sets.push('#error = :error');
    values[':error'] = outcome.error;
  }
  const ops: TransactOp[] = [
    {
      Update: {
        Key: keys.batchTask(workspaceId, batchCallId, index),
        UpdateExpression: `SET ${sets.join(', ')} REMOVE claim_token`,
        ConditionExpression: '#status = :dialing',
        ExpressionAttributeNames: { '#status': 'status', ...(outcome.error ? { '#error': 'error' } : {}) },
        ExpressionAttributeValues: values,
      },
    },
    { Delete: { Key: keys.batchTaskClaim(workspaceId, batchCallId, index) } },
  ];
  if (outcome.counter) {
    ops.push({
      Update: {
        Key: keys.batchCounters(workspaceId, batchCallId),
        UpdateExpression: 'ADD #counter :one',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#counter': outcome.counter },
        ExpressionAttributeValues: { ':one': 1 },
      },
    });
  }
  try {
    await table.transact(ops);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled && !error.conflicted) return false;
    throw error;
  }
}

/** Gives a claimed task back (it could not be dialled yet: calls per second, capacity). Only its claimer can. */
export async function releaseTask(workspaceId: string, batchCallId: string, index: number, token: string): Promise<boolean> {
  try {
    await table.transact([
      {
        Update: {
          Key: keys.batchTask(workspaceId, batchCallId, index),
          UpdateExpression: 'SET #status = :pending REMOVE claim_token, claimed_at',
          ConditionExpression: '#status = :dialing AND claim_token = :token',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':pending': 'pending', ':dialing': 'dialing', ':token': token },
        },
      },
      { Delete: { Key: keys.batchTaskClaim(workspaceId, batchCallId, index) } },
      { Put: { Item: { ...keys.batchPendingTask(workspaceId, batchCallId, index), task_index: index } } },
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

/** How many tasks are pending (their PENDING markers; keys only). */
export async function countPending(workspaceId: string, batchCallId: string): Promise<number> {
  return (await queryAll(keys.batchPendingTasks(workspaceId, batchCallId), 'sk')).length;
}

/** Adds to one of the batch's counters. */
export async function addToCounter(workspaceId: string, batchCallId: string, field: CounterField, amount: number): Promise<void> {
  await table.update({
    Key: keys.batchCounters(workspaceId, batchCallId),
    UpdateExpression: 'ADD #counter :amount',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { '#counter': field },
    ExpressionAttributeValues: { ':amount': amount },
  });
}

/** The task's call connected: counted once (the task's `picked_up` flag is the guard). */
export async function countPickedUp(workspaceId: string, batchCallId: string, index: number, callId: string): Promise<void> {
  try {
    await table.transact([
      {
        Update: {
          Key: keys.batchTask(workspaceId, batchCallId, index),
          UpdateExpression: 'SET picked_up = :yes',
          ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(picked_up) AND (attribute_not_exists(call_id) OR call_id = :call)',
          ExpressionAttributeValues: { ':yes': true, ':call': callId },
        },
      },
      {
        Update: {
          Key: keys.batchCounters(workspaceId, batchCallId),
          UpdateExpression: 'ADD picked_up_count :one',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeValues: { ':one': 1 },
        },
      },
    ]);
  } catch (error) {
    if (!(error instanceof TransactionCancelled) || error.conflicted) throw error;
  }
}

/**
 * The task's call was analysed: `successful` follows the latest verdict (an analysis can be
 * rerun) and the counter moves with it, conditional on the verdict read. Answers false when
 * the task changed meanwhile (the caller reads again).
 */
export async function countSuccessful(
  workspaceId: string,
  batchCallId: string,
  task: TaskItem,
  successful: boolean,
): Promise<boolean> {
  const was = task.successful === true;
  const delta = (successful ? 1 : 0) - (was ? 1 : 0);
  const ops: TransactOp[] = [
    {
      Update: {
        Key: keys.batchTask(workspaceId, batchCallId, task.task_index),
        UpdateExpression: 'SET successful = :now',
        ConditionExpression:
          task.successful === undefined ? 'attribute_exists(pk) AND attribute_not_exists(successful)' : 'attribute_exists(pk) AND successful = :was',
        ExpressionAttributeValues: { ':now': successful, ...(task.successful === undefined ? {} : { ':was': task.successful }) },
      },
    },
  ];
  if (delta !== 0) {
    ops.push({
      Update: {
        Key: keys.batchCounters(workspaceId, batchCallId),
        UpdateExpression: 'ADD successful_count :delta',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':delta': delta },
      },
    });
  }
  try {
    await table.transact(ops);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled && !error.conflicted) return false;
    throw error;
  }
}

// ---------------------------------------------------------------------------------------
// A privacy erase (shared/account-data/privacy.ts, through index.ts)

/**
 * Batch-call tasks to `e164` in every batch of the workspace: a task not yet claimed is
 * skipped (its pending marker removed, the batch's skipped count raised, in one transaction,
 * so the scheduler never dials it); every task to the number then has its number, variables,
 * metadata and SIP headers replaced (`masked`). Answers how many tasks were rewritten.
 */
export async function eraseNumberFromBatchTasks(workspaceId: string, e164: string, masked: string): Promise<number> {
  const batches = keys.batchCalls(workspaceId);
  const batchIds = (
    await table.queryAll<{ batch_call_id: string }>({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': batches.pk, ':prefix': batches.skPrefix },
      ProjectionExpression: 'batch_call_id',
    })
  ).map((batch) => batch.batch_call_id);
  let rewritten = 0;
  for (const batchCallId of batchIds) {
    const tasks = keys.batchTasks(workspaceId, batchCallId);
    const matching = await table.queryAll<{ task_index: number; status: string }>({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      FilterExpression: 'to_number = :number',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':pk': tasks.pk, ':prefix': tasks.skPrefix, ':number': e164 },
      ProjectionExpression: 'task_index, #status',
    });
    for (const task of matching) {
      const redact = {
        UpdateExpression: 'SET to_number = :masked, retell_llm_dynamic_variables = :empty, metadata = :null REMOVE custom_sip_headers',
        values: { ':masked': masked, ':empty': {}, ':null': null },
      };
      if (task.status === 'pending') {
        try {
          await table.transact([
            { Delete: { Key: keys.batchPendingTask(workspaceId, batchCallId, task.task_index), ConditionExpression: 'attribute_exists(pk)' } },
            {
              Update: {
                Key: keys.batchTask(workspaceId, batchCallId, task.task_index),
                UpdateExpression: `${redact.UpdateExpression.replace('SET ', 'SET #status = :skipped, #error = :why, ')}`,
                ConditionExpression: '#status = :pending',
                ExpressionAttributeNames: { '#status': 'status', '#error': 'error' },
                ExpressionAttributeValues: { ...redact.values, ':skipped': 'skipped', ':pending': 'pending', ':why': 'Erased by a privacy request' },
              },
            },
            {
              Update: {
                Key: keys.batchCounters(workspaceId, batchCallId),
                UpdateExpression: 'ADD skipped_count :one',
                ConditionExpression: 'attribute_exists(pk)',
                ExpressionAttributeValues: { ':one': 1 },
              },
            },
          ]);
          rewritten++;
          continue;
        } catch (error) {
          // Claimed by a scheduler pass meanwhile: it is being dialled; its number is redacted below.
          if (!(error instanceof TransactionCancelled)) throw error;
        }
      }
      await table.update({
        Key: keys.batchTask(workspaceId, batchCallId, task.task_index),
        UpdateExpression: redact.UpdateExpression,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: redact.values,
      });
      rewritten++;
    }
  }
  return rewritten;
}
