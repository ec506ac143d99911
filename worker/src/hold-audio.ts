import { AudioFrame } from '@livekit/rtc-node';
import { ReadableStream } from 'node:stream/web';

/*
 * What the caller hears while a warm transfer rings, and the cue when it is bridged. The
 * project ships no music: each hold choice is a tone loop generated here (`ringtone` as a
 * North American ringback, the others as a soft three-note chime), and a custom asset is
 * played as the chime too.
 */

export const HOLD_SAMPLE_RATE = 24_000;
const FRAME_MS = 100;
const SAMPLES_PER_FRAME = (HOLD_SAMPLE_RATE * FRAME_MS) / 1000;
/** How far ahead of real time the stream may run (the output buffers it). */
const LEAD_MS = 500;

export type HoldMusic = 'none' | 'relaxing_sound' | 'uplifting_beats' | 'ringtone' | 'custom';

/** One period of the loop, as samples. */
function holdLoop(music: HoldMusic): Int16Array {
  if (music === 'ringtone') {
    // 440 + 480 Hz, two seconds on, four off.
    return tone(6000, (t) => (t < 2 ? 0.12 * (Math.sin(2 * Math.PI * 440 * t) + Math.sin(2 * Math.PI * 480 * t)) : 0));
  }
  // C5, E5, G5, each 300 ms with a fading tail, then a rest: 2.4 s.
  const notes = [523.25, 659.25, 783.99];
  return tone(2400, (t) => {
    const note = Math.floor(t / 0.3);
    if (note >= notes.length) return 0;
    const into = t - note * 0.3;
    return 0.18 * Math.exp(-into * 6) * Math.sin(2 * Math.PI * notes[note]! * t);
  });
}

/** The bridge cue: two short 880 Hz beeps. */
function cueSamples(): Int16Array {
  return tone(400, (t) => (t < 0.15 || (t >= 0.25 && t < 0.4) ? 0.2 * Math.sin(2 * Math.PI * 880 * t) : 0));
}

function tone(ms: number, at: (seconds: number) => number): Int16Array {
  const samples = new Int16Array(Math.round((HOLD_SAMPLE_RATE * ms) / 1000));
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(Math.max(-1, Math.min(1, at(i / HOLD_SAMPLE_RATE))) * 32767);
  return samples;
}

function frameAt(samples: Int16Array, offset: number): AudioFrame {
  const data = new Int16Array(SAMPLES_PER_FRAME);
  for (let i = 0; i < SAMPLES_PER_FRAME; i++) data[i] = samples[(offset + i) % samples.length]!;
  return new AudioFrame(data, HOLD_SAMPLE_RATE, 1, SAMPLES_PER_FRAME);
}

/** The hold music as an endless stream, paced to real time (it ends when its reader cancels it). */
export function holdAudio(music: HoldMusic, now: () => number = Date.now): ReadableStream<AudioFrame> {
  const loop = holdLoop(music);
  let offset = 0;
  let startedAt: number | undefined;
  return new ReadableStream<AudioFrame>({
    async pull(controller) {
      startedAt ??= now();
      const aheadMs = (offset / HOLD_SAMPLE_RATE) * 1000 - (now() - startedAt);
      if (aheadMs > LEAD_MS) await new Promise((resolve) => setTimeout(resolve, aheadMs - LEAD_MS));
      controller.enqueue(frameAt(loop, offset));
      offset += SAMPLES_PER_FRAME;
    },
  });
}

/** The bridge cue as a short stream. */
export function bridgeCue(): ReadableStream<AudioFrame> {
  const samples = cueSamples();
  let offset = 0;
  return new ReadableStream<AudioFrame>({
    pull(controller) {
      if (offset >= samples.length) return controller.close();
      controller.enqueue(frameAt(samples, offset));
      offset += SAMPLES_PER_FRAME;
    },
  });
}
