import { voice } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { ReadableStream } from 'node:stream/web';
import { CallerSpeaker } from './scripted-vendors.ts';
import { DEFAULT_SAMPLE_RATE, silence as silencePcm } from './speech.ts';

/*
 * The caller's side of a call with real vendors behind it: a microphone that plays real
 * speech (espeak-ng PCM, speech.ts) in real time and silence between, noting when its last
 * voiced frame went out, and a speaker that notes when each reply's first audio frame
 * arrived. The integration tests and the voice-to-voice benchmark stand on it.
 */

const FRAME_MS = 10;
/** A 10 ms frame at or above this RMS (of samples scaled to ±1, -50 dBFS) is voice. */
const VOICED_RMS = 0.003;

function voiced(data: Int16Array): boolean {
  let energy = 0;
  for (const sample of data) energy += (sample / 32768) ** 2;
  return Math.sqrt(energy / Math.max(1, data.length)) >= VOICED_RMS;
}

/** The caller's microphone: queued PCM in real time (10 ms frames), silence when nothing is queued. */
export class SpeechMicrophone extends voice.AudioInput {
  private queue: { pcm: Int16Array; at: number; done: () => void }[] = [];
  private closedInput = false;
  /** performance.now() when the last voiced frame went out. */
  lastVoicedAt: number | undefined;
  readonly sampleRate: number;

  constructor(sampleRate = DEFAULT_SAMPLE_RATE) {
    super();
    this.sampleRate = sampleRate;
    const size = Math.round((sampleRate * FRAME_MS) / 1000);
    let next = performance.now();
    const stream = new ReadableStream<AudioFrame>({
      pull: async (controller) => {
        if (this.closedInput) return controller.close();
        next += FRAME_MS;
        const wait = next - performance.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        const data = new Int16Array(size);
        const current = this.queue[0];
        if (current) {
          data.set(current.pcm.subarray(current.at, current.at + size));
          current.at += size;
          if (current.at >= current.pcm.length) {
            this.queue.shift();
            current.done();
          }
        }
        if (voiced(data)) this.lastVoicedAt = performance.now();
        controller.enqueue(new AudioFrame(data, sampleRate, 1, size));
      },
    });
    this.multiStream.addInputStream(stream);
  }

  /** The caller says this PCM (at the microphone's rate); resolves once its last frame went out. */
  say(pcm: Int16Array): Promise<void> {
    return new Promise((done) => this.queue.push({ pcm, at: 0, done }));
  }

  /** Silence of its own (queued, so it keeps its place after speech). */
  pause(ms: number): Promise<void> {
    return this.say(silencePcm(ms, this.sampleRate));
  }

  override async close(): Promise<void> {
    this.closedInput = true;
    await super.close();
  }
}

/** The caller's speaker, noting when each reply's first audio frame reached it (performance.now()). */
export class TimedSpeaker extends CallerSpeaker {
  readonly firstFrames: number[] = [];
  private open = false;

  override async captureFrame(frame: AudioFrame): Promise<void> {
    if (!this.open) {
      this.open = true;
      this.firstFrames.push(performance.now());
    }
    await super.captureFrame(frame);
  }

  override flush(): void {
    super.flush();
    this.open = false;
  }

  override clearBuffer(): void {
    super.clearBuffer();
    this.open = false;
  }
}

/** Calls `committed` (performance.now()) each time the session commits a turn of the caller's to the chat. */
export function onUserTurn(session: voice.AgentSession, committed: (at: number) => void): void {
  session.on(voice.AgentSessionEventTypes.ConversationItemAdded, (ev) => {
    if (ev.item.type === 'message' && ev.item.role === 'user') committed(performance.now());
  });
}
