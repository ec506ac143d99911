import { parse } from 'csv-parse/sync';
import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { runExport } from '../../shared/account-data/index.ts';
import { exportsEntity } from '../../shared/account-data/store.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { newContact } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * An export whose run dies between pages (docs/account-data.md, Exports): the next run takes
 * the expired lease and goes on from the checkpoint, so the file has every row exactly once.
 * No export-jobs consumer runs until a test starts one: the runs are driven here.
 */
const app = await startTestApp();
let background: { stop(): Promise<void> } | undefined;
afterAll(() => background?.stop());

const CONTACTS = 23;
const PAGE = 5;
const MINUTE = 60_000;

const ws = await app.newWorkspace();
const contactIds: string[] = [];
for (let i = 0; i < CONTACTS; i++) contactIds.push((await newContact(ws.api, { first_name: `Row ${i}` })).contact_id);

/** Starts an export and a run that dies (hangs forever, as a killed Lambda) after writing its third page, before recording it. */
async function exportKilledMidway(format: 'csv' | 'jsonl', clock: () => number) {
  const created = await ws.api.post('/exports', { body: { type: 'contacts', format } });
  expect(created.status).toBe(202);
  const exportId: string = created.body.export_id;
  let pages = 0;
  void runExport(ws.workspace_id, exportId, {
    nowMs: clock,
    pageSize: PAGE,
    afterWrite: () => (++pages === 3 ? new Promise<void>(() => undefined) : undefined),
  });
  // Two pages recorded; the third written to the file but not recorded.
  const stopped = await eventually(() => exportsEntity.get(ws.workspace_id, exportId), (item) => pages === 3 && item?.row_count === 2 * PAGE);
  expect(stopped).toMatchObject({ status: 'running', row_count: 2 * PAGE, checkpoint: { rows: 2 * PAGE, finished: false } });
  return exportId;
}

async function download(exportId: string): Promise<string> {
  const link = await ws.api.get(`/exports/${exportId}/download`);
  expect(link.status).toBe(200);
  return (await fetch(link.body.url)).text();
}

describe('resuming an export', () => {
  it('leaves a live run alone, then takes over once its lease expired, writing each row exactly once (JSONL)', async () => {
    const startedAt = Date.now();
    const exportId = await exportKilledMidway('jsonl', () => startedAt);
    // Within the dead run's lease (960 s): another run (a duplicate message) does nothing.
    await runExport(ws.workspace_id, exportId, { nowMs: () => startedAt + 15 * MINUTE, pageSize: PAGE });
    expect((await exportsEntity.get(ws.workspace_id, exportId))!.status).toBe('running');
    // After it, the redelivered message goes on from the checkpoint.
    await runExport(ws.workspace_id, exportId, { nowMs: () => startedAt + 17 * MINUTE, pageSize: PAGE });
    const done = (await ws.api.get(`/exports/${exportId}`)).body;
    expect(done).toMatchObject({ status: 'complete', row_count: CONTACTS });
    const rows = (await download(exportId))
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { contact_id: string });
    expect(rows.map((row) => row.contact_id)).toEqual(contactIds);
    expect(done.size_bytes).toBe(Buffer.byteLength((await download(exportId))));
    const item = (await exportsEntity.get(ws.workspace_id, exportId))!;
    expect(item.checkpoint).toBeUndefined();
    expect(item.lease_token).toBeUndefined();
  });

  it('queues a stale running export again when it is read; the consumer finishes it with one header and each row once (CSV)', async () => {
    // The dead run's clock is 20 minutes behind: its lease has expired by now.
    const exportId = await exportKilledMidway('csv', () => Date.now() - 20 * MINUTE);
    expect((await ws.api.get(`/exports/${exportId}`)).body.status).toBe('running');
    background = startBackgroundWork(JOBS.filter((job) => job.name === 'export-jobs'));
    const done = await eventually(async () => (await ws.api.get(`/exports/${exportId}`)).body, (e) => e.status === 'complete' || e.status === 'failed', 30_000);
    expect(done).toMatchObject({ status: 'complete', row_count: CONTACTS });
    const [header, ...rows] = parse(await download(exportId)) as string[][];
    expect(header![0]).toBe('contact_id');
    expect(rows.map((row) => row[0])).toEqual(contactIds);
  });
});
