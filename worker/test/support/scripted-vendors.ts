import {
  createTimedString,
  initializeLogger,
  stt,
  tts,
  VAD,
  VADEventType,
  VADStream,
  voice,
  type APIConnectOptions,
  type VADEvent,
} from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { ReadableStream } from 'node:stream/web';

/*
 * In-process stand-ins for the speech vendors, for tests of the real AgentSession without
 * a media server: the caller's audio is a tone (voiced) or zeros (silence), so "speech" is
 * simply energy. The recogniser answers a scripted line for each stretch of the caller's
 * voice; the voice turns each word into 120 ms of tone with its timing, as vendors that
 * align their transcripts do. The vendor-protocol fakes (worker/test/support, real plugins)
 * are for the integration tests.
 */

initializeLogger({ pretty: false, level: process.env.WORKER_TEST_LOG_LEVEL ?? 'error' });

const CALLER_RATE = 16_000;
const CALLER_FRAME_MS = 10;
const VOICE_RATE = 24_000;
const VOICE_FRAME_MS = 20;

function rms(frame: AudioFrame): number {
  let sum = 0;
  for (const sample of frame.data) sum += sample * sample;
  return Math.sqrt(sum / Math.max(1, frame.data.length));
}

const voiced = (frame: AudioFrame) => rms(frame) > 500;
const durationMs = (frame: AudioFrame) => (frame.samplesPerChannel / frame.sampleRate) * 1000;

function tone(sampleRate: number, ms: number, phase = 0): AudioFrame {
  const samples = Math.round((sampleRate * ms) / 1000);
  const data = new Int16Array(samples);
  for (let i = 0; i < samples; i++) data[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * (phase + i)) / sampleRate));
  return new AudioFrame(data, sampleRate, 1, samples);
}

const silence = (sampleRate: number, ms: number) => {
  const samples = Math.round((sampleRate * ms) / 1000);
  return new AudioFrame(new Int16Array(samples), sampleRate, 1, samples);
};

// ---- voice activity ----------------------------------------------------------------

/** Voice activity by energy: speech starts with the first voiced frame and ends after `minSilenceMs` without one. */
export class EnergyVAD extends VAD {
  label = 'scripted.EnergyVAD';
  constructor(readonly minSilenceMs = 150) {
    super({ updateInterval: CALLER_FRAME_MS });
  }
  stream(): VADStream {
    return new EnergyVADStream(this);
  }
}

class EnergyVADStream extends VADStream {
  constructor(private readonly energyVad: EnergyVAD) {
    super(energyVad);
    void this.run();
  }

  private async run(): Promise<void> {
    let speaking = false;
    let speechMs = 0;
    let silenceMs = 0;
    let samplesIndex = 0;
    const event = (type: VADEventType, frame: AudioFrame, isVoiced: boolean): VADEvent => ({
      type,
      samplesIndex,
      timestamp: Date.now(),
      speechDuration: speechMs,
      silenceDuration: silenceMs,
      frames: [frame],
      probability: isVoiced ? 1 : 0,
      inferenceDuration: 0,
      speaking,
      rawAccumulatedSilence: silenceMs,
      rawAccumulatedSpeech: speaking ? speechMs : 0,
    });
    try {
      for (;;) {
        const { done, value } = await this.inputReader.read();
        if (done || this.closed) break;
        if (typeof value === 'symbol') {
          speaking = false;
          speechMs = 0;
          silenceMs = 0;
          continue;
        }
        samplesIndex += value.samplesPerChannel;
        const isVoiced = voiced(value);
        if (isVoiced) {
          speechMs += durationMs(value);
          silenceMs = 0;
          if (!speaking) {
            speaking = true;
            this.sendVADEvent(event(VADEventType.START_OF_SPEECH, value, true));
          }
        } else if (speaking) {
          silenceMs += durationMs(value);
        }
        this.sendVADEvent(event(VADEventType.INFERENCE_DONE, value, isVoiced));
        if (speaking && silenceMs >= this.energyVad.minSilenceMs) {
          speaking = false;
          this.sendVADEvent(event(VADEventType.END_OF_SPEECH, value, false));
          speechMs = 0;
          silenceMs = 0;
        }
      }
    } catch {
      // closed while reading
    }
  }
}

// ---- speech to text ----------------------------------------------------------------

/**
 * A recogniser that answers the next scripted line, `delayMs` after each stretch of the
 * caller's voice ends (as a final transcript).
 */
export class ScriptedSTT extends stt.STT {
  label = 'scripted.STT';
  readonly heard: string[] = [];
  constructor(
    private readonly lines: string[],
    readonly delayMs = 60,
  ) {
    super({ streaming: true, interimResults: false });
  }

  nextLine(): string | undefined {
    const line = this.lines.shift();
    if (line !== undefined) this.heard.push(line);
    return line;
  }

  protected async _recognize(): Promise<stt.SpeechEvent> {
    throw new Error('ScriptedSTT only streams');
  }

  stream(options?: { connOptions?: APIConnectOptions }): stt.SpeechStream {
    return new ScriptedSpeechStream(this, options?.connOptions);
  }
}

class ScriptedSpeechStream extends stt.SpeechStream {
  label = 'scripted.SpeechStream';
  constructor(
    private readonly scripted: ScriptedSTT,
    connOptions?: APIConnectOptions,
  ) {
    super(scripted, undefined, connOptions);
  }

  protected async run(): Promise<void> {
    let voicedMs = 0;
    let silenceMs = 0;
    for await (const data of this.input) {
      if (typeof data === 'symbol') continue;
      if (voiced(data)) {
        voicedMs += durationMs(data);
        silenceMs = 0;
        continue;
      }
      silenceMs += durationMs(data);
      // The end of a stretch of voice (two silent frames after it): its line, a little later.
      if (voicedMs > 0 && silenceMs >= 2 * CALLER_FRAME_MS) {
        voicedMs = 0;
        const text = this.scripted.nextLine();
        if (text === undefined) continue;
        setTimeout(() => {
          if (this.queue.closed) return;
          this.queue.put({
            type: stt.SpeechEventType.FINAL_TRANSCRIPT,
            alternatives: [{ text, language: 'en' as never, startTime: 0, endTime: 0, confidence: 1 }],
          });
        }, this.scripted.delayMs);
      }
    }
  }
}

// ---- text to speech ----------------------------------------------------------------

/** A voice that speaks each word as `msPerWord` of tone, with the word's timing (aligned transcripts). */
export class ScriptedTTS extends tts.TTS {
  label = 'scripted.TTS';
  /** Every text it was asked to speak, in order. */
  readonly spoken: string[] = [];
  constructor(readonly msPerWord = 120) {
    super(VOICE_RATE, 1, { streaming: true, alignedTranscript: true });
  }

  synthesize(): tts.ChunkedStream {
    throw new Error('ScriptedTTS only streams');
  }

  stream(options?: { connOptions?: APIConnectOptions }): tts.SynthesizeStream {
    return new ScriptedSynthesizeStream(this, options?.connOptions);
  }
}

class ScriptedSynthesizeStream extends tts.SynthesizeStream {
  label = 'scripted.SynthesizeStream';
  private offset = 0;
  private segment = 0;
  constructor(
    private readonly voice: ScriptedTTS,
    connOptions?: APIConnectOptions,
  ) {
    super(voice, connOptions);
  }

  protected async run(): Promise<void> {
    let text = '';
    for await (const data of this.input) {
      if (this.abortController.signal.aborted) return;
      if (typeof data === 'symbol') {
        this.speak(text);
        text = '';
      } else {
        text += data;
      }
    }
    this.speak(text);
  }

  private speak(text: string): void {
    if (!text.trim()) return;
    this.voice.spoken.push(text);
    this.markStarted();
    const segmentId = `segment-${++this.segment}`;
    const words = text.match(/\S+\s*/g) ?? [];
    const framesPerWord = Math.max(1, Math.round(this.voice.msPerWord / VOICE_FRAME_MS));
    words.forEach((word, index) => {
      const start = this.offset;
      const end = start + this.voice.msPerWord / 1000;
      for (let i = 0; i < framesPerWord; i++) {
        this.queue.put({
          requestId: segmentId,
          segmentId,
          frame: tone(VOICE_RATE, VOICE_FRAME_MS, i * (VOICE_RATE / 50)),
          final: index === words.length - 1 && i === framesPerWord - 1,
          ...(i === 0 ? { timedTranscripts: [createTimedString({ text: word, startTime: start, endTime: end })] } : {}),
        });
      }
      this.offset = end;
    });
  }
}

// ---- the caller's audio ------------------------------------------------------------

/** The caller's microphone: silence, or a tone while `speak` has time queued, in real time (10 ms frames). */
export class CallerAudio extends voice.AudioInput {
  private voiceLeftMs = 0;
  private closedInput = false;
  constructor() {
    super();
    let next = Date.now();
    const stream = new ReadableStream<AudioFrame>({
      pull: async (controller) => {
        if (this.closedInput) return controller.close();
        next += CALLER_FRAME_MS;
        const wait = next - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        if (this.voiceLeftMs > 0) {
          this.voiceLeftMs -= CALLER_FRAME_MS;
          controller.enqueue(tone(CALLER_RATE, CALLER_FRAME_MS));
        } else {
          controller.enqueue(silence(CALLER_RATE, CALLER_FRAME_MS));
        }
      },
    });
    this.multiStream.addInputStream(stream);
  }

  /** The caller talks for `ms`; resolves when they stop. */
  speak(ms: number): Promise<void> {
    this.voiceLeftMs += ms;
    return new Promise((resolve) => setTimeout(resolve, ms));
  }

  override async close(): Promise<void> {
    this.closedInput = true;
    await super.close();
  }
}

// ---- the caller's speaker ----------------------------------------------------------

/** The caller's speaker: plays what it is given in real time and reports each segment's playout. */
export class CallerSpeaker extends voice.AudioOutput {
  /** Seconds played of each finished segment, and whether it was cut off. */
  readonly segments: voice.PlaybackFinishedEvent[] = [];
  private buffered: AudioFrame[] = [];
  private inSegment = false;
  private flushed = false;
  /** Milliseconds of the current (or last) segment played so far. */
  playedMs = 0;
  private ticking: ReturnType<typeof setTimeout> | undefined;

  constructor() {
    super(VOICE_RATE);
  }

  override async captureFrame(frame: AudioFrame): Promise<void> {
    await super.captureFrame(frame);
    if (!this.inSegment) {
      this.inSegment = true;
      this.flushed = false;
      this.playedMs = 0;
      this.onPlaybackStarted(Date.now());
    }
    this.buffered.push(frame);
    this.tick();
  }

  override flush(): void {
    super.flush();
    if (!this.inSegment) return;
    this.flushed = true;
    this.tick();
  }

  clearBuffer(): void {
    this.buffered = [];
    if (this.inSegment) this.finishSegment(true);
  }

  private tick(): void {
    if (this.ticking) return;
    const frame = this.buffered.shift();
    if (!frame) {
      if (this.inSegment && this.flushed) this.finishSegment(false);
      return;
    }
    const ms = durationMs(frame);
    this.ticking = setTimeout(() => {
      this.ticking = undefined;
      this.playedMs += ms;
      this.tick();
    }, ms);
  }

  private finishSegment(interrupted: boolean): void {
    if (this.ticking) clearTimeout(this.ticking);
    this.ticking = undefined;
    this.inSegment = false;
    const event = { playbackPosition: this.playedMs / 1000, interrupted };
    this.segments.push(event);
    this.onPlaybackFinished(event);
  }
}
