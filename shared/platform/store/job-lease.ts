import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, tableName } from './db.ts';
import { keys } from './keys.ts';
import { table } from './table.ts';

/**
 * One lease item per scheduled job. A pass is named by its slot (its scheduled start,
 * epoch ms, so slots only ever increase); taking slot N
 * succeeds only if no one has taken N or a later slot, and the previous pass has finished
 * or its lease has expired (a holder that crashed). So a slot runs at most once, passes
 * of the same job never overlap, and a crash blocks the job for at most `leaseMs`.
 */
export async function acquireJobLease(job: string, slot: number, holder: string, leaseMs: number): Promise<boolean> {
  const now = Date.now();
  try {
    await db.send(
      new PutCommand({
        TableName: tableName,
        Item: { ...keys.jobLease(job), slot, holder, lease_until: now + leaseMs },
        ConditionExpression: 'attribute_not_exists(pk) OR (#slot < :slot AND lease_until <= :now)',
        ExpressionAttributeNames: { '#slot': 'slot' },
        ExpressionAttributeValues: { ':slot': slot, ':now': now },
      }),
    );
    return true;
  } catch (error) {
    if (isConditionFailure(error)) return false;
    throw error;
  }
}

/** Ends the holder's lease at once, so the next slot need not wait for it to expire. */
export async function releaseJobLease(job: string, slot: number, holder: string): Promise<void> {
  try {
    await db.send(
      new UpdateCommand({
        TableName: tableName,
        Key: keys.jobLease(job),
        UpdateExpression: 'SET lease_until = :now',
        ConditionExpression: 'holder = :holder AND #slot = :slot',
        ExpressionAttributeNames: { '#slot': 'slot' },
        ExpressionAttributeValues: { ':now': Date.now(), ':holder': holder, ':slot': slot },
      }),
    );
  } catch (error) {
    // Already expired and taken by a later slot: nothing left to release.
    if (!isConditionFailure(error)) throw error;
  }
}

/**
 * Where the job's last pass stopped in its index (an ExclusiveStartKey), or undefined: start
 * from the front. Written only by the lease's holder.
 */
export async function readJobCursor(job: string): Promise<Record<string, unknown> | undefined> {
  const item = await table.get<{ cursor?: Record<string, unknown> }>(keys.jobCursor(job));
  return item?.cursor;
}

/** Records where the pass stopped (undefined: it reached the end, the next starts from the front). */
export async function saveJobCursor(job: string, cursor: Record<string, unknown> | undefined, nowMs = Date.now()): Promise<void> {
  if (cursor) await table.put({ Item: { ...keys.jobCursor(job), cursor, updated_timestamp: nowMs } });
  else await table.delete({ Key: keys.jobCursor(job) });
}
