import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

interface Frame {
  id: number;
  event: string;
  data: any;
}

/** An SSE client: reads one response to its end (the stream closes when the call ends). */
function readStream(path: string, key: string, headers: Record<string, string> = {}): Promise<{ status: number; frames: Frame[]; arrivals: number[]; raw: string }> {
  return new Promise((resolve, reject) => {
    const url = new URL(path, app.url);
    const req = request(url, { headers: { authorization: `Bearer ${key}`, ...headers } }, (res) => {
      let raw = '';
      const arrivals: number[] = [];
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        arrivals.push(Date.now());
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, frames: parseFrames(raw), arrivals, raw }));
    });
    req.on('error', reject);
    req.end();
  });
}

function parseFrames(raw: string): Frame[] {
  return raw
    .split('\n\n')
    .map((block) => block.split('\n'))
    .filter((lines) => lines.some((line) => line.startsWith('data: ')))
    .map((lines) => ({
      id: Number(lines.find((l) => l.startsWith('id: '))!.slice(4)),
      event: lines.find((l) => l.startsWith('event: '))!.slice(7),
      data: JSON.parse(lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n')),
    }));
}

async function setup() {
  const ws = await app.newWorkspace();
  const { number } = await newAgentWithNumber(ws.api);
  const created = await ws.api.post('/v2/create-phone-call', {
    body: { from_number: number, to_number: '+14155555555', metadata: { sandbox_call_ms: 2500, sandbox_user_says: ['Hello?', 'What are your hours?'] } },
  });
  expect(created.status).toBe(201);
  return { ws, callId: created.body.call_id as string };
}

describe('GET /v2/calls/{call_id}/stream (server-sent events)', () => {
  it('streams a whole sandbox call as it happens and closes when it ends; resumes with Last-Event-ID', async () => {
    const { ws, callId } = await setup();
    const started = Date.now();
    const stream = await readStream(`/v2/calls/${callId}/stream`, ws.api_key);
    expect(stream.status).toBe(200);
    const ended = (await ws.api.get(`/v2/get-call/${callId}`)).body;
    expect(ended.call_status).toBe('ended');
    const ids = stream.frames.map((f) => f.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(new Set(ids).size).toBe(ids.length);
    expect(stream.frames[0]).toEqual({ id: 1, event: 'call_status', data: { call_id: callId, call_status: 'registered' } });
    expect(stream.frames[1]).toMatchObject({ id: 2, event: 'call_status', data: { call_status: 'ongoing' } });
    const transcript = stream.frames.filter((f) => f.event === 'transcript').map((f) => f.data);
    expect(transcript.map((e) => e.content)).toEqual(ended.transcript_with_tool_calls.map((e: any) => e.content));
    expect(transcript.map((e) => e.index)).toEqual(transcript.map((_, i) => i));
    expect(stream.frames.at(-1)).toMatchObject({ event: 'call_status', data: { call_status: 'ended', disconnection_reason: 'user_hangup' } });
    expect(stream.frames.at(-1)!.id).toBe(3 + transcript.length);
    // Frames came as the call went (several writes over the call's seconds), not in one piece at the end.
    expect(stream.arrivals.length).toBeGreaterThan(3);
    expect(stream.arrivals[1]! - started).toBeLessThan(ended.end_timestamp - started);

    // Resuming after frame 3 answers exactly what came after it, then closes.
    const resumed = await readStream(`/v2/calls/${callId}/stream`, ws.api_key, { 'last-event-id': '3' });
    expect(resumed.frames.map((f) => f.id)).toEqual(ids.filter((id) => id > 3));
    const byQuery = await readStream(`/v2/calls/${callId}/stream?last_event_id=${ids.at(-2)}`, ws.api_key);
    expect(byQuery.frames.map((f) => f.id)).toEqual([ids.at(-1)]);
  });

  it('shows live controls among the transcript frames', async () => {
    const { ws, callId } = await setup();
    await eventually(() => ws.api.get(`/v2/get-call/${callId}`), (r) => r.body.call_status === 'ongoing');
    const listened = await ws.api.post(`/v2/calls/${callId}/listen`);
    expect(listened.status).toBe(200);
    const stream = await readStream(`/v2/calls/${callId}/stream`, ws.api_key);
    const controls = stream.frames.filter((f) => f.event === 'live_control');
    expect(controls).toEqual([expect.objectContaining({ data: expect.objectContaining({ type: 'listener_joined', participant_id: listened.body.participant_id }) })]);
  });

  it('is 404 for another workspace\'s call and 401 without a key', async () => {
    const { callId } = await setup();
    const other = await app.newWorkspace();
    expect((await other.api.get(`/v2/calls/${callId}/stream`)).status).toBe(404);
    expect((await readStream(`/v2/calls/${callId}/stream`, 'key_nope')).status).toBe(401);
  });
});

/** A WebSocket client collecting every message until the server closes. */
function monitor(path: string, key: string): Promise<{ frames: Frame[]; code: number }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${app.url.replace('http', 'ws')}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const frames: Frame[] = [];
    socket.on('message', (data) => frames.push(JSON.parse(String(data))));
    socket.on('close', (code) => resolve({ frames, code }));
    socket.on('unexpected-response', (_req, res) => reject(new Error(`refused ${res.statusCode}`)));
    socket.on('error', reject);
  });
}

describe('GET /v2/calls/{call_id}/ws (WebSocket monitor)', () => {
  it('pushes a whole sandbox call and closes when it ends', async () => {
    const { ws, callId } = await setup();
    const watched = await monitor(`/v2/calls/${callId}/ws`, ws.api_key);
    expect(watched.code).toBe(1000);
    const ended = (await ws.api.get(`/v2/get-call/${callId}`)).body;
    const ids = watched.frames.map((f) => f.id).sort((a, b) => a - b);
    expect(new Set(ids).size).toBe(ids.length);
    const last = 3 + ended.transcript_with_tool_calls.length;
    expect(ids).toEqual([1, 2, ...Array.from({ length: last - 3 }, (_, i) => i + 3), last]);
    expect(watched.frames.find((f) => f.id === last)).toMatchObject({ event: 'call_status', data: { call_status: 'ended' } });

    // After the end, a new monitor gets the whole call at once and is closed; resumable with last_event_id.
    const late = await monitor(`/v2/calls/${callId}/ws?last_event_id=2`, ws.api_key);
    expect(late.frames.map((f) => f.id)).toEqual(ids.filter((id) => id > 2));
  });

  it('refuses a missing key (401) and another workspace\'s call (404); a plain GET says where to connect', async () => {
    const { ws, callId } = await setup();
    const other = await app.newWorkspace();
    await expect(monitor(`/v2/calls/${callId}/ws`, other.api_key)).rejects.toThrow('refused 404');
    await expect(monitor(`/v2/calls/${callId}/ws`, 'key_nope')).rejects.toThrow('refused 401');
    const info = await ws.api.get(`/v2/calls/${callId}/ws`);
    expect(info.status).toBe(200);
    expect(info.body).toEqual({ call_id: callId, websocket_url: `${app.url.replace('http', 'ws')}/v2/calls/${callId}/ws`, protocol: 'parley.live.v1' });
  });
});

describe('the buffered form behind API Gateway (long-poll chunks)', () => {
  it('answers as soon as a frame is there, waits when none is, and 204 once the call is done', async () => {
    const { EventStream, eventStreamChunk } = await import('../../shared/platform/http/event-stream.ts');
    let polls = 0;
    const source = (frames: number[], done: boolean) =>
      new EventStream({
        cursor: 1,
        pollMs: 20,
        chunkMs: 200,
        retryMs: 250,
        poll: async (cursor) => {
          polls++;
          const fresh = polls >= 3 ? frames.filter((id) => id > cursor) : [];
          return { frames: fresh.map((id) => ({ id, event: 'transcript', data: { id } })), cursor: Math.max(cursor, ...fresh), done: done && polls >= 3 };
        },
      });
    const chunk = await eventStreamChunk(source([2, 3], false));
    expect(chunk.statusCode).toBe(200);
    expect(chunk.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(chunk.body).toBe('retry: 250\n\nid: 2\nevent: transcript\ndata: {"id":2}\n\nid: 3\nevent: transcript\ndata: {"id":3}\n\n');
    polls = 0;
    const quiet = await eventStreamChunk(source([], false));
    expect(quiet.statusCode).toBe(200);
    expect(quiet.body).toBe('retry: 250\n\n: no news, reconnect\n\n');
    polls = 0;
    expect((await eventStreamChunk(source([], true))).statusCode).toBe(204);
  });
});
