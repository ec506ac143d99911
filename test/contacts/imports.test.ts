import { toFile } from 'retell-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { importStepFailed, runImportStep } from '../../shared/contacts/index.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();

async function setup() {
  const ws = await app.newWorkspace();
  return { ws, client: retellClient(app.url, ws.api_key) };
}

/** A number of the 415-555 block: +14155550000 … +14155559999. */
const number = (i: number) => `+1415555${String(i).padStart(4, '0')}`;

/** A multipart request of one CSV file (and text fields), as a browser or curl -F sends it. */
async function postForm(path: string, key: string, csv: string | Buffer, fields: Record<string, string> = {}) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'contacts.csv');
  const request = new Request('http://local/', { method: 'POST', body: form });
  return call(app.url, 'POST', path, {
    key,
    rawBody: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type')! },
  });
}

const byPhone = async (ws: { api: any }, phone: string) => (await ws.api.get(`/get-contact-by-phone/${encodeURIComponent(phone)}`)).body;

// Runs before the queue's consumer starts (below), so the test alone drives the steps.
describe('an import job\'s steps under redelivery', () => {
  it('applies and counts a chunk delivered twice once, and a stale chunk not at all', async () => {
    const { ws } = await setup();
    const contacts = Array.from({ length: 1001 }, (_, i) => ({ phone_number: number(i), first_name: `N${i}` }));
    const started = await ws.api.post('/create-contact-import-job', { body: { contacts } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ status: 'queued', source: 'contacts', total_rows: 1001, processed_rows: 0, created: 0 });
    const jobId = started.body.import_job_id;
    expect(jobId).toMatch(/^contact_import_[0-9a-f]{24}$/);
    const message = { kind: 'import' as const, workspace_id: ws.workspace_id, job_id: jobId };

    await runImportStep({ ...message, chunk: 0 });
    await runImportStep({ ...message, chunk: 0 });
    const afterFirst = (await ws.api.get(`/get-contact-import-job/${jobId}`)).body;
    expect(afterFirst).toMatchObject({ status: 'running', processed_rows: 1000, created: 1000, updated: 0, failed: 0 });

    await runImportStep({ ...message, chunk: 1 });
    await runImportStep({ ...message, chunk: 1 });
    await runImportStep({ ...message, chunk: 0 });
    const done = await ws.api.get(`/get-contact-import-job/${jobId}`);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({
      status: 'completed',
      total_rows: 1001,
      processed_rows: 1001,
      created: 1001,
      updated: 0,
      failed: 0,
      succeeded: 1001,
      errors: [],
      errors_truncated: false,
    });
    expect(done.body.end_timestamp).toBeGreaterThanOrEqual(done.body.start_timestamp);
    const listed = await ws.api.get('/list-contacts?limit=1000');
    expect(listed.body).toHaveLength(1000);
    expect((await byPhone(ws, number(1000))).first_name).toBe('N1000');
  });

  it('stops a job as failed when a step fails its last receive, and applies nothing after', async () => {
    const { ws, client } = await setup();
    const started = await ws.api.post('/create-contact-import-job', { body: { contacts: [{ phone_number: number(1) }] } });
    const message = { kind: 'import' as const, workspace_id: ws.workspace_id, job_id: started.body.import_job_id, chunk: 0 };
    await importStepFailed(message, new Error('table unreachable'), 4);
    expect((await ws.api.get(`/get-contact-import-job/${message.job_id}`)).body.status).toBe('queued');
    await importStepFailed(message, new Error('table unreachable'), 5);
    await runImportStep(message);
    const job = (await ws.api.get(`/get-contact-import-job/${message.job_id}`)).body;
    expect(job).toMatchObject({ status: 'failed', failure_reason: 'Chunk 0 failed 5 times: table unreachable', processed_rows: 0, created: 0 });
    expect(await client.contact.getImport()).toMatchObject({ status: 'idle', job_status: 'failed', succeeded: 0 });
    expect((await ws.api.get('/list-contacts')).body).toEqual([]);
  });
});

describe('imports', () => {
  let background: { stop(): Promise<void> };
  beforeAll(() => {
    background = startBackgroundWork(JOBS.filter((job) => job.name === 'contact-jobs'));
  });
  afterAll(() => background.stop());

  it('imports a CSV now and reports every bad row with its line and reason; the later row of a number wins', async () => {
    const { ws } = await setup();
    const csv = [
      'Phone,First Name,last_name,Email,Tags,do_not_call,Plan',
      `${number(101)},Ada,Lovelace,ada@example.com,"vip, math",no,gold`,
      '+1 (415) 555-0102,Alan,Turing,,,yes,silver',
      '0412345678,Bruce,,,,,',
      'not-a-number,X,,,,,',
      ',Nobody,,,,,',
      `${number(103)},Bad,,not-an-email,,,`,
      `${number(104)},Maybe,,,,perhaps,`,
      `${number(101)},Ada,King,,,,`,
    ].join('\n');
    const res = await ws.api.post('/import-contacts', { body: { csv } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'completed',
      total_rows: 8,
      processed_rows: 8,
      created: 3,
      updated: 1,
      failed: 4,
      errors: [
        { row: 5, phone_number: 'not-a-number', reason: 'not-a-number is not a valid E.164 number' },
        { row: 6, reason: 'No phone number' },
        { row: 7, phone_number: number(103), reason: 'email: Must be an email address' },
        { row: 8, phone_number: number(104), reason: 'do_not_call: Must be true or false (got "perhaps")' },
      ],
    });
    expect(await byPhone(ws, number(101))).toMatchObject({
      first_name: 'Ada',
      last_name: 'King',
      email: 'ada@example.com',
      tags: ['vip', 'math'],
      do_not_call: false,
      custom_fields: { plan: 'gold' },
    });
    expect(await byPhone(ws, number(102))).toMatchObject({ first_name: 'Alan', do_not_call: true, custom_fields: { plan: 'silver' } });
    expect(await byPhone(ws, '+61412345678')).toMatchObject({ first_name: 'Bruce', custom_fields: {} });
    expect((await ws.api.get(`/get-contact-by-phone/${encodeURIComponent(number(103))}`)).status).toBe(404);
    expect((await ws.api.get('/list-contacts')).body).toHaveLength(3);
    expect((await ws.api.get('/list-contact-fields')).body.custom_fields).toEqual(['plan']);
  });

  it('imports JSON contacts: existing ones are updated, tags added to every contact, bad entries reported', async () => {
    const { ws } = await setup();
    const existing = (await ws.api.post('/create-contact', { body: { phone_number: number(201), first_name: 'Old', tags: ['existing'] } })).body;
    const res = await ws.api.post('/import-contacts', {
      body: {
        contacts: [
          { phone_number: number(201), last_name: 'New' },
          { phone_number: '+1 (415) 555-0202', first_name: 'Neu', custom_fields: { score: 5 } },
          { phone_number: '12' },
          'x',
          { first_name: 'no number' },
          { phone_number: number(203), custom_fields: { 'bad name': 1 } },
        ],
        tags: ['imported'],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      status: 'completed',
      total_rows: 6,
      processed_rows: 6,
      created: 1,
      updated: 1,
      failed: 4,
      errors: [
        { row: 3, phone_number: '12', reason: 'phone_number: 12 is not a valid E.164 number' },
        { row: 4, reason: 'contact: Must be an object' },
        { row: 5, reason: 'phone_number: Required' },
        {
          row: 6,
          phone_number: number(203),
          reason: 'custom_fields.bad name: Field name: Must start with a letter or _ and hold only letters, digits and _ (at most 64)',
        },
      ],
    });
    const updated = await byPhone(ws, number(201));
    expect(updated).toMatchObject({ contact_id: existing.contact_id, first_name: 'Old', last_name: 'New', tags: ['existing', 'imported'] });
    expect(updated.user_modified_timestamp).toBeGreaterThanOrEqual(existing.user_modified_timestamp);
    expect(await byPhone(ws, number(202))).toMatchObject({ first_name: 'Neu', tags: ['imported'], custom_fields: { score: 5 } });
  });

  it('maps columns through the workspace\'s field mappings, the rest by name or as custom fields', async () => {
    const { ws } = await setup();
    const put = await ws.api.put('/contact-field-mappings', {
      body: {
        mappings: [
          { external_field_name: 'Mobile', field_name: 'phone_number' },
          { external_field_name: 'Given', field_name: 'first_name' },
          { external_field_name: 'Account', field_name: 'custom_fields.account_id' },
        ],
      },
    });
    expect(put.status).toBe(200);
    const csv = `Given,Mobile,Account,Email,Notes\nGrace,${number(301)},A-1,grace@example.com,likes COBOL\n`;
    const res = await ws.api.post('/import-contacts', { body: { csv } });
    expect(res.body).toMatchObject({ created: 1, failed: 0, errors: [] });
    expect(await byPhone(ws, number(301))).toMatchObject({
      first_name: 'Grace',
      email: 'grace@example.com',
      custom_fields: { account_id: 'A-1', notes: 'likes COBOL' },
    });
  });

  it('takes a multipart CSV file on import-contacts and create-contact-import-job', async () => {
    const { ws } = await setup();
    const now = await postForm('/import-contacts', ws.api_key, `phone,first_name\n${number(401)},Filed\n`, { tags: 'a,b' });
    expect(now.status).toBe(200);
    expect(now.body).toMatchObject({ total_rows: 1, created: 1, failed: 0 });
    expect(await byPhone(ws, number(401))).toMatchObject({ first_name: 'Filed', tags: ['a', 'b'] });

    const job = await postForm('/create-contact-import-job', ws.api_key, `phone,first_name\n${number(401)},Refiled\n${number(402)},Second\n`);
    expect(job.status).toBe(202);
    expect(job.body).toMatchObject({ status: 'queued', source: 'file', file_name: 'contacts.csv', total_rows: 2 });
    const done = await eventually(
      async () => (await ws.api.get(`/get-contact-import-job/${job.body.import_job_id}`)).body,
      (body) => body.status === 'completed',
      30_000,
    );
    expect(done).toMatchObject({ processed_rows: 2, created: 1, updated: 1, failed: 0 });
    expect((await byPhone(ws, number(401))).first_name).toBe('Refiled');
  });

  it('runs retell-sdk\'s upload, createImport and getImport with its column mapping (unmapped columns ignored)', async () => {
    const { ws, client } = await setup();
    expect(await client.contact.getImport()).toEqual({ status: 'idle' });
    const csv = `Name,Number,Secret\nLin,${number(501)},x\nMo,${number(502)},y\nBad,123,z\n`;
    const uploaded: any = await client.contact.uploadImportFile({ file: await toFile(Buffer.from(csv), 'leads.csv', { type: 'text/csv' }) });
    expect(uploaded).toEqual({ upload_id: expect.stringMatching(/^contact_upload_[0-9a-f]{24}$/), file_name: 'leads.csv', size_bytes: csv.length, total_rows: 3 });
    const started: any = await client.contact.createImport({
      upload_id: uploaded.upload_id,
      column_mapping: [
        { external_field_name: 'number', field_name: 'phone_number' },
        { external_field_name: 'Name', field_name: 'first_name' },
      ],
      tags: ['sdk'],
    });
    expect(started).toMatchObject({ status: 'queued', succeeded: 0, failed: 0, triggered_by: 'manual', job_status: 'queued', total_rows: 3 });
    const done: any = await eventually(() => client.contact.getImport() as Promise<any>, (status) => status.status === 'idle', 30_000);
    expect(done).toMatchObject({ job_status: 'completed', succeeded: 2, failed: 1, created: 2, import_job_id: started.import_job_id });
    expect(await byPhone(ws, number(501))).toMatchObject({ first_name: 'Lin', tags: ['sdk'], custom_fields: {} });
    const job = (await ws.api.get(`/get-contact-import-job/${started.import_job_id}`)).body;
    expect(job).toMatchObject({ source: 'upload', file_name: 'leads.csv', errors: [{ row: 4, phone_number: '123', reason: '123 is not a valid E.164 number' }] });

    // A mapping naming a column the file lacks is refused before anything runs.
    expect(
      await sdkFailure(client.contact.createImport({ upload_id: uploaded.upload_id, column_mapping: [{ external_field_name: 'Phone', field_name: 'phone_number' }] })),
    ).toEqual({ status: 400, body: { status: 400, message: 'column_mapping: "Phone" is not a column of the CSV header' } });
  });

  it('refuses bad bodies with clear 4xx answers and writes nothing', async () => {
    const { ws } = await setup();
    const refused = async (path: string, body: unknown) => (await ws.api.post(path, { body })).body;
    expect(await refused('/import-contacts', {})).toEqual({ status: 400, message: 'body: Send one of csv, contacts or a multipart file' });
    expect(await refused('/import-contacts', { csv: 'phone\n+14155550000', contacts: [] })).toEqual({
      status: 400,
      message: 'body: Send only one of csv, contacts',
    });
    const tooMany = ['phone', ...Array.from({ length: 1001 }, (_, i) => number(i))].join('\n');
    expect(await refused('/import-contacts', { csv: tooMany })).toEqual({
      status: 400,
      message: 'csv: At most 1000 rows (the header not counted); POST /create-contact-import-job takes up to 100000',
    });
    expect(await refused('/import-contacts', { csv: 'phone,2nd phone\n+14155550000,x' })).toEqual({
      status: 400,
      message:
        'csv: Column "2nd phone" cannot be a custom field name (it must start with a letter or _ and hold only letters, digits and _, at most 64); rename the column or map it (contact-field-mappings)',
    });
    expect(await refused('/import-contacts', { csv: 'phone,"unclosed\n+14155550000' })).toMatchObject({ status: 400, message: expect.stringMatching(/^csv: Not valid CSV: /) });
    expect(await refused('/create-contact-import-job', { contacts: [], default_country: 'XX' })).toEqual({
      status: 400,
      message: 'default_country: Must be an ISO 3166-1 alpha-2 country code (capitals)',
    });
    expect(await refused('/create-contact-import', { upload_id: 'contact_upload_000000000000000000000000', column_mapping: [{ external_field_name: 'a', field_name: 'phone_number' }] })).toEqual({
      status: 404,
      message: 'Upload contact_upload_000000000000000000000000 not found (uploads are kept for a day)',
    });

    // Above the 10 MB cap: 413 in the error format, as JSON and as multipart.
    const big = 'x'.repeat(10 * 1024 * 1024);
    const json = await call(app.url, 'POST', '/create-contact-import-job', { key: ws.api_key, rawBody: JSON.stringify({ csv: big }) });
    expect(json.status).toBe(413);
    expect(json.body).toEqual({ status: 413, message: 'JSON body exceeds the 10 MB limit' });
    const form = await postForm('/create-contact-import-job', ws.api_key, Buffer.from(big));
    expect(form.status).toBe(413);
    expect(form.body).toEqual({ status: 413, message: 'Request body exceeds the 10 MB limit' });
    expect((await ws.api.get('/list-contacts')).body).toEqual([]);
    expect((await ws.api.get('/list-contact-import-jobs')).body).toEqual([]);
  });

  it('reads national numbers in default_country', async () => {
    const { ws } = await setup();
    const res = await ws.api.post('/import-contacts', { body: { csv: 'phone\n(415) 555-0601\n020 7946 0958\n', default_country: 'US' } });
    expect(res.body).toMatchObject({ created: 1, failed: 1, errors: [{ row: 3, reason: '020 7946 0958 is not a valid E.164 number' }] });
    expect((await byPhone(ws, number(601))).phone_number).toBe(number(601));
  });

  it('runs a job of 10,000 rows to completion, counting and keeping the first row errors', async () => {
    const { ws } = await setup();
    const lines = ['phone,first_name,segment'];
    for (let i = 0; i < 10_000; i++) lines.push(i % 1000 === 999 ? `bad-${i},Bad,x` : `${number(i)},P${i},s${i % 7}`);
    const started = await ws.api.post('/create-contact-import-job', { body: { csv: lines.join('\n') } });
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ status: 'queued', source: 'csv', total_rows: 10_000, processed_rows: 0 });
    const done = await eventually(
      async () => (await ws.api.get(`/get-contact-import-job/${started.body.import_job_id}`)).body,
      (body) => body.status !== 'queued' && body.status !== 'running',
      80_000,
    );
    expect(done).toMatchObject({
      status: 'completed',
      total_rows: 10_000,
      processed_rows: 10_000,
      created: 9990,
      updated: 0,
      failed: 10,
      succeeded: 9990,
      error_count: 10,
      errors_truncated: false,
    });
    expect(done.errors).toHaveLength(10);
    expect(done.errors[0]).toEqual({ row: 1001, phone_number: 'bad-999', reason: 'bad-999 is not a valid E.164 number' });
    expect(await byPhone(ws, number(9998))).toMatchObject({ first_name: 'P9998', custom_fields: { segment: 's2' } });
    const listed = (await ws.api.get('/list-contact-import-jobs')).body;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ import_job_id: started.body.import_job_id, status: 'completed', error_count: 10 });
    expect(listed[0]).not.toHaveProperty('errors');
  }, 90_000);

  it('keeps jobs and uploads to their workspace', async () => {
    const a = await setup();
    const b = await setup();
    const job = await a.ws.api.post('/create-contact-import-job', { body: { contacts: [{ phone_number: number(701) }] } });
    const uploaded: any = await a.client.contact.uploadImportFile({ file: await toFile(Buffer.from(`phone\n${number(702)}\n`), 'a.csv') });
    const id = job.body.import_job_id;
    expect(await b.ws.api.get(`/get-contact-import-job/${id}`)).toMatchObject({ status: 404, body: { status: 404, message: `Contact import job ${id} not found` } });
    expect((await b.ws.api.get('/list-contact-import-jobs')).body).toEqual([]);
    expect(await b.client.contact.getImport()).toEqual({ status: 'idle' });
    expect(
      (await sdkFailure(b.client.contact.createImport({ upload_id: uploaded.upload_id, column_mapping: [{ external_field_name: 'phone', field_name: 'phone_number' }] }))).status,
    ).toBe(404);
    await eventually(async () => (await a.ws.api.get(`/get-contact-import-job/${id}`)).body, (body) => body.status === 'completed', 30_000);
    expect((await b.ws.api.get('/list-contacts')).body).toEqual([]);
    expect((await a.ws.api.get('/list-contact-import-jobs')).body.map((j: any) => j.import_job_id)).toEqual([id]);
  });
});
