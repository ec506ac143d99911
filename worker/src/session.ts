import { llm, voice, type stt, type TimedString, type tts, type VAD } from '@livekit/agents';
import type { AudioFrame, Room } from '@livekit/rtc-node';
import { ReadableStream } from 'node:stream/web';
import {
  closeConversation,
  fillTemplate,
  mediatorDecision,
  mediatorGreeting,
  noteToAgent,
  openTransferAgent,
  transferAgentTurn,
  variablesOf,
  type ConfigOverrides,
  type ConversationState,
  type TransferAgentTurn,
  type TranscriptEvent,
  type TurnEvent,
  type TurnResult,
} from '../../shared/conversation/index.ts';
import { logger } from '../../shared/platform/logger.ts';
import { MAX_LATENCY_VALUES, type WORKER_END_REASONS, type WorkerLatency } from '../../shared/vendors/media/index.ts';
import { DEFAULT_DTMF_TIMEOUT_MS, endOfTurnDelayMs, interruption, type AgentSettings } from './agent-settings.ts';
import { startAmbientSound, type AmbientPlayer, type AmbientRoom } from './ambient-sound.ts';
import { Backchannel } from './backchannel.ts';
import { bridgeCue, holdAudio, type HoldMusic } from './hold-audio.ts';
import type { WorkerMetrics } from './metrics.ts';
import type { StreamingTurn, StreamTurn } from './conversation.ts';
import { ParleyAgent, ParleyResponseEngine, type RecognisedWord, type ReplyHost } from './parley-agent.ts';
import type { ReportClient, Utterance } from './reports.ts';

/*
 * One call's voice session: LiveKit Agents' AgentSession (voice activity and end-of-turn
 * detection, speech-to-text, text-to-speech, interruptions) around Parley's response
 * engine. Every agent turn is a streaming turn of the engine; it is committed once its
 * speech has played out, with the words the caller heard, and reported to Parley.
 */

type EndReason = (typeof WORKER_END_REASONS)[number];

/** What the session reports through (ReportClient). */
type Reports = Pick<ReportClient, 'transcript' | 'send' | 'kbRetrieve' | 'flush'>;

/** How long after the call starts the caller's words are checked for a voicemail greeting or a phone menu (retell-sdk: the first 3 minutes). */
const MACHINE_DETECTION_MS = 180_000;

export interface Timers {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

const realTimers: Timers = {
  setTimeout: (run, ms) => setTimeout(run, ms),
  clearTimeout: (timer) => clearTimeout(timer as ReturnType<typeof setTimeout>),
};

export interface CallSessionOptions {
  settings: AgentSettings;
  /** The conversation as opened for the call (openConversation). */
  state: ConversationState;
  streamTurn: StreamTurn;
  reports: Reports;
  stt: stt.STT;
  tts: tts.TTS;
  /** Voice activity detection; undefined: the framework's bundled one (runs offline). */
  vad?: VAD;
  /** What ends the caller's turn (default `vad`: the caller's silence, for the agent's responsiveness). */
  turnDetection?: 'vad' | 'stt';
  /** The call's room (the worker in production)… */
  room?: Room;
  /**
   * …or audio input and output of the caller's own (tests, no media server), with a stand-in
   * for the room's agent participant where the ambient sound's track is published.
   */
  io?: { input: voice.AudioInput; output: voice.AudioOutput; room?: AmbientRoom };
  /** Start replies before the caller's turn is certain (the framework's preemptive generation); default true. */
  preemptiveGeneration?: boolean;
  /** Echo-cancellation warm-up during which the caller's voice does not interrupt (ms); the framework's default when absent. */
  aecWarmupMs?: number | null;
  /** A reminder's words (default: the engine's model, composeMessage). */
  compose?: (state: ConversationState, instruction: string) => Promise<string>;
  /** Sends a data message to the room (`parley.client`: what the web caller's client shows). */
  publish?: (topic: string, message: Record<string, unknown>) => void;
  /** Where each reply's voice-to-voice time is also written (the worker's CloudWatch metric, for the latency alarm). */
  metrics?: Pick<WorkerMetrics, 'voiceToVoice'>;
  /** Presses keys on the call (the room's DTMF: the press_digit tool); absent, a turn's digits are logged and dropped. */
  pressDigits?: (digits: string) => Promise<void>;
  /**
   * Whose voice the session hears: a transfer's destination (its participant identity)
   * while the agent consults it, the caller again with undefined (the room's RoomIO). Absent
   * (no room), an agentic transfer is not consulted: Parley's timeout decides.
   */
  listenTo?: (identity: string | undefined) => void;
  /**
   * Plays audio on the worker's hold track (a track of its own, HOLD_TRACK_NAME) until
   * stopped: an agentic transfer's hold music, which the caller hears while unsubscribed
   * from the agent's voice. Absent, the music plays in the agent's voice.
   */
  holdTrack?: (audio: ReadableStream<AudioFrame>) => { stop(): void };
  /** The call's own dynamic variables (the dispatch's), which an agentic transfer's transfer agent gets; default: the conversation's. */
  callVariables?: Record<string, string>;
  timers?: Timers;
  now?: () => number;
  /** A number in [0, 1) (default Math.random): whether a pause of the caller's gets a backchannel, and which word. */
  random?: () => number;
}

/** The topic of what the web caller's client hears from the worker (docs/calls-media.md). */
const CLIENT_TOPIC = 'parley.client';
/** Transcript lines an `update` message carries (the client shows the last ones). */
const CLIENT_TRANSCRIPT_LINES = 20;

export interface CallSession {
  readonly session: voice.AgentSession;
  /** The conversation as committed so far. */
  readonly state: ConversationState;
  /** Resolves with the reason once the call ended and call_ended was reported. */
  readonly ended: Promise<EndReason>;
  /** Ends the call: stops speaking, commits and reports what was heard, reports call_ended, closes the session. */
  end(reason: EndReason): Promise<EndReason>;
  /** A live control from Parley (`parley.live`, sent by the server): say, update, take_over, transfer_cancelled. */
  control(message: unknown): void;
  /** Resolves once the agent left a call that goes on without it: a take-over (a person talks to the caller) or a bridged transfer. */
  readonly takenOver: Promise<void>;
  /** A key the caller pressed (the room's DTMF): gathered by the agent's user_dtmf_options, then a turn. */
  dtmf(digit: string): void;
  /** A participant joined the room (its identity): a cold transfer's new leg (`transfer-…`) joining means the agent leaves. */
  participantJoined(identity: string): void;
  /** The figures measured so far (what call_ended carries). */
  readonly latency: WorkerLatency;
}

/** The instruction a reminder's words are composed from (the caller has been silent). */
const REMINDER_INSTRUCTION =
  'The user has not said anything for a while. In one short sentence, gently check whether they are still there or need anything, in the language of the conversation.';

interface SpeechRecord {
  handle: voice.SpeechHandle;
  source: 'say' | 'generate_reply' | 'tool_response';
  /** The turn event that asked for it (call_started); user turns take theirs from the chat. */
  event?: TurnEvent;
  turn?: StreamingTurn;
  abort?: AbortController;
  /** Every word the reply produced, heard or not. */
  written: string;
  /** The words as the voice aligned them, seconds from the start of the speech's audio. */
  aligned: { text: string; start?: number; end?: number }[];
  /** When its audio started playing (epoch ms). */
  playbackStartedAt?: number;
  playback?: voice.PlaybackFinishedEvent;
  settled: Promise<void>;
  settle: () => void;
  /** Live updates applied when its turn started (the commit's state is laid under the later ones). */
  updatesSeen: number;
}

export async function startCallSession(options: CallSessionOptions): Promise<CallSession> {
  const call = new Call(options);
  await call.start();
  return call;
}

class Call implements CallSession, ReplyHost {
  readonly session: voice.AgentSession;
  state: ConversationState;
  readonly ended: Promise<EndReason>;
  private resolveEnded!: (reason: EndReason) => void;
  private ending: Promise<EndReason> | undefined;
  private readonly records = new Map<voice.SpeechHandle, SpeechRecord>();
  /** The explicit event of the next speech generateReply creates (its speech_created comes synchronously). */
  private pendingEvent: TurnEvent | undefined;
  /** The speech whose audio is playing now (the last one to reach the voice). */
  private playing: SpeechRecord | undefined;
  private readonly timers: Timers;
  private readonly now: () => number;
  private readonly startedAt: number;
  private userSpeaking = false;
  private agentState: voice.AgentState = 'initializing';
  private remindersSent = 0;
  private silenceTimer: unknown;
  private reminderTimer: unknown;
  private maxDurationTimer: unknown;
  private beginTimer: unknown;
  /** Live updates (update-live-call, notes) in order, re-applied over each turn committed from an earlier state. */
  private readonly updates: ((state: ConversationState) => ConversationState)[] = [];
  private readonly lines: { role: 'agent' | 'user'; content: string }[] = [];
  readonly takenOver: Promise<void>;
  private resolveTakenOver!: () => void;
  /**
   * A transfer the agent asked for (or Parley holds the caller for): the agent says nothing
   * more to the caller until it is cancelled. Its hold music plays in the agent's voice
   * (`hold`) or on the hold track (`holdTrack`); `consulting` is the destination the agent
   * is speaking with privately (an agentic warm transfer).
   */
  private transfer:
    | { kind: 'cold' | 'warm'; hold?: voice.SpeechHandle; holdTrack?: { stop(): void }; consulting?: string; decided?: boolean; consultant?: Consultant }
    | undefined;
  /** The call's own dynamic variables (a transfer agent gets them), replaced by a live update's. */
  private callVariables: Record<string, string>;
  /** Speeches that are audio of the worker's own (hold music, the bridge cue, backchannels) or said to a consulted destination: never a line of the caller's transcript. */
  private readonly sounds = new WeakSet<voice.SpeechHandle>();
  private readonly figures = { e2e: [] as number[], llm: [] as number[], tts: [] as number[], asr: [] as number[] };
  private digits = '';
  private digitTimer: unknown;
  private machineChecked = false;
  private readonly backchannel: Backchannel;
  /** Speeches that are backchannels: the caller's turn goes on through them. */
  private readonly backchannels = new WeakSet<voice.SpeechHandle>();
  /** The ambient sound, starting beside the session (publishing its track must not hold up the opening). */
  private ambient: Promise<AmbientPlayer | undefined> = Promise.resolve(undefined);
  /** The recogniser's final words since the caller's last line (seconds from the call's start): that line's word timings. */
  private callerWords: { word: string; start: number; end: number }[] = [];

  constructor(private readonly options: CallSessionOptions) {
    this.state = options.state;
    this.callVariables = { ...(options.callVariables ?? options.state.dynamic_variables) };
    this.timers = options.timers ?? realTimers;
    this.now = options.now ?? Date.now;
    this.startedAt = this.now();
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
    this.takenOver = new Promise((resolve) => (this.resolveTakenOver = resolve));
    const { settings } = options;
    this.backchannel = new Backchannel({
      settings,
      timers: this.timers,
      now: this.now,
      ...(options.random ? { random: options.random } : {}),
      host: { agentQuiet: () => this.agentQuiet(), say: (word) => this.sayBackchannel(word) },
    });
    const minDelay = endOfTurnDelayMs(settings);
    const interrupting = interruption(settings);
    this.session = new voice.AgentSession({
      stt: options.stt,
      tts: options.tts,
      llm: new ParleyResponseEngine(),
      ...(options.vad ? { vad: options.vad } : {}),
      // The worker's own silence timer ends the call (end_call_after_silence_ms).
      userAwayTimeout: null,
      ...(options.aecWarmupMs !== undefined ? { aecWarmupDuration: options.aecWarmupMs } : {}),
      turnHandling: {
        turnDetection: options.turnDetection ?? 'vad',
        endpointing: {
          mode: settings.enable_dynamic_responsiveness ? 'dynamic' : 'fixed',
          minDelay,
          maxDelay: Math.max(3000, minDelay * 2),
        },
        interruption: interrupting.enabled
          ? { enabled: true, mode: 'vad', minDuration: interrupting.minDurationMs }
          : { enabled: false },
        preemptiveGeneration: { enabled: options.preemptiveGeneration ?? true },
      },
    });
  }

  async start(): Promise<void> {
    const { session, options } = this;
    session.on(voice.AgentSessionEventTypes.SpeechCreated, (ev) => this.track(ev.speechHandle, ev.source));
    session.on(voice.AgentSessionEventTypes.ConversationItemAdded, (ev) => this.itemAdded(ev.item));
    session.on(voice.AgentSessionEventTypes.UserStateChanged, (ev) => this.userState(ev.newState));
    session.on(voice.AgentSessionEventTypes.AgentStateChanged, (ev) => this.agentStateChanged(ev.newState));
    session.on(voice.AgentSessionEventTypes.Close, (ev) => void this.end(closeReason(ev)));
    session.on(voice.AgentSessionEventTypes.Error, (ev) => {
      logger.warn('voice pipeline error', { call_id: this.state.call_id, source: ev.error.type, recoverable: ev.error.recoverable });
    });

    const agent = new ParleyAgent(this, options.settings.volume);
    if (options.io) {
      session.input.audio = options.io.input;
      session.output.audio = options.io.output;
      await session.start({ agent });
    } else {
      await session.start({ agent, ...(options.room ? { room: options.room } : {}) });
    }
    this.ambient = startAmbientSound(options.settings, options.room ?? options.io?.room, { call_id: this.state.call_id });
    const output = session.output.audio;
    output?.on(voice.AudioOutput.EVENT_PLAYBACK_STARTED, (ev: voice.PlaybackStartedEvent) => {
      if (this.playing && this.playing.playbackStartedAt === undefined) this.playing.playbackStartedAt = ev.createdAt;
    });
    output?.on(voice.AudioOutput.EVENT_PLAYBACK_FINISHED, (ev: voice.PlaybackFinishedEvent) => {
      if (this.playing) this.playing.playback = ev;
    });

    const { max_call_duration_ms, begin_message_delay_ms } = options.settings;
    this.maxDurationTimer = this.timers.setTimeout(() => void this.end('max_duration_reached'), max_call_duration_ms);
    this.armSilence();
    // The engine decides what opens the call: the begin message (its variables filled), the
    // model's own opening, or nothing when the user speaks first.
    this.beginTimer = this.timers.setTimeout(() => this.generate({ type: 'call_started' }), begin_message_delay_ms);
  }

  /** A reply of the engine to `event`, spoken when the session's turn comes. */
  private generate(event: TurnEvent): void {
    if (this.ending || this.transfer) return;
    this.pendingEvent = event;
    try {
      this.session.generateReply();
    } finally {
      this.pendingEvent = undefined;
    }
  }

  private track(handle: voice.SpeechHandle, source: SpeechRecord['source']): void {
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const record: SpeechRecord = { handle, source, written: '', aligned: [], settled, settle, updatesSeen: this.updates.length };
    if (source === 'generate_reply' && this.pendingEvent) record.event = this.pendingEvent;
    this.records.set(handle, record);
    handle.addDoneCallback(() => this.finish(record));
  }

  // ---- ReplyHost: the agent's nodes ----

  async reply(handle: voice.SpeechHandle, chatCtx: llm.ChatContext): Promise<ReadableStream<string> | null> {
    const record = this.records.get(handle);
    if (!record) return null;
    const event = record.event ?? userTurn(chatCtx);
    if (!event) return null;
    // A turn starts from the conversation as committed: the speeches before it first finish.
    await this.before(record);
    // Once a transfer is asked for the agent stays quiet: the caller's words (or a consulted
    // destination's) are still transcribed. The reply is dropped: a speech with nothing to say
    // is otherwise never done, and every later turn waits for it.
    // It is dropped once scheduled: a preemptive one dropped earlier would drop the words' turn with it.
    if (this.transfer && !handle.done()) void dropOnceScheduled(handle);
    if (this.ending || handle.done() || this.transfer) return null;
    const abort = new AbortController();
    record.abort = abort;
    record.updatesSeen = this.updates.length;
    const turn = this.options.streamTurn(this.state, event, {
      signal: abort.signal,
      toolGate: () => scheduled(handle, abort.signal),
      retrieve: (query) => this.options.reports.kbRetrieve(query),
    });
    record.turn = turn;
    const callId = this.state.call_id;
    return new ReadableStream<string>({
      start: async (controller) => {
        try {
          for await (const item of turn.events) {
            if (abort.signal.aborted) break;
            if (item.type === 'text') {
              record.written += item.text;
              controller.enqueue(item.text);
            } else this.turnEvent(item.event);
          }
        } catch (error) {
          if (!abort.signal.aborted) logger.error('the agent\'s turn failed', { call_id: callId, error });
        }
        try {
          controller.close();
        } catch {
          // cancelled by the framework meanwhile
        }
      },
      cancel: () => abort.abort(),
    });
  }

  voicing(handle: voice.SpeechHandle): void {
    const record = this.records.get(handle);
    if (record) this.playing = record;
  }

  aligned(handle: voice.SpeechHandle, word: TimedString | string): void {
    const record = this.records.get(handle);
    if (!record) return;
    if (voice.isTimedString(word)) record.aligned.push({ text: word.text, start: word.startTime, end: word.endTime });
    else record.aligned.push({ text: word });
  }

  recognised(words: RecognisedWord[]): void {
    // The same clock as the agent's words: seconds from the call's start.
    const since = (ms: number) => seconds(Math.max(0, ms - this.startedAt) / 1000);
    for (const word of words) this.callerWords.push({ word: word.word, start: since(word.startMs), end: since(word.endMs) });
  }

  /** Waits until every speech created before this one has been committed or dropped. */
  private async before(record: SpeechRecord): Promise<void> {
    const earlier: Promise<void>[] = [];
    for (const other of this.records.values()) {
      if (other === record) break;
      earlier.push(other.settled);
    }
    await Promise.all(earlier);
  }

  private turnEvent(event: TranscriptEvent): void {
    const { reports } = this.options;
    if (event.role === 'tool_call_invocation') {
      void reports.send({ event: 'tool_call_invoked', tool_call_id: event.tool_call_id, name: event.name, arguments: event.arguments });
    } else if (event.role === 'tool_call_result') {
      void reports.send({ event: 'tool_call_result', tool_call_id: event.tool_call_id, content: event.content, successful: event.successful ?? true });
    } else if (event.role === 'node_transition') {
      const { role: _role, ...transition } = event;
      this.options.publish?.(CLIENT_TOPIC, { event_type: 'node_transition', ...transition });
    }
  }

  // ---- after playout ----

  private finish(record: SpeechRecord): void {
    this.records.delete(record.handle);
    if (this.playing === record) this.playing = undefined;
    const { handle } = record;
    try {
      // A reply started before the caller's turn was certain, then dropped: it never happened.
      if (record.source === 'generate_reply' && !handle.scheduled) {
        record.abort?.abort();
        return;
      }
      this.measureReply(record);
      const spoken = this.sounds.has(handle) ? { text: '', words: [] } : heard(record, handle, this.now());
      let result: TurnResult | undefined;
      if (record.turn) {
        try {
          result = record.turn.commit({ text: spoken.text, interrupted: handle.interrupted });
          // Updates that arrived while the turn ran lie over what it committed.
          this.state = this.updates.slice(record.updatesSeen).reduce((state, update) => update(state), result.state);
        } catch (error) {
          logger.error('the agent\'s turn could not be committed', { call_id: this.state.call_id, error });
        }
      } else if (spoken.text) {
        // Said outside a turn (a reminder): the model sees it from the next turn on.
        this.state = { ...this.state, history: [...this.state.history, { role: 'agent', content: spoken.text }] };
      }
      if (spoken.text) {
        const offset = record.playbackStartedAt === undefined ? undefined : (record.playbackStartedAt - this.startedAt) / 1000;
        const words = offset === undefined ? [] : spoken.words.map((word) => ({ word: word.text, start: seconds(offset + word.start), end: seconds(offset + word.end) }));
        this.reportLine({ role: 'agent', content: spoken.text, words });
      }
      if (result) this.turnResult(result);
    } finally {
      record.settle();
    }
  }

  /** A reply's figures (the framework's, on its chat message; the engine's time to first token). */
  private measureReply(record: SpeechRecord): void {
    for (const item of record.handle.chatItems) {
      if (!(item instanceof llm.ChatMessage) || item.role !== 'assistant') continue;
      this.measure('e2e', msOf(item.metrics.e2eLatency));
      if (!this.sounds.has(record.handle)) this.measure('tts', msOf(item.metrics.ttsNodeTtfb));
    }
    void record.turn?.firstTokenMs.then((ms) => this.measure('llm', ms)).catch(() => undefined);
  }

  private measure(metric: keyof WorkerLatency, ms: number | undefined): void {
    if (ms === undefined || !Number.isFinite(ms) || ms < 0) return;
    const values = this.figures[metric];
    values.push(Math.round(ms));
    if (metric === 'e2e') this.options.metrics?.voiceToVoice(ms);
    // An even longer call keeps its latest figures.
    if (values.length > MAX_LATENCY_VALUES) values.shift();
  }

  get latency(): WorkerLatency {
    return Object.fromEntries(Object.entries(this.figures).filter(([, values]) => values.length).map(([metric, values]) => [metric, [...values]]));
  }

  private turnResult(result: TurnResult): void {
    const { reports } = this.options;
    if (result.transfer) {
      const { number, kind, transfer_option, custom_sip_headers } = result.transfer;
      this.transfer = { kind };
      this.clearReminder();
      this.armSilence();
      void reports
        .send({
          event: 'transfer_requested',
          destination: number,
          kind,
          // Parley validates the option (its type decides cold or warm) and fills the headers' placeholders.
          ...(transfer_option ? { transfer_option: transfer_option as { type: 'cold_transfer' } } : {}),
          ...(custom_sip_headers ? { custom_sip_headers } : {}),
        })
        .then((outcome) => {
          // Refused (a bad destination, one already in progress): the caller is still with the agent.
          if (outcome.status === 'refused' && this.transfer && !this.transfer.hold) this.transferOver();
        });
    }
    if (result.digits) void this.press(result.digits);
    if (result.transfer_decision) void reports.send({ event: 'transfer_decision', decision: result.transfer_decision });
    if (result.end) void this.end('agent_hangup');
  }

  // ---- the caller ----

  private itemAdded(item: llm.ChatMessage | llm.AgentHandoffItem): void {
    if (!(item instanceof llm.ChatMessage) || item.role !== 'user') return;
    const content = item.textContent?.trim();
    if (this.transfer?.consulting) {
      // The destination's words: not a caller's line, nor its timings.
      this.callerWords = [];
      if (content) this.destinationSaid(content);
      return;
    }
    this.backchannel.turnOver();
    this.measure('asr', msOf(item.metrics.transcriptionDelay));
    // The turn's text is its final recognitions' joined: their words are its timings.
    const words = this.callerWords;
    this.callerWords = [];
    if (content) {
      this.reportLine({ role: 'user', content, words });
      this.detectMachine(content);
    }
  }

  // ---- voicemail and phone menus ----

  /**
   * In the call's first three minutes, the caller's words are checked for a voicemail
   * greeting or a phone menu (a keyword test, machineHeard), when the agent has a
   * voicemail_option or ivr_option. Voicemail: hang up (`voicemail_reached`), or say the
   * option's message (static, or composed from its prompt) once the greeting is over, then
   * hang up. A menu: hang up (`ivr_reached`).
   */
  private detectMachine(words: string): void {
    const { voicemail_option, ivr_option } = this.options.settings;
    if (this.machineChecked || this.ending || this.transfer || (!voicemail_option && !ivr_option)) return;
    if (this.now() - this.startedAt > MACHINE_DETECTION_MS) return;
    const heard = machineHeard(words);
    if (heard === 'voicemail' && voicemail_option) {
      this.machineChecked = true;
      void this.leaveVoicemail(voicemail_option.action);
    } else if (heard === 'ivr' && ivr_option) {
      this.machineChecked = true;
      logger.info('a phone menu answered; hanging up', { call_id: this.state.call_id });
      void this.end('ivr_reached');
    }
  }

  private async leaveVoicemail(action: NonNullable<AgentSettings['voicemail_option']>['action']): Promise<void> {
    logger.info('voicemail answered', { call_id: this.state.call_id, action: action.type });
    if (action.type !== 'static_text' && action.type !== 'prompt') {
      // bridge_transfer needs a transfer destination the option does not name: it hangs up as well.
      await this.end('voicemail_reached');
      return;
    }
    // The agent stops; the message is said once the greeting's words are in (the machine then records).
    this.clearReminder();
    this.session.interrupt({ force: true });
    try {
      const text =
        action.type === 'static_text'
          ? fillTemplate(action.text, variablesOf(this.state))
          : (await (this.options.compose ?? (await import('../../shared/conversation/index.ts')).composeMessage)(this.state, action.text)).trim();
      if (text && !this.ending) await this.session.say(text, { allowInterruptions: false }).waitForPlayout();
    } catch (error) {
      logger.warn('the voicemail message could not be left', { call_id: this.state.call_id, error });
    }
    await this.end('voicemail_reached');
  }

  // ---- keys ----

  dtmf(digit: string): void {
    const { allow_user_dtmf, user_dtmf_options } = this.options.settings;
    if (!allow_user_dtmf || this.ending || this.transfer || !/^[0-9#*]$/.test(digit)) return;
    // A key is the caller taking their turn: it stops the reminders and the silence count.
    this.remindersSent = 0;
    this.clearReminder();
    this.armSilence();
    if (this.digitTimer !== undefined) this.timers.clearTimeout(this.digitTimer);
    this.digitTimer = undefined;
    if (user_dtmf_options?.termination_key === digit) return this.digitsDone();
    this.digits += digit;
    if (user_dtmf_options?.digit_limit && this.digits.length >= user_dtmf_options.digit_limit) return this.digitsDone();
    this.digitTimer = this.timers.setTimeout(() => this.digitsDone(), user_dtmf_options?.timeout_ms ?? DEFAULT_DTMF_TIMEOUT_MS);
  }

  /** The caller's digits are their line: reported, and the engine answers them as it would words. */
  private digitsDone(): void {
    this.digitTimer = undefined;
    const digits = this.digits;
    this.digits = '';
    if (!digits || this.ending) return;
    this.reportLine({ role: 'user', content: digits });
    this.generate({ type: 'user_said', text: digits });
  }

  /** The press_digit tool's keys, pressed once what the agent said with them has played. */
  private async press(digits: string): Promise<void> {
    if (!this.options.pressDigits) {
      logger.warn('the agent pressed keys on a call without a phone line; ignored', { call_id: this.state.call_id });
      return;
    }
    try {
      await this.options.pressDigits(digits);
    } catch (error) {
      logger.warn('pressing keys failed', { call_id: this.state.call_id, error });
    }
  }

  participantJoined(identity: string): void {
    // A cold transfer that dials a new leg (sip_invite): the caller talks to it now. A warm one
    // is left on transfer_bridge, after the handoff.
    if (identity.startsWith('transfer-') && this.transfer?.kind === 'cold') {
      logger.info('the transfer\'s destination joined; the agent leaves', { call_id: this.state.call_id });
      void this.leave();
    }
  }

  // ---- transfers ----

  private startHold(music: HoldMusic, agentic: boolean): void {
    this.transfer ??= { kind: 'warm' };
    this.clearReminder();
    this.armSilence();
    this.session.interrupt({ force: true });
    if (music === 'none' || this.transfer.hold || this.transfer.holdTrack) return;
    // An agentic transfer's music goes on the hold track: the agent's voice is for the destination.
    if (agentic && this.options.holdTrack) this.transfer.holdTrack = this.options.holdTrack(holdAudio(music));
    else this.transfer.hold = this.sound(holdAudio(music));
  }

  /** Audio of the worker's own as a speech of the session (after what is being said; nothing stops it but the worker). */
  private sound(audio: ReturnType<typeof bridgeCue>): voice.SpeechHandle {
    const handle = this.session.say('', { audio, allowInterruptions: false, addToChatCtx: false });
    this.sounds.add(handle);
    return handle;
  }

  private stopHold(): void {
    const transfer = this.transfer;
    transfer?.holdTrack?.stop();
    if (transfer) transfer.holdTrack = undefined;
    const hold = transfer?.hold;
    if (!hold) return;
    transfer.hold = undefined;
    hold.interrupt(true);
  }

  /**
   * An agentic warm transfer's destination answered and the caller no longer hears the
   * agent (Parley unsubscribed them): the agent listens to the destination and consults it,
   * with the option's transfer agent (startTransferAgent) or Parley's built-in mediator (who
   * is waiting and what they said last; the destination's words decide), and reports the
   * decision (`transfer_decision`). Parley bridges or cancels on it, or on
   * `action_on_timeout` when nothing decides.
   */
  private consult(control: Extract<LiveControl, { type: 'transfer_consult' }>): void {
    const callId = this.state.call_id;
    if (!this.options.listenTo) {
      logger.warn('a transfer consultation was asked for on a session without a room; Parley decides on timeout', { call_id: callId });
      return;
    }
    this.transfer ??= { kind: 'warm' };
    if (this.transfer.consulting) return;
    // Music in the agent's voice would hold up the consultation: it stops (the caller hears the hold track, if any).
    const hold = this.transfer.hold;
    this.transfer.hold = undefined;
    hold?.interrupt(true);
    this.transfer.consulting = control.participant_identity;
    this.options.listenTo(control.participant_identity);
    if (control.transfer_agent) {
      this.startTransferAgent(control.transfer_agent, control.destination ?? control.participant_identity.replace(/^transfer-/, ''));
      return;
    }
    const lastCallerLine = [...this.lines].reverse().find((line) => line.role === 'user')?.content;
    const greeting = mediatorGreeting(lastCallerLine);
    this.reportConsultation('agent', greeting);
    const handle = this.session.say(greeting, { addToChatCtx: false });
    this.sounds.add(handle);
  }

  /**
   * The consulted destination's words: reported as the transfer target's, then answered by
   * the transfer agent (one turn after another), or read by the mediator for a decision (once).
   */
  private destinationSaid(content: string): void {
    const transfer = this.transfer!;
    this.reportConsultation('transfer_target', content);
    if (transfer.decided) return;
    const { consultant } = transfer;
    if (consultant) {
      this.consultantTurn(consultant, (state) => this.transferAgentTurn(state, { type: 'user_said', text: content }));
      return;
    }
    const decision = mediatorDecision(content);
    if (decision) this.decide(decision);
  }

  private decide(decision: 'bridge' | 'cancel'): void {
    const transfer = this.transfer;
    if (!transfer || transfer.decided) return;
    transfer.decided = true;
    logger.info('the consulted destination decided', { call_id: this.state.call_id, decision });
    void this.options.reports.send({ event: 'transfer_decision', decision });
  }

  /**
   * The option's transfer agent consults (shared/conversation/transfers/transfer-agent.ts, as in the
   * sandbox): its conversation is opened with the call's variables and what was said so far,
   * its opening is said to the destination, and each of the destination's lines is its next
   * turn. Its bridge_transfer / cancel_transfer is the decision; a transfer agent that cannot
   * run (deleted, its model failing) cancels, as in the sandbox.
   */
  private startTransferAgent(agent: { agent_id: string; agent_version: string | number }, destination: string): void {
    const consultant: Consultant = { running: Promise.resolve() };
    this.transfer!.consultant = consultant;
    const { state } = this;
    this.consultantTurn(consultant, async () => {
      consultant.state = await openTransferAgent({
        workspaceId: state.workspace_id,
        callId: state.call_id,
        transferAgent: agent,
        destination,
        dynamicVariables: this.callVariables,
        ...(state.from_number ? { fromNumber: state.from_number } : {}),
        ...(state.metadata !== undefined ? { metadata: state.metadata } : {}),
        conversation: state.history.flatMap((entry) =>
          (entry.role === 'agent' || entry.role === 'user') && typeof entry.content === 'string' ? [{ role: entry.role, content: entry.content }] : [],
        ),
        llmTokenLimit: state.token_limit,
        ...(state.fallback_llm_model ? { fallbackLlmModel: state.fallback_llm_model } : {}),
        ...(state.data_storage_setting ? { dataStorageSetting: state.data_storage_setting } : {}),
      });
      return this.transferAgentTurn(consultant.state, { type: 'call_started' });
    });
  }

  /** A turn of the transfer agent (its retrieval through Parley, as the call's agent's). */
  private transferAgentTurn(state: ConversationState, event: TurnEvent): Promise<TransferAgentTurn> {
    return transferAgentTurn(state, event, { retrieve: (query) => this.options.reports.kbRetrieve(query) });
  }

  /** Runs a transfer agent's turn after the ones before it, while its consultation lasts, and says and reports what it did. */
  private consultantTurn(consultant: Consultant, run: (state: ConversationState) => Promise<TransferAgentTurn>): void {
    const current = () => this.transfer?.consultant === consultant && !this.transfer.decided && !this.ending;
    consultant.running = consultant.running.then(async () => {
      if (!current()) return;
      let turn: TransferAgentTurn;
      try {
        turn = await run(consultant.state!);
      } catch (error) {
        if (!current()) return;
        logger.warn('the transfer agent failed; cancelling the agentic transfer', { call_id: this.state.call_id, error });
        this.decide('cancel');
        return;
      }
      if (!current()) return;
      consultant.state = turn.state;
      const { reports } = this.options;
      let said: voice.SpeechHandle | undefined;
      for (const entry of turn.entries) {
        // The destination's line was reported when it was heard.
        if (entry.role === 'agent' && typeof entry.content === 'string' && entry.content) {
          this.reportConsultation('agent', entry.content);
          said = this.session.say(entry.content, { addToChatCtx: false });
          this.sounds.add(said);
        } else if (entry.role === 'tool_call_invocation') {
          void reports.send({ event: 'tool_call_invoked', tool_call_id: String(entry.tool_call_id), name: String(entry.name), arguments: String(entry.arguments) });
        } else if (entry.role === 'tool_call_result') {
          void reports.send({ event: 'tool_call_result', tool_call_id: String(entry.tool_call_id), content: String(entry.content), successful: entry.successful !== false });
        }
      }
      if (!turn.decision) return;
      // What it says with its decision reaches the destination before Parley bridges (the caller hears again) or hangs up.
      if (said) await Promise.race([said.waitForPlayout(), delay(CONSULT_PLAYOUT_MS)]).catch(() => undefined);
      if (current()) this.decide(turn.decision);
    });
  }

  /** The transfer agent's conversation is over (a custom LLM's socket is released). */
  private closeConsultant(): void {
    const consultant = this.transfer?.consultant;
    if (!consultant) return;
    this.transfer!.consultant = undefined;
    void consultant.running.then(() => consultant.state && closeConversation(consultant.state));
  }

  /** A consultation's line: in the call's transcript_with_tool_calls only (Parley keeps `transfer_target` lines out of the caller's). */
  private reportConsultation(role: 'agent' | 'transfer_target', content: string): void {
    void this.options.reports.transcript([{ role, content, words: [] }]);
  }

  /** The caller is back with the agent. */
  private transferOver(): void {
    this.stopHold();
    this.closeConsultant();
    if (this.transfer?.consulting) this.options.listenTo?.(undefined);
    this.transfer = undefined;
    this.armSilence();
    this.armReminder();
  }

  private async bridge(control: Extract<LiveControl, { type: 'transfer_bridge' }>): Promise<void> {
    this.stopHold();
    this.closeConsultant();
    this.transfer ??= { kind: 'warm' };
    const spoken: voice.SpeechHandle[] = [];
    if (control.audio_cue) spoken.push(this.sound(bridgeCue()));
    try {
      const handoff =
        control.public_handoff ??
        (control.public_handoff_prompt
          ? (await (this.options.compose ?? (await import('../../shared/conversation/index.ts')).composeMessage)(this.state, control.public_handoff_prompt)).trim()
          : undefined);
      if (handoff) spoken.push(this.session.say(handoff, { allowInterruptions: false }));
      await Promise.race([Promise.all(spoken.map((handle) => handle.waitForPlayout())), delay(30_000)]);
    } catch (error) {
      logger.warn('the transfer\'s handoff could not be said', { call_id: this.state.call_id, error });
    }
    logger.info('the transfer is bridged; the agent leaves', { call_id: this.state.call_id });
    await this.leave();
  }

  /** A finished line: reported to Parley, and the transcript so far to the web caller's client. */
  private reportLine(line: Utterance & { role: 'agent' | 'user' }): void {
    // Queued in order with every other report (call_ended after it).
    void this.options.reports.transcript([line]);
    this.lines.push({ role: line.role, content: line.content });
    if (this.lines.length > CLIENT_TRANSCRIPT_LINES) this.lines.shift();
    this.options.publish?.(CLIENT_TOPIC, { event_type: 'update', transcript: [...this.lines] });
  }

  // ---- live controls ----

  control(message: unknown): void {
    const control = liveControl(message);
    if (!control || this.ending) return;
    const callId = this.state.call_id;
    switch (control.type) {
      case 'say':
        // Queued behind what is being said, as a speech of its own (reported when heard).
        this.session.say(control.text);
        return;
      case 'update': {
        const { dynamic_variables, agent_override, additional_context } = control;
        if (dynamic_variables) this.callVariables = { ...dynamic_variables };
        this.update((state) => ({
          ...state,
          ...(dynamic_variables ? { dynamic_variables: { ...dynamic_variables } } : {}),
          ...(agent_override ? { overrides: agent_override } : {}),
        }));
        if (additional_context) this.update((state) => noteToAgent(state, additional_context));
        return;
      }
      case 'transfer_cancelled':
        this.transferOver();
        this.update((state) => noteToAgent(state, control.note));
        return;
      case 'transfer_hold':
        this.startHold(control.on_hold_music, control.agentic);
        return;
      case 'transfer_bridge':
        void this.bridge(control);
        return;
      case 'transfer_consult':
        this.consult(control);
        return;
      case 'take_over':
        logger.info('a participant took the call over; the agent leaves', { call_id: callId, participant_id: control.participant_id });
        void this.leave();
        return;
    }
  }

  private update(change: (state: ConversationState) => ConversationState): void {
    this.updates.push(change);
    this.state = change(this.state);
  }

  /** Stops speaking and closes the session without ending the call (a take-over: a person talks to the caller now). */
  private async leave(): Promise<void> {
    this.ending ??= (async () => {
      this.clearTimers();
      this.closeConsultant();
      try {
        await this.session.interrupt({ force: true }).await;
      } catch {
        // not running
      }
      await Promise.race([Promise.all([...this.records.values()].map((record) => record.settled)), delay(5000)]);
      await this.options.reports.flush();
      await (await this.ambient)?.close();
      await this.session.close().catch(() => undefined);
      this.resolveTakenOver();
      return 'user_hangup' as EndReason;
    })();
  }

  private userState(state: voice.UserState): void {
    const wasSpeaking = this.userSpeaking;
    this.userSpeaking = state === 'speaking';
    if (this.userSpeaking) this.backchannel.callerSpeaking();
    else if (wasSpeaking) this.backchannel.callerPaused();
    if (this.userSpeaking) {
      // reminder_max_count counts the reminders of one silence: the caller speaking starts afresh.
      this.remindersSent = 0;
      this.clearReminder();
    }
    this.armSilence();
  }

  private agentStateChanged(state: voice.AgentState): void {
    const wasSpeaking = this.agentState === 'speaking';
    this.agentState = state;
    if (state === 'speaking' && !wasSpeaking) this.options.publish?.(CLIENT_TOPIC, { event_type: 'agent_start_talking' });
    if (wasSpeaking && state !== 'speaking') this.options.publish?.(CLIENT_TOPIC, { event_type: 'agent_stop_talking' });
    if (state === 'speaking') this.clearReminder();
    // The agent taking the floor ends the caller's turn; a backchannel of its own does not.
    if (state === 'speaking' && !(this.playing && this.backchannels.has(this.playing.handle))) this.backchannel.turnOver();
    if (wasSpeaking && state !== 'speaking') this.armReminder();
    this.armSilence();
  }

  /** The silence timer runs while neither side speaks (nor the agent thinks); any voice restarts it. */
  private armSilence(): void {
    if (this.silenceTimer !== undefined) this.timers.clearTimeout(this.silenceTimer);
    this.silenceTimer = undefined;
    // On hold for a transfer the caller is silent by design: the transfer's own ring time applies.
    if (this.ending || this.transfer || this.userSpeaking || this.agentState === 'speaking' || this.agentState === 'thinking') return;
    this.silenceTimer = this.timers.setTimeout(() => void this.end('inactivity'), this.options.settings.end_call_after_silence_ms);
  }

  private armReminder(): void {
    const { reminder_trigger_ms, reminder_max_count } = this.options.settings;
    this.clearReminder();
    if (this.ending || this.transfer || this.userSpeaking || reminder_trigger_ms <= 0 || this.remindersSent >= reminder_max_count) return;
    this.reminderTimer = this.timers.setTimeout(() => void this.remind(), reminder_trigger_ms);
  }

  private clearReminder(): void {
    if (this.reminderTimer !== undefined) this.timers.clearTimeout(this.reminderTimer);
    this.reminderTimer = undefined;
  }

  private async remind(): Promise<void> {
    this.reminderTimer = undefined;
    if (this.ending || this.userSpeaking) return;
    this.remindersSent++;
    try {
      const compose = this.options.compose ?? (await import('../../shared/conversation/index.ts')).composeMessage;
      const text = (await compose(this.state, REMINDER_INSTRUCTION)).trim();
      if (text && !this.ending && !this.userSpeaking) this.session.say(text);
    } catch (error) {
      logger.warn('a reminder could not be composed', { call_id: this.state.call_id, error });
    }
  }

  // ---- backchannel ----

  /** Nothing of the agent's is playing or on its way (a reply started before the caller's turn is certain does not count). */
  private agentQuiet(): boolean {
    if (this.ending || this.transfer || this.agentState === 'speaking' || this.agentState === 'thinking') return false;
    for (const record of this.records.values()) {
      if (!(record.source === 'generate_reply' && !record.handle.scheduled)) return false;
    }
    return true;
  }

  /**
   * A backchannel word, said as a sound of the agent's own: not in the chat, the engine's
   * state or the transcript (Retell records none), and cut off by the caller's voice or the
   * end of their turn like any interruptible speech.
   */
  private sayBackchannel(word: string): void {
    const handle = this.session.say(word, { allowInterruptions: true, addToChatCtx: false });
    this.sounds.add(handle);
    this.backchannels.add(handle);
  }

  // ---- the end ----

  end(reason: EndReason): Promise<EndReason> {
    this.ending ??= this.finishCall(reason);
    return this.ending;
  }

  private clearTimers(): void {
    this.backchannel.close();
    for (const timer of [this.silenceTimer, this.reminderTimer, this.maxDurationTimer, this.beginTimer, this.digitTimer]) {
      if (timer !== undefined) this.timers.clearTimeout(timer);
    }
  }

  private async finishCall(reason: EndReason): Promise<EndReason> {
    this.clearTimers();
    this.closeConsultant();
    // Whatever is being said stops; what was heard of it is committed and reported first.
    try {
      await this.session.interrupt({ force: true }).await;
    } catch {
      // not running (closed already)
    }
    await Promise.race([Promise.all([...this.records.values()].map((record) => record.settled)), delay(5000)]);
    // The llm figure of the last reply settles with it.
    await Promise.resolve();
    const latency = this.latency;
    await this.options.reports.send({ event: 'call_ended', disconnection_reason: reason, ...(Object.keys(latency).length ? { latency } : {}) });
    await this.options.reports.flush();
    await (await this.ambient)?.close();
    try {
      await this.session.close();
    } catch (error) {
      logger.warn('the voice session did not close cleanly', { call_id: this.state.call_id, error });
    }
    this.resolveEnded(reason);
    return reason;
  }
}

/** The caller's words a reply answers: the chat's last message, when it is theirs. */
function userTurn(chatCtx: llm.ChatContext): TurnEvent | undefined {
  const last = chatCtx.items.at(-1);
  if (!(last instanceof llm.ChatMessage) || last.role !== 'user') return undefined;
  const text = last.textContent?.trim();
  return text ? { type: 'user_said', text } : undefined;
}

async function dropOnceScheduled(handle: voice.SpeechHandle): Promise<void> {
  if (!handle.scheduled) await handle._waitForScheduled();
  if (!handle.done()) handle.interrupt(true);
}

/** The tool gate of a reply: true once its speech is scheduled (the turn is the caller's), false once it is dropped. */
function scheduled(handle: voice.SpeechHandle, signal: AbortSignal): Promise<boolean> {
  if (handle.scheduled) return Promise.resolve(!handle.interrupted);
  if (handle.done() || handle.interrupted || signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    void handle._waitForScheduled().then(() => resolve(!handle.interrupted));
    handle.addDoneCallback(() => resolve(handle.scheduled && !handle.interrupted));
    signal.addEventListener('abort', () => resolve(false), { once: true });
  });
}

/**
 * What the caller heard of a speech, with its word timings (seconds from the start of its
 * audio). Played through: all of it (the words the framework committed, else the words the
 * voice aligned). Cut off: the synchronised transcript the room's output reports, else the
 * aligned words that had started playing when it stopped (the output's playback position,
 * else the time since the audio started, when the speech was stopped before the output
 * reported one).
 */
function heard(record: SpeechRecord, handle: voice.SpeechHandle, now: number): { text: string; words: { text: string; start: number; end: number }[] } {
  if (record.playbackStartedAt === undefined) return { text: '', words: [] };
  const timed = record.aligned
    .filter((word): word is { text: string; start: number; end: number } => word.start !== undefined && word.end !== undefined && word.text.trim() !== '')
    .map((word) => ({ ...word, text: word.text.trim() }));
  const committed = handle.chatItems
    .filter((item): item is llm.ChatMessage => item instanceof llm.ChatMessage && item.role === 'assistant')
    .map((item) => item.textContent ?? '')
    .join(' ')
    .trim();
  const full = committed || record.aligned.map((word) => word.text).join('').trim() || record.written.trim();
  if (!handle.interrupted) return { text: full, words: full ? timed : [] };
  const synced = record.playback?.synchronizedTranscript?.trim();
  if (synced !== undefined) {
    const count = synced ? synced.split(/\s+/).length : 0;
    return { text: synced, words: timed.slice(0, count) };
  }
  if (!timed.length) return { text: full, words: [] };
  const position = record.playback?.playbackPosition ?? (now - record.playbackStartedAt) / 1000;
  const words = timed.filter((word) => word.start < position);
  return { text: words.map((word) => word.text).join(' '), words };
}

type LiveControl =
  | { type: 'say'; text: string }
  | { type: 'transfer_hold'; on_hold_music: HoldMusic; agentic: boolean }
  | { type: 'transfer_bridge'; audio_cue: boolean; public_handoff?: string; public_handoff_prompt?: string }
  | { type: 'transfer_consult'; participant_identity: string; destination?: string; transfer_agent?: { agent_id: string; agent_version: string | number } }
  | { type: 'update'; dynamic_variables?: Record<string, string>; agent_override?: ConfigOverrides; additional_context?: string }
  | { type: 'take_over'; participant_id?: string }
  | { type: 'transfer_cancelled'; note: string };

/** A `parley.live` message the worker acts on; anything else (or malformed) is ignored. */
function liveControl(message: unknown): LiveControl | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const m = message as Record<string, unknown>;
  const text = (value: unknown) => (typeof value === 'string' && value.trim() ? value : undefined);
  const object = (value: unknown) => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined);
  switch (m.type) {
    case 'say': {
      const said = text(m.text);
      return said ? { type: 'say', text: said } : undefined;
    }
    case 'update': {
      const variables = object(m.dynamic_variables);
      const override = object(m.agent_override);
      const context = text(m.additional_context);
      return {
        type: 'update',
        ...(variables ? { dynamic_variables: Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, String(value)])) } : {}),
        ...(override ? { agent_override: override as ConfigOverrides } : {}),
        ...(context ? { additional_context: context } : {}),
      };
    }
    case 'take_over':
      return { type: 'take_over', ...(typeof m.participant_id === 'string' ? { participant_id: m.participant_id } : {}) };
    case 'transfer_cancelled': {
      const note = text(m.note);
      return note ? { type: 'transfer_cancelled', note } : undefined;
    }
    case 'transfer_hold': {
      const music = HOLD_MUSIC.find((name) => name === m.on_hold_music) ?? 'none';
      return { type: 'transfer_hold', on_hold_music: music, agentic: m.agentic === true };
    }
    case 'transfer_bridge': {
      const handoff = text(m.public_handoff);
      const prompt = text(m.public_handoff_prompt);
      return {
        type: 'transfer_bridge',
        audio_cue: m.audio_cue !== false,
        ...(handoff ? { public_handoff: handoff } : {}),
        ...(prompt ? { public_handoff_prompt: prompt } : {}),
      };
    }
    case 'transfer_consult': {
      const identity = text(m.participant_identity);
      const destination = text(m.destination);
      const agent = object(m.transfer_agent);
      if (!identity) return undefined;
      const version = agent && (typeof agent.agent_version === 'number' || typeof agent.agent_version === 'string') ? agent.agent_version : 'latest';
      return {
        type: 'transfer_consult',
        participant_identity: identity,
        ...(destination ? { destination } : {}),
        ...(agent && text(agent.agent_id) ? { transfer_agent: { agent_id: agent.agent_id as string, agent_version: version } } : {}),
      };
    }
    default:
      return undefined;
  }
}

function closeReason(ev: voice.CloseEvent): EndReason {
  if (ev.reason === voice.CloseReason.PARTICIPANT_DISCONNECTED) return 'user_hangup';
  if (ev.error?.type === 'stt_error') return 'error_asr';
  return 'error_unknown';
}

/** A transfer agent's consultation in progress: its conversation, and the turn running (each turn waits for the one before). */
interface Consultant {
  state?: ConversationState;
  running: Promise<void>;
}

/** The longest a transfer agent's last words hold up its decision. */
const CONSULT_PLAYOUT_MS = 15_000;

const HOLD_MUSIC: HoldMusic[] = ['none', 'relaxing_sound', 'uplifting_beats', 'ringtone', 'custom'];

const VOICEMAIL = [
  /\b(leave|record) (me |us )?(a |your )?(brief |short )?(message|name and number)\b/i,
  /\bafter the (tone|beep)\b/i,
  /\b(voice ?mail|mailbox)\b/i,
  /\b(is|are) not available\b.*\b(message|call you back|get back to you)\b/i,
  /\bcan'?t (take|come to) (your|the) (call|phone)\b/i,
];
const IVR = [
  /\bpress (\d|one|two|three|four|five|six|seven|eight|nine|zero|star|pound)\b/i,
  /\bfor [^.,]{1,60},? press\b/i,
  /\b(main menu|extension)\b.*\b(press|dial|enter)\b/i,
  /\bplease (listen carefully|select from the following)\b/i,
];

/**
 * Whether the caller's words are a voicemail greeting or a phone menu: a keyword test (the
 * framework's answering-machine detection asks a model each time; this costs nothing). A
 * voicemail greeting that offers options ("press 1 to leave a callback number") is voicemail.
 */
export function machineHeard(words: string): 'voicemail' | 'ivr' | undefined {
  if (VOICEMAIL.some((pattern) => pattern.test(words))) return 'voicemail';
  if (IVR.some((pattern) => pattern.test(words))) return 'ivr';
  return undefined;
}

const seconds = (value: number) => Math.round(value * 1000) / 1000;
/** The framework's figures are seconds. */
const msOf = (value: number | undefined) => (value === undefined ? undefined : value * 1000);
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
