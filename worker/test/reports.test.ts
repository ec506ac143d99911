import { describe, expect, it } from 'vitest';
import { newAgent } from '../../test/support/factories.ts';
import { eventually } from '../../test/support/webhook-receiver.ts';
import type { ReportClientOptions } from '../src/reports.ts';
import { liveWebCall, readCall, startParley } from './support/parley-call.ts';

/*
 * The worker's report client against a real local Parley (LiveKit mode, the fake LiveKit
 * server as its media server): what each answer of `POST /internal/calls/{id}/events` makes
 * the client do. Failures Parley cannot be made to give on demand (a 5xx, a 409 race, a
 * lost answer) are put in front of the real route by the client's injected fetch; the
 * event still reaches Parley on the try that goes through.
 */

// Settings are read once, at the first import of Parley's config: the app starts first.
const parley = await startParley();
const { app } = parley;
const { ReportClient, splitUtterance } = await import('../src/reports.ts');
const { workerReportToken } = await import('../../shared/vendors/media/index.ts');

interface Sent {
  sequence: number;
  event: string;
}

/** The client with a fetch that records every try and may answer some tries itself. */
function client(
  metadata: { report_url: string; report_token: string },
  options: { intercept?: (attempt: number, body: any) => Response | 'lose-answer' | undefined } & Partial<ReportClientOptions> = {},
) {
  const tries: Sent[] = [];
  const waits: number[] = [];
  const { intercept, ...rest } = options;
  const recordingFetch: typeof fetch = async (input, init) => {
    const body = init?.body ? JSON.parse(String(init.body)) : undefined;
    if (String(input).endsWith('/events')) tries.push({ sequence: body.sequence, event: body.event });
    const action = intercept?.(tries.length, body);
    if (action instanceof Response) return action;
    const response = await fetch(input, init);
    if (action === 'lose-answer') throw new TypeError('fetch failed: socket hang up');
    return response;
  };
  const reports = new ReportClient({
    reportUrl: metadata.report_url,
    token: metadata.report_token,
    fetch: recordingFetch,
    sleep: async (ms) => {
      waits.push(ms);
    },
    ...rest,
  });
  return { reports, tries, waits };
}

const jsonAnswer = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

async function liveCall() {
  const ws = await app.newWorkspace();
  const { agent } = await newAgent(ws.api);
  const metadata = await liveWebCall(parley, ws.api_key, { agent_id: agent.agent_id });
  return { ws, metadata, read: () => readCall(parley, ws.api_key, metadata.call_id) };
}

describe('the report client', () => {
  it('numbers events from 1, sends them one at a time in order, and Parley records them', async () => {
    const { metadata, read } = await liveCall();
    expect(metadata.report_url).toBe(`${app.url}/internal/calls/${metadata.call_id}/events`);
    const { reports, tries } = client(metadata);

    const outcomes = await Promise.all([
      reports.transcript([{ role: 'agent', content: 'Hello, this is the clinic.', words: [{ word: 'Hello,', start: 0.1, end: 0.4 }] }]),
      reports.send({ event: 'tool_call_invoked', tool_call_id: 'call_1', name: 'check_slot', arguments: '{"day":"monday"}' }),
      reports.send({ event: 'tool_call_result', tool_call_id: 'call_1', content: 'free at 10', successful: true }),
      reports.transcript([{ role: 'user', content: 'Monday at ten, please.' }]),
    ]);
    expect(outcomes.slice(1, 3)).toEqual([{ status: 'applied' }, { status: 'applied' }]);
    expect(tries).toEqual([
      { sequence: 1, event: 'transcript_updated' },
      { sequence: 2, event: 'tool_call_invoked' },
      { sequence: 3, event: 'tool_call_result' },
      { sequence: 4, event: 'transcript_updated' },
    ]);
    const live = await read();
    expect(live.transcript_object).toEqual([
      { role: 'agent', content: 'Hello, this is the clinic.', words: [{ word: 'Hello,', start: 0.1, end: 0.4 }] },
      { role: 'user', content: 'Monday at ten, please.', words: [] },
    ]);
    expect(live.transcript_with_tool_calls.map((entry: any) => entry.role)).toEqual(['agent', 'tool_call_invocation', 'tool_call_result', 'user']);

    expect(await reports.send({ event: 'call_ended', disconnection_reason: 'agent_hangup' })).toEqual({ status: 'applied' });
    expect(await read()).toMatchObject({ call_status: 'ended', disconnection_reason: 'agent_hangup' });
  });

  it('tries a 5xx, a 409 race and a lost answer again with the same sequence, waiting longer each time, and writes the lines once', async () => {
    const { metadata, read } = await liveCall();
    const { reports, tries, waits } = client(metadata, {
      intercept: (attempt) => {
        if (attempt === 1) return jsonAnswer(503, { message: 'Service unavailable' });
        if (attempt === 2) return jsonAnswer(409, { message: `Report 1 of call ${metadata.call_id} raced other changes; send it again` });
        // The third try reaches Parley and is applied, but its answer is lost on the way back.
        if (attempt === 3) return 'lose-answer';
        return undefined;
      },
    });
    await reports.transcript([{ role: 'agent', content: 'Hi there!' }, { role: 'user', content: 'Hello.' }]);
    expect(tries).toEqual([1, 2, 3, 4].map(() => ({ sequence: 1, event: 'transcript_updated' })));
    expect(waits).toEqual([250, 500, 1000]);
    expect((await read()).transcript_object.map((line: any) => line.content)).toEqual(['Hi there!', 'Hello.']);

    expect(await reports.send({ event: 'call_ended', disconnection_reason: 'inactivity' })).toEqual({ status: 'applied' });
    expect(tries.at(-1)).toEqual({ sequence: 2, event: 'call_ended' });
  });

  it('honours Retry-After within the longest wait, and gives up after the last try', async () => {
    const { metadata } = await liveCall();
    const { reports, tries, waits } = client(metadata, {
      retry: { maxAttempts: 3, maxDelayMs: 4000 },
      intercept: () => jsonAnswer(503, { message: 'LiveKit is unavailable' }, { 'retry-after': '2' }),
    });
    expect(await reports.send({ event: 'call_ended', disconnection_reason: 'user_hangup' })).toEqual({
      status: 'failed',
      message: 'HTTP 503 LiveKit is unavailable',
    });
    expect(tries).toHaveLength(3);
    expect(waits).toEqual([2000, 2000]);
  });

  it('does not retry what Parley refused (400, 422) and goes on with the next sequence', async () => {
    const { metadata, read } = await liveCall();
    const { reports, tries } = client(metadata);
    expect(await reports.send({ event: 'tool_call_invoked', tool_call_id: 'call_1', name: '', arguments: '{}' })).toMatchObject({
      status: 'refused',
      code: 400,
    });
    // A web call cannot be transferred: 422, not applied.
    expect(await reports.send({ event: 'transfer_requested', destination: '+14155550123', kind: 'cold' })).toEqual({
      status: 'refused',
      code: 422,
      message: 'Transfer refused: only phone calls can be transferred',
    });
    await reports.transcript([{ role: 'agent', content: 'I cannot transfer you, sorry.' }]);
    expect(tries.map((sent) => sent.sequence)).toEqual([1, 2, 3]);
    expect((await read()).transcript_object.map((line: any) => line.content)).toEqual(['I cannot transfer you, sorry.']);
  });

  it('stops at 409 once the call has ended, and drops later events without sending them', async () => {
    const { metadata } = await liveCall();
    const { reports, tries } = client(metadata);
    expect(await reports.send({ event: 'call_ended', disconnection_reason: 'agent_hangup' })).toEqual({ status: 'applied' });
    const late = await reports.send({ event: 'tool_call_result', tool_call_id: 'call_9', content: 'late', successful: true });
    expect(late).toEqual({ status: 'closed', code: 409, message: `Call ${metadata.call_id} has ended` });
    expect(reports.closed).toEqual(late);
    expect(await reports.send({ event: 'call_ended', disconnection_reason: 'agent_hangup' })).toEqual(late);
    await reports.transcript([{ role: 'user', content: 'Hello?' }]);
    expect(tries.map((sent) => sent.sequence)).toEqual([1, 2]);
  });

  it('stops at 401 (another call\'s token) and 404 (an unknown call)', async () => {
    const { metadata } = await liveCall();
    const other = await liveCall();
    const forged = client({ report_url: metadata.report_url, report_token: other.metadata.report_token });
    expect(await forged.reports.send({ event: 'call_ended', disconnection_reason: 'agent_hangup' })).toMatchObject({ status: 'closed', code: 401 });
    await forged.reports.transcript([{ role: 'user', content: 'Hello?' }]);
    expect(forged.tries).toHaveLength(1);

    const unknownId = 'call_00000000000000000000dead';
    const unknown = client({
      report_url: `${app.url}/internal/calls/${unknownId}/events`,
      report_token: await workerReportToken(unknownId),
    });
    expect(await unknown.reports.send({ event: 'call_ended', disconnection_reason: 'agent_hangup' })).toEqual({
      status: 'closed',
      code: 404,
      message: 'Call not found',
    });
  });

  it('batches utterances (at most 50 a report) and splits one too long for a line', async () => {
    const { metadata, read } = await liveCall();
    const { reports, tries } = client(metadata);
    const lines = Array.from({ length: 120 }, (_, n) => ({ role: n % 2 ? ('user' as const) : ('agent' as const), content: `Line ${n}.` }));
    await reports.transcript(lines);
    expect(tries.map((sent) => sent.sequence)).toEqual([1, 2, 3]);

    // About 190 KiB as JSON: more than one line may hold (128 KiB), so it is sent as two.
    const words = Array.from({ length: 3000 }, (_, i) => ({ word: `word${i}`, start: i * 0.3, end: i * 0.3 + 0.2 }));
    const long = { role: 'user' as const, content: words.map((w) => w.word).join(' '), words };
    const parts = splitUtterance(long);
    expect(parts).toHaveLength(2);
    expect(parts.map((part) => part.words.length)).toEqual([1500, 1500]);
    expect(parts.map((part) => part.content).join(' ')).toBe(long.content);
    await reports.transcript([long]);
    expect(tries.map((sent) => sent.sequence)).toEqual([1, 2, 3, 4]);

    const stored = (await read()).transcript_object;
    expect(stored).toHaveLength(122);
    expect(stored.slice(0, 120).map((line: any) => line.content)).toEqual(lines.map((line) => line.content));
    expect(stored[120].words[0]).toEqual({ word: 'word0', start: 0, end: 0.2 });
    expect(stored[121].words.at(-1)).toEqual(words[2999]);
  });

  it('joins utterances finished while a report is on its way into the next one', async () => {
    const { metadata, read } = await liveCall();
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const tries: Sent[] = [];
    // The first report is held in flight while three more lines finish.
    const slow = new ReportClient({
      reportUrl: metadata.report_url,
      token: metadata.report_token,
      fetch: async (input, init) => {
        tries.push({ sequence: JSON.parse(String(init!.body)).sequence, event: 'transcript_updated' });
        if (tries.length === 1) await held;
        return fetch(input, init);
      },
    });
    const first = slow.transcript([{ role: 'agent', content: 'One.' }]);
    await eventually(async () => tries.length, (count) => count === 1);
    const rest = ['Two.', 'Three.', 'Four.'].map((content) => slow.transcript([{ role: 'user', content }]));
    release();
    await Promise.all([first, ...rest]);
    expect(tries.map((sent) => sent.sequence)).toEqual([1, 2]);
    expect(slow.lastSequence).toBe(2);
    expect((await read()).transcript_object.map((line: any) => line.content)).toEqual(['One.', 'Two.', 'Three.', 'Four.']);
  });
});

describe('knowledge retrieval for a turn', () => {
  it('answers the knowledge section of the agent\'s knowledge bases, and none once the call has ended', async () => {
    const ws = await app.newWorkspace();
    const created = await ws.api.post('/create-knowledge-base', {
      body: { knowledge_base_name: 'Clinic', knowledge_base_texts: [{ title: 'parking', text: 'Parking: free parking is in the garage under the building.' }] },
    });
    expect(created.status).toBe(201);
    await eventually(
      async () => (await ws.api.get(`/get-knowledge-base/${created.body.knowledge_base_id}`)).body,
      (body: any) => body.status === 'complete',
      30_000,
    );
    const { agent } = await newAgent(ws.api, { llm: { general_prompt: 'You are the front desk.', knowledge_base_ids: [created.body.knowledge_base_id] } });
    const metadata = await liveWebCall(parley, ws.api_key, { agent_id: agent.agent_id });
    const { reports } = client(metadata);

    const found = await reports.kbRetrieve('  Where can I park?  ');
    expect(found.prompt.split('\n\n')[0]).toBe('## Knowledge base');
    expect(found.prompt).toContain('[1] Parking: free parking is in the garage under the building.');
    const recorded = await ws.api.get(`/kb-retrievals/${metadata.call_id}`);
    expect(recorded.status).toBe(200);
    expect(JSON.stringify(recorded.body)).toContain('Where can I park?');

    expect(await reports.kbRetrieve('   ')).toEqual({ prompt: '' });
    await reports.send({ event: 'call_ended', disconnection_reason: 'user_hangup' });
    expect(await reports.kbRetrieve('Where can I park?')).toEqual({ prompt: '' });
  });

  it('answers no knowledge when Parley fails or does not answer in time', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api);
    const metadata = await liveWebCall(parley, ws.api_key, { agent_id: agent.agent_id });
    const failing = new ReportClient({
      reportUrl: metadata.report_url,
      token: metadata.report_token,
      fetch: async () => jsonAnswer(500, { message: 'Embeddings provider failed' }),
    });
    expect(await failing.kbRetrieve('Hello')).toEqual({ prompt: '' });
    const silent = new ReportClient({
      reportUrl: metadata.report_url,
      token: metadata.report_token,
      retrieveTimeoutMs: 50,
      fetch: (_input, init) =>
        new Promise((_resolve, reject) => init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason))),
    });
    expect(await silent.kbRetrieve('Hello')).toEqual({ prompt: '' });
    const real = new ReportClient({ reportUrl: metadata.report_url, token: metadata.report_token });
    expect(await real.kbRetrieve('Hello')).toEqual({ prompt: '' });
  });
});
