import { EventEmitter } from 'eventemitter3';
import { createAudioAnalyser, Room, RoomEvent, type RemoteAudioTrack, type RoomOptions } from 'livekit-client';

/**
 * `@parley/web-sdk`: the browser side of a Parley web call, on top of livekit-client.
 *
 * Written to the spec's "Client events of the browser web client" and to the public shape
 * of retell-client-js-sdk's `RetellWebClient` (same class, method and event names; a
 * test in test/web/sdk-api.test.ts holds the two together), so a front end written for it
 * only changes its import. What the agent worker sends and how it reaches these events is
 * in docs/browser.md ("The web SDK") and docs/calls-media.md ("What the browser hears").
 */

/** The deployment's LiveKit URL, fixed when the SDK is built (`npm run build:web`, from LIVEKIT_URL). */
declare const __PARLEY_DEFAULT_LIVEKIT_URL__: string | undefined;

/** Topics of the data messages the agent worker sends to the browser. */
export const CLIENT_TOPIC = 'parley.client';
/** The spec's "metadata topic": anything published on it is a `metadata` event. */
export const METADATA_TOPIC = 'parley.metadata';
/** Parley's live controls for the worker (docs/calls-media.md): never meant for the browser. */
const WORKER_TOPIC = 'parley.live';
/** LiveKit Agents keeps the agent's state in this participant attribute (`speaking` while it talks). */
export const AGENT_STATE_ATTRIBUTE = 'lk.agent.state';

export interface StartCallConfig {
  /** The web call's `access_token` (create-web-call, or the Voice Orb's public route). */
  accessToken: string;
  /** The media server; default: the client's `url` option, then the deployment's. */
  livekitUrl?: string;
  sampleRate?: number;
  /** The microphone to capture (a MediaDeviceInfo.deviceId). */
  captureDeviceId?: string;
  /** The speaker to play the agent on (a MediaDeviceInfo.deviceId). */
  playbackDeviceId?: string;
  /** Emit the agent's audio as Float32Array samples (`audio` events, once a frame) for visualisations. */
  emitRawAudioSamples?: boolean;
}

/** One line of the transcript as `update` events carry it. */
export interface TranscriptEntry {
  role: 'agent' | 'user';
  content: string;
}

export interface UpdateEvent {
  transcript: TranscriptEntry[];
  [field: string]: unknown;
}

export type ParleyErrorCode = 'connection_failed' | 'microphone_failed' | 'invalid_message' | 'call_in_progress' | 'audio_failed';

/** What `error` events carry: a message people can read and a code programs can match. */
export class ParleyCallError extends Error {
  constructor(
    readonly code: ParleyErrorCode,
    message: string,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'ParleyCallError';
  }
}

export interface ParleyWebClientEvents {
  call_started: [];
  call_ready: [];
  agent_start_talking: [];
  agent_stop_talking: [];
  update: [update: UpdateEvent];
  metadata: [metadata: unknown];
  node_transition: [transition: unknown];
  audio: [samples: Float32Array];
  call_ended: [];
  error: [error: ParleyCallError];
}

/** The part of a remote participant the client reads. */
export interface ParticipantLike {
  identity: string;
  isAgent?: boolean;
  attributes?: Readonly<Record<string, string>>;
}

/** The part of livekit-client's Room the client uses: what a room factory must answer (tests pass a fake). */
export interface RoomLike {
  on(event: string, listener: (...args: never[]) => void): unknown;
  connect(url: string, token: string): Promise<void>;
  disconnect(): Promise<void> | void;
  startAudio(): Promise<void>;
  localParticipant: { setMicrophoneEnabled(enabled: boolean): Promise<unknown> };
  remoteParticipants?: ReadonlyMap<string, ParticipantLike>;
}

export interface ParleyWebClientOptions {
  /** The media server for every call of this client (a call's `livekitUrl` wins). */
  url?: string;
  /** Makes the call's room; default `new Room(options)` from livekit-client. */
  roomFactory?: (options: RoomOptions) => RoomLike;
}

interface TrackLike {
  kind: string;
  attach?: () => unknown;
  mediaStreamTrack?: MediaStreamTrack;
}

const decoder = new TextDecoder();

const isAgent = (participant: ParticipantLike | undefined) =>
  participant !== undefined && (participant.isAgent === true || participant.identity === 'server');

function transcriptOf(value: unknown): TranscriptEntry[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const valid = value.every(
    (entry: unknown) =>
      typeof entry === 'object' &&
      entry !== null &&
      ((entry as TranscriptEntry).role === 'agent' || (entry as TranscriptEntry).role === 'user') &&
      typeof (entry as TranscriptEntry).content === 'string',
  );
  return valid ? (value as TranscriptEntry[]) : undefined;
}

export class ParleyWebClient extends EventEmitter<ParleyWebClientEvents> {
  /**
   * Where calls connect when neither the call nor the client names a server: the
   * deployment's LiveKit URL the SDK was built with, else `livekit-server --dev`'s address.
   * A page may set it once for every client.
   */
  static defaultLivekitUrl: string =
    (typeof __PARLEY_DEFAULT_LIVEKIT_URL__ === 'string' && __PARLEY_DEFAULT_LIVEKIT_URL__) || 'ws://127.0.0.1:7880';

  /** Whether the agent is speaking now (from the worker's messages or its `lk.agent.state`). */
  isAgentTalking = false;
  /** The agent's audio analyser while `emitRawAudioSamples` is on (livekit-client's createAudioAnalyser). */
  analyzerComponent: ReturnType<typeof createAudioAnalyser> | undefined;

  private readonly options: ParleyWebClientOptions;
  private room: RoomLike | undefined;
  private connected = false;
  private ready = false;
  private captureAudioFrame: number | undefined;
  private config: StartCallConfig | undefined;
  /** The agent's audio track when it arrived before the connection finished. */
  private agentTrack: TrackLike | undefined;

  constructor(options: ParleyWebClientOptions = {}) {
    super();
    this.options = options;
  }

  /**
   * Joins the call's room, turns the microphone on and emits `call_started`. A failure is an
   * `error` event (`connection_failed`: the media server could not be reached or refused the
   * token; `microphone_failed`), after which nothing is left connected; the promise resolves
   * either way, as retell-client-js-sdk's does.
   */
  async startCall(config: StartCallConfig): Promise<void> {
    if (this.room) {
      this.emit('error', new ParleyCallError('call_in_progress', 'A call is already in progress: stopCall() first'));
      return;
    }
    const url = config.livekitUrl ?? this.options.url ?? ParleyWebClient.defaultLivekitUrl;
    const roomOptions: RoomOptions = {
      audioCaptureDefaults: {
        autoGainControl: true,
        echoCancellation: true,
        noiseSuppression: true,
        channelCount: 1,
        deviceId: config.captureDeviceId,
        sampleRate: config.sampleRate,
      },
      audioOutput: { deviceId: config.playbackDeviceId },
    };
    const room = (this.options.roomFactory ?? ((options: RoomOptions) => new Room(options) as unknown as RoomLike))(roomOptions);
    this.room = room;
    this.config = config;
    this.ready = false;
    this.agentTrack = undefined;
    this.listen(room);
    try {
      await room.connect(url, config.accessToken);
    } catch (error) {
      this.abandon(room);
      this.emit('error', new ParleyCallError('connection_failed', `Error starting call: cannot reach the media server at ${url}`, error));
      return;
    }
    if (this.room !== room) return; // stopped while connecting
    try {
      await room.localParticipant.setMicrophoneEnabled(true);
    } catch (error) {
      this.abandon(room);
      this.emit('error', new ParleyCallError('microphone_failed', 'Error starting call: the microphone could not be turned on', error));
      return;
    }
    if (this.room !== room) return;
    this.connected = true;
    this.emit('call_started');
    for (const participant of room.remoteParticipants?.values() ?? []) {
      if (isAgent(participant)) this.callReady();
    }
    if (this.agentTrack) this.agentAudio(this.agentTrack);
  }

  /** Browsers may block audio until the user acts: call this from a click handler. */
  async startAudioPlayback(): Promise<void> {
    await this.room?.startAudio();
  }

  /** Leaves the call: `call_ended` once, then nothing more from this call. */
  stopCall(): void {
    const room = this.room;
    if (!room) return;
    const wasConnected = this.connected;
    this.abandon(room);
    if (wasConnected) this.emit('call_ended');
  }

  mute(): void {
    this.setMicrophone(false);
  }

  unmute(): void {
    this.setMicrophone(true);
  }

  private setMicrophone(enabled: boolean): void {
    if (!this.connected || !this.room) return;
    this.room.localParticipant.setMicrophoneEnabled(enabled).catch((error: unknown) => {
      this.emit('error', new ParleyCallError('microphone_failed', `The microphone could not be turned ${enabled ? 'on' : 'off'}`, error));
    });
  }

  /** Forgets the room (its late events are ignored) and disconnects it. */
  private abandon(room: RoomLike): void {
    if (this.room === room) {
      this.room = undefined;
      this.connected = false;
      this.ready = false;
      this.agentTrack = undefined;
      this.setTalking(false, false);
      this.stopAudioSamples();
    }
    Promise.resolve()
      .then(() => room.disconnect())
      .catch(() => undefined);
  }

  private callReady(): void {
    if (this.ready || !this.connected) return;
    this.ready = true;
    this.emit('call_ready');
  }

  private agentAudio(track: TrackLike): void {
    this.agentTrack = undefined;
    this.callReady();
    if (this.config?.emitRawAudioSamples) this.startAudioSamples(track);
  }

  private setTalking(talking: boolean, emit = true): void {
    if (this.isAgentTalking === talking) return;
    this.isAgentTalking = talking;
    if (emit) this.emit(talking ? 'agent_start_talking' : 'agent_stop_talking');
  }

  private listen(room: RoomLike): void {
    const current = () => this.room === room;
    const on = (event: string, listener: (...args: never[]) => void) => room.on(event, listener);
    on(RoomEvent.Disconnected, () => {
      if (current()) this.stopCall();
    });
    on(RoomEvent.ParticipantConnected, (participant: ParticipantLike) => {
      if (current() && isAgent(participant)) this.callReady();
    });
    on(RoomEvent.ParticipantDisconnected, (participant: ParticipantLike) => {
      // The agent left: the call is over for the caller (spec: call_ended "agent left").
      if (current() && this.connected && isAgent(participant)) this.stopCall();
    });
    on(RoomEvent.TrackSubscribed, (track: TrackLike, publication: { trackName?: string }, participant: ParticipantLike) => {
      if (!current() || track.kind !== 'audio') return;
      track.attach?.();
      if (!isAgent(participant) && publication?.trackName !== 'agent_audio') return;
      if (this.connected) this.agentAudio(track);
      else this.agentTrack = track;
    });
    on(RoomEvent.ParticipantAttributesChanged, (changed: Record<string, string>, participant: ParticipantLike) => {
      if (!current() || !isAgent(participant) || !(AGENT_STATE_ATTRIBUTE in changed)) return;
      this.setTalking(changed[AGENT_STATE_ATTRIBUTE] === 'speaking');
    });
    on(RoomEvent.DataReceived, (payload: Uint8Array, participant?: ParticipantLike, _kind?: unknown, topic?: string) => {
      // Only the agent (or the server itself, which has no participant) speaks for the call.
      if (!current() || (participant !== undefined && !isAgent(participant)) || topic === WORKER_TOPIC) return;
      this.onData(payload, topic);
    });
  }

  private onData(payload: Uint8Array, topic: string | undefined): void {
    const text = decoder.decode(payload);
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch (error) {
      if (topic === METADATA_TOPIC) this.emit('metadata', text);
      else this.emit('error', new ParleyCallError('invalid_message', 'A message from the agent was not JSON', error));
      return;
    }
    if (topic === METADATA_TOPIC) {
      this.emit('metadata', message);
      return;
    }
    if (topic !== undefined && topic !== '' && topic !== CLIENT_TOPIC) return;
    const event = (typeof message === 'object' && message !== null ? message : {}) as Record<string, unknown>;
    switch (event.event_type) {
      case 'update': {
        const transcript = transcriptOf(event.transcript);
        if (!transcript) {
          this.emit('error', new ParleyCallError('invalid_message', 'A transcript update from the agent was malformed'));
          return;
        }
        this.emit('update', { ...event, transcript });
        return;
      }
      case 'metadata':
        this.emit('metadata', event);
        return;
      case 'agent_start_talking':
        this.setTalking(true);
        return;
      case 'agent_stop_talking':
        this.setTalking(false);
        return;
      case 'node_transition':
        this.emit('node_transition', event);
        return;
      default:
        return; // newer workers may send more: ignored, as retell-client-js-sdk does
    }
  }

  private startAudioSamples(track: TrackLike): void {
    this.stopAudioSamples();
    try {
      this.analyzerComponent = createAudioAnalyser(track as RemoteAudioTrack);
    } catch (error) {
      this.emit('error', new ParleyCallError('audio_failed', "The agent's audio could not be analysed", error));
      return;
    }
    const capture = () => {
      const analyzer = this.analyzerComponent;
      if (!this.connected || !analyzer) return;
      const samples = new Float32Array(analyzer.analyser.fftSize);
      analyzer.analyser.getFloatTimeDomainData(samples);
      this.emit('audio', samples);
      this.captureAudioFrame = window.requestAnimationFrame(capture);
    };
    this.captureAudioFrame = window.requestAnimationFrame(capture);
  }

  private stopAudioSamples(): void {
    if (this.captureAudioFrame !== undefined) window.cancelAnimationFrame(this.captureAudioFrame);
    this.captureAudioFrame = undefined;
    const analyzer = this.analyzerComponent;
    this.analyzerComponent = undefined;
    void analyzer?.cleanup().catch(() => undefined);
  }
}

/** The compatible client's name: `import { RetellWebClient } from '@parley/web-sdk'` works as before. */
export const RetellWebClient = ParleyWebClient;
export type RetellWebClient = ParleyWebClient;
