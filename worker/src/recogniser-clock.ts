import type { AudioFrame } from '@livekit/rtc-node';

/*
 * When the caller said a recognised word. Deepgram times words by the audio it was sent, and
 * the Deepgram plugin does not send all of it: it cuts the input into 100 ms chunks and drops
 * a chunk once a second has passed without one above its energy threshold (its
 * AudioEnergyFilter), so the recogniser's clock stops during every longer silence. This clock
 * runs the same filter over the same audio as it reaches the recogniser and notes when each
 * chunk it would send arrived, which turns a time on the recogniser's clock back into the
 * instant the caller spoke.
 *
 * Audio can reach the recogniser late, never early: the framework holds some back (a burst
 * when the caller starts speaking) and a busy process reads it late. A call's audio is real
 * time, 100 ms a chunk, so the chunks read after one also say when it arrived at the latest
 * (their time less 100 ms for each chunk between); the earliest of those is taken.
 */

/** The plugin's filter: RMS of samples scaled to ±1 above this is voice... */
const ENERGY_THRESHOLD = 0.004;
/** ...and this long after the last voiced chunk the plugin still sends audio (s). */
const COOLDOWN_S = 1;
const CHUNK_S = 0.1;
/** How many chunks after one are asked when it arrived (5 s of speech). */
const LOOKAHEAD = 50;

export class RecogniserClock {
  private energy = 0;
  private samples = 0;
  private cooldown = COOLDOWN_S;
  /** Chunks of the input so far, sent or not. */
  private chunks = 0;
  /** Seconds of audio the recogniser has been sent. */
  private sent = 0;
  /** At the end of each chunk sent: the recogniser's time there, when its audio arrived (epoch ms), its index in the input. */
  private marks: { sent: number; at: number; chunk: number }[] = [];

  /** A frame of the caller's audio on its way to the recogniser, arrived at `at` (epoch ms). */
  push(frame: AudioFrame, at: number): void {
    const chunk = Math.floor(frame.sampleRate / 10) * frame.channels;
    for (const sample of frame.data) {
      this.energy += (sample / 32768) ** 2;
      if (++this.samples < chunk) continue;
      const rms = Math.sqrt(this.energy / this.samples);
      this.energy = 0;
      this.samples = 0;
      this.chunks++;
      if (rms > ENERGY_THRESHOLD) this.cooldown = COOLDOWN_S;
      else this.cooldown -= CHUNK_S;
      if (rms <= ENERGY_THRESHOLD && this.cooldown <= 0) continue;
      this.sent += CHUNK_S;
      this.marks.push({ sent: this.sent, at, chunk: this.chunks });
    }
  }

  /** When the audio at `time` seconds on the recogniser's clock arrived (epoch ms); undefined when it has not. */
  at(time: number): number | undefined {
    const { marks } = this;
    let low = 0;
    let high = marks.length;
    // The first chunk ending at or after `time` (a little slack for rounding).
    while (low < high) {
      const mid = (low + high) >> 1;
      if (marks[mid]!.sent + 1e-6 < time) low = mid + 1;
      else high = mid;
    }
    const mark = marks[low];
    if (!mark) return undefined;
    let arrived = mark.at;
    for (let i = low + 1; i < Math.min(marks.length, low + LOOKAHEAD); i++) {
      arrived = Math.min(arrived, marks[i]!.at - (marks[i]!.chunk - mark.chunk) * CHUNK_S * 1000);
    }
    return arrived - (mark.sent - time) * 1000;
  }

  /** Forgets the chunks before `time` on the recogniser's clock (words before it are placed already). */
  forget(time: number): void {
    const keep = this.marks.findIndex((mark) => mark.sent >= time - CHUNK_S);
    if (keep > 0) this.marks = this.marks.slice(keep);
  }
}
