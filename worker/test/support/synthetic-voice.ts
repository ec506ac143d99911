/**
 * The voice the fake text-to-speech vendors speak with: every character of the text gets the
 * same slot of time (`msPerChar`), letters and digits a voiced tone, spaces and punctuation
 * silence. It costs nothing, is the same for the same text on every run, and its timings are
 * exact, so a test can compare the word timings a fake sends with the audio it sent.
 */

export interface SyntheticVoiceOptions {
  sampleRate: number;
  /** Time per character, spaces and punctuation included (default 60 ms: about 180 words a minute). */
  msPerChar?: number;
  /** Where this text starts on its context's timeline: the audio already generated before it. */
  offsetMs?: number;
}

export interface SyntheticCharTiming {
  char: string;
  /** From the start of the context's audio. */
  startMs: number;
  durationMs: number;
}

export interface SyntheticWordTiming {
  word: string;
  /** Seconds from the start of the context's audio. */
  start: number;
  end: number;
  startMs: number;
  endMs: number;
}

export interface SyntheticSpeech {
  /** Mono 16-bit PCM. */
  pcm: Int16Array;
  sampleRate: number;
  durationMs: number;
  chars: SyntheticCharTiming[];
  words: SyntheticWordTiming[];
}

export const DEFAULT_MS_PER_CHAR = 60;
const VOICED = /[\p{L}\p{N}]/u;
/** About -12 dBFS: clearly voice to any energy gate, far from clipping. */
const AMPLITUDE = 0.25 * 32767;
const FADE_MS = 5;

export function syntheticSpeech(text: string, options: SyntheticVoiceOptions): SyntheticSpeech {
  const { sampleRate } = options;
  const msPerChar = options.msPerChar ?? DEFAULT_MS_PER_CHAR;
  const offsetMs = options.offsetMs ?? 0;
  const chars = Array.from(text);
  const samplesPerChar = Math.round((sampleRate * msPerChar) / 1000);
  const pcm = new Int16Array(samplesPerChar * chars.length);
  const fade = Math.max(1, Math.round((sampleRate * FADE_MS) / 1000));

  // One tone per run of voiced characters (a word), faded in and out so runs do not click.
  let runStart = -1;
  const closeRun = (end: number) => {
    if (runStart < 0) return;
    const from = runStart * samplesPerChar;
    const to = end * samplesPerChar;
    for (let i = from; i < to; i++) {
      const t = i / sampleRate;
      const envelope = Math.min(1, (i - from) / fade, (to - 1 - i) / fade);
      const wave = 0.7 * Math.sin(2 * Math.PI * 180 * t) + 0.3 * Math.sin(2 * Math.PI * 360 * t);
      pcm[i] = Math.round(AMPLITUDE * Math.max(0, envelope) * wave);
    }
    runStart = -1;
  };
  chars.forEach((char, i) => {
    if (VOICED.test(char)) {
      if (runStart < 0) runStart = i;
    } else {
      closeRun(i);
    }
  });
  closeRun(chars.length);

  const timings = chars.map((char, i) => ({ char, startMs: offsetMs + i * msPerChar, durationMs: msPerChar }));
  const words: SyntheticWordTiming[] = [];
  let wordStart = -1;
  chars.forEach((char, i) => {
    const space = /\s/.test(char);
    if (!space && wordStart < 0) wordStart = i;
    if ((space || i === chars.length - 1) && wordStart >= 0) {
      const end = space ? i : i + 1;
      const startMs = offsetMs + wordStart * msPerChar;
      const endMs = offsetMs + end * msPerChar;
      words.push({ word: chars.slice(wordStart, end).join(''), start: startMs / 1000, end: endMs / 1000, startMs, endMs });
      wordStart = -1;
    }
  });

  return { pcm, sampleRate, durationMs: chars.length * msPerChar, chars: timings, words };
}

/** Splits speech into chunks of `chunkMs` of audio (the last one shorter), each with the timings that start in it. */
export function chunkSpeech(
  speech: SyntheticSpeech,
  chunkMs: number,
): { pcm: Int16Array; chars: SyntheticCharTiming[]; words: SyntheticWordTiming[] }[] {
  const chunks: { pcm: Int16Array; chars: SyntheticCharTiming[]; words: SyntheticWordTiming[] }[] = [];
  const samplesPerMs = speech.sampleRate / 1000;
  const base = speech.chars[0]?.startMs ?? 0;
  for (let from = 0; from < speech.durationMs; from += chunkMs) {
    const to = Math.min(speech.durationMs, from + chunkMs);
    const inChunk = (ms: number) => ms - base >= from && ms - base < to;
    chunks.push({
      pcm: speech.pcm.subarray(Math.round(from * samplesPerMs), Math.round(to * samplesPerMs)),
      chars: speech.chars.filter((c) => inChunk(c.startMs)),
      words: speech.words.filter((w) => inChunk(w.startMs)),
    });
  }
  return chunks;
}

/** The bytes of 16-bit PCM, little-endian as every vendor sends it. */
export function pcmBytes(pcm: Int16Array): Buffer {
  return Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength);
}
