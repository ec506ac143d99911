import { describe, expect, it } from 'vitest';
import { objectStore } from '../../shared/platform/aws/object-store.ts';
import { objectKeys } from '../../shared/platform/store/keys.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

/*
 * Voice cloning past API Gateway's ~6 MB request limit: each sample is PUT
 * to a presigned URL from POST /create-voice-clone-upload (checked as a multipart file is:
 * audio, 10 MB), then clone-voice names them in `upload_ids` (JSON, or a multipart field beside
 * files). The built-in voice provider clones; the ElevenLabs client's use of uploads is in
 * voices.test.ts against its fake.
 */

const app = await startTestApp();

type Upload = { upload_id: string; upload_url: string; headers: Record<string, string> };
const put = (upload: Upload, body: Buffer) => fetch(upload.upload_url, { method: 'PUT', headers: upload.headers, body });

async function uploadSample(api: Awaited<ReturnType<typeof app.newWorkspace>>['api'], filename: string, body: Buffer, contentType?: string): Promise<Upload> {
  const created = await api.post('/create-voice-clone-upload', { body: { filename, content_length: body.length, ...(contentType ? { content_type: contentType } : {}) } });
  expect(created.status).toBe(201);
  expect((await put(created.body, body)).status).toBe(200);
  return created.body;
}

describe('presigned voice samples', () => {
  it('clones from two samples past 6 MB named in JSON, then the uploads are gone', async () => {
    const ws = await app.newWorkspace();
    const first = await uploadSample(ws.api, 'take1.mp3', Buffer.alloc(7 * 1024 * 1024, 1), 'audio/mpeg');
    expect(first).toMatchObject({ method: 'PUT', max_bytes: 10 * 1024 * 1024, headers: { 'content-type': 'audio/mpeg', 'x-amz-tagging': 'retention_days=1' } });
    expect(first.upload_url).toContain(`/local-objects/uploads/${ws.workspace_id}/${first.upload_id}?`);
    // A generic type is taken with an audio extension, as multipart files are.
    const second = await uploadSample(ws.api, 'take2.wav', Buffer.alloc(1000, 2));
    expect(second.headers['content-type']).toBe('application/octet-stream');

    const voice = await ws.api.post('/clone-voice', { body: { voice_name: 'Big Voice', voice_provider: 'elevenlabs', upload_ids: [first.upload_id, second.upload_id] } });
    expect(voice.status).toBe(201);
    expect(voice.body).toMatchObject({ voice_id: expect.stringMatching(/^11labs-custom_voice_[0-9a-f]{24}$/), voice_name: 'Big Voice', provider: 'elevenlabs' });
    expect((await ws.api.get(`/get-voice/${voice.body.voice_id}`)).body).toEqual(voice.body);
    for (const upload of [first, second]) expect(await objectStore().get(objectKeys.upload(ws.workspace_id, upload.upload_id))).toBeUndefined();

    const replay = await ws.api.post('/clone-voice', { body: { voice_name: 'Again', upload_ids: [first.upload_id] } });
    expect(replay.body).toEqual({ status: 400, message: `upload_ids.0: Upload ${first.upload_id} not found (it expired, was already used, or is another workspace's)` });
  });

  it('takes upload_ids as a multipart field beside files', async () => {
    const ws = await app.newWorkspace();
    const sample = await uploadSample(ws.api, 'long-take.m4a', Buffer.alloc(2048, 3), 'audio/mp4');
    const form = new FormData();
    form.append('voice_name', 'Mixed');
    form.append('voice_provider', 'inworld');
    form.append('files', new Blob([Buffer.alloc(100, 4)], { type: 'audio/wav' }), 'short.wav');
    form.append('upload_ids', sample.upload_id);
    const request = new Request('http://local/', { method: 'POST', body: form });
    const res = await call(app.url, 'POST', '/clone-voice', { key: ws.api_key, rawBody: Buffer.from(await request.arrayBuffer()), headers: { 'content-type': request.headers.get('content-type')! } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ voice_name: 'Mixed', provider: 'inworld' });
  });

  it('refuses what a multipart file would be refused for, when the URL is asked for', async () => {
    const ws = await app.newWorkspace();
    const text = await ws.api.post('/create-voice-clone-upload', { body: { filename: 'notes.txt', content_type: 'text/plain', content_length: 10 } });
    expect(text.body).toEqual({ status: 400, message: 'File "notes.txt" is text/plain; only audio files (audio/*) are accepted' });
    const exe = await ws.api.post('/create-voice-clone-upload', { body: { filename: 'setup.exe', content_length: 10 } });
    expect(exe.body).toEqual({ status: 400, message: 'File "setup.exe" is application/octet-stream; only audio files (audio/*) are accepted' });
    const big = await ws.api.post('/create-voice-clone-upload', { body: { filename: 'big.wav', content_type: 'audio/wav', content_length: 10 * 1024 * 1024 + 1 } });
    expect(big.body).toEqual({ status: 413, message: 'File "big.wav" exceeds the 10 MB limit per file' });
  });

  it('refuses unknown, foreign, unsent, repeated and too many uploads, and an asset\'s upload', async () => {
    const ws = await app.newWorkspace();
    const before = (await ws.api.get('/list-voices')).body.length;
    const pending = await ws.api.post('/create-voice-clone-upload', { body: { filename: 'a.mp3', content_type: 'audio/mpeg', content_length: 10 } });
    const unsent = await ws.api.post('/clone-voice', { body: { voice_name: 'x', upload_ids: [pending.body.upload_id] } });
    expect(unsent.body).toEqual({ status: 400, message: `upload_ids.0: Nothing was uploaded for ${pending.body.upload_id} yet; PUT the file to its upload_url first` });

    const sample = await uploadSample(ws.api, 'b.mp3', Buffer.alloc(10, 5), 'audio/mpeg');
    const other = await app.newWorkspace();
    const foreign = await other.api.post('/clone-voice', { body: { voice_name: 'x', upload_ids: [sample.upload_id] } });
    expect(foreign.body).toEqual({ status: 400, message: `upload_ids.0: Upload ${sample.upload_id} not found (it expired, was already used, or is another workspace's)` });
    const twice = await ws.api.post('/clone-voice', { body: { voice_name: 'x', upload_ids: [sample.upload_id, sample.upload_id] } });
    expect(twice.body).toEqual({ status: 400, message: 'upload_ids: Each upload may be named once' });
    const oneFileProvider = await ws.api.post('/clone-voice', { body: { voice_name: 'x', voice_provider: 'minimax', upload_ids: [sample.upload_id, pending.body.upload_id] } });
    expect(oneFileProvider.body).toEqual({ status: 400, message: 'files: voice_provider minimax clones from at most 1 file' });
    const many = await ws.api.post('/clone-voice', { body: { voice_name: 'x', upload_ids: Array.from({ length: 26 }, () => sample.upload_id) } });
    expect(many.body).toEqual({ status: 400, message: 'upload_ids: Too many files: at most 25 per request' });
    const none = await ws.api.post('/clone-voice', { body: { voice_name: 'x' } });
    expect(none.body).toEqual({ status: 400, message: 'files: Required (or upload_ids, presigned uploads)' });

    const assetUpload = await ws.api.post('/create-asset-upload', { body: { filename: 'logo.png', content_length: 10 } });
    const wrongPurpose = await ws.api.post('/clone-voice', { body: { voice_name: 'x', upload_ids: [assetUpload.body.upload_id] } });
    expect(wrongPurpose.body).toEqual({ status: 400, message: `upload_ids.0: Upload ${assetUpload.body.upload_id} was made for an asset, not a voice sample` });
    expect((await ws.api.get('/list-voices')).body).toHaveLength(before);
    // The refusals above spent nothing: the sample still clones.
    expect((await ws.api.post('/clone-voice', { body: { voice_name: 'Kept', upload_ids: [sample.upload_id] } })).status).toBe(201);
  });

  it('clones once when three requests name the same upload at once', async () => {
    const ws = await app.newWorkspace();
    const sample = await uploadSample(ws.api, 'c.mp3', Buffer.alloc(500, 6), 'audio/mpeg');
    const before = (await ws.api.get('/list-voices')).body.length;
    const results = await Promise.all(Array.from({ length: 3 }, (_, i) => ws.api.post('/clone-voice', { body: { voice_name: `Race ${i}`, upload_ids: [sample.upload_id] } })));
    expect(results.filter((res) => res.status === 201)).toHaveLength(1);
    for (const res of results.filter((r) => r.status !== 201)) {
      expect([400, 409]).toContain(res.status);
      expect(res.body.message).toMatch(/^upload_ids\.0: Upload upload_[0-9a-f]{24} (is being used by another request, or was just used|not found)/);
    }
    expect((await ws.api.get('/list-voices')).body).toHaveLength(before + 1);
  });
});
