import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { runExport } from '../../shared/account-data/index.ts';
import { exportsEntity } from '../../shared/account-data/store.ts';
import { S3ObjectStore, setLocalObjectStore } from '../../shared/platform/aws/object-store.ts';
import { startTestApp } from '../support/app.ts';
import { newContact } from '../support/factories.ts';
import { startFakeS3 } from '../support/fake-s3.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Resuming an export in S3 (docs/account-data.md, Exports): the real S3 adapter
 * (`S3ObjectStore`, @aws-sdk/client-s3) against a fake S3 on 127.0.0.1 (test/support/fake-s3.ts),
 * with small parts so a few pages make several. A run dies after a part went up to S3 but
 * before its checkpoint was recorded; the next run lists the upload's parts, goes on from the
 * last checkpoint (the unrecorded part is written again under its number) and completes the
 * same upload: each row is in the object exactly once. The runs are driven here (no consumer).
 */
const app = await startTestApp();
const s3 = await startFakeS3();
const PART_BYTES = 2_000;
setLocalObjectStore(new S3ObjectStore('parley-exports', { endpoint: s3.url, credentials: s3.credentials, partBytes: PART_BYTES }));

const CONTACTS = 30;
const PAGE = 5;
const MINUTE = 60_000;

const ws = await app.newWorkspace();
const contactIds: string[] = [];
for (let i = 0; i < CONTACTS; i++) contactIds.push((await newContact(ws.api, { first_name: `Row ${i}`, last_name: 'x'.repeat(60) })).contact_id);

const requestsFor = (exportId: string) => s3.requests.filter((request) => request.key.includes(exportId));
const uploadedParts = (exportId: string) => requestsFor(exportId).filter((request) => request.op === 'UploadPart');

async function download(exportId: string): Promise<string> {
  const link = await ws.api.get(`/exports/${exportId}/download`);
  expect(link.status).toBe(200);
  expect(link.body.url.startsWith(`${s3.url}/parley-exports/`)).toBe(true);
  const answer = await fetch(link.body.url);
  expect(answer.status).toBe(200);
  return answer.text();
}

/**
 * Starts an export and a run that stops for good (as a killed Lambda) right after the page
 * that sent the export's second part to S3, before that page's checkpoint is recorded.
 * `release` lets the dead run go on by throwing (a run waking up after losing its lease).
 */
async function exportDyingAfterSecondPart(format: 'csv' | 'jsonl', startedAt: number) {
  const created = await ws.api.post('/exports', { body: { type: 'contacts', format } });
  expect(created.status).toBe(202);
  const exportId: string = created.body.export_id;
  let wake!: (error: Error) => void;
  const asleep = new Promise<void>((_resolve, reject) => (wake = reject));
  let stopped = false;
  const run = runExport(ws.workspace_id, exportId, {
    nowMs: () => startedAt,
    pageSize: PAGE,
    afterWrite: () => {
      if (stopped || uploadedParts(exportId).length < 2) return undefined;
      stopped = true;
      return asleep;
    },
  });
  const item = await eventually(() => exportsEntity.get(ws.workspace_id, exportId), () => stopped);
  // The checkpoint names part 1 only; S3 holds parts 1 and 2.
  expect(item!.status).toBe('running');
  expect(item!.checkpoint!.upload.parts.map((part) => part.PartNumber)).toEqual([1]);
  expect(s3.uploads.get(item!.checkpoint!.upload.upload_id)!.parts.size).toBe(2);
  const rowsAtCheckpoint = item!.checkpoint!.rows;
  expect(rowsAtCheckpoint).toBeGreaterThan(0);
  expect(rowsAtCheckpoint).toBeLessThan(CONTACTS);
  return { exportId, rowsAtCheckpoint, uploadId: item!.checkpoint!.upload.upload_id, wake: (error: Error) => wake(error), run };
}

describe('resuming an export in S3', () => {
  it('goes on with the same multipart upload from the last checkpoint: the part sent after it is sent again, each row once (JSONL)', async () => {
    const startedAt = Date.now();
    const dead = await exportDyingAfterSecondPart('jsonl', startedAt);
    // Within the dead run's lease a duplicate message does nothing.
    await runExport(ws.workspace_id, dead.exportId, { nowMs: () => startedAt + 15 * MINUTE, pageSize: PAGE });
    expect(requestsFor(dead.exportId).filter((request) => request.op === 'ListParts')).toHaveLength(0);

    await runExport(ws.workspace_id, dead.exportId, { nowMs: () => startedAt + 17 * MINUTE, pageSize: PAGE });
    const done = (await ws.api.get(`/exports/${dead.exportId}`)).body;
    expect(done).toMatchObject({ status: 'complete', row_count: CONTACTS });
    const text = await download(dead.exportId);
    const rows = text.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { contact_id: string });
    expect(rows.map((row) => row.contact_id)).toEqual(contactIds);
    expect(done.size_bytes).toBe(Buffer.byteLength(text));

    const ops = requestsFor(dead.exportId).map((request) => request.op);
    expect(ops.filter((op) => op === 'CreateMultipartUpload')).toHaveLength(1);
    expect(ops.filter((op) => op === 'ListParts')).toHaveLength(1);
    expect(ops.filter((op) => op === 'CompleteMultipartUpload')).toHaveLength(1);
    expect(ops).not.toContain('AbortMultipartUpload');
    expect(uploadedParts(dead.exportId).every((part) => part.uploadId === dead.uploadId)).toBe(true);
    // Part 2 went up twice: from the dead run, then again from the resumed one.
    expect(uploadedParts(dead.exportId).filter((part) => part.partNumber === 2)).toHaveLength(2);
    expect(s3.uploads.has(dead.uploadId)).toBe(false);
    const item = (await exportsEntity.get(ws.workspace_id, dead.exportId))!;
    expect(item.checkpoint).toBeUndefined();
    expect(item.lease_token).toBeUndefined();
  });

  it('keeps one CSV header, and a dead run that wakes up after losing its lease never aborts the upload the other run goes on with', async () => {
    const startedAt = Date.now();
    const dead = await exportDyingAfterSecondPart('csv', startedAt);
    // The resumed run stops on its first page, holding the lease.
    let resume!: () => void;
    let paused = false;
    const resumed = runExport(ws.workspace_id, dead.exportId, {
      nowMs: () => startedAt + 17 * MINUTE,
      pageSize: PAGE,
      afterWrite: () => {
        if (paused) return undefined;
        paused = true;
        return new Promise<void>((resolve) => (resume = resolve));
      },
    });
    await eventually(async () => paused, (yes) => yes);
    // The dead run wakes up with an error: it no longer holds the lease, so it neither fails the export nor aborts the upload.
    dead.wake(new Error('the run woke up'));
    await dead.run;
    expect(requestsFor(dead.exportId).map((request) => request.op)).not.toContain('AbortMultipartUpload');
    expect((await exportsEntity.get(ws.workspace_id, dead.exportId))!.status).toBe('running');

    resume();
    await resumed;
    const done = (await ws.api.get(`/exports/${dead.exportId}`)).body;
    expect(done).toMatchObject({ status: 'complete', row_count: CONTACTS });
    const [header, ...rows] = parse(await download(dead.exportId)) as string[][];
    expect(header![0]).toBe('contact_id');
    expect(rows.map((row) => row[0])).toEqual(contactIds);
  });

  it('starts the object over when the upload can no longer be resumed (aborted by the bucket\'s rule)', async () => {
    const startedAt = Date.now();
    const dead = await exportDyingAfterSecondPart('jsonl', startedAt);
    s3.uploads.delete(dead.uploadId);
    await runExport(ws.workspace_id, dead.exportId, { nowMs: () => startedAt + 17 * MINUTE, pageSize: PAGE });
    expect((await ws.api.get(`/exports/${dead.exportId}`)).body).toMatchObject({ status: 'complete', row_count: CONTACTS });
    const rows = (await download(dead.exportId)).split('\n').filter(Boolean).map((line) => JSON.parse(line) as { contact_id: string });
    expect(rows.map((row) => row.contact_id)).toEqual(contactIds);
    expect(requestsFor(dead.exportId).filter((request) => request.op === 'CreateMultipartUpload')).toHaveLength(2);
  });
});
