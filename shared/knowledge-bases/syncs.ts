import { createHash } from 'node:crypto';
import * as z from 'zod';
import { lazySchema } from '../platform/http/schemas.ts';
import { describeConnection, freshAccessToken, releaseKbSyncConnection } from '../integrations/index.ts';
import { queueNamed } from '../platform/aws/queue.ts';
import { ApiError, badRequest, conflict, notFound, NotFound } from '../platform/errors.ts';
import { idPrefix, newId, newTimeOrderedId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { DOCUMENT_PROVIDERS, documentStore, DocumentVendorFailed, type DocumentLocation, type DocumentProvider, type RemoteDocument } from '../vendors/documents/index.ts';
import { providerApiBase } from '../vendors/oauth/providers.ts';
import { CONTENT_TYPE, fileKind } from './extract.ts';
import { queueIngestion } from './ingest.ts';
import { MAX_FILE_BYTES, type AddSyncedSourceInput, type KnowledgeBaseSyncView } from './schemas.ts';
import {
  addRunRemovals,
  addSeenDocuments,
  advanceSyncRun,
  beginSyncRun,
  createSyncedSource,
  finishSyncRun,
  forgetSeenDocuments,
  getSyncRun,
  kbObjects,
  knowledgeBases,
  listSourceItems,
  listSyncItems,
  listSyncRuns,
  nextGeneration,
  removeSourceItem,
  seenDocuments,
  syncs,
  updateSyncedSource,
  type SourceItem,
  type SyncItem,
  type SyncRunItem,
  type SyncTrigger,
} from './store.ts';

/*
 * Synced sources (docs/knowledge-bases.md, Synced sources): a knowledge base keeps the
 * documents of a Google Drive folder, a SharePoint/OneDrive drive or folder, or a Notion page
 * (with its child pages and databases) or database through a kb_sync OAuth connection of its workspace. A run lists the
 * documents with a fresh access token (the integrations domain refreshes it first when it is
 * about to expire), fetches those whose version changed (Drive's modifiedTime and md5,
 * Graph's cTag, Notion's last_edited_time), stores each as a document source's original and
 * lets the ingestion (ingest.ts) extract, chunk and index it; documents that disappeared are
 * removed. A run is numbered steps on the kb-jobs queue (runSyncStep): each reads one page
 * of the vendor's listing when nothing is pending, fetches a few documents and queues the
 * next, so no step nears the function's timeout and no location is too large to page
 * through; the run item says which step is next, so a replayed step repeats nothing.
 */

export const SyncJobMessage = lazySchema(() =>
  z.object({
    kind: z.literal('sync'),
    workspace_id: z.string(),
    sync_id: z.string(),
    run_id: z.string(),
    /** The run's step this message runs (0, the first, when absent). */
    step: z.number().int().nonnegative().optional(),
  }),
);
export type SyncJobMessage = z.output<typeof SyncJobMessage>;
/** Sent by the integrations domain's OAuth callback for a kb_sync connection (shared/integrations/oauth.ts). */
export const ConnectedJobMessage = lazySchema(() => z.object({ kind: z.literal('connected'), workspace_id: z.string(), sync_id: z.string() }));
export type ConnectedJobMessage = z.output<typeof ConnectedJobMessage>;

/** Documents one step fetches at most (each up to 50 MB; at most 60 s each), FETCH_CONCURRENCY at once: 3 rounds, within the 300 s timeout. */
const FETCHES_PER_STEP = 12;
/** Documents whose listed size is at most SMALL_DOCUMENT_BYTES: up to this many a step (25 MB at most). */
const SMALL_FETCHES_PER_STEP = 100;
const SMALL_DOCUMENT_BYTES = 256 * 1024;
const FETCH_CONCURRENCY = 4;
/** Synced documents a knowledge base may hold, across its syncs (besides its MAX_SOURCES own sources). */
const MAX_SYNCED_SOURCES = 2000;
/** Files (supported or not) one run may list: a larger location fails the run (sync a smaller folder). */
const MAX_LISTED_PER_RUN = 10_000;
/** Synced sources a knowledge base may have. */
const MAX_SYNCS_PER_KB = 20;
/** Runs answered with each sync by list-knowledge-base-syncs. */
const RECENT_RUNS = 5;

const isDocumentProvider = (provider: string): provider is DocumentProvider => (DOCUMENT_PROVIDERS as readonly string[]).includes(provider);

function syncView(item: SyncItem, runs: SyncRunItem[]): KnowledgeBaseSyncView {
  return {
    sync_id: item.sync_id,
    knowledge_base_id: item.knowledge_base_id,
    provider: item.provider as DocumentProvider,
    connection_id: item.connection_id,
    ...(item.folder_id ? { folder_id: item.folder_id } : {}),
    ...(item.drive_id ? { drive_id: item.drive_id } : {}),
    ...(item.page_id ? { page_id: item.page_id } : {}),
    ...(item.database_id ? { database_id: item.database_id } : {}),
    status: item.status,
    ...(item.last_sync_timestamp !== undefined ? { last_sync_timestamp: item.last_sync_timestamp } : {}),
    ...(item.error_message ? { error_message: item.error_message } : {}),
    document_count: item.document_count,
    created_timestamp: item.created_timestamp,
    recent_runs: runs.map((run) => ({
      run_id: run.run_id,
      trigger: run.trigger,
      status: run.status,
      started_timestamp: run.started_timestamp,
      ...(run.finished_timestamp !== undefined ? { finished_timestamp: run.finished_timestamp } : {}),
      listed: run.listed,
      added: run.added,
      updated: run.updated,
      removed: run.removed,
      unchanged: run.unchanged,
      skipped: run.skipped,
      failed: run.failed,
      errors: run.errors ?? [],
      ...(run.error_message ? { error_message: run.error_message } : {}),
    })),
  };
}

const viewOf = async (item: SyncItem) => syncView(item, await listSyncRuns(item.workspace_id, item.sync_id, RECENT_RUNS));

/** The location a provider needs, from the request or the connection's sync_config (400 naming what is missing). */
function locationFor(provider: DocumentProvider, given: Partial<DocumentLocation>, fromConnection: Record<string, string>): DocumentLocation {
  const pick = (field: keyof DocumentLocation) => given[field] ?? fromConnection[field];
  const check = (field: keyof DocumentLocation, value: string | undefined) => {
    if (value !== undefined && !/^[A-Za-z0-9_!.-]{1,200}$/.test(value)) throw badRequest(`${field}: Must be an ID of the provider (letters, digits, _ ! . -)`);
    return value;
  };
  if (provider === 'google_drive') {
    const folder = check('folder_id', pick('folder_id'));
    if (!folder) throw badRequest('folder_id: Required for a google_drive synced source (the Drive folder to sync)');
    return { folder_id: folder };
  }
  if (provider === 'notion') {
    // The request's location wins whole: a page in the body does not inherit the connection's database, nor the reverse.
    const fromBody = given.page_id !== undefined || given.database_id !== undefined;
    const page = check('page_id', fromBody ? given.page_id : fromConnection.page_id);
    const database = check('database_id', fromBody ? given.database_id : fromConnection.database_id);
    if (page && database) throw badRequest('page_id: Give page_id or database_id for a notion synced source, not both');
    if (database) return { database_id: database };
    if (!page) throw badRequest('page_id: Required for a notion synced source (the page to sync, with its child pages), unless database_id names a database to sync');
    return { page_id: page };
  }
  const drive = check('drive_id', pick('drive_id'));
  const folder = check('folder_id', pick('folder_id'));
  return { ...(drive ? { drive_id: drive } : {}), ...(folder ? { folder_id: folder } : {}) };
}

/** A kb_sync connection of this workspace that can sync now (the 4xx a caller can act on otherwise). */
async function usableConnection(workspaceId: string, connectionId: string) {
  const connection = await describeConnection(workspaceId, connectionId);
  if (!connection) throw notFound(`Connection ${connectionId} not found (connect Google Drive, SharePoint or Notion with POST /oauth/start, target kb_sync)`);
  if (connection.target !== 'kb_sync' || !isDocumentProvider(connection.provider)) {
    throw badRequest(`connection_id: ${connectionId} is a ${connection.provider} ${connection.target} connection; synced sources use kb_sync connections of google_drive, sharepoint or notion`);
  }
  if (connection.status === 'needs_reconnect') {
    throw badRequest(`The ${connection.provider} connection needs to be reconnected: the provider revoked its authorization`);
  }
  return { ...connection, provider: connection.provider as DocumentProvider };
}

const sameLocation = (a: DocumentLocation, b: DocumentLocation) =>
  a.folder_id === b.folder_id && a.drive_id === b.drive_id && a.page_id === b.page_id && a.database_id === b.database_id;

async function createSync(
  workspaceId: string,
  knowledgeBaseId: string,
  connection: { connection_id: string; provider: DocumentProvider },
  location: DocumentLocation,
  syncId: string,
  nowMs: number,
): Promise<SyncItem> {
  const existing = await listSyncItems(workspaceId, knowledgeBaseId);
  if (existing.length >= MAX_SYNCS_PER_KB) throw badRequest(`A knowledge base has at most ${MAX_SYNCS_PER_KB} synced sources`);
  const twin = existing.find((sync) => sync.connection_id === connection.connection_id && sameLocation(sync, location));
  if (twin) throw conflict(`Knowledge base ${knowledgeBaseId} already syncs this location through ${connection.connection_id} (sync ${twin.sync_id})`);
  const item: SyncItem = {
    type: 'knowledge_base_sync',
    sync_id: syncId,
    workspace_id: workspaceId,
    knowledge_base_id: knowledgeBaseId,
    connection_id: connection.connection_id,
    provider: connection.provider,
    ...location,
    status: 'complete',
    document_count: 0,
    created_timestamp: nowMs,
    updated_timestamp: nowMs,
  };
  await syncs.create(item, workspaceId, syncId);
  return item;
}

/** Starts a run of the sync (its first step queued); 409 while another run is in progress. */
async function startRun(item: SyncItem, trigger: SyncTrigger, nowMs: number): Promise<SyncItem> {
  const runId = newTimeOrderedId('kbSyncRun', nowMs);
  if (!(await beginSyncRun(item, runId, trigger, nowMs))) throw conflict(`Sync ${item.sync_id} is already running; wait for it to finish`);
  const message: SyncJobMessage = { kind: 'sync', workspace_id: item.workspace_id, sync_id: item.sync_id, run_id: runId };
  await queueNamed('kb-jobs').send(message);
  return { ...item, status: 'in_progress', run_id: runId, run_started_timestamp: nowMs };
}

/** POST /add-knowledge-base-synced-source/{knowledge_base_id}: the sync, its first run started at once (201). */
export async function addSyncedSource(workspaceId: string, knowledgeBaseId: string, input: AddSyncedSourceInput, nowMs = Date.now()): Promise<KnowledgeBaseSyncView> {
  await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
  const connection = await usableConnection(workspaceId, input.connection_id);
  const location = locationFor(connection.provider, input, connection.sync_config ?? {});
  // The OAuth callback's sync ID names the connection: its first synced source takes that ID.
  const adopt = /^sync_[0-9a-f]{24}$/.test(connection.connection_id) && !(await syncs.get(workspaceId, connection.connection_id));
  const item = await createSync(workspaceId, knowledgeBaseId, connection, location, adopt ? connection.connection_id : newId('syncedSource'), nowMs);
  return viewOf(await startRun(item, 'created', nowMs));
}

/** GET /list-knowledge-base-syncs/{knowledge_base_id}: every sync of the knowledge base with its recent runs, oldest sync first. */
export async function listSyncs(workspaceId: string, knowledgeBaseId: string): Promise<KnowledgeBaseSyncView[]> {
  await knowledgeBases.mustGet(workspaceId, knowledgeBaseId);
  return Promise.all((await listSyncItems(workspaceId, knowledgeBaseId)).map(viewOf));
}

/** POST /sync-knowledge-base-source/{sync_id}: a run now (202). */
export async function syncNow(workspaceId: string, syncId: string, nowMs = Date.now()): Promise<KnowledgeBaseSyncView> {
  const item = await syncs.mustGet(workspaceId, syncId);
  await usableConnection(workspaceId, item.connection_id);
  return viewOf(await startRun(item, 'manual', nowMs));
}

/** Removes a sync's documents (items, then objects) and answers how many went. */
async function removeSyncedDocuments(workspaceId: string, knowledgeBaseId: string, syncId: string): Promise<number> {
  const synced = (await listSourceItems(workspaceId, knowledgeBaseId)).filter((source) => source.sync_id === syncId);
  for (const source of synced) {
    if (await removeSourceItem(workspaceId, knowledgeBaseId, source.source_id)) await kbObjects.deleteSource(workspaceId, knowledgeBaseId, source.source_id);
  }
  return synced.length;
}

/** DELETE /delete-knowledge-base-sync/{sync_id} (204): the sync first (a running step stops), then its documents; the index drops them. */
export async function deleteSync(workspaceId: string, syncId: string, nowMs = Date.now()): Promise<void> {
  const item = await syncs.mustGet(workspaceId, syncId);
  await syncs.remove(workspaceId, syncId);
  await releaseUnusedConnections(workspaceId, [item.connection_id]);
  const removed = await removeSyncedDocuments(workspaceId, item.knowledge_base_id, syncId);
  if (removed === 0) return;
  try {
    const generation = await nextGeneration(workspaceId, item.knowledge_base_id, 'refreshing_in_progress', nowMs);
    await queueIngestion(workspaceId, item.knowledge_base_id, generation);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
  }
}

/** Deleting a knowledge base deletes its syncs (their documents go with the knowledge base's own sources). */
export async function removeSyncsOf(workspaceId: string, knowledgeBaseId: string): Promise<void> {
  const removed = await listSyncItems(workspaceId, knowledgeBaseId);
  for (const item of removed) {
    // Gone meanwhile is fine; a store that did not answer fails the deletion rather than leave the sync behind.
    await syncs.remove(workspaceId, item.sync_id).catch((error: unknown) => {
      if (!(error instanceof NotFound)) throw error;
    });
  }
  await releaseUnusedConnections(workspaceId, removed.map((item) => item.connection_id));
}

/**
 * The kb_sync connections of deleted syncs that no remaining sync of the workspace uses are
 * deleted with their tokens (else the minute job would refresh them for nothing). A sync
 * added through the connection at the same moment finds it gone and asks for a reconnect.
 */
async function releaseUnusedConnections(workspaceId: string, connectionIds: string[]): Promise<void> {
  if (connectionIds.length === 0) return;
  const inUse = new Set((await listSyncItems(workspaceId)).map((item) => item.connection_id));
  for (const connectionId of new Set(connectionIds)) {
    if (!inUse.has(connectionId)) await releaseKbSyncConnection(workspaceId, connectionId);
  }
}

/** Starts a run of every sync of a knowledge base that is not running (the daily refresh); answers how many started. */
export async function startSyncsOf(workspaceId: string, knowledgeBaseId: string, trigger: SyncTrigger, nowMs: number): Promise<number> {
  let started = 0;
  for (const item of await listSyncItems(workspaceId, knowledgeBaseId)) {
    try {
      await startRun(item, trigger, nowMs);
      started++;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
    }
  }
  return started;
}

/**
 * The OAuth callback connected (or reconnected) a kb_sync connection: the sync with the
 * connection's ID is created from its knowledge_base_id and sync_config when it does not
 * exist yet, and a run starts either way. A connection naming a knowledge base this
 * workspace does not have is logged and dropped.
 */
export async function runConnected(message: ConnectedJobMessage, nowMs: () => number = Date.now): Promise<void> {
  const { workspace_id: ws, sync_id: syncId } = message;
  let item: SyncItem | undefined = await syncs.get(ws, syncId);
  try {
    if (!item) {
      const connection = await usableConnection(ws, syncId);
      if (!connection.knowledge_base_id || !(await knowledgeBases.get(ws, connection.knowledge_base_id))) {
        logger.warn('kb-jobs: a kb_sync connection names no knowledge base of its workspace', { sync_id: syncId });
        return;
      }
      item = await createSync(ws, connection.knowledge_base_id, connection, locationFor(connection.provider, {}, connection.sync_config ?? {}), syncId, nowMs());
    }
    await startRun(item, 'connected', nowMs());
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    logger.warn('kb-jobs: the connected sync was not started', { sync_id: syncId, reason: error.message });
  }
}

const label = (document: RemoteDocument) => document.name || document.id;

/** Ends the run with an error the user can act on (shown on the sync and its run). */
async function failRun(message: SyncJobMessage, error: string, nowMs: number): Promise<void> {
  await finishSyncRun(message.workspace_id, message.sync_id, message.run_id, { status: 'error', error }, nowMs);
  logger.warn('kb-jobs: sync failed', { sync_id: message.sync_id, run_id: message.run_id, error });
}

const vendorMessage = (error: DocumentVendorFailed) =>
  error.kind === 'auth' ? `${error.detail}; reconnect the ${error.provider} connection` : error.detail;

/** A document of the current listing page still to fetch, with the source it updates (none: a new one). */
interface PendingDocument extends RemoteDocument {
  source_id?: string;
}

/** A synced document's source ID: derived from the sync and the vendor's ID, so every attempt to add it names the same item. */
const syncedSourceId = (syncId: string, externalId: string) =>
  `${idPrefix.knowledgeBaseSource}${createHash('sha256').update(`${syncId}\n${externalId}`).digest('hex').slice(0, 24)}`;

/** Runs `work` over `items`, at most `limit` at once. */
async function pooled<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

/**
 * One step of a sync run (the kb-jobs consumer). A run is a chain of steps, each a message
 * naming its number; the run item says which step is next, so a replayed or duplicate
 * message does nothing. A step with no documents left to fetch reads the next page of the
 * vendor's listing (one request; the cursor is kept on the run), then fetches at most
 * FETCHES_PER_STEP (SMALL_FETCHES_PER_STEP small ones) of the page's new or changed documents; the rest wait for the next step.
 * After the last page, the last step removes the documents the listing no longer had and
 * queues one ingestion. Throws on a store failure, so the queue retries.
 */
export async function runSyncStep(message: SyncJobMessage, nowMs: () => number = Date.now): Promise<void> {
  const { workspace_id: ws, sync_id: syncId, run_id: runId } = message;
  const step = message.step ?? 0;
  const item = await syncs.get(ws, syncId);
  // A deleted sync, or a run another one replaced, or one already finished (a replayed last step): nothing to do.
  if (!item || item.run_id !== runId || item.status !== 'in_progress') return;
  const run = await getSyncRun(ws, syncId, runId);
  if (!run || run.status !== 'in_progress') return;
  const done = run.step ?? 0;
  if (step < done) {
    // This step was applied, but its successor may never have been queued (the send failed after the write): queue it again.
    if (step === done - 1) await queueNamed('kb-jobs').send({ ...message, step: done } satisfies SyncJobMessage);
    return;
  }
  if (step > done) return;
  const kb = await knowledgeBases.get(ws, item.knowledge_base_id);
  if (!kb) return void (await failRun(message, `Knowledge base ${item.knowledge_base_id} no longer exists`, nowMs()));
  if (!isDocumentProvider(item.provider)) return void (await failRun(message, `${item.provider} cannot be synced`, nowMs()));
  if (run.listing_done && !run.pending) return finishRun(message, item, run, nowMs);

  let store;
  try {
    const token = await freshAccessToken(ws, item.connection_id);
    const baseUrl = await providerApiBase(item.provider, {}, token.kept);
    store = documentStore({ provider: item.provider, baseUrl, accessToken: token.accessToken, mock: token.mock, maxDocumentBytes: MAX_FILE_BYTES });
  } catch (error) {
    if (error instanceof ApiError) return void (await failRun(message, `The ${item.provider} connection cannot be used: ${error.message}`, nowMs()));
    throw error;
  }

  const counts = { listed: 0, added: 0, updated: 0, unchanged: 0, skipped: 0, failed: 0 };
  const errors: string[] = [];
  let pending: PendingDocument[] = run.pending ? (JSON.parse(run.pending) as PendingDocument[]) : [];
  let cursor = run.cursor;
  let listingDone = run.listing_done ?? false;
  if (pending.length === 0 && !listingDone) {
    const location: DocumentLocation = { folder_id: item.folder_id, drive_id: item.drive_id, page_id: item.page_id, database_id: item.database_id };
    let page;
    try {
      page = await store.listPage(location, cursor);
    } catch (error) {
      if (error instanceof DocumentVendorFailed) return void (await failRun(message, `Listing the documents failed: ${vendorMessage(error)}`, nowMs()));
      throw error;
    }
    if (run.listed + page.documents.length > MAX_LISTED_PER_RUN) {
      return void (await failRun(message, `More than ${MAX_LISTED_PER_RUN} files under this location; sync a smaller folder`, nowMs()));
    }
    counts.listed = page.documents.length;
    const supported = page.documents.filter((document) => fileKind(document.name, document.mimeType ?? ''));
    counts.skipped = page.documents.length - supported.length;
    await addSeenDocuments(ws, syncId, runId, supported.map((document) => document.id), nowMs());
    const all = await listSourceItems(ws, item.knowledge_base_id);
    const mine = new Map(all.filter((source) => source.sync_id === syncId && source.external_id).map((source) => [source.external_id!, source]));
    // Room for new synced documents, across the knowledge base's syncs (earlier pages' documents are in already).
    let room = MAX_SYNCED_SOURCES - all.filter((source) => source.sync_id).length;
    for (const document of supported) {
      const existing = mine.get(document.id);
      if (existing?.external_version === document.version) {
        counts.unchanged++;
        continue;
      }
      if (!existing && room <= 0) {
        counts.failed++;
        if (errors.length < 20) errors.push(`${label(document)}: the knowledge base holds at most ${MAX_SYNCED_SOURCES} synced documents`);
        continue;
      }
      if (!existing) room--;
      pending.push({ ...document, ...(existing ? { source_id: existing.source_id } : {}) });
    }
    cursor = page.next;
    listingDone = page.next === undefined;
  }

  // Small documents (the listing gave their size) go up to SMALL_FETCHES_PER_STEP a step.
  let small = 0;
  while (small < SMALL_FETCHES_PER_STEP && small < pending.length && (pending[small]!.size ?? Infinity) <= SMALL_DOCUMENT_BYTES) small++;
  const batch = pending.slice(0, Math.max(small, FETCHES_PER_STEP));
  pending = pending.slice(batch.length);
  let authFailure: string | undefined;
  await pooled(batch, FETCH_CONCURRENCY, async (document) => {
    if (authFailure) return;
    let fetched;
    try {
      fetched = await store.fetch(document);
    } catch (error) {
      if (!(error instanceof DocumentVendorFailed)) throw error;
      if (error.kind === 'auth') {
        authFailure = `Fetching ${label(document)} failed: ${vendorMessage(error)}`;
        return;
      }
      counts.failed++;
      errors.push(`${label(document)}: ${error.detail}`);
      return;
    }
    const kind = fileKind(document.name, fetched.contentType)!;
    const contentType = CONTENT_TYPE[kind];
    const now = nowMs();
    if (document.source_id) {
      await kbObjects.putSource(ws, item.knowledge_base_id, document.source_id, 'original', fetched.body, contentType);
      const ok = await updateSyncedSource(ws, item.knowledge_base_id, document.source_id, { filename: document.name, content_type: contentType, file_size: fetched.body.length, external_version: document.version }, now);
      if (ok) counts.updated++;
      return;
    }
    const source: SourceItem = {
      source_id: syncedSourceId(syncId, document.id),
      knowledge_base_id: item.knowledge_base_id,
      workspace_id: ws,
      type: 'document',
      status: 'in_progress',
      filename: document.name,
      content_type: contentType,
      file_size: fetched.body.length,
      sync_id: syncId,
      external_id: document.id,
      external_version: document.version,
      created_timestamp: now,
      updated_timestamp: now,
    };
    await kbObjects.putSource(ws, item.knowledge_base_id, source.source_id, 'original', fetched.body, contentType);
    // Already there: an earlier attempt of this step (this run's document all the same).
    await createSyncedSource(source);
    counts.added++;
  });
  if (authFailure) return void (await failRun(message, authFailure, nowMs()));

  const progress = { counts, errors, cursor, listingDone, pending: pending.length ? JSON.stringify(pending) : undefined };
  if (!(await advanceSyncRun(ws, syncId, runId, step, progress, run.errors ?? []))) return;
  const next: SyncJobMessage = { ...message, step: step + 1 };
  if (!listingDone || pending.length) {
    await queueNamed('kb-jobs').send(next);
    return;
  }
  const advanced = await getSyncRun(ws, syncId, runId);
  if (advanced) await finishRun(next, item, advanced, nowMs);
}

/**
 * The run's last step: the sync's documents its listing did not find (gone, moved out, no
 * longer readable) leave the knowledge base with their objects; one ingestion is queued when
 * anything changed; the run ends `complete`. Repeating it changes nothing.
 */
async function finishRun(message: SyncJobMessage, item: SyncItem, run: SyncRunItem, nowMs: () => number): Promise<void> {
  const { workspace_id: ws, sync_id: syncId, run_id: runId } = message;
  const seen = await seenDocuments(ws, syncId, runId);
  const mine = (await listSourceItems(ws, item.knowledge_base_id)).filter((source) => source.sync_id === syncId);
  let removed = 0;
  for (const source of mine) {
    if (source.external_id && seen.has(source.external_id)) continue;
    if (await removeSourceItem(ws, item.knowledge_base_id, source.source_id)) {
      await kbObjects.deleteSource(ws, item.knowledge_base_id, source.source_id);
      removed++;
    }
  }
  await addRunRemovals(ws, syncId, runId, removed);
  if (run.added + run.updated + run.removed + removed > 0) {
    const kb = await knowledgeBases.get(ws, item.knowledge_base_id);
    if (kb) {
      const status = kb.index_generation === undefined ? 'in_progress' : 'refreshing_in_progress';
      const generation = await nextGeneration(ws, item.knowledge_base_id, status, nowMs());
      await queueIngestion(ws, item.knowledge_base_id, generation);
    }
  }
  const documentCount = mine.length - removed;
  if (await finishSyncRun(ws, syncId, runId, { status: 'complete', documentCount }, nowMs())) {
    await forgetSeenDocuments(ws, syncId, runId);
    logger.info('kb-jobs: sync run finished', { sync_id: syncId, run_id: runId, documents: documentCount });
  }
}

/** After the last receive of a failing sync step: the run ends as `error`. */
export async function syncStepFailed(message: SyncJobMessage, error: unknown, receiveCount: number): Promise<void> {
  if (receiveCount < 5) return;
  await failRun(message, `The sync failed: ${error instanceof Error ? error.message : String(error)}`, Date.now());
}
