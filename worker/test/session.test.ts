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

  it('commits only what the caller heard when they barge in, then answers them', async () => {
    const long = 'Our clinic is open from eight in the morning until six in the evening on every weekday and closed on weekends and public holidays.';
    const { engine, reports, until, caller, speaker } = await scriptedCall({
      replies: [long, 'Of course, go ahead.'],
      callerLines: ['Sorry, can I ask something?'],
    });
    // The caller talks over the agent about 0.7 s into its 2.9 s reply.
    await until(() => speaker.segments.length === 0 && reports.events.length === 0 && engine.calls.length === 1);
    await until(() => speaker.playedMs >= 700);
    await caller.speak(700);
    await until(() => engine.commits.length === 2);
    const [cut, answer] = engine.commits;
    expect(cut!.interrupted).toBe(true);
    const heardWords = cut!.text.split(' ');
    expect(heardWords.length).toBeGreaterThanOrEqual(6);
    expect(heardWords.length).toBeLessThan(long.split(' ').length - 5);
    expect(long.startsWith(cut!.text)).toBe(true);
    // Played: the first segment was cut off where the agent stopped, no later than the words it kept.
    expect(speaker.segments[0]!.interrupted).toBe(true);
    expect(heardWords.length).toBe(Math.ceil(speaker.segments[0]!.playbackPosition / 0.12));
    expect(answer).toEqual({ event: { type: 'user_said', text: 'Sorry, can I ask something?' }, text: 'Of course, go ahead.', interrupted: false });
    await until(() => transcripts(reports.events).length === 3);
    const lines = transcripts(reports.events);
    expect(lines.map((line: any) => [line.role, line.content])).toEqual([
      ['agent', cut!.text],
      ['user', 'Sorry, can I ask something?'],
      ['agent', 'Of course, go ahead.'],
    ]);
    expect(lines[0].words).toHaveLength(heardWords.length);
  });

  it('is never interrupted with interruption_sensitivity 0', async () => {
    const reply = 'Our clinic is open from eight in the morning until six in the evening on every weekday.';
    const { engine, until, caller, speaker } = await scriptedCall({
      agent: { interruption_sensitivity: 0 },
      replies: [reply],
      callerLines: ['Hello?'],
    });
    await until(() => speaker.playedMs >= 500);
    await caller.speak(800);
    await until(() => engine.commits.length === 1);
    expect(engine.commits).toEqual([{ event: { type: 'call_started' }, text: reply, interrupted: false }]);
    expect(speaker.segments).toEqual([{ playbackPosition: expect.closeTo(0.12 * 17, 1), interrupted: false }]);
    // The caller's words over an agent that cannot be interrupted are not a turn.
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(engine.calls).toHaveLength(1);
  });

  it('ends the call for inactivity after end_call_after_silence_ms of silence', async () => {
    const { reports, until, call } = await scriptedCall({
      agent: { end_call_after_silence_ms: 800 },
      replies: ['Hello?'],
    });
    await until(() => transcripts(reports.events).length === 1);
    const spokeAt = reports.events[0]!.at;
    expect(await call.ended).toBe('inactivity');
    const ended = reports.events.at(-1)!;
    expect(ended).toMatchObject({ event: 'call_ended', disconnection_reason: 'inactivity' });
    expect(ended.at - spokeAt).toBeGreaterThanOrEqual(750);
  });

  it('ends the call at max_call_duration_ms, reporting what was said of the reply cut off', async () => {
    const reply = 'Let me read you the whole list of our opening hours for every single day of the coming two weeks.';
    const { reports, call, engine, startedAt } = await scriptedCall({
      agent: { max_call_duration_ms: 1200 },
      replies: [reply],
    });
    expect(await call.ended).toBe('max_duration_reached');
    expect(reports.events.at(-1)!.at - startedAt).toBeGreaterThanOrEqual(1200);
    expect(engine.commits).toHaveLength(1);
    expect(engine.commits[0]!.interrupted).toBe(true);
    expect(engine.commits[0]!.text.split(' ').length).toBeGreaterThanOrEqual(4);
    expect(reply.startsWith(engine.commits[0]!.text)).toBe(true);
    expect(reports.events.map((event) => event.event)).toEqual(['transcript_updated', 'call_ended']);
    expect(transcripts(reports.events)[0].content).toBe(engine.commits[0]!.text);
  });

  it('hangs up after saying goodbye when the engine ends the call, and reports tool calls as they happen', async () => {
    const { reports, call, engine } = await scriptedCall({
      replies: [
        {
          text: 'Your booking is confirmed. Goodbye!',
          end: true,
          events: [
            { role: 'tool_call_invocation', tool_call_id: 'tc_1', name: 'book', arguments: '{"day":"monday"}' },
            { role: 'tool_call_result', tool_call_id: 'tc_1', content: 'booked', successful: true },
          ],
        },
      ],
    });
    expect(await call.ended).toBe('agent_hangup');
    expect(engine.commits).toEqual([{ event: { type: 'call_started' }, text: 'Your booking is confirmed. Goodbye!', interrupted: false }]);
    expect(reports.events.map(({ at: _at, ...event }) => (event.event === 'transcript_updated' ? { event: event.event } : event))).toEqual([
      { event: 'tool_call_invoked', tool_call_id: 'tc_1', name: 'book', arguments: '{"day":"monday"}' },
      { event: 'tool_call_result', tool_call_id: 'tc_1', content: 'booked', successful: true },
      { event: 'transcript_updated' },
      { event: 'call_ended', disconnection_reason: 'agent_hangup', latency: { tts: [expect.any(Number)] } },
    ]);
  });

  it('reminds a silent caller reminder_max_count times, reminder_trigger_ms after the agent spoke', async () => {
    const composed: string[] = [];
    const { reports, until, engine, call } = await scriptedCall({
      agent: { reminder_trigger_ms: 400, reminder_max_count: 1, end_call_after_silence_ms: 3000 },
      replies: ['Hello, how can I help?'],
      session: {
        compose: async (state, instruction) => {
          composed.push(instruction);
          expect(state.history).toEqual([{ role: 'agent', content: 'Hello, how can I help?' }]);
          return 'Are you still there?';
        },
      },
    });
    await until(() => transcripts(reports.events).length === 2);
    expect(composed).toHaveLength(1);
    const [hello, reminder] = reports.events;
    expect(transcripts([reminder!])[0]).toMatchObject({ role: 'agent', content: 'Are you still there?' });
    expect(reminder!.at - hello!.at).toBeGreaterThanOrEqual(400 + 4 * 120);
    await new Promise((resolve) => setTimeout(resolve, 1200));
    expect(transcripts(reports.events)).toHaveLength(2);
    expect(engine.calls).toHaveLength(1);
    // The model sees the reminder from the next turn on.
    expect(call.state.history.at(-1)).toEqual({ role: 'agent', content: 'Are you still there?' });
  });

  it('never runs a tool for a reply started before the caller finished, then dropped', async () => {
    const booking = {
      text: 'Booked.',
      events: [
        { role: 'tool_call_invocation' as const, tool_call_id: 'tc_early', name: 'book', arguments: '{}' },
        { role: 'tool_call_result' as const, tool_call_id: 'tc_early', content: 'booked', successful: true },
      ],
    };
    const { engine, reports, until, caller } = await scriptedCall({
      replies: ['', booking, { ...booking, text: 'Monday at ten is booked.', events: booking.events.map((event) => ({ ...event, tool_call_id: 'tc_final' })) }],
      callerLines: ['Book me in', 'for Monday at ten.'],
    });
    await until(() => engine.commits.length === 1);
    // Two stretches of voice with a pause shorter than the end of the turn: the first line
    // starts a reply early, the second changes the turn, so that reply is dropped.
    await caller.speak(300);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await caller.speak(300);
    await until(() => engine.commits.length === 2);
    expect(engine.calls.map((call) => call.event)).toEqual([
      { type: 'call_started' },
      { type: 'user_said', text: 'Book me in' },
      { type: 'user_said', text: 'Book me in for Monday at ten.' },
    ]);
    expect(engine.calls.map((call) => call.gate)).toEqual([undefined, false, true]);
    expect(engine.commits[1]).toEqual({ event: engine.calls[2]!.event, text: 'Monday at ten is booked.', interrupted: false });
    expect(reports.events.filter((event) => event.event.startsWith('tool_call')).map((event: any) => event.tool_call_id)).toEqual(['tc_final', 'tc_final']);
  });

  it('tells the web caller\'s client when the agent talks and what has been said', async () => {
    const { published, until, engine } = await scriptedCall({ replies: ['Hello there.'] });
    await until(() => engine.commits.length === 1 && published.length === 3);
    expect(published).toEqual([
      { topic: 'parley.client', message: { event_type: 'agent_start_talking' } },
      { topic: 'parley.client', message: { event_type: 'agent_stop_talking' } },
      { topic: 'parley.client', message: { event_type: 'update', transcript: [{ role: 'agent', content: 'Hello there.' }] } },
    ]);
  });

  it('acts on Parley\'s live controls: say, update, a cancelled transfer\'s note', async () => {
    const { call, engine, reports, until, caller } = await scriptedCall({
      replies: ['Hello.', 'Noted.'],
      callerLines: ['Is my order ready?'],
    });
    await until(() => engine.commits.length === 1);
    call.control({ type: 'say', call_id: 'call_test', text: 'A colleague will join shortly.' });
    await until(() => transcripts(reports.events).length === 2);
    expect(transcripts(reports.events)[1]).toMatchObject({ role: 'agent', content: 'A colleague will join shortly.' });

    call.control({ type: 'update', call_id: 'call_test', dynamic_variables: { customer_name: 'Ada' }, additional_context: 'The order shipped today.' });
    call.control({ type: 'transfer_cancelled', call_id: 'call_test', destination: '+14155550123', reason: 'dial_busy', note: 'The transfer did not go through: busy.' });
    call.control({ type: 'say', call_id: 'call_test' });
    call.control('not a control');
    await caller.speak(500);
    await until(() => engine.commits.length === 2);
    const turn = engine.calls[1]!;
    expect(turn.event).toEqual({ type: 'user_said', text: 'Is my order ready?' });
    expect(turn.state.dynamic_variables).toEqual({ customer_name: 'Ada' });
    expect(turn.state.history).toEqual([
      { role: 'agent', content: 'Hello.' },
      { role: 'agent', content: 'A colleague will join shortly.' },
    ]);
    expect(turn.state.agent_notes).toEqual([
      { after: 2, content: 'The order shipped today.' },
      { after: 2, content: 'The transfer did not go through: busy.' },
    ]);
    expect(call.state.dynamic_variables).toEqual({ customer_name: 'Ada' });
  });

  it('keeps a live update that arrives while a turn is running', async () => {
    const { call, engine, until } = await scriptedCall({
      replies: [{ text: 'Let me check that for you, one moment please.', wordMs: 60 }],
    });
    await until(() => engine.calls.length === 1);
    call.control({ type: 'update', call_id: 'call_test', dynamic_variables: { tier: 'gold' } });
    await until(() => engine.commits.length === 1);
    expect(engine.calls[0]!.state.dynamic_variables).toEqual({});
    expect(call.state.dynamic_variables).toEqual({ tier: 'gold' });
    expect(call.state.history).toEqual([{ role: 'agent', content: 'Let me check that for you, one moment please.' }]);
  });

  it('stops and leaves on take_over without ending the call', async () => {
    const reply = 'Our clinic is open from eight in the morning until six in the evening on every weekday.';
    const { call, reports, until, speaker, engine } = await scriptedCall({ replies: [reply] });
    await until(() => speaker.playedMs >= 500);
    call.control({ type: 'take_over', call_id: 'call_test', participant_id: 'listener_1' });
    await call.takenOver;
    expect(engine.commits[0]!.interrupted).toBe(true);
    expect(reports.events.map((event) => event.event)).toEqual(['transcript_updated']);
    expect(transcripts(reports.events)[0].content).toBe(engine.commits[0]!.text);
  });
});
