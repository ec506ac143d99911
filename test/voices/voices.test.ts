import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import busboy from 'busboy';
import Retell, { NotFoundError, toFile } from 'retell-sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_VOICE_ID, DEFAULT_VOICE_MODEL, VOICE_CATALOGUE, assertVoiceUsable } from '../../shared/voices/voices.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import { sdkFailure } from '../support/sdk.ts';

const app = await startTestApp();
const retell = (apiKey = app.workspace.api_key) => new Retell({ apiKey, baseURL: app.url, maxRetries: 0 });

/** A real multipart/form-data body, encoded by the platform's FormData. */
async function multipart(parts: [name: string, value: string | Blob, filename?: string][]) {
  const form = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, value, filename);
  }
  const request = new Request('http://local/', { method: 'POST', body: form });
  return { rawBody: Buffer.from(await request.arrayBuffer()), headers: { 'content-type': request.headers.get('content-type')! } };
}

const audio = (bytes = 2048, type = 'audio/mpeg') => new Blob([Buffer.alloc(bytes, 7)], { type });

async function clone(key: string, parts: Parameters<typeof multipart>[0]) {
  return call(app.url, 'POST', '/clone-voice', { key, ...(await multipart(parts)) });
}

describe('the built-in catalogue', () => {
  it('lists catalogue voices in the compatible shape, the default voice among them', async () => {
    const voices = await retell().voice.list();
    expect(voices.length).toBeGreaterThanOrEqual(VOICE_CATALOGUE.length);
    for (const voice of voices.slice(0, VOICE_CATALOGUE.length)) {
      expect(Object.keys(voice).sort()).toEqual(['accent', 'age', 'gender', 'preview_audio_url', 'provider', 'voice_id', 'voice_name']);
      expect(voice.voice_id).toMatch(/^(11labs|cartesia|openai|minimax|retell)-[A-Z][a-z]+$/);
    }
    const ids = voices.map((v) => v.voice_id);
    expect(ids).toEqual(expect.arrayContaining(['11labs-Adrian', 'cartesia-Cleo', 'openai-Alloy', 'minimax-Ava', DEFAULT_VOICE_ID]));
    expect(VOICE_CATALOGUE.find((v) => v.voice_id === DEFAULT_VOICE_ID)).toMatchObject({
      provider: 'elevenlabs',
      premium_model: DEFAULT_VOICE_MODEL,
    });
    expect(VOICE_CATALOGUE.every((v) => v.provider === 'platform' ? v.premium_model === null : typeof v.premium_model === 'string')).toBe(true);
  });

  it('gets one voice', async () => {
    const voice = await retell().voice.retrieve('11labs-Adrian');
    expect(voice).toEqual({
      voice_id: '11labs-Adrian',
      voice_name: 'Adrian',
      provider: 'elevenlabs',
      gender: 'male',
      accent: 'American',
      age: 'Young',
      preview_audio_url: expect.stringMatching(/^data:audio\/wav;base64,/),
    });
  });

  it('previews a voice as a playable, offline data: URL (a WAV file)', async () => {
    const res = await app.api.get('/voice-preview/cartesia-Cleo');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ voice_id: 'cartesia-Cleo', preview_audio_url: expect.stringMatching(/^data:audio\/wav;base64,/) });
    const wav = Buffer.from(res.body.preview_audio_url.split(',')[1], 'base64');
    expect(wav.subarray(0, 4).toString('ascii')).toBe('RIFF');
    expect(wav.subarray(8, 12).toString('ascii')).toBe('WAVE');
    expect(wav.readUInt32LE(40)).toBe(wav.length - 44);
  });

  it('answers an unknown voice with 404 on get and preview', async () => {
    for (const path of ['/get-voice/11labs-Nobody', '/voice-preview/11labs-Nobody']) {
      const res = await app.api.get(path);
      expect(res.status, path).toBe(404);
      expect(res.body).toEqual({ status: 404, message: 'Voice not found' });
    }
    await expect(retell().voice.retrieve('cartesia-Nobody')).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('cloning (built-in provider)', () => {
  it('clones through retell-sdk (multipart), then lists, gets, previews and accepts the voice', async () => {
    const { workspace_id, api_key } = await app.newWorkspace();
    const voice = await retell(api_key).voice.clone({
      voice_name: 'My Voice',
      voice_provider: 'elevenlabs',
      files: [await toFile(Buffer.alloc(4096, 1), 'one.mp3', { type: 'audio/mpeg' }), await toFile(Buffer.alloc(10, 2), 'two.wav')],
    });
    expect(voice).toEqual({
      voice_id: expect.stringMatching(/^11labs-custom_voice_[0-9a-f]{24}$/),
      voice_name: 'My Voice',
      provider: 'elevenlabs',
      gender: 'female',
      preview_audio_url: expect.stringMatching(/^data:audio\/wav;base64,/),
    });
    const listed = await retell(api_key).voice.list();
    expect(listed.at(-1)).toEqual(voice);
    expect(listed.slice(0, VOICE_CATALOGUE.length).map((v) => v.voice_id)).toEqual(VOICE_CATALOGUE.map((v) => v.voice_id));
    expect(await retell(api_key).voice.retrieve(voice.voice_id)).toEqual(voice);
    const preview = await call(app.url, 'GET', `/voice-preview/${voice.voice_id}`, { key: api_key });
    expect(preview.body).toEqual({ voice_id: voice.voice_id, preview_audio_url: expect.stringMatching(/^data:audio\/wav;/) });
    await expect(assertVoiceUsable(workspace_id, voice.voice_id)).resolves.toBeUndefined();
  });

  it('takes a hand-built multipart body with the optional labels and `files[]` names', async () => {
    const res = await clone(app.workspace.api_key, [
      ['voice_name', 'Labelled'],
      ['voice_provider', 'cartesia'],
      ['gender', 'male'],
      ['accent', 'Irish'],
      ['files[]', new Blob([Buffer.alloc(100)], { type: 'application/octet-stream' }), 'take1.wav'],
    ]);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ voice_name: 'Labelled', provider: 'cartesia', gender: 'male', accent: 'Irish' });
    expect(res.body.voice_id).toMatch(/^cartesia-custom_voice_/);
  });

  it.each([
    [
      'a missing voice_name',
      [['files', audio(), 'a.mp3']],
      400,
      'voice_name: Required',
    ],
    [
      'no files',
      [['voice_name', 'x']],
      400,
      'files: Required (or upload_ids, presigned uploads)',
    ],
    [
      'a file that is not audio',
      [['voice_name', 'x'], ['files', audio(), 'a.mp3'], ['files', new Blob(['hello'], { type: 'text/plain' }), 'notes.txt']],
      400,
      'files.1: File "notes.txt" is text/plain; only audio files (audio/*) are accepted',
    ],
    [
      'an octet-stream file without an audio extension',
      [['voice_name', 'x'], ['files', new Blob(['MZ']), 'setup.exe']],
      400,
      'files.0: File "setup.exe" is application/octet-stream; only audio files (audio/*) are accepted',
    ],
    [
      'an empty file',
      [['voice_name', 'x'], ['files', audio(0), 'empty.mp3']],
      400,
      'files.0: File "empty.mp3" is empty',
    ],
    [
      'two files for a one-file provider',
      [['voice_name', 'x'], ['voice_provider', 'minimax'], ['files', audio(), 'a.mp3'], ['files', audio(), 'b.mp3']],
      400,
      'files: voice_provider minimax clones from at most 1 file',
    ],
    [
      'an unknown provider',
      [['voice_name', 'x'], ['voice_provider', 'openai'], ['files', audio(), 'a.mp3']],
      400,
      'voice_provider: Expected one of "elevenlabs", "cartesia", "minimax", "fish_audio", "platform", "inworld"',
    ],
    [
      '26 files',
      [['voice_name', 'x'], ...Array.from({ length: 26 }, (_, i): [string, Blob, string] => ['files', audio(10), `${i}.mp3`])],
      400,
      'Too many files: at most 25 per request',
    ],
  ] as [string, Parameters<typeof multipart>[0], number, string][])('refuses %s', async (_label, parts, status, message) => {
    const before = (await app.api.get('/list-voices')).body.length;
    const res = await clone(app.workspace.api_key, parts);
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ status, message });
    expect((await app.api.get('/list-voices')).body).toHaveLength(before);
  });

  it('refuses a file over 10 MB with 413', async () => {
    const res = await clone(app.workspace.api_key, [
      ['voice_name', 'big'],
      ['files', audio(10 * 1024 * 1024 + 1, 'audio/wav'), 'big.wav'],
    ]);
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ status: 413, message: 'File "big.wav" exceeds the 10 MB limit per file' });
  });

  it('refuses files in a JSON body (JSON names presigned uploads only) with 400', async () => {
    const res = await app.api.post('/clone-voice', { body: { voice_name: 'x', files: ['UklGRg=='] } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message: 'files.0: Must be an audio file upload' });
  });
});

describe('community voices (built-in provider)', () => {
  it('searches through retell-sdk (POST with a JSON body) and with GET query parameters', async () => {
    const viaSdk = await retell().voice.search({ search_query: 'australian' });
    expect(viaSdk).toEqual({
      voices: [
        {
          provider_voice_id: 'mockEL0001harbour',
          name: 'Harbour',
          description: 'Warm, relaxed narrator with an Australian accent',
          public_user_id: 'mock_owner_01',
        },
      ],
    });
    const viaGet = await app.api.get('/search-community-voice?search_query=reef&voice_provider=fish_audio');
    expect(viaGet.status).toBe(200);
    expect(viaGet.body.voices.map((v: { name: string }) => v.name)).toEqual(['Reef']);
    expect((await app.api.get('/search-community-voice?search_query=zzzz')).body).toEqual({ voices: [] });
  });

  it.each([
    ['/search-community-voice', 'search_query: Required'],
    ['/search-community-voice?search_query=%20', 'search_query: Must be at least 1 characters'],
    ['/search-community-voice?search_query=a&voice_provider=openai', 'voice_provider: Expected one of "elevenlabs", "cartesia", "minimax", "fish_audio", "inworld"'],
  ])('refuses GET %s', async (path, message) => {
    const res = await app.api.get(path);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message });
  });

  it('adds a community voice to the workspace through retell-sdk', async () => {
    const { api_key } = await app.newWorkspace();
    const voice = await retell(api_key).voice.addResource({
      provider_voice_id: 'mockEL0001harbour',
      public_user_id: 'mock_owner_01',
      voice_name: 'Our Harbour',
    });
    expect(voice).toEqual({
      voice_id: expect.stringMatching(/^11labs-custom_voice_[0-9a-f]{24}$/),
      voice_name: 'Our Harbour',
      provider: 'elevenlabs',
      gender: 'male',
      accent: 'Australian',
      age: 'Middle Aged',
      preview_audio_url: expect.stringMatching(/^data:audio\/wav;base64,/),
    });
    expect((await retell(api_key).voice.list()).at(-1)).toEqual(voice);
    const cartesia = await retell(api_key).voice.addResource({
      provider_voice_id: 'mock-cartesia-0001-wren',
      voice_name: 'Wren',
      voice_provider: 'cartesia',
    });
    expect(cartesia).toMatchObject({ provider: 'cartesia', gender: 'female', voice_id: expect.stringMatching(/^cartesia-custom_voice_/) });
  });

  it('adds with only provider_voice_id and voice_name, finding the library and the owner by the voice’s ID', async () => {
    const { api_key } = await app.newWorkspace();
    const client = retell(api_key);
    const harbour = await client.voice.addResource({ provider_voice_id: 'mockEL0001harbour', voice_name: 'Harbour' });
    expect(harbour).toMatchObject({ voice_id: expect.stringMatching(/^11labs-custom_voice_/), provider: 'elevenlabs', accent: 'Australian' });
    const reef = await client.voice.addResource({ provider_voice_id: 'mockfish0001reef', voice_name: 'Reef' });
    expect(reef).toMatchObject({ voice_id: expect.stringMatching(/^fish_audio-custom_voice_/), provider: 'fish_audio', gender: 'male' });
    // The provider given, the owner not: ElevenLabs' owner is found by the voice's ID.
    const thames = await client.voice.addResource({ provider_voice_id: 'mockEL0004thames', voice_name: 'Thames', voice_provider: 'elevenlabs' });
    expect(thames).toMatchObject({ provider: 'elevenlabs', accent: 'British' });
    expect((await client.voice.list()).slice(-3)).toEqual([harbour, reef, thames]);
  });

  it('refuses only an ambiguous voice, naming the field that tells them apart, and adds it once that field is given', async () => {
    const { api_key } = await app.newWorkspace();
    const client = retell(api_key);
    expect(await sdkFailure(client.voice.addResource({ provider_voice_id: 'mock-shared-0001-ember', voice_name: 'Ember' }))).toEqual({
      status: 400,
      body: {
        status: 400,
        message: 'voice_provider: Required: community voice "mock-shared-0001-ember" is in more than one library (cartesia, minimax)',
      },
    });
    const ember = await client.voice.addResource({ provider_voice_id: 'mock-shared-0001-ember', voice_name: 'Ember', voice_provider: 'minimax' });
    expect(ember).toMatchObject({ provider: 'minimax', voice_id: expect.stringMatching(/^minimax-custom_voice_/) });

    for (const body of [
      { provider_voice_id: 'mockEL0006echo', voice_name: 'Echo' },
      { provider_voice_id: 'mockEL0006echo', voice_name: 'Echo', voice_provider: 'elevenlabs' as const },
    ]) {
      expect(await sdkFailure(client.voice.addResource(body))).toEqual({
        status: 400,
        body: {
          status: 400,
          message: 'public_user_id: Required: community voice "mockEL0006echo" has more than one owner (mock_owner_03, mock_owner_05)',
        },
      });
    }
    const echo = await client.voice.addResource({ provider_voice_id: 'mockEL0006echo', voice_name: 'Echo', public_user_id: 'mock_owner_05' });
    expect(echo).toMatchObject({ provider: 'elevenlabs', accent: 'Irish' });
    expect((await client.voice.list()).slice(-2)).toEqual([ember, echo]);
  });

  it.each([
    [{ provider_voice_id: 'nope', public_user_id: 'mock_owner_01', voice_name: 'x' }, 404, 'Community voice not found'],
    [{ provider_voice_id: 'mockEL0001harbour', public_user_id: 'someone_else', voice_name: 'x' }, 404, 'Community voice not found'],
    [{ provider_voice_id: 'nope', voice_name: 'x' }, 404, 'Community voice "nope" not found in any community library'],
    [{ provider_voice_id: 'mockEL0001harbour', voice_name: 'x', voice_provider: 'cartesia' }, 404, 'Community voice not found'],
    [{ provider_voice_id: 'mock-cartesia-0001-wren', voice_name: 'x', voice_provider: 'elevenlabs' }, 404, 'Community voice "mock-cartesia-0001-wren" not found in the elevenlabs library'],
    [{ provider_voice_id: 'mockEL0001harbour', public_user_id: 'mock_owner_01' }, 400, 'voice_name: Required'],
  ])('refuses to add %j', async (body, status, message) => {
    const res = await app.api.post('/add-community-voice', { body });
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ status, message });
  });
});

describe('workspace isolation and scope', () => {
  it('answers another workspace\'s voice with 404 and never lists it', async () => {
    const owner = await app.newWorkspace();
    const other = await app.newWorkspace();
    const voice = (await clone(owner.api_key, [['voice_name', 'Private'], ['files', audio(), 'a.mp3']])).body;
    for (const path of [`/get-voice/${voice.voice_id}`, `/voice-preview/${voice.voice_id}`]) {
      const res = await other.api.get(path);
      expect(res.status, path).toBe(404);
      expect(res.body).toEqual({ status: 404, message: 'Voice not found' });
    }
    expect((await other.api.get('/list-voices')).body.map((v: { voice_id: string }) => v.voice_id)).not.toContain(voice.voice_id);
    await expect(assertVoiceUsable(other.workspace_id, voice.voice_id)).rejects.toMatchObject({
      status: 400,
      message: `voice_id: Unknown voice ${voice.voice_id}`,
    });
    await expect(assertVoiceUsable(other.workspace_id, DEFAULT_VOICE_ID)).resolves.toBeUndefined();
  });

  it('needs the agents scope on every voice route', async () => {
    const scoped = (await app.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
    const agents = (await app.api.post('/api-keys', { body: { name: 'agents', scopes: ['agents'] } })).body.api_key;
    const requests: [string, string, object?][] = [
      ['GET', '/list-voices'],
      ['GET', '/get-voice/11labs-Adrian'],
      ['GET', '/voice-preview/11labs-Adrian'],
      ['GET', '/search-community-voice?search_query=a'],
      ['POST', '/search-community-voice', { body: { search_query: 'a' } }],
      ['POST', '/add-community-voice', { body: { provider_voice_id: 'mock-cartesia-0001-wren', voice_name: 'w', voice_provider: 'cartesia' } }],
      ['POST', '/clone-voice', await multipart([['voice_name', 'v'], ['files', audio(), 'a.mp3']])],
    ];
    for (const [method, path, options] of requests) {
      const refused = await call(app.url, method, path, { key: scoped, ...options });
      expect(refused.status, `${method} ${path}`).toBe(403);
      expect(refused.body).toEqual({ status: 403, message: 'This API key lacks the "agents" scope' });
      const allowed = await call(app.url, method, path, { key: agents, ...options });
      expect(allowed.status, `${method} ${path}`).toBeLessThan(300);
    }
  });
});

/** A stand-in for ElevenLabs' API on 127.0.0.1, recording what it was sent. */
interface Received {
  method: string;
  path: string;
  apiKey?: string;
  json?: any;
  fields?: Record<string, string>;
  files?: { name: string; filename: string; type: string; size: number }[];
}

function readMultipart(req: IncomingMessage): Promise<Pick<Received, 'fields' | 'files'>> {
  return new Promise((resolve, reject) => {
    const fields: Record<string, string> = {};
    const files: NonNullable<Received['files']> = [];
    const parser = busboy({ headers: req.headers });
    parser.on('field', (name, value) => (fields[name] = value));
    parser.on('file', (name, stream, info) => {
      let size = 0;
      stream.on('data', (chunk: Buffer) => (size += chunk.length));
      stream.on('end', () => files.push({ name, filename: info.filename ?? '', type: info.mimeType, size }));
    });
    parser.on('close', () => resolve({ fields, files }));
    parser.on('error', reject);
    req.pipe(parser);
  });
}

async function startFakeElevenLabs() {
  const received: Received[] = [];
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const entry: Received = { method: req.method ?? '', path: url.pathname + url.search, apiKey: req.headers['xi-api-key'] as string };
    if ((req.headers['content-type'] ?? '').startsWith('multipart/')) Object.assign(entry, await readMultipart(req));
    else {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      if (chunks.length) entry.json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    }
    received.push(entry);
    const send = (status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (entry.apiKey !== 'el-test-key') return send(401, { detail: { status: 'invalid_api_key' } });
    if (req.method === 'POST' && url.pathname === '/v1/voices/add') {
      if (entry.fields?.name === 'reject me') return send(422, { detail: { status: 'invalid_audio', message: 'Audio too short' } });
      if (entry.fields?.name === 'explode') return send(500, { detail: 'boom' });
      return send(200, { voice_id: 'el_cloned_1', requires_verification: false });
    }
    if (req.method === 'GET' && url.pathname === '/v1/shared-voices') {
      return send(200, {
        voices: [
          { public_owner_id: 'owner_9', voice_id: 'shared_1', name: 'Shared One', description: 'From the fake', gender: 'female' },
          { public_owner_id: 'owner_9', voice_id: 'shared_2', name: 'Shared Two', description: null },
        ],
        has_more: false,
      });
    }
    const add = url.pathname.match(/^\/v1\/voices\/add\/([^/]+)\/([^/]+)$/);
    if (req.method === 'POST' && add) {
      if (add[2] === 'missing') return send(404, { detail: { status: 'voice_not_found', message: 'not found' } });
      return send(200, { voice_id: 'el_added_1' });
    }
    const get = url.pathname.match(/^\/v1\/voices\/([^/]+)$/);
    if (req.method === 'GET' && get) {
      if (get[1] === 'el_cloned_1') return send(200, { voice_id: 'el_cloned_1', preview_url: null, labels: { gender: 'male', accent: 'irish' } });
      if (get[1] === 'el_added_1') {
        return send(200, { voice_id: 'el_added_1', preview_url: 'https://cdn.fake/el_added_1.mp3', labels: { gender: 'female', age: 'young' } });
      }
      return send(404, { detail: { status: 'voice_not_found' } });
    }
    send(404, { detail: 'no such fake route' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, close: () => new Promise((r) => server.close(r)) };
}

describe('the ElevenLabs client, against a fake vendor on 127.0.0.1', () => {
  let fake: Awaited<ReturnType<typeof startFakeElevenLabs>>;
  beforeAll(async () => {
    fake = await startFakeElevenLabs();
    process.env.ELEVENLABS_API_KEY = 'el-test-key';
    process.env.ELEVENLABS_BASE_URL = fake.url;
  });
  afterAll(async () => {
    delete process.env.ELEVENLABS_API_KEY;
    delete process.env.ELEVENLABS_BASE_URL;
    await fake.close();
  });

  it('clones: sends the name and every file, labels the voice from the vendor', async () => {
    fake.received.length = 0;
    const voice = await retell().voice.clone({
      voice_name: 'Vendor Clone',
      voice_provider: 'elevenlabs',
      files: [await toFile(Buffer.alloc(300, 3), 'a.mp3', { type: 'audio/mpeg' }), await toFile(Buffer.alloc(5, 4), 'b.wav', { type: 'audio/wav' })],
    });
    expect(fake.received[0]).toMatchObject({
      method: 'POST',
      path: '/v1/voices/add',
      apiKey: 'el-test-key',
      fields: { name: 'Vendor Clone' },
      files: [
        { name: 'files', filename: 'a.mp3', type: 'audio/mpeg', size: 300 },
        { name: 'files', filename: 'b.wav', type: 'audio/wav', size: 5 },
      ],
    });
    expect(fake.received[1]).toMatchObject({ method: 'GET', path: '/v1/voices/el_cloned_1' });
    expect(voice).toEqual({
      voice_id: expect.stringMatching(/^11labs-custom_voice_/),
      voice_name: 'Vendor Clone',
      provider: 'elevenlabs',
      gender: 'male',
      accent: 'irish',
    });
    // No preview at the vendor yet, none stored: 404.
    const preview = await app.api.get(`/voice-preview/${voice.voice_id}`);
    expect(preview.body).toEqual({ status: 404, message: 'This voice has no preview yet' });
  });

  it('clones from a presigned upload: a vendor outage gives the upload back for a retry, a refusal of the audio spends it', async () => {
    const sample = Buffer.alloc(6 * 1024 * 1024 + 10, 9);
    const created = await app.api.post('/create-voice-clone-upload', { body: { filename: 'studio.wav', content_type: 'audio/wav', content_length: sample.length } });
    expect((await fetch(created.body.upload_url, { method: 'PUT', headers: created.body.headers, body: sample })).status).toBe(200);
    const uploadIds = [created.body.upload_id];

    const exploded = await app.api.post('/clone-voice', { body: { voice_name: 'explode', upload_ids: uploadIds } });
    expect(exploded.body).toEqual({ status: 502, message: 'Voice vendor elevenlabs answered HTTP 500' });
    fake.received.length = 0;
    const voice = await app.api.post('/clone-voice', { body: { voice_name: 'From Upload', upload_ids: uploadIds } });
    expect(voice.status).toBe(201);
    expect(fake.received[0]).toMatchObject({
      method: 'POST',
      path: '/v1/voices/add',
      fields: { name: 'From Upload' },
      files: [{ name: 'files', filename: 'studio.wav', type: 'audio/wav', size: sample.length }],
    });
    expect((await app.api.post('/clone-voice', { body: { voice_name: 'again', upload_ids: uploadIds } })).status).toBe(400);

    const refusedSample = await app.api.post('/create-voice-clone-upload', { body: { filename: 'noise.mp3', content_type: 'audio/mpeg', content_length: 4 } });
    await fetch(refusedSample.body.upload_url, { method: 'PUT', headers: refusedSample.body.headers, body: Buffer.from('abcd') });
    const rejected = await app.api.post('/clone-voice', { body: { voice_name: 'reject me', upload_ids: [refusedSample.body.upload_id] } });
    expect(rejected.body).toEqual({ status: 400, message: 'Voice vendor elevenlabs rejected the request: Audio too short' });
    const after = await app.api.post('/clone-voice', { body: { voice_name: 'x', upload_ids: [refusedSample.body.upload_id] } });
    expect(after.body.message).toBe(`upload_ids.0: Upload ${refusedSample.body.upload_id} not found (it expired, was already used, or is another workspace's)`);
  });

  it('searches the shared library and maps its owner to public_user_id', async () => {
    fake.received.length = 0;
    const found = await retell().voice.search({ search_query: 'shared one', voice_provider: 'elevenlabs' });
    expect(fake.received[0]!.path).toBe('/v1/shared-voices?search=shared+one&page_size=30');
    expect(found).toEqual({
      voices: [
        { provider_voice_id: 'shared_1', name: 'Shared One', description: 'From the fake', public_user_id: 'owner_9' },
        { provider_voice_id: 'shared_2', name: 'Shared Two', public_user_id: 'owner_9' },
      ],
    });
  });

  it('adds a shared voice under the caller\'s name and previews it from the vendor', async () => {
    fake.received.length = 0;
    const voice = await retell().voice.addResource({ provider_voice_id: 'shared_1', public_user_id: 'owner_9', voice_name: 'Added' });
    expect(fake.received[0]).toMatchObject({ method: 'POST', path: '/v1/voices/add/owner_9/shared_1', json: { new_name: 'Added' } });
    expect(voice).toEqual({
      voice_id: expect.stringMatching(/^11labs-custom_voice_/),
      voice_name: 'Added',
      provider: 'elevenlabs',
      gender: 'female',
      age: 'young',
      preview_audio_url: 'https://cdn.fake/el_added_1.mp3',
    });
    const preview = await app.api.get(`/voice-preview/${voice.voice_id}`);
    expect(preview.body).toEqual({ voice_id: voice.voice_id, preview_audio_url: 'https://cdn.fake/el_added_1.mp3' });
  });

  it('finds the owner of a shared voice given without public_user_id in the shared library, by its ID', async () => {
    fake.received.length = 0;
    const voice = await retell().voice.addResource({ provider_voice_id: 'shared_2', voice_name: 'Found', voice_provider: 'elevenlabs' });
    expect(fake.received.map((r) => `${r.method} ${r.path}`)).toEqual([
      'GET /v1/shared-voices?search=shared_2&page_size=100',
      'POST /v1/voices/add/owner_9/shared_2',
      'GET /v1/voices/el_added_1',
    ]);
    expect(voice).toMatchObject({ voice_name: 'Found', provider: 'elevenlabs' });
  });

  it('maps vendor failures: 404 → 404, 422 → 400 with its message, 5xx and bad credentials → 502', async () => {
    const missing = await app.api.post('/add-community-voice', { body: { provider_voice_id: 'missing', public_user_id: 'o', voice_name: 'x' } });
    expect(missing.body).toEqual({ status: 404, message: 'Community voice not found' });
    const rejected = await clone(app.workspace.api_key, [['voice_name', 'reject me'], ['files', audio(), 'a.mp3']]);
    expect(rejected.body).toEqual({ status: 400, message: 'Voice vendor elevenlabs rejected the request: Audio too short' });
    const exploded = await clone(app.workspace.api_key, [['voice_name', 'explode'], ['files', audio(), 'a.mp3']]);
    expect(exploded.body).toEqual({ status: 502, message: 'Voice vendor elevenlabs answered HTTP 500' });
    process.env.ELEVENLABS_API_KEY = 'wrong';
    try {
      const refused = await app.api.get('/search-community-voice?search_query=x');
      expect(refused.body).toEqual({ status: 502, message: 'Voice vendor elevenlabs answered HTTP 401' });
    } finally {
      process.env.ELEVENLABS_API_KEY = 'el-test-key';
    }
  });

  it('answers 502 when the vendor is unreachable', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    process.env.ELEVENLABS_BASE_URL = `http://127.0.0.1:${port}`;
    try {
      const res = await app.api.get('/search-community-voice?search_query=x');
      expect(res.body).toEqual({ status: 502, message: 'Voice vendor elevenlabs was unreachable (ECONNREFUSED)' });
    } finally {
      process.env.ELEVENLABS_BASE_URL = fake.url;
    }
  });

  it('keeps the built-in provider for vendors without a configured client', async () => {
    fake.received.length = 0;
    const found = await retell().voice.search({ search_query: 'wren', voice_provider: 'cartesia' });
    expect(found.voices.map((v) => v.provider_voice_id)).toEqual(['mock-cartesia-0001-wren']);
    expect(fake.received).toEqual([]);
  });
});
