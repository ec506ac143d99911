import { afterAll, describe, expect, it } from 'vitest';
import { newAgent, newAgentOn, newFlow } from '../../test/support/factories.ts';
import { completion, startFakeOpenAi, streamChunks, streamToolCallChunks, type RecordedRequest } from '../../test/support/fake-openai.ts';
import { startFunctionReceiver } from '../../test/support/function-receiver.ts';
import { eventually } from '../../test/support/webhook-receiver.ts';
import type { DispatchMetadata } from '../../shared/vendors/media/index.ts';
import { startFakeCartesia } from './support/fake-cartesia.ts';
import { startFakeDeepgram } from './support/fake-deepgram.ts';
import { startFakeElevenLabs } from './support/fake-elevenlabs.ts';
import { liveWebCall, readCall, startParley } from './support/parley-call.ts';
import { speechPcm } from './support/speech.ts';
import { SpeechMicrophone, TimedSpeaker } from './support/voice-call.ts';

/*
 * The worker's call end to end with nothing scripted but the caller's microphone and
 * speaker: the job's own steps (agent.ts: read the version, open the conversation, build
 * the recogniser and the voice by settings) and the real session, the real Deepgram plugin
 * against the fake Deepgram (its transcripts scripted per voiced segment of espeak-ng
 * speech), Parley's engine (streamAgentTurn) on a Retell LLM whose model is the fake
 * OpenAI-compatible provider streaming, the real ElevenLabs and Cartesia plugins against
 * their fakes, and reports and retrieval to a real local Parley (LiveKit mode).
 */

const deepgram = await startFakeDeepgram({ apiKey: 'dg-key', finalDelayMs: 100 });
const eleven = await startFakeElevenLabs({ apiKey: 'el-key' });
const cartesia = await startFakeCartesia({ apiKey: 'ca-key' });
const model = await startFakeOpenAi();
const receiver = await startFunctionReceiver();
afterAll(async () => {
  await Promise.all([deepgram.close(), eleven.close(), cartesia.close()]);
});

const parley = await startParley({
  LLM_BASE_URL: model.url,
  LLM_API_KEY: 'llm-key',
  DEEPGRAM_API_KEY: 'dg-key',
  DEEPGRAM_BASE_URL: deepgram.url,
  ELEVENLABS_API_KEY: 'el-key',
  ELEVENLABS_BASE_URL: eleven.origin,
  CARTESIA_API_KEY: 'ca-key',
  CARTESIA_BASE_URL: cartesia.url,
});
const { app } = parley;
const { streamAgentTurn } = await import('../../shared/conversation/index.ts');
const { ReportClient } = await import('../src/reports.ts');
const { startCallSession } = await import('../src/session.ts');
const { prepareCall } = await import('../src/call-setup.ts');

/** What the fake model answers, by the conversation it is sent (Parley's other model calls get the default). */
type Answer = (request: RecordedRequest) => unknown[] | undefined;
let answer: Answer = () => undefined;
model.setDefault((request) => {
  if (!request.body?.stream) return { body: completion('Okay.') };
  return { events: answer(request) ?? streamChunks(['Okay.']) };
});

const lastUser = (request: RecordedRequest): string | undefined =>
  [...(request.body?.messages ?? [])].reverse().find((message: any) => message.role === 'user')?.content;

/** The job's steps (agent.ts) with the caller's microphone and speaker in place of the room. */
async function workerCall(metadata: DispatchMetadata) {
  /** Parley's answer to each report, in order. */
  const answers: { event: string; status: number; body: any }[] = [];
  const recordingFetch: typeof fetch = async (input, init) => {
    const response = await fetch(input, init);
    if (!String(input).endsWith('/events')) return response;
    const text = await response.text();
    answers.push({ event: JSON.parse(String(init?.body)).event, status: response.status, body: text ? JSON.parse(text) : undefined });
    return new Response(text || null, { status: response.status, headers: response.headers });
  };
  const reports = new ReportClient({ reportUrl: metadata.report_url, token: metadata.report_token, fetch: recordingFetch });
  const { settings, state, stt, tts } = await prepareCall(metadata, 'deepgram');
  const microphone = new SpeechMicrophone();
  const speaker = new TimedSpeaker();
  /** The call's start as the session counts it (word timings are seconds from it). */
  const startedAt = Date.now();
  const call = await startCallSession({
    settings,
    state,
    streamTurn: streamAgentTurn,
    reports,
    stt,
    tts,
    io: { input: microphone, output: speaker },
    aecWarmupMs: null,
  });
  return { call, microphone, speaker, answers, startedAt };
}

async function startCall(options: { agent?: Record<string, unknown>; llm?: Record<string, unknown> } = {}) {
  const ws = await app.newWorkspace();
  const { agent } = await newAgent(ws.api, { agent: { voice_id: '11labs-Adrian', ...options.agent }, llm: options.llm });
  const metadata = await liveWebCall(parley, ws.api_key, { agent_id: agent.agent_id });
  const worker = await workerCall(metadata);
  const read = () => readCall(parley, ws.api_key, metadata.call_id);
  const hangUp = async () => {
    await worker.call.end('user_hangup');
    return read();
  };
  return { ...worker, ws, metadata, read, hangUp };
}

const lines = (call: any) => (call.transcript_object as { role: string; content: string }[]).map((line) => [line.role, line.content]);

describe('a call through the real worker pipeline', () => {
  it('speaks the begin message and Parley shows the agent\'s line', async () => {
    const { read, hangUp, speaker } = await startCall({ llm: { begin_message: 'Hello, this is the clinic.' } });
    const live = await eventually(read, (call: any) => call.transcript_object?.length === 1);
    expect(lines(live)).toEqual([['agent', 'Hello, this is the clinic.']]);
    expect(live.transcript_object[0].words.map((word: any) => word.word)).toEqual(['Hello,', 'this', 'is', 'the', 'clinic.']);
    expect(speaker.firstFrames).toHaveLength(1);
    expect(eleven.contexts.at(-1)!.spoken.trim()).toBe('Hello, this is the clinic.');
    const ended = await hangUp();
    expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
  });

  it('answers the caller\'s turn through the model, both lines in the call\'s transcript with word timings on one clock', async () => {
    answer = (request) => (lastUser(request) === 'I would like an appointment.' ? streamChunks(['Sure, ', 'which day ', 'suits you?']) : undefined);
    const { read, hangUp, microphone, startedAt } = await startCall({ llm: { begin_message: 'Hello.' } });
    await eventually(read, (call: any) => call.transcript_object?.length === 1);
    deepgram.transcripts.push('I would like an appointment.');
    const spoken = speechPcm('I would like an appointment.');
    await microphone.say(spoken);
    /** When the caller's last frame went out, in seconds from the call's start. */
    const spokeUntil = (Date.now() - startedAt) / 1000;
    const live = await eventually(read, (call: any) => call.transcript_object?.length === 3);
    expect(lines(live)).toEqual([
      ['agent', 'Hello.'],
      ['user', 'I would like an appointment.'],
      ['agent', 'Sure, which day suits you?'],
    ]);
    const [hello, caller, reply] = live.transcript_object;
    // The agent's lines carry the voice's word timings, the caller's the recogniser's, all in
    // seconds from the call's start: the caller spoke after the greeting, the reply came after.
    expect(reply.words.map((word: any) => word.word)).toEqual(['Sure,', 'which', 'day', 'suits', 'you?']);
    expect(caller.words.map((word: any) => word.word)).toEqual(['I', 'would', 'like', 'an', 'appointment.']);
    for (const { words } of [caller, reply]) {
      for (const [i, word] of words.entries()) {
        expect(word.end).toBeGreaterThan(word.start);
        if (i > 0) expect(word.start).toBeGreaterThanOrEqual(words[i - 1].end);
      }
    }
    expect(caller.words[0].start).toBeGreaterThanOrEqual(hello.words.at(-1).end);
    expect(reply.words[0].start).toBeGreaterThan(caller.words.at(-1).end);
    // The caller's last word ends when their speech did on the call's clock, not on the
    // recogniser's own, which leaves out the silences the plugin did not send.
    // (The recogniser's own clock was more than a second behind here.)
    expect(Math.abs(caller.words.at(-1).end - spokeUntil)).toBeLessThan(0.15);
    // The recognised words span the caller's speech (the fake times them over its voiced frames).
    const speechSeconds = spoken.length / 16_000;
    expect(caller.words.at(-1).end - caller.words[0].start).toBeGreaterThan(speechSeconds - 0.2);
    expect(caller.words.at(-1).end - caller.words[0].start).toBeLessThan(speechSeconds + 0.2);
    await hangUp();
  });

  it('runs a custom tool the model calls mid-turn exactly once, and the call shows it between the lines', async () => {
    receiver.requests.length = 0;
    receiver.answer = () => ({ body: '{"free":"10:00"}' });
    const tool = {
      type: 'custom',
      name: 'check_slot',
      description: 'Finds a free slot on a day',
      url: `${receiver.url}/slots`,
      parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] },
    };
    answer = (request) => {
      const messages = request.body.messages as { role: string }[];
      if (messages.at(-1)?.role === 'tool') return streamChunks(['Monday at ten ', 'is free.']);
      if (lastUser(request) === 'Is Monday free?') return streamToolCallChunks(['Let me check. '], [{ id: 'call_T1', name: 'check_slot', arguments: { day: 'monday' } }]);
      return undefined;
    };
    const { read, hangUp, microphone } = await startCall({ llm: { begin_message: 'Hello.', general_tools: [tool] } });
    await eventually(read, (call: any) => call.transcript_object?.length === 1);
    deepgram.transcripts.push('Is Monday free?');
    await microphone.say(speechPcm('Is Monday free?'));
    const live = await eventually(read, (call: any) => call.transcript_object?.length === 3);
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]).toMatchObject({ method: 'POST', path: '/slots' });
    expect(receiver.requests[0]!.body).toMatchObject({ name: 'check_slot', args: { day: 'monday' } });
    expect(lines(live)).toEqual([
      ['agent', 'Hello.'],
      ['user', 'Is Monday free?'],
      ['agent', 'Let me check. Monday at ten is free.'],
    ]);
    const withTools = live.transcript_with_tool_calls.map((entry: any) => entry.role);
    expect(withTools).toEqual(['agent', 'user', 'tool_call_invocation', 'tool_call_result', 'agent']);
    expect(live.transcript_with_tool_calls[2]).toMatchObject({ tool_call_id: 'call_T1', name: 'check_slot', arguments: '{"day":"monday"}' });
    expect(live.transcript_with_tool_calls[3]).toMatchObject({ tool_call_id: 'call_T1', content: '{"free":"10:00"}' });
    await hangUp();
    expect(receiver.requests).toHaveLength(1);
  });

  it('retrieves from the agent\'s knowledge base through Parley before answering, recorded for kb-retrievals', async () => {
    const ws = await app.newWorkspace();
    const parking = 'Parking: free parking is available in the garage under the building.';
    const created = await ws.api.post('/create-knowledge-base', {
      body: { knowledge_base_name: 'Clinic', knowledge_base_texts: [{ title: 'parking', text: parking }, { title: 'hours', text: 'Opening hours: 8 am to 6 pm on weekdays.' }] },
    });
    expect(created.status).toBe(201);
    const kbId = created.body.knowledge_base_id as string;
    await eventually(async () => (await ws.api.get(`/get-knowledge-base/${kbId}`)).body, (body: any) => body.status === 'complete', 30_000);
    let prompted = '';
    answer = (request) => {
      if (lastUser(request) !== 'Where can I park my car?') return undefined;
      prompted = JSON.stringify(request.body.messages);
      return streamChunks(['In the garage ', 'under the building.']);
    };
    const { agent } = await newAgent(ws.api, { agent: { voice_id: '11labs-Adrian' }, llm: { begin_message: 'Hello.', knowledge_base_ids: [kbId] } });
    const metadata = await liveWebCall(parley, ws.api_key, { agent_id: agent.agent_id });
    const { call, microphone } = await workerCall(metadata);
    const read = () => readCall(parley, ws.api_key, metadata.call_id);
    await eventually(read, (live: any) => live.transcript_object?.length === 1);
    deepgram.transcripts.push('Where can I park my car?');
    await microphone.say(speechPcm('Where can I park my car?'));
    const live = await eventually(read, (value: any) => value.transcript_object?.length === 3);
    expect(lines(live)[2]).toEqual(['agent', 'In the garage under the building.']);
    expect(prompted).toContain(parking);
    const recorded = await ws.api.get(`/kb-retrievals/${metadata.call_id}`);
    expect(recorded.status).toBe(200);
    expect(recorded.body.call_id).toBe(metadata.call_id);
    expect(recorded.body.retrievals).toHaveLength(1);
    expect(recorded.body.retrievals[0]).toMatchObject({ query: expect.stringContaining('Where can I park my car?'), knowledge_base_ids: [kbId] });
    await call.end('user_hangup');
  });

  it('switches to the workspace\'s fallback voice when the agent\'s voice vendor fails, and the call goes on', async () => {
    const ws = await app.newWorkspace();
    const set = await ws.api.put('/workspace/reliability', { body: { fallback_voice_ids: ['cartesia-Cleo'] } });
    expect(set.status).toBe(200);
    const { agent } = await newAgent(ws.api, { agent: { voice_id: '11labs-Adrian' }, llm: { begin_message: 'Hello, this is the clinic.' } });
    const metadata = await liveWebCall(parley, ws.api_key, { agent_id: agent.agent_id });
    expect(metadata.reliability?.fallback_voice_ids).toEqual(['cartesia-Cleo']);
    const cartesiaBefore = cartesia.contexts.length;
    eleven.fail({ mode: 'http', status: 503 });
    try {
      const { call } = await workerCall(metadata);
      const read = () => readCall(parley, ws.api_key, metadata.call_id);
      const live = await eventually(read, (value: any) => value.transcript_object?.length === 1);
      expect(lines(live)).toEqual([['agent', 'Hello, this is the clinic.']]);
      expect(cartesia.contexts.slice(cartesiaBefore).map((context) => context.spoken.trim())).toEqual(['Hello, this is the clinic.']);
      expect((await read()).call_status).toBe('ongoing');
      await call.end('user_hangup');
    } finally {
      eleven.fail();
    }
  });

  describe('the agent\'s pronunciation dictionary', () => {
    const dictionary = [{ word: 'Parley', alphabet: 'ipa', phoneme: 'ˈpɑːrli' }];
    const greeting = 'Welcome to parley, not Parleyville.';

    /** The greeting's line as Parley shows it: the words as written, with the voice's timings. */
    async function greetingLine(read: () => Promise<any>) {
      const live = await eventually(read, (call: any) => call.transcript_object?.length === 1);
      expect(lines(live)).toEqual([['agent', greeting]]);
      const { words } = live.transcript_object[0];
      expect(words.map((word: any) => word.word)).toEqual(['Welcome', 'to', 'parley,', 'not', 'Parleyville.']);
      for (const [i, word] of words.entries()) {
        expect(word.end).toBeGreaterThan(word.start);
        if (i > 0) expect(word.start).toBeGreaterThanOrEqual(words[i - 1].end);
      }
    }

    it('reaches ElevenLabs as a phoneme tag around the word only, on a model that reads it; the transcript keeps the word', async () => {
      const before = eleven.contexts.length;
      const { read, hangUp } = await startCall({ agent: { pronunciation_dictionary: dictionary }, llm: { begin_message: greeting } });
      await greetingLine(read);
      const [context] = eleven.contexts.slice(before);
      expect(context!.texts.join('')).toBe(' Welcome to <phoneme alphabet="ipa" ph="ˈpɑːrli">parley</phoneme>, not Parleyville. ');
      // The agent sets no voice_model: English with a dictionary speaks on eleven_flash_v2, SSML parsed.
      expect(eleven.connections[context!.connection]!.query).toMatchObject({ model_id: 'eleven_flash_v2', enable_ssml_parsing: 'true' });
      await hangUp();
    });

    it('reaches Cartesia as << >> phonemes in place of the word; the transcript keeps the word', async () => {
      const before = cartesia.contexts.length;
      const { read, hangUp } = await startCall({ agent: { voice_id: 'cartesia-Cleo', pronunciation_dictionary: dictionary }, llm: { begin_message: greeting } });
      await greetingLine(read);
      expect(cartesia.contexts.slice(before).map((context) => context.spoken.trim())).toEqual(['Welcome to <<ˈ|p|ɑː|r|l|i>>, not Parleyville.']);
      await hangUp();
    });

    it('is said as written by a model that does not read phoneme tags', async () => {
      const before = eleven.contexts.length;
      const { read, hangUp } = await startCall({ agent: { voice_model: 'eleven_turbo_v2_5', pronunciation_dictionary: dictionary }, llm: { begin_message: greeting } });
      await greetingLine(read);
      const [context] = eleven.contexts.slice(before);
      expect(context!.texts.join('')).toBe(` ${greeting} `);
      expect(eleven.connections[context!.connection]!.query).toMatchObject({ model_id: 'eleven_turbo_v2_5', enable_ssml_parsing: 'false' });
      await hangUp();
    });
  });

  it('takes a flow\'s transfer-failed edge on a web call, which has no line to transfer, and asks Parley for nothing', async () => {
    const ws = await app.newWorkspace();
    const when = (prompt: string) => ({ type: 'prompt', prompt });
    const flow = await newFlow(ws.api, {
      nodes: [
        {
          id: 'greet',
          name: 'Greeting',
          type: 'conversation',
          instruction: { type: 'static_text', text: 'Welcome to the clinic.' },
          edges: [{ id: 'e0', destination_node_id: 'desk', transition_condition: when('User asks for a human') }],
        },
        {
          id: 'desk',
          name: 'Front desk',
          type: 'transfer_call',
          instruction: { type: 'static_text', text: 'Connecting you now.' },
          edge: { id: 'failed', destination_node_id: 'sorry', transition_condition: when('Transfer failed') },
          transfer_destination: { type: 'predefined', number: '+14155550177' },
          transfer_option: { type: 'cold_transfer' },
        },
        { id: 'sorry', name: 'No transfer', type: 'conversation', instruction: { type: 'static_text', text: 'I cannot put you through from here.' } },
      ],
    });
    const agent = await newAgentOn(ws.api, { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id }, { voice_id: '11labs-Adrian' });
    answer = (request) => (lastUser(request) === 'Can I talk to a person?' ? streamToolCallChunks([], [{ id: 'call_E0', name: 'edge_0_to_desk', arguments: {} }]) : undefined);
    const metadata = await liveWebCall(parley, ws.api_key, { agent_id: agent.agent_id });
    const { call, microphone, answers } = await workerCall(metadata);
    const read = () => readCall(parley, ws.api_key, metadata.call_id);
    await eventually(read, (live: any) => live.transcript_object?.length === 1);
    deepgram.transcripts.push('Can I talk to a person?');
    await microphone.say(speechPcm('Can I talk to a person?'));
    const live = await eventually(read, (value: any) => value.transcript_object?.length === 3);
    expect(lines(live)).toEqual([
      ['agent', 'Welcome to the clinic.'],
      ['user', 'Can I talk to a person?'],
      ['agent', 'I cannot put you through from here.'],
    ]);
    expect(answers.map((answer) => answer.event)).not.toContain('transfer_requested');
    expect((await read()).call_status).toBe('ongoing');
    await call.end('user_hangup');
    expect(await read()).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
  });
});
