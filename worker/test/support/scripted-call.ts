import { onTestFinished } from 'vitest';
import type { ConversationState, TransferAsk, TranscriptEvent, TurnEvent, TurnResult } from '../../../shared/conversation/index.ts';
import { agentSettings } from '../../src/agent-settings.ts';
import type { StreamTurn, StreamTurnOptions, TurnStreamEvent } from '../../src/conversation.ts';
import type { ReportEvent, ReportOutcome, Utterance } from '../../src/reports.ts';
import type { AmbientRoom } from '../../src/ambient-sound.ts';
import { startCallSession, type CallSession, type CallSessionOptions } from '../../src/session.ts';
import { CallerAudio, CallerSpeaker, EnergyVAD, ScriptedSTT, ScriptedTTS } from './scripted-vendors.ts';

/*
 * A call's voice session with nothing but the framework in between: the caller's audio and
 * speaker are in-process, the vendors scripted, the response engine a script of replies,
 * and the reports recorded.
 */

export interface ScriptedReply {
  text: string;
  /** Transcript events (tool calls) the turn produces before its words. */
  events?: TranscriptEvent[];
  /** The model writes a word every this many ms. */
  wordMs?: number;
  end?: boolean;
  /** A transfer the turn asks for. */
  transfer?: TransferAsk;
  /** Keys the turn presses (press_digit). */
  digits?: string;
  /** The model's time to first token the turn reports. */
  firstTokenMs?: number;
}

interface EngineCall {
  event: TurnEvent;
  /** The conversation the turn started from. */
  state: ConversationState;
  options?: StreamTurnOptions;
  at: number;
  /** What the turn's tool gate answered, when it had a tool to run. */
  gate?: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A response engine that answers each turn with the next scripted reply, and records the turns and their commits. */
function scriptedEngine(replies: (ScriptedReply | string)[]) {
  const calls: EngineCall[] = [];
  const commits: { event: TurnEvent; text: string; interrupted: boolean }[] = [];
  const streamTurn: StreamTurn = (state, event, options) => {
    const next = replies.shift() ?? '';
    const reply = typeof next === 'string' ? { text: next } : next;
    const call: EngineCall = { event, state, ...(options ? { options } : {}), at: Date.now() };
    calls.push(call);
    async function* events(): AsyncGenerator<TurnStreamEvent> {
      for (const transcriptEvent of reply.events ?? []) {
        if (transcriptEvent.role === 'tool_call_invocation' && options?.toolGate && call.gate === undefined) {
          call.gate = await options.toolGate();
          if (!call.gate) return;
        }
        yield { type: 'event', event: transcriptEvent };
      }
      for (const word of reply.text.match(/\S+\s*/g) ?? []) {
        if (options?.signal?.aborted) return;
        await sleep(reply.wordMs ?? 5);
        yield { type: 'text', text: word };
      }
    }
    return {
      events: events(),
      firstTokenMs: Promise.resolve(reply.firstTokenMs),
      commit(spoken): TurnResult {
        commits.push({ event, ...spoken });
        const history = [...state.history];
        if (event.type === 'user_said') history.push({ role: 'user', content: event.text });
        if (spoken.text) history.push({ role: 'agent', content: spoken.text });
        return {
          state: { ...state, history },
          utterances: spoken.text ? [spoken.text] : [],
          events: [],
          ...(reply.end ? { end: { reason: 'agent_hangup' as const } } : {}),
          ...(reply.transfer ? { transfer: reply.transfer } : {}),
          ...(reply.digits ? { digits: reply.digits } : {}),
        };
      },
    };
  };
  return { streamTurn, calls, commits };
}

/** Reports as the session sends them, in order. */
function recordingReports() {
  const events: (ReportEvent & { at: number })[] = [];
  return {
    events,
    transcript: async (utterances: Utterance[]) => {
      events.push({ event: 'transcript_updated', utterances: utterances.map((u) => ({ ...u, words: u.words ?? [] })), at: Date.now() });
    },
    send: async (event: ReportEvent): Promise<ReportOutcome> => {
      events.push({ ...event, at: Date.now() });
      return { status: 'applied' };
    },
    kbRetrieve: async () => ({ prompt: '' }),
    flush: async () => {},
  };
}

export const conversationState = (): ConversationState => ({
  v: 1,
  workspace_id: 'ws_test',
  agent_id: 'agent_test',
  agent_version: 1,
  call_id: 'call_test',
  channel: 'voice',
  engine: { type: 'retell-llm', llm_id: 'llm_test', version: 1 },
  dynamic_variables: {},
  collected_dynamic_variables: {},
  token_limit: 32_768,
  history: [],
});

export interface ScriptedCallOptions {
  agent?: Record<string, unknown>;
  replies: (ScriptedReply | string)[];
  /** What the recogniser hears, one line per stretch of the caller's voice. */
  callerLines?: string[];
  session?: Partial<CallSessionOptions>;
  /** A stand-in for the room's agent participant (the ambient sound's track is published there). */
  room?: AmbientRoom;
}

export async function scriptedCall(options: ScriptedCallOptions) {
  const { settings } = agentSettings({ reminder_trigger_ms: 0, ...options.agent });
  const caller = new CallerAudio();
  const speaker = new CallerSpeaker();
  const engine = scriptedEngine(options.replies);
  const reports = recordingReports();
  const recogniser = new ScriptedSTT(options.callerLines ?? []);
  const voice = new ScriptedTTS();
  const startedAt = Date.now();
  const published: { topic: string; message: Record<string, unknown> }[] = [];
  const call: CallSession = await startCallSession({
    publish: (topic, message) => published.push({ topic, message }),
    settings,
    state: conversationState(),
    streamTurn: engine.streamTurn,
    reports,
    stt: recogniser,
    tts: voice,
    vad: new EnergyVAD(),
    io: { input: caller, output: speaker, ...(options.room ? { room: options.room } : {}) },
    aecWarmupMs: null,
    ...options.session,
  });
  onTestFinished(async () => {
    await call.end('user_hangup');
  });
  /** Resolves once `check` holds, polling. */
  const until = async (check: () => boolean, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms; reports: ${JSON.stringify(reports.events).slice(0, 3000)}`);
      await sleep(10);
    }
  };
  return { call, caller, speaker, engine, reports, recogniser, voice, startedAt, until, published };
}
