import { conflict, notFound } from '../platform/errors.ts';
import { knowledgeBaseObjectStore } from '../platform/aws/object-store.ts';
import { keys, objectKeys } from '../platform/store/keys.ts';
import { ConditionFailed, defineEntity, table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';

/*
 * The knowledge bases' items (docs/data-model.md):
 * - the knowledge base, `WS#<ws>` / `KB#<id>` (the key repair already reads), with its
 *   status, `generation` (bumped by every change of its sources: each queued ingestion
 *   names the generation it finishes) and the current index's object key;
 * - its sources, `WS#<ws>#KB#<id>` / `SOURCE#<id>`: what each is, its status and error;
 * - retrievals, `WS#<ws>#KBRET#<call_id>` / `R#<time-ordered id>`: one per retrieval in a
 *   call or chat, answered by `GET /kb-retrievals/{call_id}`.
 * Objects (originals, extracted text, chunks, the index) live in the knowledge-base bucket
 * under `knowledge-bases/<ws>/<kb>/` (objectKeys).
 */

export type KbStatus = 'in_progress' | 'complete' | 'error' | 'refreshing_in_progress';
export type SourceType = 'document' | 'text' | 'url';
export type SourceStatus = 'in_progress' | 'complete' | 'error';

export interface KnowledgeBaseItem {
  type: 'knowledge_base';
  knowledge_base_id: string;
  workspace_id: string;
  knowledge_base_name: string;
  enable_auto_refresh: boolean;
  max_chunk_size: number;
  min_chunk_size: number;
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
  created_timestamp: number;
  updated_timestamp: number;
}

export interface RetrievalItem {
  retrieval_id: string;
  workspace_id: string;
  call_id: string;
  timestamp: number;
  query: string;
  knowledge_base_ids: string[];
  chunks: { knowledge_base_id: string; source_id: string; chunk_id: string; content: string; score: number; lexical_score: number; vector_score: number }[];
  expires_at: number;
}

type Keyed = { pk: string; sk: string };

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
export async function putKnowledgeBase(item: KnowledgeBaseItem, newSources: SourceItem[]): Promise<void> {
  await table.transact([
    knowledgeBases.createOp(item, item.workspace_id, item.knowledge_base_id),
    ...newSources.map((source) => sources.createOp(source, source.workspace_id, source.knowledge_base_id, source.source_id)),
  ]);
}

/**
 * New sources and the knowledge base's next generation in one transaction, conditional on
 * the knowledge base still existing. Answers the new generation.
 */
export async function addSourceItems(workspaceId: string, knowledgeBaseId: string, newSources: SourceItem[], status: KbStatus, nowMs: number): Promise<number> {
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
  ];
  try {
    await table.transact(ops);
  } catch (error) {
    if (error instanceof TransactionCancelled) throw conflict(`Knowledge base ${knowledgeBaseId} changed meanwhile; retry`);
    throw error;
  }
  return next;
}

/** Bumps the generation (a refresh or a deleted source) and sets the status; answers the new generation. */
export async function nextGeneration(workspaceId: string, knowledgeBaseId: string, status: KbStatus, nowMs: number): Promise<number> {
  try {
    const updated = await table.update<KnowledgeBaseItem>({
      Key: keys.knowledgeBase(workspaceId, knowledgeBaseId),
      UpdateExpression: 'SET generation = generation + :one, #status = :status, user_modified_timestamp = :now',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':one': 1, ':status': status, ':now': nowMs },
      ReturnValues: 'ALL_NEW',
    });
    return updated!.generation;
  } catch (error) {
    if (error instanceof ConditionFailed) throw notFound(`Knowledge base ${knowledgeBaseId} not found`);
    throw error;
  }
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
  for (const [field, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    names[`#${field}`] = field;
    values[`:${field}`] = value;
    sets.push(`#${field} = :${field}`);
  }
  try {
    const updated = await table.update<KnowledgeBaseItem & Keyed>({
      Key: keys.knowledgeBase(workspaceId, knowledgeBaseId),
      UpdateExpression: `SET ${sets.join(', ')}`,
      ConditionExpression: 'attribute_exists(pk)',
      ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
      ExpressionAttributeValues: values,
      ReturnValues: 'ALL_NEW',
    });
    return strip(updated!);
  } catch (error) {
    if (error instanceof ConditionFailed) throw notFound(`Knowledge base ${knowledgeBaseId} not found`);
    throw error;
  }
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
  try {
    await table.update({
      Key: keys.knowledgeBaseSource(workspaceId, knowledgeBaseId, sourceId),
      UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
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
  try {
    await table.update({
      Key: keys.knowledgeBase(workspaceId, knowledgeBaseId),
      UpdateExpression: 'SET #status = :status',
      ConditionExpression: 'generation = :gen',
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: { ':status': status, ':gen': generation },
    });
  } catch (error) {
    if (!(error instanceof ConditionFailed)) throw error;
  }
}

/** Removes a source's item; false when it was not there. */
export async function removeSourceItem(workspaceId: string, knowledgeBaseId: string, sourceId: string): Promise<boolean> {
  try {
    await sources.remove(workspaceId, knowledgeBaseId, sourceId);
    return true;
  } catch {
    return false;
  }
}

/** The knowledge base's record first (it disappears for every reader at once), then its sources. */
export async function removeKnowledgeBaseItems(workspaceId: string, knowledgeBaseId: string): Promise<SourceItem[]> {
  await knowledgeBases.remove(workspaceId, knowledgeBaseId);
  const items = await listSourceItems(workspaceId, knowledgeBaseId);
  await table.batchDelete(items.map((item) => keys.knowledgeBaseSource(workspaceId, knowledgeBaseId, item.source_id)));
  return items;
}

export async function putRetrieval(item: RetrievalItem): Promise<void> {
  await table.put({ Item: { ...keys.kbRetrieval(item.workspace_id, item.call_id, item.retrieval_id), ...item } });
}

export async function listRetrievals(workspaceId: string, callId: string): Promise<RetrievalItem[]> {
  const partition = keys.kbRetrievals(workspaceId, callId);
  const items = await table.queryAll<RetrievalItem & Keyed>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix },
  });
  return items.map((item) => strip(item));
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
