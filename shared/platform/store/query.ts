import type { PartitionQuery } from './keys.ts';
import { table } from './table.ts';

/** Every item of a partition (or of a sort-key prefix in it), strongly consistent, all pages. */
export function queryAll<T = Record<string, unknown>>(partition: PartitionQuery, projection?: string): Promise<T[]> {
  return table.queryAll<T>({
    KeyConditionExpression: partition.skPrefix ? 'pk = :pk AND begins_with(sk, :prefix)' : 'pk = :pk',
    ExpressionAttributeValues: { ':pk': partition.pk, ...(partition.skPrefix ? { ':prefix': partition.skPrefix } : {}) },
    ProjectionExpression: projection,
  });
}

/**
 * A privacy erase of a log partition: deletes each of its items whose stored JSON quotes
 * `text` anywhere (an entry about the person goes whole), a page at a time. Answers how many.
 */
export async function deleteItemsMentioning(pk: string, text: string): Promise<number> {
  let deleted = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await table.queryPage<{ pk: string; sk: string }>({
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': pk },
      Limit: 500,
      ...(start ? { ExclusiveStartKey: start } : {}),
    });
    for (const entry of page.items) {
      if (!JSON.stringify(entry).includes(text)) continue;
      await table.delete({ Key: { pk: entry.pk, sk: entry.sk } });
      deleted++;
    }
    start = page.lastKey;
  } while (start);
  return deleted;
}
