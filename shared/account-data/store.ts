import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { ConditionFailed, defineEntity, table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import type { UploadCheckpoint } from '../platform/aws/object-store.ts';
import type { ErasureReport, ExportFormat, ExportStatus, ExportType, RetentionReport } from './schemas.ts';

/*
 * The account-data items (docs/data-model.md):
 * - exports, `WS#<ws>#EXPORT` / `EXPORT#<id>` (time-ordered IDs, newest first), TTL with their file;
 * - assets, `WS#<ws>#ASSET` / `ASSET#<id>`, and their public pointer `ASSETPUB#<id>` (the
 *   public route has no workspace), written and deleted together;
 * - privacy requests, `WS#<ws>#PRIVACY` / `REQ#<id>`;
 * - the reliability settings: attributes of the workspace item (`WS#<ws>`/`WORKSPACE`), where
 *   the conversation runtime's callers read `llm_token_limit` (shared/chats).
 */

export interface ExportItem {
  type: 'export';
  export_id: string;
  workspace_id: string;
  export_type: ExportType;
  format: ExportFormat;
  status: ExportStatus;
  start_timestamp?: number;
  end_timestamp?: number;
  filter_criteria?: Record<string, unknown>;
  row_count: number;
  size_bytes: number;
  object_key: string;
  failure_reason?: string;
  created_timestamp: number;
  started_timestamp?: number;
  completed_timestamp?: number;
  expires_at: number;
  /** Where a running export's file durably stands: a run that takes it over goes on from here. */
  checkpoint?: ExportCheckpoint;
  /** The running run's lease (a run that died is taken over once it expires). */
  lease_token?: string;
  lease_until?: number;
}

export interface ExportCheckpoint {
  upload: UploadCheckpoint;
  /** Rows in the durable bytes. */
  rows: number;
  /** The next page's cursor; absent with `finished`: every page is in. */
  next?: string;
  finished: boolean;
}

export const exportsEntity = defineEntity<ExportItem, [workspaceId: string, exportId: string]>({
  key: keys.exportJob,
  notFound: (_ws, id) => notFound(`Export ${id} not found`),
});

export async function putExport(item: ExportItem): Promise<void> {
  await table.put({ Item: { ...keys.exportJob(item.workspace_id, item.export_id), ...item }, ConditionExpression: 'attribute_not_exists(pk)' });
}

/**
 * Starts a pending export, or takes over a running one whose lease expired (its run died):
 * answers the item as leased, or undefined when another run holds it or it has ended.
 */
export async function takeExportLease(workspaceId: string, exportId: string, token: string, nowMs: number, untilMs: number): Promise<ExportItem | undefined> {
  try {
    return await table.update<ExportItem>({
      Key: keys.exportJob(workspaceId, exportId),
      UpdateExpression: 'SET #status = :running, lease_token = :token, lease_until = :until, started_timestamp = if_not_exists(started_timestamp, :now)',
      ConditionExpression: '#status = :pending OR (#status = :running AND (attribute_not_exists(lease_until) OR lease_until < :now))',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':running': 'running', ':pending': 'pending', ':now': nowMs, ':token': token, ':until': untilMs },
      ReturnValues: 'ALL_NEW',
    });
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

/**
 * Records a page's progress (the rows so far and, when the bytes are durable, the checkpoint),
 * conditional on still holding the lease: false when another run took it over.
 */
export async function recordExportProgress(
  workspaceId: string,
  exportId: string,
  token: string,
  rowCount: number,
  checkpoint: ExportCheckpoint | undefined,
): Promise<boolean> {
  try {
    await table.update({
      Key: keys.exportJob(workspaceId, exportId),
      UpdateExpression: checkpoint ? 'SET row_count = :rows, checkpoint = :checkpoint' : 'SET row_count = :rows',
      ConditionExpression: '#status = :running AND lease_token = :token',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':rows': rowCount, ':running': 'running', ':token': token, ...(checkpoint ? { ':checkpoint': checkpoint } : {}) },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** running → complete or failed (conditional: an export ends once). */
export async function finishExport(
  workspaceId: string,
  exportId: string,
  outcome: { status: 'complete'; rowCount: number; sizeBytes: number } | { status: 'failed'; reason: string },
  nowMs: number,
  /** The run's lease: only the run holding it ends a running export. */
  token?: string,
): Promise<boolean> {
  const complete = outcome.status === 'complete';
  try {
    await table.update({
      Key: keys.exportJob(workspaceId, exportId),
      UpdateExpression: `${
        complete
          ? 'SET #status = :status, row_count = :rows, size_bytes = :size, completed_timestamp = :now'
          : 'SET #status = :status, failure_reason = :reason, completed_timestamp = :now'
      } REMOVE checkpoint, lease_token, lease_until`,
      ConditionExpression: token ? '#status = :running AND lease_token = :token' : '#status IN (:pending, :running)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: {
        ':status': outcome.status,
        ':now': nowMs,
        ':running': 'running',
        ...(token ? { ':token': token } : { ':pending': 'pending' }),
        ...(complete ? { ':rows': outcome.rowCount, ':size': outcome.sizeBytes } : { ':reason': outcome.reason }),
      },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** A page of a workspace's exports by ID (time-ordered), after `after`. */
export async function queryExports(
  workspaceId: string,
  input: { limit: number; descending: boolean; after?: string },
): Promise<{ items: ExportItem[]; more: boolean }> {
  const partition = keys.exportJobs(workspaceId);
  const values: Record<string, unknown> = { ':pk': partition.pk, ':prefix': partition.skPrefix };
  const page = await table.queryPage<ExportItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: values,
    ScanIndexForward: !input.descending,
    Limit: input.limit + 1,
    ...(input.after ? { ExclusiveStartKey: keys.exportJob(workspaceId, input.after) } : {}),
  });
  return { items: page.items.slice(0, input.limit), more: page.items.length > input.limit };
}

export async function allExports(workspaceId: string): Promise<ExportItem[]> {
  const partition = keys.exportJobs(workspaceId);
  return table.queryAll<ExportItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
}

export const deleteExportItem = (workspaceId: string, exportId: string) => table.delete({ Key: keys.exportJob(workspaceId, exportId) });

// ---------------------------------------------------------------------------------------
// Assets

export interface AssetItem {
  type: 'asset';
  asset_id: string;
  workspace_id: string;
  content_type: string;
  kind: 'image' | 'audio';
  file_name: string;
  file_size: number;
  duration_ms?: number;
  object_key: string;
  created_timestamp: number;
}

export interface AssetPointer {
  asset_id: string;
  workspace_id: string;
  content_type: string;
  object_key: string;
}

export const assetsEntity = defineEntity<AssetItem, [workspaceId: string, assetId: string]>({
  key: keys.asset,
  notFound: (_ws, id) => notFound(`Asset ${id} not found`),
});

/** The record and its public pointer, in one transaction (both new), with `extraOps` (a presigned upload consumed). */
export async function putAsset(item: AssetItem, extraOps: readonly TransactOp[] = []): Promise<void> {
  const pointer: AssetPointer = { asset_id: item.asset_id, workspace_id: item.workspace_id, content_type: item.content_type, object_key: item.object_key };
  await table.transact([
    { Put: { Item: { ...keys.asset(item.workspace_id, item.asset_id), ...item }, ConditionExpression: 'attribute_not_exists(pk)' } },
    { Put: { Item: { ...keys.assetPublic(item.asset_id), ...pointer }, ConditionExpression: 'attribute_not_exists(pk)' } },
    ...extraOps,
  ]);
}

export const getAssetPointer = (assetId: string) => table.get<AssetPointer>(keys.assetPublic(assetId));

export async function queryAssets(workspaceId: string): Promise<AssetItem[]> {
  const partition = keys.assets(workspaceId);
  return table.queryAll<AssetItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
}

/** Deletes the record (it must exist) and the pointer together: the public URL stops with the record. */
export async function deleteAssetItems(workspaceId: string, assetId: string): Promise<void> {
  await table.transact([
    { Delete: { Key: keys.asset(workspaceId, assetId), ConditionExpression: 'attribute_exists(pk)' } },
    { Delete: { Key: keys.assetPublic(assetId), ConditionExpression: 'workspace_id = :ws', ExpressionAttributeValues: { ':ws': workspaceId } } },
  ]);
}

// ---------------------------------------------------------------------------------------
// Privacy requests

export interface PrivacyRequestItem {
  type: 'privacy_request';
  request_id: string;
  workspace_id: string;
  kind: 'delete_phone_number' | 'run_retention';
  status: 'pending' | 'running' | 'complete' | 'failed';
  /** Only while the erase is pending or running; removed when it ends. */
  phone_number?: string;
  phone_number_masked?: string;
  report?: ErasureReport | RetentionReport;
  failure_reason?: string;
  created_timestamp: number;
  completed_timestamp?: number;
}

export const privacyRequests = defineEntity<PrivacyRequestItem, [workspaceId: string, requestId: string]>({
  key: keys.privacyRequest,
  notFound: (_ws, id) => notFound(`Privacy request ${id} not found`),
});

export async function putPrivacyRequest(item: PrivacyRequestItem): Promise<void> {
  await table.put({ Item: { ...keys.privacyRequest(item.workspace_id, item.request_id), ...item }, ConditionExpression: 'attribute_not_exists(pk)' });
}

export async function markPrivacyRunning(workspaceId: string, requestId: string): Promise<void> {
  await table.update({
    Key: keys.privacyRequest(workspaceId, requestId),
    UpdateExpression: 'SET #status = :running',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':running': 'running' },
  });
}

/**
 * Ends a request with its report (or failure), removing the number it held, with the
 * audit entry in the same transaction (`audit`: the account domain's Put).
 */
export async function finishPrivacyRequest(
  workspaceId: string,
  requestId: string,
  outcome: { status: 'complete'; report: ErasureReport | RetentionReport } | { status: 'failed'; reason: string },
  nowMs: number,
  audit?: TransactOp,
): Promise<void> {
  const complete = outcome.status === 'complete';
  await table.transact([
    {
      Update: {
        Key: keys.privacyRequest(workspaceId, requestId),
        UpdateExpression: `SET #status = :status, completed_timestamp = :now, ${complete ? 'report = :report' : 'failure_reason = :reason'} REMOVE phone_number`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': outcome.status, ':now': nowMs, ...(complete ? { ':report': outcome.report } : { ':reason': outcome.reason }) },
      },
    },
    ...(audit ? [audit] : []),
  ]);
}

// ---------------------------------------------------------------------------------------
// Reliability settings (attributes of the workspace item)

export interface ReliabilityAttributes {
  llm_token_limit?: number;
  fallback_llm_model?: string | null;
  fallback_voice_ids?: string[];
}

export const reliabilityKey = (workspaceId: string) => keys.workspace(workspaceId);

/** The Update of the workspace item that sets the given settings (null removes the fallback model). */
export function reliabilityUpdate(workspaceId: string, input: ReliabilityAttributes): TransactOp {
  const sets: string[] = [];
  const removes: string[] = [];
  const values: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if (value === null) removes.push(name);
    else {
      sets.push(`${name} = :${name}`);
      values[`:${name}`] = value;
    }
  }
  const expression = [sets.length ? `SET ${sets.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].filter(Boolean).join(' ');
  return {
    Update: {
      Key: reliabilityKey(workspaceId),
      UpdateExpression: expression,
      ConditionExpression: 'attribute_exists(pk)',
      ...(Object.keys(values).length ? { ExpressionAttributeValues: values } : {}),
    },
  };
}

export const transact = (operations: TransactOp[]) => table.transact(operations);

// ---------------------------------------------------------------------------------------
// The daily retention sweep (shared/account-data/retention.ts)

/** Where a workspace's retention pass stands: its calls, then its chats, each after a cursor. */
export interface RetentionCursor {
  phase: 'calls' | 'chats';
  after?: string;
}

export interface RetentionSweepItem {
  type: 'retention_sweep';
  day: string;
  status: 'running' | 'complete';
  /** The last workspace finished (registry order); absent: none yet. */
  workspace_after?: string;
  /** The workspace being swept and where in it. */
  current?: { workspace_id: string; cursor: RetentionCursor };
  workspaces_examined: number;
  workspaces_swept: number;
  calls_deleted: number;
  chats_deleted: number;
  runs: number;
  lease_token?: string;
  lease_until?: number;
  started_timestamp: number;
  completed_timestamp?: number;
  expires_at: number;
}

export type SweepProgress = Pick<
  RetentionSweepItem,
  'workspace_after' | 'current' | 'workspaces_examined' | 'workspaces_swept' | 'calls_deleted' | 'chats_deleted'
>;

export const getRetentionSweep = (day: string) => table.get<RetentionSweepItem>(keys.retentionSweep(day));

/** The day's sweep, created on its first message (a second creation finds the first). */
export async function createRetentionSweep(item: RetentionSweepItem): Promise<RetentionSweepItem> {
  try {
    await table.put({ Item: { ...keys.retentionSweep(item.day), ...item }, ConditionExpression: 'attribute_not_exists(pk)' });
    return item;
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
    return (await getRetentionSweep(item.day))!;
  }
}

/** Takes the sweep's lease unless another run holds one that has not expired; answers the item as leased. */
export async function takeRetentionSweepLease(day: string, token: string, nowMs: number, untilMs: number): Promise<RetentionSweepItem | undefined> {
  try {
    return await table.update<RetentionSweepItem>({
      Key: keys.retentionSweep(day),
      UpdateExpression: 'SET lease_token = :token, lease_until = :until ADD runs :one',
      ConditionExpression: '#status = :running AND (attribute_not_exists(lease_until) OR lease_until < :now)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':token': token, ':until': untilMs, ':now': nowMs, ':running': 'running', ':one': 1 },
      ReturnValues: 'ALL_NEW',
    });
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

const SWEEP_PROGRESS_FIELDS = ['workspace_after', 'current', 'workspaces_examined', 'workspaces_swept', 'calls_deleted', 'chats_deleted'] as const;

/**
 * Records the sweep's progress (conditional on holding the lease): `release` also gives the
 * lease back, `complete` ends the day's sweep.
 */
export async function saveRetentionSweep(
  day: string,
  token: string,
  progress: SweepProgress,
  end: { release?: boolean; completeAt?: number } = {},
): Promise<void> {
  const sets: string[] = [];
  const removes: string[] = [];
  const values: Record<string, unknown> = { ':token': token };
  // Names through placeholders: `current` is one of DynamoDB's reserved words.
  const names: Record<string, string> = {};
  for (const field of SWEEP_PROGRESS_FIELDS) {
    names[`#${field}`] = field;
    const value = progress[field];
    if (value === undefined) removes.push(`#${field}`);
    else {
      sets.push(`#${field} = :${field}`);
      values[`:${field}`] = value;
    }
  }
  if (end.completeAt !== undefined) {
    names['#status'] = 'status';
    sets.push('#status = :complete', 'completed_timestamp = :now');
    values[':complete'] = 'complete';
    values[':now'] = end.completeAt;
  }
  if (end.release || end.completeAt !== undefined) removes.push('lease_token', 'lease_until');
  await table.update({
    Key: keys.retentionSweep(day),
    UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
    ConditionExpression: 'lease_token = :token',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  });
}

/**
 * Whether any of the workspace's voice or chat agents sets data_storage_retention_days (on
 * its latest version, which the head carries as `latest.data`): the daily sweep skips the others.
 */
export async function workspaceHasRetention(workspaceId: string): Promise<boolean> {
  for (const kind of ['agent', 'chat_agent'] as const) {
    const heads = keys.resourceHeads(workspaceId, kind);
    const found = await table.queryAll<{ sk: string }>({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      FilterExpression: 'attribute_type(latest.#data.data_storage_retention_days, :number)',
      ExpressionAttributeNames: { '#data': 'data' },
      ExpressionAttributeValues: { ':pk': heads.pk, ':prefix': heads.skPrefix, ':number': 'N' },
      ProjectionExpression: 'sk',
    });
    if (found.length) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------
// Erasing a number from the other records that quote it (shared/account-data/privacy.ts)

/**
 * Batch-call tasks to `e164` in every batch of the workspace: a task not yet claimed is
 * skipped (its pending marker removed, the batch's skipped count raised, in one transaction,
 * so the scheduler never dials it); every task to the number then has its number, variables,
 * metadata and SIP headers replaced (`masked`). Answers how many tasks were rewritten.
 */
export async function eraseBatchTasks(workspaceId: string, e164: string, masked: string): Promise<number> {
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

/** Audit entries of the workspace whose target is `e164` get the masked number instead. Answers how many. */
export async function maskAuditTargets(workspaceId: string, e164: string, masked: string): Promise<number> {
  const log = keys.auditLog(workspaceId);
  const entries = await table.queryAll<{ sk: string }>({
    KeyConditionExpression: 'pk = :pk',
    FilterExpression: 'target.id = :number',
    ExpressionAttributeValues: { ':pk': log.pk, ':number': e164 },
    ProjectionExpression: 'sk',
  });
  for (const entry of entries) {
    await table.update({
      Key: keys.auditEntry(workspaceId, entry.sk),
      UpdateExpression: 'SET target.id = :masked',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeValues: { ':masked': masked },
    });
  }
  return entries.length;
}

/** The workspace's chats with `e164` as their other party (SMS chats: the party index, gsi2). */
export async function chatIdsWithParty(workspaceId: string, e164: string): Promise<string[]> {
  const entries = await table.queryAll<{ chat_id?: string; type?: string }>({
    IndexName: 'gsi2',
    KeyConditionExpression: 'gsi2pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.partyConversations(workspaceId, e164).gsi2pk },
  });
  return entries.filter((entry) => entry.type === 'chat' && entry.chat_id).map((entry) => entry.chat_id!);
}

/** The SMS thread between a workspace number and the party, if it still points at `chatId` (its key holds the party's number). */
export async function deleteSmsThread(workspaceId: string, number: string, party: string, chatId: string): Promise<void> {
  try {
    await table.delete({ Key: keys.smsThread(workspaceId, number, party), ConditionExpression: 'chat_id = :chat', ExpressionAttributeValues: { ':chat': chatId } });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

/**
 * Deletes the entries of the workspace's logs that quote `text` anywhere (the webhook
 * delivery log, the telephony provider operation log, whose requests carry numbers and SMS
 * bodies): a log entry about the person goes whole. Read page by page; answers how many.
 */
export async function deleteLogEntriesMentioning(workspaceId: string, text: string): Promise<{ webhook_deliveries: number; provider_operations: number }> {
  const counts = { webhook_deliveries: 0, provider_operations: 0 };
  const logs = [
    ['webhook_deliveries', keys.webhookDeliveries(workspaceId).pk, (sk: string) => keys.webhookDelivery(workspaceId, sk)],
    ['provider_operations', keys.providerOperations(workspaceId).pk, (sk: string) => keys.providerOperation(workspaceId, sk)],
  ] as const;
  for (const [name, pk, keyOf] of logs) {
    let start: Record<string, unknown> | undefined;
    do {
      const page = await table.queryPage<Record<string, unknown> & { sk: string }>({
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': pk },
        Limit: 500,
        ...(start ? { ExclusiveStartKey: start } : {}),
      });
      for (const entry of page.items) {
        if (!JSON.stringify(entry).includes(text)) continue;
        await table.delete({ Key: keyOf(entry.sk) });
        counts[name]++;
      }
      start = page.lastKey;
    } while (start);
  }
  return counts;
}
