import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { eventually } from '../support/webhook-receiver.ts';

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

async function setup(agentFields: Record<string, unknown> = {}) {
  const ws = await app.newWorkspace();
  const { agent, number } = await newAgentWithNumber(ws.api, { agent: agentFields });
  return { ws, agent, number };
}

async function endedCall(ws: Awaited<ReturnType<typeof setup>>['ws'], number: string, metadata: Record<string, unknown>, to = '+14155555555') {
  const created = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: to, metadata } });
  expect(created.status).toBe(201);
  return eventually(
    async () => (await ws.api.get(`/v2/get-call/${created.body.call_id}`)).body,
    // Analysis is queued after the recording is stored: once it is there, the call's end is complete.
    (call) => (call.call_status === 'ended' && call.call_analysis !== undefined) || call.call_status === 'not_connected',
    30_000,
  );
}

/** The fields of a RIFF/WAVE PCM file. */
function parseWav(bytes: Buffer) {
  expect(bytes.subarray(0, 4).toString('ascii')).toBe('RIFF');
  expect(bytes.readUInt32LE(4)).toBe(bytes.length - 8);
  expect(bytes.subarray(8, 16).toString('ascii')).toBe('WAVEfmt ');
  const dataBytes = bytes.readUInt32LE(40);
  expect(bytes.subarray(36, 40).toString('ascii')).toBe('data');
  expect(dataBytes).toBe(bytes.length - 44);
  const rate = bytes.readUInt32LE(24);
  return {
    format: bytes.readUInt16LE(20),
    channels: bytes.readUInt16LE(22),
    rate,
    bits: bytes.readUInt16LE(34),
    durationMs: (dataBytes / 2 / rate) * 1000,
    samples: Array.from({ length: dataBytes / 2 }, (_, i) => bytes.readInt16LE(44 + i * 2)),
  };
}

describe('call recordings', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('a sandbox call ends with a synthetic WAV of its length, downloadable from a signed URL', async () => {
    const { ws, number } = await setup();
    const call = await endedCall(ws, number, { sandbox_call_ms: 2500, sandbox_user_says: ['Hello?'] });
    expect(call.recording_url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/local-objects\/recordings\//);
    expect(call).not.toHaveProperty('recording');

    const answer = await ws.api.get(`/get-call-recording-url/${call.call_id}`);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ call_id: call.call_id, content_type: 'audio/wav', synthetic: true, scrubbed: false, duration_ms: call.duration_ms });
    // The agent sets no signed_url_expiration_ms: 24 hours.
    expect(answer.body.expires_at - Date.now()).toBeGreaterThan(86_400_000 - 60_000);
    expect(answer.body.expires_at - Date.now()).toBeLessThanOrEqual(86_400_000);

    const download = await fetch(answer.body.recording_url);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('audio/wav');
    const wav = parseWav(Buffer.from(await download.arrayBuffer()));
    expect(wav).toMatchObject({ format: 1, channels: 1, rate: 8000, bits: 16 });
    expect(Math.abs(wav.durationMs - call.duration_ms)).toBeLessThanOrEqual(1);
    // Tones for the turns, silence between them.
    expect(wav.samples.some((sample) => Math.abs(sample) > 5000)).toBe(true);
    expect(wav.samples.slice(0, 100).every((sample) => sample === 0)).toBe(true);
    // The stored URL on the call serves the same bytes.
    expect((await fetch(call.recording_url)).status).toBe(200);
  });

  it('a signed URL valid for the agent\'s signed_url_expiration_ms is refused once it expires', async () => {
    const { ws, number } = await setup({ signed_url_expiration_ms: 1500 });
    const call = await endedCall(ws, number, { sandbox_call_ms: 500, sandbox_user_says: [] });
    const answer = await ws.api.get(`/get-call-recording-url/${call.call_id}`);
    expect(answer.status).toBe(200);
    expect(answer.body.expires_at - Date.now()).toBeLessThanOrEqual(1500);
    // The object store serves in this process: only its clock is moved, to either side of the
    // expiry (timers stay real, for the server's sockets and the table client).
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(answer.body.expires_at - 1);
    expect((await fetch(answer.body.recording_url)).status).toBe(200);
    vi.setSystemTime(answer.body.expires_at);
    const expired = await fetch(answer.body.recording_url);
    expect(expired.status).toBe(403);
    expect(await expired.json()).toEqual({ status: 403, message: 'Signed URL expired' });
    vi.useRealTimers();
    // A tampered signature or expiry is refused too.
    const url = new URL(answer.body.recording_url);
    url.searchParams.set('expires', String(Date.now() + 60_000));
    expect(await (await fetch(url)).json()).toEqual({ status: 403, message: 'Signature does not match' });
    // A fresh URL works again.
    const fresh = await ws.api.get(`/get-call-recording-url/${call.call_id}`);
    expect((await fetch(fresh.body.recording_url)).status).toBe(200);
  });

  it('404 without a recording: a call that never connected, or basic_attributes_only', async () => {
    const { ws, number } = await setup();
    const busy = await endedCall(ws, number, {}, '+14155550001');
    expect(busy.call_status).toBe('not_connected');
    const none = await ws.api.get(`/get-call-recording-url/${busy.call_id}`);
    expect(none.status).toBe(404);
    expect(none.body).toEqual({ status: 404, message: `Call ${busy.call_id} has no recording` });

    const basic = await setup({ data_storage_setting: 'basic_attributes_only' });
    const call = await endedCall(basic.ws, basic.number, { sandbox_call_ms: 500, sandbox_user_says: [] });
    expect(call).not.toHaveProperty('recording_url');
    expect((await basic.ws.api.get(`/get-call-recording-url/${call.call_id}`)).status).toBe(404);
  });

  it('another workspace\'s call is 404, and delete-call removes the recording', async () => {
    const { ws, number } = await setup();
    const call = await endedCall(ws, number, { sandbox_call_ms: 500, sandbox_user_says: [] });
    const other = await app.newWorkspace();
    const foreign = await other.api.get(`/get-call-recording-url/${call.call_id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.body).toEqual({ status: 404, message: 'Call not found' });

    const url = (await ws.api.get(`/get-call-recording-url/${call.call_id}`)).body.recording_url;
    expect((await ws.api.delete(`/v2/delete-call/${call.call_id}`)).status).toBe(204);
    expect((await fetch(url)).status).toBe(404);
  });
});
