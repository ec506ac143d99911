import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { JOBS } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * Presigned uploads: a file past API Gateway's ~6 MB request limit is PUT
 * to a presigned URL (here the local object store's stand-in, which checks the signature,
 * the expiry, the type and the exact length as S3 does), then named in
 * knowledge_base_upload_ids; the API ingests it like a multipart file. Oversize, replays,
 * other workspaces' uploads and bodies of another length are refused.
 */

const app = await startTestApp();
const background = startBackgroundWork(JOBS.filter((job) => job.name === 'kb-jobs'));
afterAll(() => background.stop());

const put = (upload: { upload_url: string; headers: Record<string, string> }, body: Buffer, headers: Record<string, string> = {}) =>
  fetch(upload.upload_url, { method: 'PUT', headers: { ...upload.headers, ...headers }, body });

describe('presigned uploads', () => {
  it('round trip: an upload URL, a PUT of 2 MB, then the knowledge base ingests it; a replay is refused', async () => {
    const ws = await app.newWorkspace();
    const line = 'The spare keys hang in the blue cabinet by the door.\n\n';
    const body = Buffer.from(line.repeat(Math.ceil((2 * 1024 * 1024) / line.length)));
    const created = await ws.api.post('/create-knowledge-base-upload', { body: { filename: 'manual.txt', content_length: body.length } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ upload_id: expect.stringMatching(/^kb_upload_[0-9a-f]{24}$/), method: 'PUT', max_bytes: 50 * 1024 * 1024, headers: { 'content-type': 'text/plain', 'content-length': String(body.length) } });
    expect(created.body.upload_url).toContain(`/local-objects/uploads/${ws.workspace_id}/${created.body.upload_id}?`);
    expect(created.body.expires_at).toBeGreaterThan(Date.now() + 14 * 60_000);

    // A body of another length, or another type, is refused and stores nothing.
    expect((await put(created.body, body.subarray(0, 100), { 'content-length': '100' })).status).toBe(403);
    expect((await put(created.body, body, { 'content-type': 'text/html' })).status).toBe(403);
    const early = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Early', knowledge_base_upload_ids: [created.body.upload_id] } });
    expect(early.status).toBe(400);
    expect(early.body.message).toBe(`knowledge_base_upload_ids.0: Nothing was uploaded for ${created.body.upload_id} yet; PUT the file to its upload_url first`);

    expect((await put(created.body, body)).status).toBe(200);
    // Another workspace cannot use it.
    const other = await app.newWorkspace();
    const foreign = await other.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Theirs', knowledge_base_upload_ids: [created.body.upload_id] } });
    expect(foreign.status).toBe(400);
    expect(foreign.body.message).toBe(`knowledge_base_upload_ids.0: Upload ${created.body.upload_id} not found (it expired, was already added, or is another workspace's)`);

    const kb = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Manual', knowledge_base_upload_ids: [created.body.upload_id] } });
    expect(kb.status).toBe(201);
    expect(kb.body.knowledge_base_sources).toEqual([expect.objectContaining({ type: 'document', filename: 'manual.txt', file_size: body.length, status: 'in_progress' })]);
    const settled = await eventually(async () => (await ws.api.get(`/get-knowledge-base/${kb.body.knowledge_base_id}`)).body, (value: any) => value.status !== 'in_progress', 50_000);
    expect(settled.status).toBe('complete');
    expect(settled.chunk_count).toBeGreaterThan(300);
    const original = await fetch(settled.knowledge_base_sources[0].file_url);
    expect(Buffer.from(await original.arrayBuffer()).equals(body)).toBe(true);

    const replay = await ws.api.post(`/add-knowledge-base-sources/${kb.body.knowledge_base_id}`, { body: { knowledge_base_upload_ids: [created.body.upload_id] } });
    expect(replay.status).toBe(400);
    expect(replay.body.message).toContain('not found');
  }, 60_000);

  it('refuses a file over 50 MB (413), an unsupported type, and more than 25 files', async () => {
    const ws = await app.newWorkspace();
    const big = await ws.api.post('/create-knowledge-base-upload', { body: { filename: 'huge.pdf', content_length: 50 * 1024 * 1024 + 1 } });
    expect(big).toMatchObject({ status: 413, body: { status: 413, message: 'File "huge.pdf" exceeds the 50 MB limit per file' } });
    const exe = await ws.api.post('/create-knowledge-base-upload', { body: { filename: 'tool.exe', content_length: 10 } });
    expect(exe.status).toBe(400);
    expect(exe.body.message).toBe('knowledge_base_files: "tool.exe" is not a supported document (PDF, DOCX, HTML, Markdown, TXT or CSV)');
    const ids = Array.from({ length: 26 }, () => `kb_upload_${'0'.repeat(24)}`);
    const many = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Many', knowledge_base_upload_ids: ids } });
    expect(many.status).toBe(400);
    expect(many.body.message).toBe('knowledge_base_upload_ids: Too many files: at most 25 per request');
  });

  it('keeps the SSRF rules for URL sources', async () => {
    const ws = await app.newWorkspace();
    const res = await ws.api.post('/create-knowledge-base', { body: { knowledge_base_name: 'Metadata', knowledge_base_urls: ['http://169.254.169.254/latest/meta-data/'] } });
    expect(res.status).toBe(400);
    expect(res.body.message).toMatch(/^knowledge_base_urls\.0: Destination not allowed: /);
  });
});
