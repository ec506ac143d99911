import { AudioFrame } from '@livekit/rtc-node';
import { describe, expect, it } from 'vitest';
import { RecogniserClock } from '../src/recogniser-clock.ts';

/*
 * The caller's words in time: the recogniser's clock (the audio the Deepgram plugin sent it,
 * which leaves out silence after a second) turned back into when the audio arrived.
 */

const RATE = 16_000;
/** 100 ms of audio: a tone loud enough to be sent, or silence. */
const chunk = (voiced: boolean) => {
  const data = new Int16Array(RATE / 10);
  if (voiced) for (let i = 0; i < data.length; i++) data[i] = Math.round(8000 * Math.sin(i / 5));
  return new AudioFrame(data, RATE, 1, data.length);
};

describe('the recogniser\'s clock', () => {
  it('leaves out silence past a second, as the plugin does, and places words when their audio arrived', () => {
    const clock = new RecogniserClock();
    const start = 1_000_000;
    // 3 s of silence (only the first second is sent), then 1 s of speech: all in real time.
    for (let i = 0; i < 40; i++) clock.push(chunk(i >= 30), start + (i + 1) * 100);
    // The recogniser heard 1 s of silence then the speech: its 1.05 s is the call's 3.05 s.
    expect(clock.at(1.05)).toBe(start + 3050);
    expect(clock.at(1.55)).toBe(start + 3550);
    expect(clock.at(2.0)).toBe(start + 4000);
    expect(clock.at(0.5)).toBe(start + 500);
    // Audio it has not heard yet.
    expect(clock.at(2.5)).toBeUndefined();
  });

  it('takes audio read late in a burst back to when it arrived, from the chunks read after it', () => {
    const clock = new RecogniserClock();
    const start = 1_000_000;
    for (let i = 0; i < 10; i++) clock.push(chunk(true), start + (i + 1) * 100);
    // Three chunks held back and read together, then real time again.
    for (let i = 10; i < 13; i++) clock.push(chunk(true), start + 1300);
    for (let i = 13; i < 20; i++) clock.push(chunk(true), start + (i + 1) * 100);
    expect(clock.at(1.05)).toBe(start + 1050);
    expect(clock.at(1.2)).toBe(start + 1200);
    // What is forgotten is what was placed already; later audio keeps its place.
    clock.forget(1.5);
    expect(clock.at(1.45)).toBe(start + 1450);
    expect(clock.at(1.95)).toBe(start + 1950);
  });
});
