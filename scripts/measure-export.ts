/**
 * Measures a calls export on DynamoDB Local (docs/performance.md, Exports): seeds N ended
 * calls into a fresh in-memory table through the calls store, then runs the export job as
 * export-jobs does (runExport, CSV and JSONL), reporting rows per second and the process's
 * peak memory (RSS and heap, sampled every 50 ms). Not a test: `npx tsx scripts/measure-export.ts [N]`
 * (default 100,000). Needs Java 17+ (DynamoDB Local).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDynamoDbLocal } from '../local/dynamodb.ts';

const count = Number(process.argv[2] ?? 100_000);
const dataDir = mkdtempSync(join(tmpdir(), 'parley-measure-'));
process.env.DATA_DIR = dataDir;
process.env.TABLE_NAME = 'parley-measure';
process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
const dynamo = await startDynamoDbLocal();
process.env.DYNAMODB_ENDPOINT = dynamo.endpoint;

const [{ ensureTable }, { dynamo: client }, { installLocalQueues }, { installLocalObjectStore }, { createWorkspace }, calls, ids, exportsModule, store] =
  await Promise.all([
    import('../shared/platform/store/create-table.ts'),
    import('../shared/platform/store/db.ts'),
    import('../local/queues.ts'),
    import('../local/object-store.ts'),
    import('../shared/account/workspaces.ts'),
    import('../shared/calls/store.ts'),
    import('../shared/platform/ids.ts'),
    import('../shared/account-data/exports.ts'),
    import('../shared/account-data/store.ts'),
  ]);

try {
  await ensureTable(client, process.env.TABLE_NAME);
  installLocalQueues();
  installLocalObjectStore('http://127.0.0.1:0');
  const { workspace_id: workspaceId } = await createWorkspace('Measure');

  const seedStart = Date.now();
  let next = 0;
  const base = Date.now() - count * 1000;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < count) {
        const i = next++;
        const start = base + i * 1000;
        await calls.putNewCall(
          calls.newCallItem({
            call_id: ids.newId('call'),
            workspace_id: workspaceId,
            created_timestamp: start,
            call_type: 'phone_call',
            call_status: 'ended',
            direction: 'outbound',
            agent_id: 'agent_000000000000000000000000',
            agent_version: 0,
            from_number: '+14155550100',
            to_number: `+1415${String(2000000 + (i % 7999999)).padStart(7, '0')}`,
            start_timestamp: start,
            end_timestamp: start + 42_000,
            duration_ms: 42_000,
            disconnection_reason: 'user_hangup',
            transcript: `Agent: Hello, this is call ${i}.\nUser: Hi, I would like to book a table for two at eight.\nAgent: Done.\n`,
            metadata: { row: i },
            engine: { slot: false, media: 'sandbox', origin: 'create-phone-call' },
          } as never),
        );
      }
    }),
  );
  console.log(`seeded ${count} calls in ${((Date.now() - seedStart) / 1000).toFixed(1)} s`);

  for (const format of ['csv', 'jsonl'] as const) {
    global.gc?.();
    let peakRss = 0;
    let peakHeap = 0;
    const baseRss = process.memoryUsage().rss;
    const sampler = setInterval(() => {
      const usage = process.memoryUsage();
      peakRss = Math.max(peakRss, usage.rss);
      peakHeap = Math.max(peakHeap, usage.heapUsed);
    }, 50);
    const { export_id: exportId } = await exportsModule.createExport(workspaceId, { type: 'calls', format });
    const started = Date.now();
    await exportsModule.runExport(workspaceId, exportId);
    const seconds = (Date.now() - started) / 1000;
    clearInterval(sampler);
    const item = (await store.exportsEntity.get(workspaceId, exportId))!;
    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
    console.log(
      `${format}: ${item.status}, ${item.row_count} rows, ${mb(item.size_bytes)} MB in ${seconds.toFixed(1)} s = ` +
        `${Math.round(item.row_count / seconds)} rows/s; peak RSS ${mb(peakRss)} MB (${mb(baseRss)} MB before), peak heap ${mb(peakHeap)} MB`,
    );
  }
} finally {
  await dynamo.stop();
  rmSync(dataDir, { recursive: true, force: true });
  process.exit(0);
}
