import { piiCategoriesOf, redactPii } from '../platform/text/pii.ts';
import { keys } from '../platform/store/keys.ts';
import { ConditionFailed, table } from '../platform/store/table.ts';

/*
 * Retrieval records (docs/knowledge-bases.md, Retrieval), `WS#<ws>#KBRET#<call_id>` /
 * `R#<time-ordered id>`: one per retrieval in a call or chat, answered by
 * `GET /kb-retrievals/{call_id}`, holding what the conversation's data storage setting lets
 * it keep (brought down to a stricter one later: `restrictRetrievals`), deleted with the
 * call or chat (`deleteRetrievals`, through records.ts). Apart
 * from store.ts so that what deletes calls and chats reaches only these items, not the
 * knowledge bases' bucket adapter.
 */

export type DataStorageSetting = 'everything' | 'everything_except_pii' | 'basic_attributes_only';

export interface RetrievalItem {
  retrieval_id: string;
  workspace_id: string;
  call_id: string;
  timestamp: number;
  /** The setting the retrieval was recorded under (absent on items recorded before it was kept: everything). */
  data_storage_setting?: DataStorageSetting;
  /** The user's words (personal data redacted under everything_except_pii); absent under basic_attributes_only. */
  query?: string;
  knowledge_base_ids: string[];
  /** `content` (the chunk's text) is absent under basic_attributes_only: the IDs find it in the knowledge base. */
  chunks: { knowledge_base_id: string; source_id: string; chunk_id: string; content?: string; score: number; lexical_score: number; vector_score: number }[];
  expires_at: number;
}

type Keyed = { pk: string; sk: string };

const retrievalsOf = (workspaceId: string, callId: string) => {
  const partition = keys.kbRetrievals(workspaceId, callId);
  return { KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)', ExpressionAttributeValues: { ':pk': partition.pk, ':prefix': partition.skPrefix } };
};

export async function putRetrieval(item: RetrievalItem): Promise<void> {
  await table.put({ Item: { ...keys.kbRetrieval(item.workspace_id, item.call_id, item.retrieval_id), ...item } });
}

export async function listRetrievals(workspaceId: string, callId: string): Promise<RetrievalItem[]> {
  const items = await table.queryAll<RetrievalItem & Keyed>(retrievalsOf(workspaceId, callId));
  return items.map(({ pk: _pk, sk: _sk, ...item }) => item);
}

/** Deletes every retrieval this workspace recorded for a call or chat (none: nothing to do); answers how many. */
export async function deleteRetrievals(workspaceId: string, callId: string): Promise<number> {
  const items = await table.queryAll<Keyed>({ ...retrievalsOf(workspaceId, callId), ProjectionExpression: 'pk, sk' });
  await table.batchDelete(items.map(({ pk, sk }) => ({ pk, sk })));
  return items.length;
}

/**
 * Brings the retrievals recorded for a call or chat down to what a stricter data storage
 * setting keeps, when the conversation's setting was tightened after they were recorded (or
 * its sensitive data was removed): `basic_attributes_only`, no query and no chunk text;
 * `everything_except_pii`, the query with the personal data of `piiCategories` (all four
 * when none) replaced by `[<category>]`. Only a retrieval that changes is written (while it
 * exists: one deleted meanwhile stays deleted), so running it again writes nothing. Answers
 * how many changed.
 */
export async function restrictRetrievals(
  workspaceId: string,
  callId: string,
  keep: { setting: Exclude<DataStorageSetting, 'everything'>; piiCategories?: readonly string[] },
): Promise<number> {
  const items = await table.queryAll<RetrievalItem & Keyed>(retrievalsOf(workspaceId, callId));
  let changed = 0;
  for (const item of items) {
    const restricted = restrictedRetrieval(item, keep);
    if (JSON.stringify(restricted) === JSON.stringify(item)) continue;
    try {
      await table.put({ Item: restricted, ConditionExpression: 'attribute_exists(pk)' });
      changed++;
    } catch (error) {
      if (!(error instanceof ConditionFailed)) throw error;
    }
  }
  return changed;
}

function restrictedRetrieval<T extends RetrievalItem>(item: T, keep: { setting: Exclude<DataStorageSetting, 'everything'>; piiCategories?: readonly string[] }): T {
  if (keep.setting === 'basic_attributes_only') {
    const { query: _query, ...rest } = item;
    return { ...rest, data_storage_setting: 'basic_attributes_only', chunks: item.chunks.map(({ content: _content, ...chunk }) => chunk) } as T;
  }
  const query = item.query === undefined ? undefined : redactPii(item.query, piiCategoriesOf(keep.piiCategories));
  return {
    ...item,
    ...(query !== undefined ? { query } : {}),
    ...(item.data_storage_setting === 'basic_attributes_only' ? {} : { data_storage_setting: 'everything_except_pii' }),
  };
}
