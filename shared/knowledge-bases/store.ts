import { conflict, notFound, NotFound } from '../platform/errors.ts';
import { knowledgeBaseObjectStore } from '../platform/aws/object-store.ts';
import { keys, objectKeys } from '../platform/store/keys.ts';
import { ConditionFailed, defineEntity, table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';

/*
 * The knowledge bases' items (docs/data-model.md):
 * - the knowledge base, `WS#<ws>` / `KB#<id>` (the key repair already reads), with its
 *   status, `generation` (bumped by every change of its sources: each queued ingestion
 *   names the generation it finishes) and the current index's object key;
 * - its sources, `WS#<ws>#KB#<id>` / `SOURCE#<id>`: what each is, its status and error;
 * - retrievals, `WS#<ws>#KBRET#<call_id>` / `R#<time-ordered id>`: retrieval-store.ts.
 * Objects (originals, extracted text, chunks, the index) live in the knowledge-base bucket
 * under `knowledge-bases/<ws>/<kb>/` (objectKeys).
 */

export type KbStatus = 'in_progress' | 'complete' | 'error' | 'refreshing_in_progress';
type SourceType = 'document' | 'text' | 'url';
type SourceStatus = 'in_progress' | 'complete' | 'error';

export interface KnowledgeBaseItem {
  type: 'knowledge_base';
  knowledge_base_id: string;
  workspace_id: string;
  knowledge_base_name: string;
  enable_auto_refresh: boolean;
  max_chunk_size: number;
  min_chunk_size: number;
  /** The ID it had in the account it was imported from (schemas.ts importedFrom). */
  imported_from?: string;
  status: KbStatus;
  /** Bumped by every change of the sources; an ingestion finishes only the generation it was queued for. */
  generation: number;
  /** The generation the current index was built from, and its object key. */
  index_generation?: number;
  index_key?: string;
  chunk_count: number;
  error_messages: string[];
  last_refreshed_timestamp?: number;
  created_timestamp: number;
  user_modified_timestamp: number;
  /** With enable_auto_refresh: the daily sweep's index entry (keys.kbRefreshDue), sparse. */
  gsi1pk?: string;
  gsi1sk?: string;
}

export interface SourceItem {
  source_id: string;
  knowledge_base_id: string;
  workspace_id: string;
  type: SourceType;
  status: SourceStatus;
  title?: string;
  filename?: string;
  content_type?: string;
  file_size?: number;
  url?: string;
  /** SHA-256 of the extracted text: a refresh re-indexes a source only when it changed. */
  content_hash?: string;
  chunk_count?: number;
  pages?: string[];
  error_message?: string;
  /** A synced source's document: its sync, the vendor's document ID and version (a changed version is re-fetched). */
  sync_id?: string;
  external_id?: string;
  external_version?: string;
  created_timestamp: number;
  updated_timestamp: number;
}

type Keyed = { pk: string; sk: string };

/** enable_auto_refresh: a knowledge base is refreshed by the daily sweep once its last refresh is a day old. */
export const AUTO_REFRESH_MS = 24 * 60 * 60 * 1000;

export const knowledgeBases = defineEntity<KnowledgeBaseItem & Keyed, [workspaceId: string, knowledgeBaseId: string]>({
  key: keys.knowledgeBase,
  notFound: (_workspaceId, id) => notFound(`Knowledge base ${id} not found`),
  exists: () => conflict(),
});

export const sources = defineEntity<SourceItem & Keyed, [workspaceId: string, knowledgeBaseId: string, sourceId: string]>({
  key: keys.knowledgeBaseSource,
  notFound: (_workspaceId, _kb, sourceId) => notFound(`Source ${sourceId} not found`),
});

export async function listKnowledgeBaseItems(workspaceId: string): Promise<KnowledgeBaseItem[]> {
  const partition = keys.workspaceKnowledgeBases(workspaceId);
  return table.queryAll<KnowledgeBaseItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
}

export async function listSourceItems(workspaceId: string, knowledgeBaseId: string): Promise<SourceItem[]> {
  const partition = keys.knowledgeBaseSources(workspaceId, knowledgeBaseId);
  const items = await table.queryAll<SourceItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
  return items.sort((a, b) => a.created_timestamp - b.created_timestamp || a.source_id.localeCompare(b.source_id));
}

const strip = <T extends object>(item: T & Partial<Keyed>): T => {
  const { pk: _pk, sk: _sk, ...rest } = item;
  return rest as T;
};

/** The knowledge base and its sources in one transaction (at most 100 operations: 99 sources a write). */
export async function putKnowledgeBase(item: KnowledgeBaseItem, newSources: SourceItem[], extraOps: TransactOp[] = []): Promise<void> {
  const due = item.enable_auto_refresh ? keys.kbRefreshDue(item.created_timestamp + AUTO_REFRESH_MS, item.workspace_id, item.knowledge_base_id) : {};
  try {
    await table.transact([
      knowledgeBases.createOp({ ...item, ...due }, item.workspace_id, item.knowledge_base_id),
      ...newSources.map((source) => sources.createOp(source, source.workspace_id, source.knowledge_base_id, source.source_id)),
      ...extraOps,
    ]);
  } catch (error) {
    if (error instanceof TransactionCancelled && extraOps.length > 0) throw conflict('An upload named here was already used or has expired; upload the file again');
    throw error;
  }
}

/**
 * New sources and the knowledge base's next generation in one transaction, conditional on
 * the knowledge base still existing. Answers the new generation.
 */
export async function addSourceItems(
  workspaceId: string,
  knowledgeBaseId: string,
  newSources: SourceItem[],
  status: KbStatus,
  nowMs: number,
  extraOps: TransactOp[] = [],
): Promise<number> {
  const kb = await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
  const next = kb.generation + 1;
  const ops: TransactOp[] = [
    {
      Update: {
        Key: keys.knowledgeBase(workspaceId, knowledgeBaseId),
        UpdateExpression: 'SET generation = :next, #status = :status, user_modified_timestamp = :now',
        ConditionExpression: 'generation = :read',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':next': next, ':read': kb.generation, ':status': status, ':now': nowMs },
      },
    },
    ...newSources.map((source) => sources.createOp(source, workspaceId, knowledgeBaseId, source.source_id)),
    ...extraOps,
  ];
  try {
    await table.transact(ops);
  } catch (error) {
    if (error instanceof TransactionCancelled) {
      const failed = error.failedAt;
      if (failed.some((index) => index > newSources.length)) throw conflict('An upload named here was already used or has expired; upload the file again');
      throw conflict(`Knowledge base ${knowledgeBaseId} changed meanwhile; retry`);
    }
    throw error;
  }
  return next;
}

/** Bumps the generation (a refresh or a deleted source) and sets the status; answers the new generation. */
export async function nextGeneration(workspaceId: string, knowledgeBaseId: string, status: KbStatus, nowMs: number): Promise<number> {
  const updated = await knowledgeBases.update([workspaceId, knowledgeBaseId], {
    UpdateExpression: 'SET generation = generation + :one, #status = :status, user_modified_timestamp = :now',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':one': 1, ':status': status, ':now': nowMs },
  }, () => {
    throw notFound(`Knowledge base ${knowledgeBaseId} not found`);
  });
  return updated!.generation;
}

export async function updateKnowledgeBaseFields(
  workspaceId: string,
  knowledgeBaseId: string,
  fields: Partial<Pick<KnowledgeBaseItem, 'knowledge_base_name' | 'enable_auto_refresh'>>,
  nowMs: number,
): Promise<KnowledgeBaseItem> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':now': nowMs };
  const sets = ['user_modified_timestamp = :now'];
  const removes: string[] = [];
  for (const [field, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    names[`#${field}`] = field;
    values[`:${field}`] = value;
    sets.push(`#${field} = :${field}`);
  }
  if (fields.enable_auto_refresh === false) removes.push('gsi1pk', 'gsi1sk');
  if (fields.enable_auto_refresh === true) {
    // Due a day after the last refresh (or now, when that is past): the daily sweep's entry.
    const kb = await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
    const due = keys.kbRefreshDue((kb.last_refreshed_timestamp ?? kb.created_timestamp) + AUTO_REFRESH_MS, workspaceId, knowledgeBaseId);
    values[':gsi1pk'] = due.gsi1pk;
    values[':gsi1sk'] = due.gsi1sk;
    sets.push('gsi1pk = :gsi1pk', 'gsi1sk = :gsi1sk');
  }
  const updated = await knowledgeBases.update([workspaceId, knowledgeBaseId], {
    UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
    ConditionExpression: 'attribute_exists(pk)',
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: values,
  }, () => {
    throw notFound(`Knowledge base ${knowledgeBaseId} not found`);
  });
  return strip(updated!);
}

/** A source's outcome; false when the source is gone (deleted meanwhile). */
export async function recordSource(
  workspaceId: string,
  knowledgeBaseId: string,
  sourceId: string,
  fields: Partial<Pick<SourceItem, 'status' | 'content_hash' | 'chunk_count' | 'pages' | 'error_message'>>,
  nowMs: number,
): Promise<boolean> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ':now': nowMs };
  const sets = ['updated_timestamp = :now'];
  const removes: string[] = [];
  for (const [field, value] of Object.entries(fields)) {
    names[`#${field}`] = field;
    if (value === undefined) {
      removes.push(`#${field}`);
      continue;
    }
    values[`:${field}`] = value;
    sets.push(`#${field} = :${field}`);
  }
  const written = await sources.update([workspaceId, knowledgeBaseId, sourceId], {
    UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  });
  return written !== undefined;
}

/**
 * Installs a new index built from generation `generation`, unless a newer one is in place.
 * When the generation is still the knowledge base's latest, the status is settled too.
 * Answers the index key it replaced (to delete), or undefined when this one lost.
 */
export async function installIndex(
  workspaceId: string,
  knowledgeBaseId: string,
  input: { generation: number; indexKey: string; chunkCount: number; errors: string[]; status: KbStatus; refreshed?: number },
): Promise<{ replaced?: string } | undefined> {
  // The item as it was (ALL_OLD: which index this one replaces), so not an entity update, which answers it as written.
  try {
    const old = await table.update<KnowledgeBaseItem>({
      Key: keys.knowledgeBase(workspaceId, knowledgeBaseId),
      UpdateExpression:
        'SET index_generation = :gen, index_key = :key, chunk_count = :count, error_messages = :errors' +
        (input.refreshed ? ', last_refreshed_timestamp = :refreshed' : ''),
      ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(index_generation) OR index_generation <= :gen)',
      ExpressionAttributeValues: {
        ':gen': input.generation,
        ':key': input.indexKey,
        ':count': input.chunkCount,
        ':errors': input.errors,
        ...(input.refreshed ? { ':refreshed': input.refreshed } : {}),
      },
      ReturnValues: 'ALL_OLD',
    });
    await settleStatus(workspaceId, knowledgeBaseId, input.generation, input.status);
    return { replaced: old?.index_key !== input.indexKey ? old?.index_key : undefined };
  } catch (error) {
    if (error instanceof ConditionFailed) return undefined;
    throw error;
  }
}

/** Sets the final status if no later change is waiting for its own ingestion. */
export async function settleStatus(workspaceId: string, knowledgeBaseId: string, generation: number, status: KbStatus): Promise<void> {
  await knowledgeBases.update([workspaceId, knowledgeBaseId], {
    UpdateExpression: 'SET #status = :status',
    ConditionExpression: 'generation = :gen',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: { ':status': status, ':gen': generation },
  });
}

/** Removes a source's item; false when it was not there. */
export async function removeSourceItem(workspaceId: string, knowledgeBaseId: string, sourceId: string): Promise<boolean> {
  try {
    await sources.remove(workspaceId, knowledgeBaseId, sourceId);
    return true;
  } catch (error) {
    if (error instanceof NotFound) return false;
    throw error;
  }
}

/** The knowledge base's record first (it disappears for every reader at once), then its sources. */
export async function removeKnowledgeBaseItems(workspaceId: string, knowledgeBaseId: string): Promise<SourceItem[]> {
  await knowledgeBases.remove(workspaceId, knowledgeBaseId);
  const items = await listSourceItems(workspaceId, knowledgeBaseId);
  await table.batchDelete(items.map((item) => keys.knowledgeBaseSource(workspaceId, knowledgeBaseId, item.source_id)));
  return items;
}

/** The knowledge base's objects: originals, text, chunks, index (the bucket adapter; keys from objectKeys). */
export const kbObjects = {
  putSource: (ws: string, kb: string, source: string, name: 'original' | 'content.txt' | 'chunks.json', body: Buffer, contentType: string) =>
    knowledgeBaseObjectStore().put(objectKeys.knowledgeBaseSource(ws, kb, source, name), body, contentType),
  getSource: (ws: string, kb: string, source: string, name: 'original' | 'content.txt' | 'chunks.json') =>
    knowledgeBaseObjectStore().get(objectKeys.knowledgeBaseSource(ws, kb, source, name)),
  deleteSource: (ws: string, kb: string, source: string) =>
    Promise.all((['original', 'content.txt', 'chunks.json'] as const).map((name) => knowledgeBaseObjectStore().delete(objectKeys.knowledgeBaseSource(ws, kb, source, name)))),
  sourceUrl: (ws: string, kb: string, source: string, name: 'original' | 'content.txt', expiresAt: number, downloadName?: string) =>
    knowledgeBaseObjectStore().signedUrl(objectKeys.knowledgeBaseSource(ws, kb, source, name), expiresAt, downloadName ? { downloadName } : {}),
  indexKey: (ws: string, kb: string, token: string) => objectKeys.knowledgeBaseIndex(ws, kb, token),
  putIndex: (key: string, body: Buffer) => knowledgeBaseObjectStore().put(key, body, 'application/json'),
  getIndex: (key: string) => knowledgeBaseObjectStore().get(key),
  delete: (key: string) => knowledgeBaseObjectStore().delete(key),
};

// ---------------------------------------------------------------------------------------
// Synced sources (docs/knowledge-bases.md, Synced sources)

type SyncStatus = 'in_progress' | 'complete' | 'error';
export type SyncTrigger = 'created' | 'connected' | 'manual' | 'auto_refresh';

export interface SyncItem {
  type: 'knowledge_base_sync';
  sync_id: string;
  workspace_id: string;
  knowledge_base_id: string;
  /** The integrations domain's kb_sync connection whose token the sync uses. */
  connection_id: string;
  provider: string;
  folder_id?: string;
  drive_id?: string;
  page_id?: string;
  /** Notion: a database whose pages are the documents (instead of page_id). */
  database_id?: string;
  /** Of the latest run. */
  status: SyncStatus;
  run_id?: string;
  run_started_timestamp?: number;
  last_sync_timestamp?: number;
  error_message?: string;
  document_count: number;
  created_timestamp: number;
  updated_timestamp: number;
}

interface SyncRunCounts {
  listed: number;
  added: number;
  updated: number;
  removed: number;
  unchanged: number;
  skipped: number;
  failed: number;
}

export interface SyncRunItem extends SyncRunCounts {
  run_id: string;
  sync_id: string;
  workspace_id: string;
  trigger: SyncTrigger;
  status: SyncStatus;
  /** The first 20 per-document failures, `<name>: <reason>`. */
  errors: string[];
  error_message?: string;
  /** Steps applied so far: a job message names the step it runs, and only the next one applies (a replay does nothing). */
  step?: number;
  /** The vendor listing's cursor of the next page (the vendor's page token and the folders still to walk). */
  cursor?: string;
  /** The last listing page has been read. */
  listing_done?: boolean;
  /** The current page's documents still to fetch (JSON of PendingDocument[]). */
  pending?: string;
  started_timestamp: number;
  finished_timestamp?: number;
  expires_at: number;
}

export const syncs = defineEntity<SyncItem & Keyed, [workspaceId: string, syncId: string]>({
  key: keys.kbSync,
  notFound: (_workspaceId, syncId) => notFound(`Sync ${syncId} not found`),
  exists: (_workspaceId, syncId) => conflict(`Sync ${syncId} already exists`),
});

export async function listSyncItems(workspaceId: string, knowledgeBaseId?: string): Promise<SyncItem[]> {
  const partition = keys.workspaceKbSyncs(workspaceId);
  const items = await table.queryAll<SyncItem & Keyed>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
  return items
    .map((item) => strip(item))
    .filter((item) => knowledgeBaseId === undefined || item.knowledge_base_id === knowledgeBaseId)
    .sort((a, b) => a.created_timestamp - b.created_timestamp || a.sync_id.localeCompare(b.sync_id));
}

/** Runs are kept 90 days. */
const SYNC_RUN_TTL_SECONDS = 90 * 86_400;
/** A run whose step has not finished within this is taken to have died: a new run may start. */
const SYNC_RUN_STALE_MS = 15 * 60_000;

/**
 * Starts a run: the sync becomes `in_progress` with the run's ID, conditional on no other
 * run being in progress (unless that one is stale), and the run's item is written. Answers
 * false when another run holds the sync.
 */
export async function beginSyncRun(item: SyncItem, runId: string, trigger: SyncTrigger, nowMs: number): Promise<boolean> {
  try {
    await table.transact([
      {
        Update: {
          Key: keys.kbSync(item.workspace_id, item.sync_id),
          UpdateExpression: 'SET #status = :running, run_id = :run, run_started_timestamp = :now, updated_timestamp = :now',
          ConditionExpression: 'attribute_exists(pk) AND (#status <> :running OR run_started_timestamp < :stale)',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: { ':running': 'in_progress', ':run': runId, ':now': nowMs, ':stale': nowMs - SYNC_RUN_STALE_MS },
        },
      },
      {
        Put: {
          Item: {
            ...keys.kbSyncRun(item.workspace_id, item.sync_id, runId),
            run_id: runId,
            sync_id: item.sync_id,
            workspace_id: item.workspace_id,
            trigger,
            status: 'in_progress',
            listed: 0,
            added: 0,
            updated: 0,
            removed: 0,
            unchanged: 0,
            skipped: 0,
            failed: 0,
            errors: [],
            started_timestamp: nowMs,
            expires_at: Math.floor(nowMs / 1000) + SYNC_RUN_TTL_SECONDS,
          },
        },
      },
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

export const getSyncRun = (workspaceId: string, syncId: string, runId: string) => table.get<SyncRunItem>(keys.kbSyncRun(workspaceId, syncId, runId));

/** The newest runs of a sync, newest first. */
export async function listSyncRuns(workspaceId: string, syncId: string, limit: number): Promise<SyncRunItem[]> {
  const partition = keys.kbSyncRuns(workspaceId, syncId);
  const page = await table.queryPage<SyncRunItem & Keyed>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
    ScanIndexForward: false,
    Limit: limit,
  });
  return page.items.map((item) => strip(item));
}

/** What one step of a run did: added to the run's counts, with where the listing goes next. */
export interface SyncStepProgress {
  counts: Partial<SyncRunCounts>;
  errors: string[];
  cursor?: string;
  listingDone: boolean;
  /** JSON of the documents still to fetch; undefined when none. */
  pending?: string;
}

/**
 * Applies one step to its run: its counts, errors and the listing's next state, conditional
 * on the run still being at `step` and in progress (a replayed or duplicate step that lost
 * changes nothing). False when it lost.
 */
export async function advanceSyncRun(
  workspaceId: string,
  syncId: string,
  runId: string,
  step: number,
  progress: SyncStepProgress,
  previousErrors: readonly string[],
): Promise<boolean> {
  const values: Record<string, unknown> = { ':next': step + 1, ':running': 'in_progress', ':done': progress.listingDone };
  const sets = ['step = :next', 'listing_done = :done'];
  const removes: string[] = [];
  const adds: string[] = [];
  for (const [field, value] of Object.entries(progress.counts)) {
    if (!value) continue;
    values[`:${field}`] = value;
    adds.push(`${field} :${field}`);
  }
  if (progress.cursor !== undefined) {
    values[':cursor'] = progress.cursor;
    sets.push('#cursor = :cursor');
  } else removes.push('#cursor');
  if (progress.pending !== undefined) {
    values[':pending'] = progress.pending;
    sets.push('pending = :pending');
  } else removes.push('pending');
  if (progress.errors.length) {
    values[':errors'] = [...previousErrors, ...progress.errors].slice(0, 20);
    sets.push('#errors = :errors');
  }
  if (step === 0) values[':zero'] = 0;
  try {
    await table.update({
      Key: keys.kbSyncRun(workspaceId, syncId, runId),
      UpdateExpression: [`SET ${sets.join(', ')}`, adds.length ? `ADD ${adds.join(', ')}` : '', removes.length ? `REMOVE ${removes.join(', ')}` : ''].filter(Boolean).join(' '),
      ConditionExpression: `#status = :running AND ${step === 0 ? '(attribute_not_exists(step) OR step = :zero)' : 'step = :step'}`,
      ExpressionAttributeNames: { '#status': 'status', '#cursor': 'cursor', ...(progress.errors.length ? { '#errors': 'errors' } : {}) },
      ExpressionAttributeValues: { ...values, ...(step === 0 ? {} : { ':step': step }) },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

/** Adds the removals of a run's last step (not conditional: a repeated last step removes nothing twice). */
export async function addRunRemovals(workspaceId: string, syncId: string, runId: string, removed: number): Promise<void> {
  if (!removed) return;
  await table.update({
    Key: keys.kbSyncRun(workspaceId, syncId, runId),
    UpdateExpression: 'ADD removed :removed',
    ExpressionAttributeValues: { ':removed': removed },
  });
}

/** Adds the documents one listing page found to what the run has seen (a set: a replay adds nothing new). */
export async function addSeenDocuments(workspaceId: string, syncId: string, runId: string, ids: readonly string[], nowMs: number): Promise<void> {
  if (!ids.length) return;
  await table.update({
    Key: keys.kbSyncRunSeen(workspaceId, syncId, runId),
    UpdateExpression: 'ADD ids :ids SET expires_at = :expires',
    ExpressionAttributeValues: { ':ids': new Set(ids), ':expires': Math.floor(nowMs / 1000) + SYNC_RUN_TTL_SECONDS },
  });
}

export async function seenDocuments(workspaceId: string, syncId: string, runId: string): Promise<Set<string>> {
  const item = await table.get<{ ids?: Set<string> }>(keys.kbSyncRunSeen(workspaceId, syncId, runId));
  return new Set(item?.ids ?? []);
}

export const forgetSeenDocuments = (workspaceId: string, syncId: string, runId: string) => table.delete({ Key: keys.kbSyncRunSeen(workspaceId, syncId, runId) });

/**
 * Ends a run: its item and the sync's status, conditional on the sync still running this
 * run (a replayed last step, or a run that a newer one replaced, changes nothing).
 */
export async function finishSyncRun(
  workspaceId: string,
  syncId: string,
  runId: string,
  outcome: { status: 'complete' | 'error'; error?: string; documentCount?: number },
  nowMs: number,
): Promise<boolean> {
  try {
    await table.transact([
      {
        Update: {
          Key: keys.kbSync(workspaceId, syncId),
          UpdateExpression:
            'SET #status = :status, updated_timestamp = :now' +
            (outcome.status === 'complete' ? ', last_sync_timestamp = :now' : '') +
            (outcome.documentCount !== undefined ? ', document_count = :count' : '') +
            (outcome.error ? ', error_message = :error' : ' REMOVE error_message'),
          ConditionExpression: 'run_id = :run AND #status = :running',
          ExpressionAttributeNames: { '#status': 'status' },
          ExpressionAttributeValues: {
            ':status': outcome.status,
            ':now': nowMs,
            ':run': runId,
            ':running': 'in_progress',
            ...(outcome.documentCount !== undefined ? { ':count': outcome.documentCount } : {}),
            ...(outcome.error ? { ':error': outcome.error } : {}),
          },
        },
      },
      {
        Update: {
          Key: keys.kbSyncRun(workspaceId, syncId, runId),
          UpdateExpression: 'SET #status = :status, finished_timestamp = :now' + (outcome.error ? ', error_message = :error' : '') + ' REMOVE pending, #cursor',
          ExpressionAttributeNames: { '#status': 'status', '#cursor': 'cursor' },
          ExpressionAttributeValues: { ':status': outcome.status, ':now': nowMs, ...(outcome.error ? { ':error': outcome.error } : {}) },
        },
      },
    ]);
    return true;
  } catch (error) {
    if (error instanceof TransactionCancelled) return false;
    throw error;
  }
}

/** A synced document's item after a new version was fetched: re-ingested (in_progress). */
export async function updateSyncedSource(
  workspaceId: string,
  knowledgeBaseId: string,
  sourceId: string,
  fields: { filename: string; content_type: string; file_size: number; external_version: string },
  nowMs: number,
): Promise<boolean> {
  const written = await sources.update([workspaceId, knowledgeBaseId, sourceId], {
    UpdateExpression:
      'SET filename = :filename, content_type = :type, file_size = :size, external_version = :version, #status = :status, updated_timestamp = :now REMOVE error_message',
    ConditionExpression: 'attribute_exists(pk)',
    ExpressionAttributeNames: { '#status': 'status' },
    ExpressionAttributeValues: {
      ':filename': fields.filename,
      ':type': fields.content_type,
      ':size': fields.file_size,
      ':version': fields.external_version,
      ':status': 'in_progress',
      ':now': nowMs,
    },
  });
  return written !== undefined;
}

/**
 * A synced document seen for the first time; false when the knowledge base already has it
 * (its source ID derives from the sync and the document, so a replayed or duplicate step
 * finds the one an earlier attempt wrote).
 */
export async function createSyncedSource(item: SourceItem): Promise<boolean> {
  try {
    await sources.create(item, item.workspace_id, item.knowledge_base_id, item.source_id);
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}

// ---------------------------------------------------------------------------------------
// The daily refresh sweep's index (gsi1, keys.kbRefreshDue)

/** Knowledge bases whose daily refresh is due before `beforeMs`, oldest due first. */
export async function queryDueKnowledgeBases(beforeMs: number, limit: number): Promise<{ workspaceId: string; knowledgeBaseId: string; gsi1sk: string }[]> {
  const page = await table.dueBefore(keys.kbRefreshDueBefore(beforeMs), limit);
  return page.items.map((item) => {
    const [, workspaceId, knowledgeBaseId] = item.gsi1sk.split('#') as [string, string, string];
    return { workspaceId, knowledgeBaseId, gsi1sk: item.gsi1sk };
  });
}

/**
 * Moves a knowledge base's next refresh to `nextDueMs`, conditional on the entry the sweep
 * read (two overlapping sweeps never refresh one knowledge base twice). False when it moved.
 */
export async function claimRefresh(workspaceId: string, knowledgeBaseId: string, readSort: string, nextDueMs: number): Promise<boolean> {
  const next = keys.kbRefreshDue(nextDueMs, workspaceId, knowledgeBaseId);
  const written = await knowledgeBases.update([workspaceId, knowledgeBaseId], {
    UpdateExpression: 'SET gsi1sk = :next',
    ConditionExpression: 'gsi1sk = :read AND enable_auto_refresh = :on',
    ExpressionAttributeValues: { ':next': next.gsi1sk, ':read': readSort, ':on': true },
  });
  return written !== undefined;
}
