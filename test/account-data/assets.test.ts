import { toFile } from 'retell-sdk';
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { retellClient } from '../support/sdk.ts';
import { wav } from '../support/audio-fixtures.ts';

const app = await startTestApp();

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('rest of a png')]);


async function upload(key: string, bytes: Buffer, filename: string, type: string) {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), filename);
  const request = new Request('http://local/', { method: 'POST', body: form });
  return call(app.url, 'POST', '/create-asset', {
    key,
    rawBody: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type')! },
  });
}

describe('assets', () => {
  it('types an upload by its bytes, serves it publicly without a key, and deletes it', async () => {
    const ws = await app.newWorkspace();
    const created = await upload(ws.api_key, PNG, 'notes.txt', 'text/plain');
    expect(created.status).toBe(201);
    const assetId = created.body.asset_id;
    expect(created.body).toEqual({
      asset_id: expect.stringMatching(/^asset_[0-9a-f]{24}$/),
      content_type: 'image/png',
      kind: 'image',
      file_name: 'notes.png',
      file_size: PNG.length,
      created_timestamp: expect.any(Number),
      url: expect.stringMatching(new RegExp(`/public/assets/${assetId}$`)),
    });
    const pub = await fetch(`${app.url}/public/assets/${assetId}`);
    expect(pub.status).toBe(200);
    expect(pub.headers.get('content-type')).toBe('image/png');
    expect(pub.headers.get('x-content-type-options')).toBe('nosniff');
    expect(pub.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(Buffer.from(await pub.arrayBuffer()).equals(PNG)).toBe(true);

    expect((await ws.api.get(`/get-asset/${assetId}`)).body).toEqual(created.body);
    expect((await ws.api.get('/list-assets')).body).toEqual([created.body]);
    const other = await app.newWorkspace();
    expect((await other.api.get(`/get-asset/${assetId}`)).status).toBe(404);
    expect((await other.api.delete(`/delete-asset/${assetId}`)).status).toBe(404);

    expect((await ws.api.delete(`/delete-asset/${assetId}`)).status).toBe(204);
    expect((await fetch(`${app.url}/public/assets/${assetId}`)).status).toBe(404);
    expect((await ws.api.get(`/get-asset/${assetId}`)).status).toBe(404);
    expect((await ws.api.delete(`/delete-asset/${assetId}`)).status).toBe(404);
    expect((await fetch(`${app.url}/public/assets/asset_000000000000000000000000`)).status).toBe(404);
  });

  it('refuses a scriptable SVG by its content whatever its name, and takes a clean one', async () => {
    const ws = await app.newWorkspace();
    const scripted = await upload(ws.api_key, Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'), 'logo.png', 'image/png');
    expect(scripted.body).toEqual({ status: 400, message: 'file: This SVG is refused: it contains a script' });
    const handler = await upload(ws.api_key, Buffer.from('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><rect onload="x()"/></svg>'), 'a.svg', 'image/svg+xml');
    expect(handler.body).toEqual({ status: 400, message: 'file: This SVG is refused: it has an event handler attribute' });
    const external = await upload(ws.api_key, Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><image href="https://evil.example/x.png"/></svg>'), 'a.svg', 'image/svg+xml');
    expect(external.body).toEqual({ status: 400, message: 'file: This SVG is refused: it references an external resource' });
    const clean = await upload(ws.api_key, Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><circle r="4" fill="url(#g)"/></svg>'), 'dot.svg', 'image/svg+xml');
    expect(clean.status).toBe(201);
    expect(clean.body.content_type).toBe('image/svg+xml');
    const served = await fetch(`${app.url}/public/assets/${clean.body.asset_id}`);
    expect(served.headers.get('content-security-policy')).toContain('sandbox');
  });

  it('refuses unknown bytes (415), audio over 210 s (400), an empty file (400) and over 10 MB (413)', async () => {
    const ws = await app.newWorkspace();
    const unknown = await upload(ws.api_key, Buffer.from('MZ\x90\x00 an executable'), 'song.mp3', 'audio/mpeg');
    expect(unknown.status).toBe(415);
    expect(unknown.body.message).toMatch(/^file: Not a supported image/);
    const long = await upload(ws.api_key, wav(211), 'long.wav', 'audio/wav');
    expect(long.body).toEqual({ status: 400, message: 'file: Audio is 211 s long; at most 210 s' });
    const ok = await upload(ws.api_key, wav(3), 'short.wav', 'audio/wav');
    expect(ok.body).toMatchObject({ content_type: 'audio/wav', kind: 'audio', duration_ms: 3000 });
    const empty = await upload(ws.api_key, Buffer.alloc(0), 'x.png', 'image/png');
    expect(empty.body).toEqual({ status: 400, message: 'file: The file is empty' });
    const big = await upload(ws.api_key, Buffer.concat([PNG, Buffer.alloc(10 * 1024 * 1024)]), 'big.png', 'image/png');
    expect(big.status).toBe(413);
  });

  it('works through retell-sdk\'s asset.create', async () => {
    const ws = await app.newWorkspace();
    const asset = await retellClient(app.url, ws.api_key).asset.create({ file: await toFile(Buffer.from('GIF89a......'), 'anim.gif') });
    expect(asset).toMatchObject({ content_type: 'image/gif', file_name: 'anim.gif', file_size: 12 });
  });
});
