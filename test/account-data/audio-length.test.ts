import { describe, expect, it } from 'vitest';
import { measuredAudioMs } from '../../shared/account-data/audio-length.ts';
import { startTestApp } from '../support/app.ts';
import { aac, m4a, mp3, ogg, recordedWebm, webm } from '../support/audio-fixtures.ts';
import { call } from '../support/http.ts';

/*
 * The 210 s limit on audio assets for every audio type (docs/account-data.md, Assets): the
 * length of MP3, AAC, Ogg, WebM and M4A files is measured (music-metadata), not only WAV's
 * and FLAC's (a live recording's WebM from its blocks' times), and audio whose length cannot
 * be read is refused. The files are built in
 * memory (test/support/audio-fixtures.ts) and uploaded under a misleading name and type.
 */
const app = await startTestApp();

async function upload(key: string, bytes: Buffer, filename = 'picture.png', type = 'image/png') {
  const form = new FormData();
  form.append('file', new Blob([bytes], { type }), filename);
  const request = new Request('http://local/', { method: 'POST', body: form });
  return call(app.url, 'POST', '/create-asset', {
    key,
    rawBody: Buffer.from(await request.arrayBuffer()),
    headers: { 'content-type': request.headers.get('content-type')! },
  });
}

const TYPES = [
  // name, build, type, extension, measured length of 3 s (whole frames for MP3 and AAC), message for 211 s
  ['MP3', mp3, 'audio/mpeg', 'mp3', 2988, 'file: Audio is 211 s long; at most 210 s'],
  ['AAC', aac, 'audio/aac', 'aac', 2816, 'file: Audio is 210.8 s long; at most 210 s'],
  ['OGG', ogg, 'audio/ogg', 'ogg', 3000, 'file: Audio is 211 s long; at most 210 s'],
  ['WebM', webm, 'audio/webm', 'webm', 3000, 'file: Audio is 211 s long; at most 210 s'],
  ['M4A', m4a, 'audio/mp4', 'm4a', 3000, 'file: Audio is 211 s long; at most 210 s'],
  // As a browser's MediaRecorder writes it: no Duration, unknown sizes; measured from its blocks' times.
  ['recorded WebM', recordedWebm, 'audio/webm', 'webm', 3000, 'file: Audio is 211 s long; at most 210 s'],
] as const;

describe('the length of audio assets', () => {
  it.each(TYPES)('measures %s: a short file is stored with its duration_ms, one over 210 s is a 400 and stores nothing', async (_name, build, contentType, extension, shortMs, longMessage) => {
    const ws = await app.newWorkspace();
    const short = await upload(ws.api_key, build(3));
    expect(short.status).toBe(201);
    expect(short.body).toMatchObject({ content_type: contentType, kind: 'audio', file_name: `picture.${extension}`, duration_ms: shortMs });
    const long = await upload(ws.api_key, build(211), 'long.wav', 'audio/wav');
    expect(long.status).toBe(400);
    expect(long.body).toEqual({ status: 400, message: longMessage });
    const listed = await ws.api.get('/list-assets');
    expect(listed.body.map((asset: { asset_id: string }) => asset.asset_id)).toEqual([short.body.asset_id]);
  });

  it('takes exactly 210 s', async () => {
    const ws = await app.newWorkspace();
    const edge = await upload(ws.api_key, ogg(210), 'edge.ogg', 'audio/ogg');
    expect(edge.status).toBe(201);
    expect(edge.body.duration_ms).toBe(210_000);
  });

  it('refuses audio whose length cannot be read (a WebM with neither Duration nor blocks, an MP3 with no frames) with a 400', async () => {
    const ws = await app.newWorkspace();
    const recorded = await upload(ws.api_key, webm(null), 'take.webm', 'audio/webm');
    expect(recorded.body).toEqual({
      status: 400,
      message: 'file: The length of this WEBM audio could not be read; audio assets must tell their length and last at most 210 s',
    });
    const tagOnly = await upload(ws.api_key, Buffer.concat([Buffer.from('ID3\x03\x00\x00\x00\x00\x00\x00', 'latin1'), Buffer.from('no frames at all')]), 'song.mp3', 'audio/mpeg');
    expect(tagOnly.body).toEqual({
      status: 400,
      message: 'file: The length of this MP3 audio could not be read; audio assets must tell their length and last at most 210 s',
    });
    expect((await ws.api.get('/list-assets')).body).toEqual([]);
  });
});

describe('measuring a broken file', () => {
  it('never throws or hangs on a truncated or corrupted file of any audio type, and answers a 400 for one through the API', async () => {
    const files = [mp3(2), aac(2), ogg(2), webm(2), m4a(2), recordedWebm(2)];
    const types = ['audio/mpeg', 'audio/aac', 'audio/ogg', 'audio/webm', 'audio/mp4', 'audio/webm'];
    for (const [i, file] of files.entries()) {
      for (const cut of [4, 9, 13, 30, 57, 100, Math.floor(file.length / 2), file.length - 1]) {
        const broken = file.subarray(0, Math.min(cut, file.length));
        const corrupted = Buffer.from(file);
        corrupted.fill(0xff, Math.min(cut, file.length - 1), Math.min(cut + 8, file.length));
        for (const bytes of [broken, corrupted]) {
          const ms = await measuredAudioMs(bytes, { contentType: types[i]! });
          // Unknown (refused), or a length the 210 s limit judges (a corrupted Ogg granule reads as years: refused too).
          expect(ms === undefined || (Number.isSafeInteger(ms) && ms > 0)).toBe(true);
        }
      }
    }
    const ws = await app.newWorkspace();
    const truncated = await upload(ws.api_key, recordedWebm(2).subarray(0, 120), 'cut.webm', 'audio/webm');
    expect(truncated.body).toEqual({
      status: 400,
      message: 'file: The length of this WEBM audio could not be read; audio assets must tell their length and last at most 210 s',
    });
  });
});
