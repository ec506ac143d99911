import { describe, expect, it } from 'vitest';
import { agentSettings } from '../src/agent-settings.ts';
import { backchannelWords } from '../src/backchannel.ts';
import { scriptedCall } from './support/scripted-call.ts';

/*
 * Backchannel on the real AgentSession without a media server (worker/test/support/
 * scripted-call.ts: the caller's voice is a tone, each word of the agent 120 ms of tone).
 * The caller talks for about 3.6 s with two 800 ms pauses; responsiveness 0 gives an
 * end-of-turn delay of 1.5 s, so neither pause ends their turn. The random source is a script.
 */

const transcripts = (events: { event: string }[]) =>
  events.filter((event): event is any => event.event === 'transcript_updated').flatMap((event: any) => event.utterances);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A scripted random source: the numbers in order, and how many were drawn. */
function scriptedRandom(numbers: number[]) {
  const source = { draws: 0, next: () => numbers[source.draws++] ?? 0.99 };
  return source;
}

const CALLER_LINES = ['My order from last week', 'has still not arrived', 'and I need it by Friday.'];
const WHOLE_TURN = 'My order from last week has still not arrived and I need it by Friday.';
const ANSWER = 'Let me check that order for you.';

/** The greeting, then the caller's long turn: 2.2 s, a pause, 0.8 s, a pause, 0.6 s. */
async function longTurn(agent: Record<string, unknown>, numbers: number[]) {
  const random = scriptedRandom(numbers);
  const call = await scriptedCall({
    agent: { responsiveness: 0, ...agent },
    // Preemptive generation starts a reply at each pause (dropped when the caller goes on): each gets the answer.
    replies: ['Hello.', ...Array(4).fill(ANSWER)],
    callerLines: [...CALLER_LINES],
    session: { random: random.next },
  });
  await call.until(() => call.engine.commits.length === 1);
  await call.caller.speak(2200);
  await sleep(800);
  await call.caller.speak(800);
  await sleep(800);
  await call.caller.speak(600);
  await call.until(() => call.engine.commits.length === 2);
  await call.until(() => transcripts(call.reports.events).length === 3);
  return { ...call, random };
}

describe('backchannel', () => {
  it('says one word in a pause of a long turn, by the frequency, without taking the turn or entering the transcript', async () => {
    // First pause (2.5 s into the turn): 0.9 is not below the frequency 0.8, no word. Second
    // pause: 0.5 is, and 0.7 picks the third word.
    const { voice, engine, reports, speaker, random, recogniser } = await longTurn(
      { enable_backchannel: true, backchannel_words: ['yeah', 'right', 'mm-hmm'] },
      [0.9, 0.5, 0.7],
    );
    expect(random.draws).toBe(3);
    expect(voice.spoken).toEqual(['Hello.', 'mm-hmm', ANSWER]);
    // Played through: the caller resumed after it.
    expect(speaker.segments).toHaveLength(3);
    expect(speaker.segments[1]).toEqual({ playbackPosition: expect.closeTo(0.12, 1), interrupted: false });
    // One turn of the caller's, answered once; the engine never saw the word.
    expect(recogniser.heard).toEqual(CALLER_LINES);
    expect(engine.commits).toEqual([
      { event: { type: 'call_started' }, text: 'Hello.', interrupted: false },
      { event: { type: 'user_said', text: WHOLE_TURN }, text: ANSWER, interrupted: false },
    ]);
    for (const call of engine.calls.slice(1)) expect(call.state.history).toEqual([{ role: 'agent', content: 'Hello.' }]);
    expect(transcripts(reports.events).map((line: any) => [line.role, line.content])).toEqual([
      ['agent', 'Hello.'],
      ['user', WHOLE_TURN],
      ['agent', ANSWER],
    ]);
  });

  it('says nothing with enable_backchannel false', async () => {
    const { voice, engine, random } = await longTurn({ enable_backchannel: false }, [0, 0, 0]);
    expect(random.draws).toBe(0);
    expect(voice.spoken).toEqual(['Hello.', ANSWER]);
    expect(engine.commits.map((commit) => commit.event)).toEqual([{ type: 'call_started' }, { type: 'user_said', text: WHOLE_TURN }]);
  });

  it('says nothing with backchannel_frequency 0', async () => {
    const { voice, random } = await longTurn({ enable_backchannel: true, backchannel_frequency: 0 }, [0, 0, 0]);
    expect(random.draws).toBe(0);
    expect(voice.spoken).toEqual(['Hello.', ANSWER]);
  });
});

describe('backchannel words', () => {
  it('are the agent\'s own, else its language\'s, else English', () => {
    expect(backchannelWords(agentSettings({}).settings)).toEqual(['yeah', 'uh-huh', 'mm-hmm']);
    expect(backchannelWords(agentSettings({ language: 'es-ES' }).settings)).toEqual(['sí', 'ajá', 'claro']);
    expect(backchannelWords(agentSettings({ language: ['de-DE', 'en-US'] }).settings)).toEqual(['ja', 'genau', 'mhm']);
    expect(backchannelWords(agentSettings({ language: 'multi' }).settings)).toEqual(['yeah', 'uh-huh', 'mm-hmm']);
    expect(backchannelWords(agentSettings({ language: 'fr-FR', backchannel_words: [' okay ', 'I see'] }).settings)).toEqual(['okay', 'I see']);
  });

  it('keeps the API\'s defaults and leaves values it cannot use at them', () => {
    const { settings } = agentSettings({});
    expect([settings.enable_backchannel, settings.backchannel_frequency, settings.backchannel_words]).toEqual([false, 0.8, undefined]);
    const bad = agentSettings({ enable_backchannel: 'yes', backchannel_frequency: 1.5, backchannel_words: [''] });
    expect(bad.ignored).toEqual(['enable_backchannel', 'backchannel_frequency', 'backchannel_words']);
    expect([bad.settings.enable_backchannel, bad.settings.backchannel_frequency]).toEqual([false, 0.8]);
  });
});
