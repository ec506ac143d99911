import { keys } from '../../platform/store/keys.ts';
import { acquireJobLease, releaseJobLease, saveJobCursor } from '../../platform/store/job-lease.ts';
import { table } from '../../platform/store/table.ts';
import type { RollupTable } from '../rollups/index.ts';

/*
 * The rollup backfill's items, all in its job's lease partition: the lease, the cursor and
 * the repair requests (a conversation whose recording failed, written by the rollups). One
 * Query reads the cursor and every pending repair, so a finished backfill costs one read a run.
 */

const JOB = 'rollup-backfill';

/** Where a walk stands: a workspace, its table and the last conversation ID done. */
export interface BackfillPosition {
  workspace_id: string;
  table: RollupTable;
  after?: string;
}

export interface RollupBackfillCursor {
  done?: true;
  /** When the job first ran: it walks nothing until the deploy's traffic shift is surely over. */
  first_run_timestamp?: number;
  workspace_after?: string;
  current?: BackfillPosition;
}

export interface RepairRequest {
  workspace_id: string;
  table: RollupTable;
  id: string;
}

/** The cursor and the pending repair requests, in one Query of the job's partition. */
export async function readBackfillState(): Promise<{ cursor?: RollupBackfillCursor; repairs: RepairRequest[] }> {
  const items = await table.queryAll<{ sk: string; cursor?: RollupBackfillCursor } & Partial<RepairRequest>>({
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.rollupBackfillPartition().pk },
  });
  const cursor = items.find((item) => item.sk === keys.jobCursor(JOB).sk)?.cursor;
  const repairs = items
    .filter((item) => item.sk.startsWith('REPAIR#') && item.workspace_id && item.table && item.id)
    .map((item) => ({ workspace_id: item.workspace_id!, table: item.table!, id: item.id! }));
  return { ...(cursor ? { cursor } : {}), repairs };
}

export const saveBackfillCursor = (cursor: RollupBackfillCursor) => saveJobCursor(JOB, { ...cursor });
export const leaseBackfill = (slot: number, holder: string, leaseMs: number) => acquireJobLease(JOB, slot, holder, leaseMs);
export const releaseBackfill = (slot: number, holder: string) => releaseJobLease(JOB, slot, holder);

/** A repair done: its request goes (a failure after this run's counting leaves it for the next run, which counts nothing twice). */
export async function deleteRepairRequest(repair: RepairRequest): Promise<void> {
  await table.delete({ Key: keys.rollupRepair(repair.workspace_id, repair.table, repair.id) });
}
