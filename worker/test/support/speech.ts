import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as realSetTimeout } from 'node:timers';
import { AudioFrame } from '@livekit/rtc-node';

/**
 * Caller audio for the worker's tests and the voice benchmark: real speech synthesised by
 * espeak-ng and resampled by sox (Debian packages `espeak-ng` and `sox`), as 16-bit mono PCM,
 * plus silence, noise, concatenation, and the 10 or 20 ms AudioFrames a LiveKit audio track
 * delivers. The same text and settings always give the same samples; each is synthesised once
 * and kept under the temp folder.
 *
 *   const pcm = concat(silence(300), speechPcm('I would like to book a table'), silence(1200));
 *   for await (const frame of realtime(audioFrames(pcm))) input.push(frame);
 */

export const DEFAULT_SAMPLE_RATE = 16_000;

export interface SpeechOptions {
  /** Default 16 kHz (what the Deepgram plugin sends). */
  sampleRate?: number;
  /** An espeak-ng voice (default `en-us`). */
  voice?: string;
  /** Default 175, espeak-ng's own. */
  wordsPerMinute?: number;
  /**
   * Cut espeak-ng's leading and trailing silence (default true), so the audio starts and ends
   * with the voice and a test places its pauses with `silence()`.
   */
  trim?: boolean;
}

const memory = new Map<string, Int16Array>();
let toolsChecked = false;

/** The spoken text as 16-bit mono PCM. */
export function speechPcm(text: string, options: SpeechOptions = {}): Int16Array {
  if (!text.trim()) throw new Error('speechPcm: the text is empty');
  const sampleRate = options.sampleRate ?? DEFAULT_SAMPLE_RATE;
  const voice = options.voice ?? 'en-us';
  const wordsPerMinute = options.wordsPerMinute ?? 175;
  const trim = options.trim ?? true;
  const key = createHash('sha256').update(JSON.stringify({ v: 1, text, sampleRate, voice, wordsPerMinute, trim })).digest('hex').slice(0, 32);
  const cached = memory.get(key);
  if (cached) return cached.slice();

  const folder = join(tmpdir(), 'parley-speech');
  const file = join(folder, `${key}.raw`);
  let pcm: Int16Array;
  if (existsSync(file)) {
    pcm = toInt16(readFileSync(file));
  } else {
    checkTools();
    mkdirSync(folder, { recursive: true });
    const wav = join(folder, `${key}.${process.pid}.wav`);
    try {
      // The text on stdin: as an argument, a text starting with '-' would be read as an option.
      execFileSync('espeak-ng', ['-v', voice, '-s', String(wordsPerMinute), '-w', wav, '--stdin'], { input: text, stdio: ['pipe', 'ignore', 'pipe'] });
      const raw = execFileSync('sox', [wav, '-t', 'raw', '-r', String(sampleRate), '-c', '1', '-b', '16', '-e', 'signed-integer', '-L', '-'], {
        stdio: ['ignore', 'pipe', 'pipe'],
        maxBuffer: 256 * 1024 * 1024,
      });
      pcm = toInt16(raw);
      if (trim) pcm = trimSilence(pcm, sampleRate);
      // Written whole, then renamed: a parallel test file never reads half a fixture.
      const partial = `${file}.${process.pid}.part`;
      writeFileSync(partial, Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength));
      renameSync(partial, file);
    } finally {
      rmSync(wav, { force: true });
    }
  }
  memory.set(key, pcm);
  return pcm.slice();
}

function checkTools() {
  if (toolsChecked) return;
  for (const tool of ['espeak-ng', 'sox']) {
    try {
      execFileSync(tool, ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error(`speech fixtures need ${tool}: install the Debian packages espeak-ng and sox (apt-get install -y espeak-ng sox)`);
    }
  }
  toolsChecked = true;
}

function toInt16(bytes: Buffer): Int16Array {
  const copy = new Int16Array(Math.floor(bytes.length / 2));
  for (let i = 0; i < copy.length; i++) copy[i] = bytes.readInt16LE(i * 2);
  return copy;
}

/** Below this RMS (of samples scaled to ±1) a 10 ms window is silence: -50 dBFS. */
const TRIM_RMS = 0.003;

function trimSilence(pcm: Int16Array, sampleRate: number): Int16Array {
  const window = Math.round(sampleRate / 100);
  const voiced = (from: number) => {
    let energy = 0;
    const to = Math.min(pcm.length, from + window);
    for (let i = from; i < to; i++) energy += (pcm[i]! / 32768) ** 2;
    return Math.sqrt(energy / Math.max(1, to - from)) >= TRIM_RMS;
  };
  let start = 0;
  while (start < pcm.length && !voiced(start)) start += window;
  let end = Math.ceil(pcm.length / window) * window;
  while (end > start && !voiced(end - window)) end -= window;
  return pcm.slice(start, Math.min(end, pcm.length));
}

/** Digital silence. */
export function silence(ms: number, sampleRate = DEFAULT_SAMPLE_RATE): Int16Array {
  return new Int16Array(Math.round((sampleRate * ms) / 1000));
}

/**
 * Steady white noise at `rms` (of samples scaled to ±1; default 0.02, about -34 dBFS: above a
 * -40 dBFS voice gate, the level of a noisy line), the same on every run.
 */
export function noise(ms: number, options: { sampleRate?: number; rms?: number; seed?: number } = {}): Int16Array {
  const sampleRate = options.sampleRate ?? DEFAULT_SAMPLE_RATE;
  const amplitude = (options.rms ?? 0.02) * Math.sqrt(3) * 32767; // uniform in ±a has RMS a/√3
  const out = new Int16Array(Math.round((sampleRate * ms) / 1000));
  let state = (options.seed ?? 1) >>> 0 || 1;
  for (let i = 0; i < out.length; i++) {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    out[i] = Math.round(((state / 0xffffffff) * 2 - 1) * amplitude);
  }
  return out;
}

export function concat(...parts: Int16Array[]): Int16Array {
  const out = new Int16Array(parts.reduce((total, part) => total + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

export function durationMs(pcm: Int16Array, sampleRate = DEFAULT_SAMPLE_RATE): number {
  return (pcm.length / sampleRate) * 1000;
}

/**
 * The PCM as the AudioFrames a LiveKit track delivers: `frameMs` each (10 or 20), mono; the last
 * one padded with silence to a whole frame.
 */
export function audioFrames(pcm: Int16Array, options: { sampleRate?: number; frameMs?: 10 | 20 } = {}): AudioFrame[] {
  const sampleRate = options.sampleRate ?? DEFAULT_SAMPLE_RATE;
  const size = Math.round((sampleRate * (options.frameMs ?? 10)) / 1000);
  const frames: AudioFrame[] = [];
  for (let at = 0; at < pcm.length; at += size) {
    const data = new Int16Array(size);
    data.set(pcm.subarray(at, Math.min(at + size, pcm.length)));
    frames.push(new AudioFrame(data, sampleRate, 1, size));
  }
  return frames;
}

/**
 * Yields the frames at the pace they would be spoken (each when its audio has been captured,
 * against the wall clock, without drift), for pipelines whose timing matters; fake timers do not
 * affect it.
 */
export async function* realtime(frames: Iterable<AudioFrame>): AsyncGenerator<AudioFrame> {
  const start = performance.now();
  let elapsedMs = 0;
  for (const frame of frames) {
    elapsedMs += (frame.samplesPerChannel / frame.sampleRate) * 1000;
    const wait = start + elapsedMs - performance.now();
    if (wait > 0) await new Promise((resolve) => realSetTimeout(resolve, wait));
    yield frame;
  }
}
