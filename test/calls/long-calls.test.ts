import { describe, expect, it } from 'vitest';
import { signedWebhook, startLiveKitTestApp } from '../support/fake-livekit.ts';
import { newAgent } from '../support/factories.ts';
import { call } from '../support/http.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * A call as long as max_call_duration_ms allows by default (an hour) on LiveKit, reported by
 * the agent worker as it would: a line every 5 seconds with word timings, 720 lines, ten to a
 * report. The call item must stay far below DynamoDB's 400 KB item limit (DynamoDB Local
 * enforces it) while get-call, the webhooks, the analysis, scrubbing and deletion see the
 * whole transcript.
 */

// The media server is the fake LiveKit Twirp server: settings are read once, so it starts before the app's modules load.
const { livekit, app } = await startLiveKitTestApp();
const [{ newCallItem, putNewCall }, { newTimeOrderedId }, { workerReportToken }, { keys }, { queryAll }, { table }] = await Promise.all([
  import('../../shared/calls/store.ts'),
  import('../../shared/platform/ids.ts'),
  import('../../shared/vendors/media/worker-token.ts'),
  import('../../shared/platform/store/keys.ts'),
  import('../../shared/platform/store/query.ts'),
  import('../../shared/platform/store/table.ts'),
]);

const LINES = 720;
const PER_REPORT = 10;
const VOCABULARY = ['thanks', 'for', 'calling', 'about', 'your', 'order', 'we', 'can', 'check', 'the', 'delivery', 'window', 'today', 'please', 'hold'];

/** Line n of the call: who says it, twelve words with their timings (seconds from the start), said at n × 5 s. */
function utterance(n: number) {
  const texts = ['Line', `${n}.`, ...Array.from({ length: 10 }, (_, i) => VOCABULARY[(n * 7 + i) % VOCABULARY.length]!)];
  const words = texts.map((word, i) => ({ word, start: Number((n * 5 + i * 0.31).toFixed(2)), end: Number((n * 5 + i * 0.31 + 0.27).toFixed(2)) }));
  return { role: n % 2 === 0 ? 'agent' : 'user', content: texts.join(' '), words };
}

/** An item's size as DynamoDB counts it (attribute names and values; lists and maps 3 bytes plus 1 per element). */
function itemBytes(value: unknown): number {
  if (value === null || value === undefined || typeof value === 'boolean') return 1;
  if (typeof value === 'string') return Buffer.byteLength(value, 'utf8');
  if (typeof value === 'number') return Math.ceil(String(Math.abs(value)).replace(/[.-]/g, '').replace(/^0+/, '').length / 2) + 1;
  if (Array.isArray(value)) return 3 + value.reduce((sum: number, entry) => sum + 1 + itemBytes(entry), 0);
  return 3 + Object.entries(value as Record<string, unknown>).reduce((sum, [name, entry]) => sum + 1 + Buffer.byteLength(name, 'utf8') + itemBytes(entry), 0);
}
const rawItemBytes = async (callId: string) => {
  const item = (await table.get<Record<string, unknown>>(keys.call(callId)))!;
  return Object.entries(item).reduce((sum, [name, value]) => sum + Buffer.byteLength(name, 'utf8') + itemBytes(value), 0);
};

async function liveWebCall() {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url } });
  const client = retellClient(app.url, ws.api_key);
  const web: any = await client.call.createWebCall({ agent_id: agent.agent_id });
  const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((req) => req.body.room === web.call_id)!;
  const { report_token: token } = JSON.parse(dispatch.body.metadata);
  const joined = await signedWebhook({ event: 'participant_joined', room: { name: web.call_id }, participant: { identity: 'web_user', kind: 'STANDARD' } });
  const live = await call(app.url, 'POST', '/livekit/webhook', { rawBody: joined.body, headers: { 'content-type': 'application/json', authorization: joined.authorization } });
  expect(live.body).toEqual({ applied: 'ongoing' });
  const report = (body: Record<string, unknown>) =>
    call(app.url, 'POST', `/internal/calls/${web.call_id}/events`, {
      rawBody: JSON.stringify({ timestamp: Date.now(), ...body }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    });
  return { ws, hooks, client, callId: web.call_id as string, report };
}

describe('a 60-minute call with word timings', () => {
  it('completes: the call item stays small, and get-call, webhooks, analysis, scrubbing and deletion see all 720 lines in order', async () => {
    const { ws, hooks, callId, report } = await liveWebCall();
    // Reports 1–36 and 39–74 carry ten lines each; 37 and 38 are a tool call in the middle of the call.
    const seqOfReport = (r: number) => (r < 36 ? r + 1 : r + 3);
    const transcriptReport = (r: number) => ({
      event: 'transcript_updated',
      sequence: seqOfReport(r),
      utterances: Array.from({ length: PER_REPORT }, (_, i) => utterance(r * PER_REPORT + i)),
    });
    const reports = LINES / PER_REPORT;
    // The order they arrive in: 31 before 30 (out of order), 11 twice (a redelivery), 50 twice at once (a duplicate).
    const order = Array.from({ length: reports }, (_, r) => r);
    order.splice(30, 2, 31, 30);
    order.splice(12, 0, 11);
    let earlyBytes = 0;
    for (const r of order) {
      if (r === 36) {
        expect((await report({ event: 'tool_call_invoked', sequence: 37, tool_call_id: 'lookup_1', name: 'lookup_order', arguments: '{"order":"A-17"}' })).status).toBe(204);
        expect((await report({ event: 'tool_call_result', sequence: 38, tool_call_id: 'lookup_1', content: 'Out for delivery', successful: true })).status).toBe(204);
      }
      const sent = r === 50 ? await Promise.all([report(transcriptReport(r)), report(transcriptReport(r))]) : [await report(transcriptReport(r))];
      for (const answer of sent) expect(answer.status, `report ${r}: ${JSON.stringify(answer.body)}`).toBe(204);
      if (r === 4) earlyBytes = await rawItemBytes(callId);
    }
    // The item does not grow with the transcript: an hour of lines later it is the size it was after five reports.
    const lateBytes = await rawItemBytes(callId);
    expect(lateBytes - earlyBytes).toBeLessThan(64);
    expect(await queryAll(keys.callLines(callId))).toHaveLength(LINES + 2);
    expect((await report({ event: 'call_ended', sequence: 75, disconnection_reason: 'user_hangup' })).status).toBe(204);

    const got = await ws.api.get(`/v2/get-call/${callId}`);
    expect(got.status, JSON.stringify(got.body).slice(0, 500)).toBe(200);
    const ended = got.body;
    expect(ended.call_status).toBe('ended');
    expect(ended.transcript_object).toHaveLength(LINES);
    expect(ended.transcript_object.map((line: { content: string }) => line.content.split(' ').slice(0, 2).join(' '))).toEqual(
      Array.from({ length: LINES }, (_, n) => `Line ${n}.`),
    );
    expect(ended.transcript_object[LINES - 1]).toEqual(utterance(LINES - 1));
    expect(ended.transcript.split('\n').filter(Boolean)).toHaveLength(LINES);
    expect(ended.transcript.startsWith(`Agent: ${utterance(0).content}\nUser: ${utterance(1).content}\n`)).toBe(true);
    expect(ended.transcript_with_tool_calls).toHaveLength(LINES + 2);
    expect(ended.transcript_with_tool_calls.slice(359, 363).map((entry: { role: string }) => entry.role)).toEqual([
      'user',
      'tool_call_invocation',
      'tool_call_result',
      'agent',
    ]);

    // The webhooks carry the whole call (its body, past a queue message's size, travels beside the message).
    const analyzed = await eventually(async () => hooks.hits.find((hit) => hit.json.event === 'call_analyzed' && hit.json.call?.call_id === callId), (hit) => hit !== undefined, 60_000);
    const endedHook = hooks.hits.find((hit) => hit.json.event === 'call_ended' && hit.json.call?.call_id === callId)!;
    expect(Buffer.byteLength(endedHook.body)).toBeGreaterThan(256 * 1024);
    for (const hit of [endedHook, analyzed!]) {
      expect(hit.json.call!.transcript_object).toHaveLength(LINES);
      expect(hit.json.call!.transcript_with_tool_calls).toHaveLength(LINES + 2);
    }
    expect(analyzed!.json.call!.call_analysis).toMatchObject({ call_summary: expect.any(String) });
    // Each stored body went with its delivery's last attempt.
    const deliveries = await eventually(async () => (await ws.api.get('/webhook-deliveries')).body as { webhook_delivery_id: string }[], (found) => found.length === 3);
    const storedParts = async () => (await Promise.all(deliveries.map(({ webhook_delivery_id: id }) => queryAll(keys.webhookBodyParts(id))))).flat().length;
    expect(await eventually(storedParts, (count) => count === 0)).toBe(0);
    expect(await rawItemBytes(callId)).toBeLessThan(16 * 1024);

    // list-calls answers the call without its transcript (get-call has it).
    const listed = (await ws.api.post('/v3/list-calls', { body: {} })).body as Record<string, unknown>[];
    expect(listed.map((entry) => entry.call_id)).toEqual([callId]);
    expect(Object.keys(listed[0]!).filter((name) => name.startsWith('transcript'))).toEqual([]);

    // Scrubbing rewrites the lines; the unscrubbed copy (well past one item) keeps every original line.
    const scrubbed = await ws.api.post(`/v2/remove-call-sensitive-data/${callId}`);
    expect(scrubbed.status).toBe(200);
    expect(scrubbed.body.transcript_object).toHaveLength(LINES);
    const unscrubbed = await ws.api.get(`/v2/get-call-unscrubbed/${callId}`);
    expect(unscrubbed.status).toBe(200);
    expect(unscrubbed.body.transcript_object).toEqual(ended.transcript_object);

    expect((await ws.api.delete(`/v2/delete-call/${callId}`)).status).toBe(204);
    expect(await queryAll({ pk: `CALL#${callId}` })).toEqual([]);
    expect((await ws.api.get(`/v2/get-call/${callId}`)).status).toBe(404);
  }, 180_000);

  it('refuses an utterance too large for an item of its own, and more utterances than one report writes at once', async () => {
    const { report } = await liveWebCall();
    const words = Array.from({ length: 4000 }, (_, i) => ({ word: `word${i}`, start: i * 0.3, end: i * 0.3 + 0.2 }));
    const huge = await report({ event: 'transcript_updated', sequence: 1, utterances: [{ role: 'user', content: words.map((w) => w.word).join(' '), words }] });
    expect(huge.status).toBe(400);
    expect(huge.body.message).toBe('utterances.0: Must be at most 131072 bytes as JSON (split a longer utterance)');
    const many = await report({ event: 'transcript_updated', sequence: 1, utterances: Array.from({ length: 51 }, (_, n) => utterance(n)) });
    expect(many.status).toBe(400);
    expect(many.body.message).toBe('utterances: Must have at most 50 items');
  });
});

describe('live controls of a long call', () => {
  it('are items of their own: sixty 10,000-character contexts leave the call item small, and the monitors see each in place', async () => {
    const { ws, callId, report } = await liveWebCall();
    const context = (n: number) => `Coaching note ${n}: ${'keep the caller informed about the delivery window. '.repeat(190)}`.slice(0, 10_000);
    let earlyBytes = 0;
    for (let n = 0; n < 60; n++) {
      const updated = await ws.api.patch(`/update-live-call/${callId}`, { body: { call_control: { additional_context: context(n) } } });
      expect(updated.status, JSON.stringify(updated.body)).toBe(200);
      if (n % 20 === 0) expect((await report({ event: 'transcript_updated', sequence: n + 1, utterances: [utterance(n)] })).status).toBe(204);
      if (n === 4) earlyBytes = await rawItemBytes(callId);
    }
    expect((await rawItemBytes(callId)) - earlyBytes).toBeLessThan(64);
    expect(await queryAll(keys.callControls(callId))).toHaveLength(60);

    const { liveEntriesOf } = await import('../../shared/calls/live/store.ts');
    const { liveFrames } = await import('../../shared/calls/live/frames.ts');
    const item = (await table.get<Parameters<typeof liveFrames>[0]>(keys.call(callId)))!;
    const { entries, controls } = await liveEntriesOf(item);
    const frames = liveFrames(item, entries, controls).slice(2);
    // Line 0 came after the first control, line 20 after the 21st, line 40 after the 41st.
    expect(frames.map((frame) => (frame.event === 'transcript' ? `line ${String(frame.data.content).split(' ')[1]}` : 'control')).filter((_, i, all) => all[i] !== 'control' || all[i - 1] !== 'control')).toEqual([
      'control',
      'line 0.',
      'control',
      'line 20.',
      'control',
      'line 40.',
      'control',
    ]);
    expect(frames.filter((frame) => frame.event === 'live_control').map((frame) => frame.data.text)).toEqual(Array.from({ length: 60 }, (_, n) => context(n)));
    expect((await ws.api.delete(`/v2/delete-call/${callId}`)).status).toBe(204);
    expect(await queryAll({ pk: `CALL#${callId}` })).toEqual([]);
  }, 120_000);
});

describe('a call stored with its transcript on the item', () => {
  it('reads as it was stored, and lines reported after it follow it', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api);
    const callId = newTimeOrderedId('call', Date.now());
    const inline = [
      { role: 'agent', content: 'Hello, this is the clinic.', words: [{ word: 'Hello,', start: 0.1, end: 0.4 }] },
      { role: 'user', content: 'Hi, I need an appointment.', words: [] },
    ];
    await putNewCall(
      newCallItem({
        call_id: callId,
        workspace_id: ws.workspace_id,
        created_timestamp: Date.now(),
        start_timestamp: Date.now(),
        call_type: 'web_call',
        call_status: 'ongoing',
        agent_id: agent.agent_id,
        agent_version: 0,
        engine: { media: 'livekit' },
        transcript: 'Agent: Hello, this is the clinic.\nUser: Hi, I need an appointment.\n',
        transcript_object: inline as never,
        transcript_with_tool_calls: inline as never,
      }),
    );
    const stored = (await ws.api.get(`/v2/get-call/${callId}`)).body;
    expect(stored.transcript).toBe('Agent: Hello, this is the clinic.\nUser: Hi, I need an appointment.\n');
    expect(stored.transcript_object).toEqual(inline);
    expect(stored.transcript_with_tool_calls).toEqual(inline);

    const token = await workerReportToken(callId);
    const reported = await call(app.url, 'POST', `/internal/calls/${callId}/events`, {
      rawBody: JSON.stringify({ event: 'transcript_updated', sequence: 1, timestamp: Date.now(), utterances: [{ role: 'agent', content: 'Which day suits you?' }] }),
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    });
    expect(reported.status).toBe(204);
    const after = (await ws.api.get(`/v2/get-call/${callId}`)).body;
    expect(after.transcript).toBe('Agent: Hello, this is the clinic.\nUser: Hi, I need an appointment.\nAgent: Which day suits you?\n');
    expect(after.transcript_object.map((line: { content: string }) => line.content)).toEqual([...inline.map((line) => line.content), 'Which day suits you?']);
    expect(after.transcript_with_tool_calls).toHaveLength(3);
    expect(after).not.toHaveProperty('line_count');
    expect((await ws.api.delete(`/v2/delete-call/${callId}`)).status).toBe(204);
    expect(await queryAll({ pk: `CALL#${callId}` })).toEqual([]);
  });
});
