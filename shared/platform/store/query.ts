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
