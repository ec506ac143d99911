import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from './db.ts';
import type { PartitionQuery } from './keys.ts';

/** Every item of a partition (or of a sort-key prefix in it), strongly consistent, all pages. */
export async function queryAll<T = Record<string, unknown>>(partition: PartitionQuery, projection?: string): Promise<T[]> {
  const items: T[] = [];
  let startKey: Record<string, unknown> | undefined;
  do {
    const out = await db.send(
      new QueryCommand({
        TableName: tableName,
        KeyConditionExpression: partition.skPrefix ? 'pk = :pk AND begins_with(sk, :prefix)' : 'pk = :pk',
        ExpressionAttributeValues: { ':pk': partition.pk, ...(partition.skPrefix ? { ':prefix': partition.skPrefix } : {}) },
        ProjectionExpression: projection,
        ConsistentRead: true,
        ExclusiveStartKey: startKey,
      }),
    );
    items.push(...((out.Items ?? []) as T[]));
    startKey = out.LastEvaluatedKey;
  } while (startKey);
  return items;
}
