import { afterAll, describe, expect, it } from 'vitest';
import { newAgent } from '../../test/support/factories.ts';
import { startFakeOpenAi, streamChunks, streamToolCallChunks, type RecordedRequest } from '../../test/support/fake-openai.ts';
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
const { getAgent } = await import('../../shared/agents/index.ts');
const { openConversation, streamAgentTurn } = await import('../../shared/conversation/index.ts');
const { workspaceVoiceVendorId } = await import('../../shared/voices/index.ts');
const { agentSettings } = await import('../src/agent-settings.ts');
const { readSpeechVendorSettings } = await import('../src/config.ts');
const { ReportClient } = await import('../src/reports.ts');
const { startCallSession } = await import('../src/session.ts');
const { createStt, createVoice } = await import('../src/vendors.ts');

/** What the fake model answers, by the conversation it is sent (Parley's other model calls get the default). */
type Answer = (request: RecordedRequest) => unknown[] | undefined;
let answer: Answer = () => undefined;
model.setDefault((request) => {
  const events = request.body?.stream ? answer(request) : undefined;
  return { events: events ?? streamChunks(['Okay.']) };
});

const lastUser = (request: RecordedRequest): string | undefined =>
  [...(request.body?.messages ?? [])].reverse().find((message: any) => message.role === 'user')?.content;

/** The job's steps (agent.ts) with the caller's microphone and speaker in place of the room. */
async function workerCall(metadata: DispatchMetadata) {
  const reports = new ReportClient({ reportUrl: metadata.report_url, token: metadata.report_token });
  const version = await getAgent(metadata.workspace_id, metadata.agent_id, metadata.agent_version);
  const { settings } = agentSettings(version as Record<string, unknown>, metadata.agent_override?.agent);
  const [state, access] = await Promise.all([
    openConversation({
      workspaceId: metadata.workspace_id,
      agentId: metadata.agent_id,
      agentVersion: metadata.agent_version,
      callId: metadata.call_id,
      channel: 'voice',
      dynamicVariables: metadata.dynamic_variables,
      ...(metadata.agent_override ? { overrides: metadata.agent_override } : {}),
      canTransfer: metadata.call_type === 'phone_call',
    }),
    readSpeechVendorSettings(),
  ]);
  const voiceIds = [settings.voice_id, ...(metadata.reliability?.fallback_voice_ids ?? [])];
  const voice = await createVoice(voiceIds, access, settings, (voiceId) => workspaceVoiceVendorId(metadata.workspace_id, voiceId));
  const microphone = new SpeechMicrophone();
  const speaker = new TimedSpeaker();
  const call = await startCallSession({
    settings,
    state,
    streamTurn: streamAgentTurn,
    reports,
    stt: createStt('deepgram', access, settings),
    tts: voice,
    io: { input: microphone, output: speaker },
    aecWarmupMs: null,
  });
  return { call, microphone, speaker };
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
    const live = await eventually(read, (call: any) => call.transcript_object?.length === 1, 10_000);
    expect(lines(live)).toEqual([['agent', 'Hello, this is the clinic.']]);
    expect(live.transcript_object[0].words.map((word: any) => word.word)).toEqual(['Hello,', 'this', 'is', 'the', 'clinic.']);
    expect(speaker.firstFrames).toHaveLength(1);
    expect(eleven.contexts.at(-1)!.spoken.trim()).toBe('Hello, this is the clinic.');
    const ended = await hangUp();
    expect(ended).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
  });
});
