import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { objectStore } from '../../shared/platform/aws/object-store.ts';
import { objectKeys } from '../../shared/platform/store/keys.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { wav } from '../support/audio-fixtures.ts';

/*
 * Assets past API Gateway's ~6 MB request limit: POST /create-asset-upload
 * hands out a presigned PUT (here the local object store's stand-in, which checks the
 * signature, expiry, type, exact length, tagging and checksum as S3 does), the bytes go
 * straight to the store, and POST /create-asset {upload_id} ingests them with the checks of
 * the multipart path. Refused files leave nothing behind; an upload is used once.
 */

const app = await startTestApp();

type Upload = { upload_id: string; upload_url: string; headers: Record<string, string> };
const put = (upload: Upload, body: Buffer, headers: Record<string, string> = {}) =>
  fetch(upload.upload_url, { method: 'PUT', headers: { ...upload.headers, ...headers }, body });
const uploadedObject = (workspaceId: string, uploadId: string) => objectStore().get(objectKeys.upload(workspaceId, uploadId));

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);


describe('presigned asset uploads', () => {
  it('round trip past 6 MB: an upload URL, a PUT, then create-asset ingests it typed by its bytes; a replay is refused', async () => {
    const ws = await app.newWorkspace();
    const body = Buffer.concat([PNG_SIGNATURE, Buffer.alloc(7 * 1024 * 1024, 1)]);
    const created = await ws.api.post('/create-asset-upload', { body: { filename: 'Big Banner.txt', content_type: 'image/png', content_length: body.length } });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      upload_id: expect.stringMatching(/^upload_[0-9a-f]{24}$/),
      upload_url: expect.stringContaining(`/local-objects/uploads/${ws.workspace_id}/${created.body.upload_id}?`),
      method: 'PUT',
      headers: { 'content-type': 'image/png', 'content-length': String(body.length), 'x-amz-tagging': 'retention_days=1' },
      expires_at: expect.any(Number),
      max_bytes: 10 * 1024 * 1024,
    });
    expect(created.body.expires_at).toBeGreaterThan(Date.now() + 14 * 60_000);
    const uploadId: string = created.body.upload_id;

    // Not PUT yet: refused, and the upload stays usable.
    const early = await ws.api.post('/create-asset', { body: { upload_id: uploadId } });
    expect(early.body).toEqual({ status: 400, message: `upload_id: Nothing was uploaded for ${uploadId} yet; PUT the file to its upload_url first` });

    // The signed headers must be sent as signed: another length, type or tagging is a 403 and stores nothing.
    expect((await put(created.body, body.subarray(0, 100), { 'content-length': '100' })).status).toBe(403);
    expect((await put(created.body, body, { 'content-type': 'image/gif' })).status).toBe(403);
    expect((await put(created.body, body, { 'x-amz-tagging': 'retention_days=3650' })).status).toBe(403);
    expect(await uploadedObject(ws.workspace_id, uploadId)).toBeUndefined();
    expect((await put(created.body, body)).status).toBe(200);

    // Another workspace cannot use it.
    const other = await app.newWorkspace();
    const foreign = await other.api.post('/create-asset', { body: { upload_id: uploadId } });
    expect(foreign.body).toEqual({ status: 400, message: `upload_id: Upload ${uploadId} not found (it expired, was already used, or is another workspace's)` });

    const asset = await ws.api.post('/create-asset', { body: { upload_id: uploadId } });
    expect(asset.status).toBe(201);
    expect(asset.body).toEqual({
      asset_id: expect.stringMatching(/^asset_[0-9a-f]{24}$/),
      content_type: 'image/png',
      kind: 'image',
      file_name: 'Big_Banner.png',
      file_size: body.length,
      created_timestamp: expect.any(Number),
      url: expect.stringMatching(new RegExp(`/public/assets/${asset.body.asset_id}$`)),
    });
    const pub = await fetch(`${app.url}/public/assets/${asset.body.asset_id}`);
    expect(pub.status).toBe(200);
    expect(pub.headers.get('content-type')).toBe('image/png');
    expect(pub.headers.get('x-content-type-options')).toBe('nosniff');
    expect(Buffer.from(await pub.arrayBuffer()).equals(body)).toBe(true);
    // The upload's own object is gone once it became the asset.
    expect(await uploadedObject(ws.workspace_id, uploadId)).toBeUndefined();

    const replay = await ws.api.post('/create-asset', { body: { upload_id: uploadId } });
    expect(replay.body).toEqual({ status: 400, message: `upload_id: Upload ${uploadId} not found (it expired, was already used, or is another workspace's)` });
    expect((await ws.api.get('/list-assets')).body).toHaveLength(1);
  });

  it('refuses by content, not name: unknown bytes (415), a scriptable SVG and long audio (400), deleting the upload', async () => {
    const ws = await app.newWorkspace();
    const cases: [Buffer, string, number, string][] = [
      [Buffer.from('MZ\x90\x00 an executable'), 'song.mp3', 415, 'file: Not a supported image'],
      [Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), 'logo.png', 400, 'file: This SVG is refused: it contains a script'],
      [wav(211), 'long.wav', 400, 'file: Audio is 211 s long; at most 210 s'],
    ];
    for (const [bytes, filename, status, message] of cases) {
      const created = await ws.api.post('/create-asset-upload', { body: { filename, content_length: bytes.length } });
      expect(created.body.headers['content-type']).toBe('application/octet-stream');
      expect((await put(created.body, bytes)).status).toBe(200);
      const refused = await ws.api.post('/create-asset', { body: { upload_id: created.body.upload_id } });
      expect(refused.status).toBe(status);
      expect(refused.body.message.startsWith(message)).toBe(true);
      // Nothing of a refused file is kept: neither the object nor the upload.
      expect(await uploadedObject(ws.workspace_id, created.body.upload_id)).toBeUndefined();
      const again = await ws.api.post('/create-asset', { body: { upload_id: created.body.upload_id } });
      expect(again.body.message).toContain('not found');
    }
    expect((await ws.api.get('/list-assets')).body).toEqual([]);
  });

  it('refuses over 10 MB when the URL is asked for (413), a bad body, both file and upload_id, and a voice sample\'s upload', async () => {
    const ws = await app.newWorkspace();
    const big = await ws.api.post('/create-asset-upload', { body: { filename: 'huge.png', content_length: 10 * 1024 * 1024 + 1 } });
    expect(big.body).toEqual({ status: 413, message: 'File "huge.png" exceeds the 10 MB limit per file' });
    const zero = await ws.api.post('/create-asset-upload', { body: { filename: 'a.png', content_length: 0 } });
    expect(zero.status).toBe(400);
    expect(zero.body.message).toMatch(/^content_length: /);
    const badType = await ws.api.post('/create-asset-upload', { body: { filename: 'a.png', content_type: 'png', content_length: 10 } });
    expect(badType.body).toEqual({ status: 400, message: 'content_type: Must be a media type such as audio/mpeg' });
    const badChecksum = await ws.api.post('/create-asset-upload', { body: { filename: 'a.png', content_length: 10, checksum_sha256: 'abc' } });
    expect(badChecksum.body).toEqual({ status: 400, message: "checksum_sha256: Must be the file's SHA-256 in base64 (44 characters)" });
    const neither = await ws.api.post('/create-asset', { body: {} });
    expect(neither.body).toEqual({ status: 400, message: 'file: Required (or upload_id, a presigned upload)' });
    const form = new FormData();
    form.append('upload_id', 'upload_000000000000000000000000');
    form.append('file', new Blob([PNG_SIGNATURE], { type: 'image/png' }), 'a.png');
    const request = new Request('http://local/', { method: 'POST', body: form });
    const both = await call(app.url, 'POST', '/create-asset', { key: ws.api_key, rawBody: Buffer.from(await request.arrayBuffer()), headers: { 'content-type': request.headers.get('content-type')! } });
    expect(both.body).toEqual({ status: 400, message: 'upload_id: Send either file or upload_id, not both' });
    const malformed = await ws.api.post('/create-asset', { body: { upload_id: 'kb_upload_000000000000000000000000' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.message).toMatch(/^upload_id: /);

    const sample = await ws.api.post('/create-voice-clone-upload', { body: { filename: 'take.mp3', content_type: 'audio/mpeg', content_length: 4 } });
    expect(sample.status).toBe(201);
    const wrongPurpose = await ws.api.post('/create-asset', { body: { upload_id: sample.body.upload_id } });
    expect(wrongPurpose.body).toEqual({ status: 400, message: `upload_id: Upload ${sample.body.upload_id} was made for a voice sample, not an asset` });
  });

  it('holds the bytes to a signed SHA-256, and ingests an upload once under concurrent finishes', async () => {
    const ws = await app.newWorkspace();
    const gif = Buffer.from('GIF89a' + 'x'.repeat(200));
    const checksum = createHash('sha256').update(gif).digest('base64');
    const created = await ws.api.post('/create-asset-upload', { body: { filename: 'anim.gif', content_type: 'image/gif', content_length: gif.length, checksum_sha256: checksum } });
    expect(created.body.headers).toEqual({ 'content-type': 'image/gif', 'content-length': String(gif.length), 'x-amz-tagging': 'retention_days=1', 'x-amz-checksum-sha256': checksum });
    const tampered = Buffer.from(gif);
    tampered[10] = 0x79;
    const bad = await put(created.body, tampered);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ status: 400, message: 'The body does not match the signed x-amz-checksum-sha256 (BadDigest)' });
    expect((await put(created.body, gif)).status).toBe(200);

    const finishes = await Promise.all(Array.from({ length: 4 }, () => ws.api.post('/create-asset', { body: { upload_id: created.body.upload_id } })));
    const statuses = finishes.map((res) => res.status).sort();
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    for (const res of finishes.filter((r) => r.status !== 201)) {
      expect([400, 409]).toContain(res.status);
      expect(res.body.message).toMatch(/^upload_id: Upload upload_[0-9a-f]{24} (was already used|not found)/);
    }
    const assets = (await ws.api.get('/list-assets')).body;
    expect(assets).toHaveLength(1);
    expect(assets[0]).toMatchObject({ content_type: 'image/gif', file_name: 'anim.gif', file_size: gif.length });
  });
});
