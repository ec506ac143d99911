import { describe, expect, it } from 'vitest';
import { scriptedCall } from './support/scripted-call.ts';

/*
 * The real AgentSession of LiveKit Agents, with no media server: the caller's audio and
 * speaker are in-process (worker/test/support/scripted-vendors.ts), the response engine a
 * script. Real time throughout: each voiced word of the agent is 120 ms of audio.
 */

const transcripts = (events: { event: string }[]) =>
  events.filter((event): event is any => event.event === 'transcript_updated').flatMap((event: any) => event.utterances);

describe('a call\'s voice session', () => {
  it('speaks the opening after begin_message_delay_ms and reports it with its word timings', async () => {
    const { engine, reports, until, startedAt, speaker } = await scriptedCall({
      agent: { begin_message_delay_ms: 300 },
      replies: ['Hello, this is the clinic.'],
    });
    await until(() => transcripts(reports.events).length === 1);
    expect(engine.calls.map((call) => call.event)).toEqual([{ type: 'call_started' }]);
    expect(engine.calls[0]!.at - startedAt).toBeGreaterThanOrEqual(300);
    expect(engine.commits).toEqual([{ event: { type: 'call_started' }, text: 'Hello, this is the clinic.', interrupted: false }]);
    const [line] = transcripts(reports.events);
    expect(line.role).toBe('agent');
    expect(line.content).toBe('Hello, this is the clinic.');
    expect(line.words.map((word: any) => word.word)).toEqual(['Hello,', 'this', 'is', 'the', 'clinic.']);
    // Seconds from the call's start: the words follow each other 120 ms apart, after the delay.
    expect(line.words[0].start).toBeGreaterThanOrEqual(0.3);
    expect(line.words[1].start - line.words[0].start).toBeCloseTo(0.12, 5);
    expect(line.words[4].end - line.words[0].start).toBeCloseTo(0.6, 5);
    expect(speaker.segments).toEqual([{ playbackPosition: expect.closeTo(0.6, 1), interrupted: false }]);
  });

  it('answers the caller\'s turn through the engine and reports both lines in order', async () => {
    const { engine, reports, until, caller } = await scriptedCall({
      replies: ['Hi there.', 'Sure, which day suits you?'],
      callerLines: ['I would like an appointment.'],
    });
    await until(() => engine.commits.length === 1);
    await caller.speak(600);
    await until(() => engine.commits.length === 2);
    expect(engine.calls.map((call) => call.event)).toEqual([
      { type: 'call_started' },
      { type: 'user_said', text: 'I would like an appointment.' },
    ]);
    expect(engine.commits[1]).toEqual({ event: engine.calls[1]!.event, text: 'Sure, which day suits you?', interrupted: false });
    await until(() => transcripts(reports.events).length === 3);
    expect(transcripts(reports.events).map((line: any) => [line.role, line.content])).toEqual([
      ['agent', 'Hi there.'],
      ['user', 'I would like an appointment.'],
      ['agent', 'Sure, which day suits you?'],
    ]);
  });
});
