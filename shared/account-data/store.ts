import { notFound } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { acquireJobLease, readJobCursor, releaseJobLease, saveJobCursor } from '../platform/store/job-lease.ts';
import { listingCountsComplete, markListingCountsComplete, type ListingBackfillPosition } from '../platform/store/listing-count.ts';
import { defineEntity, table, type TransactOp } from '../platform/store/table.ts';
import type { UploadCheckpoint } from '../platform/aws/object-store.ts';
import type { ErasureReport, ExportFormat, ExportStatus, ExportType, RetentionReport } from './schemas.ts';

/*
 * The account-data items (docs/data-model.md):
 * - exports, `WS#<ws>#EXPORT` / `EXPORT#<id>` (time-ordered IDs, newest first), TTL with their file;
 * - assets, `WS#<ws>#ASSET` / `ASSET#<id>`, and their public pointer `ASSETPUB#<id>` (the
 *   public route has no workspace), written and deleted together;
 * - privacy requests, `WS#<ws>#PRIVACY` / `REQ#<id>`;
 * - the day's retention sweep, `RETENTIONSWEEP#<day>`;
 * - the listing counters' backfill: its lease and cursor (`LEASE#listing-backfill`), and each
 *   workspace's marker once its history is counted (`WS#<ws>#COUNT` / `COMPLETE`).
 * Items of other domains (the workspace item's reliability settings, batch tasks, SMS chats
 * and threads, audit entries, log entries, agent heads) are reached through those domains'
 * index.ts only (privacy.ts, retention.ts, settings.ts), never through keys here.
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
  return exportsEntity.update([workspaceId, exportId], {
    UpdateExpression: 'SET #status = :running, lease_token = :token, lease_until = :until, started_timestamp = if_not_exists(started_timestamp, :now)',
    ConditionExpression: '#status = :pending OR (#status = :running AND (attribute_not_exists(lease_until) OR lease_until < :now))',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':running': 'running', ':pending': 'pending', ':now': nowMs, ':token': token, ':until': untilMs },
  });
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
  const recorded = await exportsEntity.update([workspaceId, exportId], {
    UpdateExpression: checkpoint ? 'SET row_count = :rows, checkpoint = :checkpoint' : 'SET row_count = :rows',
    ConditionExpression: '#status = :running AND lease_token = :token',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':rows': rowCount, ':running': 'running', ':token': token, ...(checkpoint ? { ':checkpoint': checkpoint } : {}) },
  });
  return recorded !== undefined;
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
  const finished = await exportsEntity.update([workspaceId, exportId], {
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
  return finished !== undefined;
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

const retentionSweeps = defineEntity<RetentionSweepItem, [day: string]>({
  key: keys.retentionSweep,
  notFound: (day) => notFound(`No retention sweep for ${day}`),
});

export const getRetentionSweep = (day: string) => retentionSweeps.get(day);

/** The day's sweep, created on its first message (a second creation finds the first). */
export async function createRetentionSweep(item: RetentionSweepItem): Promise<RetentionSweepItem> {
  if (await retentionSweeps.putIf(item, [item.day])) return item;
  return retentionSweeps.mustGet(item.day);
}

/** Takes the sweep's lease unless another run holds one that has not expired; answers the item as leased. */
export function takeRetentionSweepLease(day: string, token: string, nowMs: number, untilMs: number): Promise<RetentionSweepItem | undefined> {
  return retentionSweeps.update([day], {
    UpdateExpression: 'SET lease_token = :token, lease_until = :until ADD runs :one',
    ConditionExpression: '#status = :running AND (attribute_not_exists(lease_until) OR lease_until < :now)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':token': token, ':until': untilMs, ':now': nowMs, ':running': 'running', ':one': 1 },
  });
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


// ── The listing counters' backfill ─────────────────────────────────────────────────────

/** Where the backfill stands: the workspace it counts and its position, or that it is done. */
export interface ListingBackfillCursor {
  done?: true;
  /** When the job first ran: it counts nothing until the deploy's traffic shift is surely over. */
  first_run_timestamp?: number;
  workspace_after?: string;
  /** Whether this round marked a workspace (a round that marks none ends the backfill). */
  marked_this_round?: boolean;
  current?: { workspace_id: string; listing: 'calls' | 'chats'; position: ListingBackfillPosition };
}

/** The backfill job's lease and cursor (one item each, shared by every run). */
export function listingBackfillState(job: string) {
  return {
    cursor: async () => (await readJobCursor(job)) as ListingBackfillCursor | undefined,
    save: (cursor: ListingBackfillCursor) => saveJobCursor(job, { ...cursor }),
    lease: (slot: number, holder: string, leaseMs: number) => acquireJobLease(job, slot, holder, leaseMs),
    release: (slot: number, holder: string) => releaseJobLease(job, slot, holder),
  };
}

/** Whether the workspace's listing counters hold its whole history. */
export const workspaceListingsCounted = (workspaceId: string) => listingCountsComplete(keys.listingCountsComplete(workspaceId));

/** Records that they do, once the backfill has counted what was stored before them. */
export const markWorkspaceListingsCounted = (workspaceId: string, nowMs: number) => markListingCountsComplete(keys.listingCountsComplete(workspaceId), nowMs);
