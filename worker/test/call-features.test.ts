import { describe, expect, it } from 'vitest';
import { machineHeard } from '../src/session.ts';
import { scriptedCall } from './support/scripted-call.ts';

/*
 * The real AgentSession with scripted vendors and engine (support/scripted-call.ts): the
 * call's latency figures, transfers and Parley's transfer messages, the caller's keys and
 * the agent's, voicemail and phone-menu detection.
 */

const transcripts = (events: { event: string }[]) =>
  events.filter((event): event is any => event.event === 'transcript_updated').flatMap((event: any) => event.utterances);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('latency figures', () => {
  it('carries each reply\'s end-to-end, model, voice and recognition figures on call_ended', async () => {
    const voiceToVoice: number[] = [];
    const { call, engine, caller, until, reports } = await scriptedCall({
      replies: [{ text: 'Hello.', firstTokenMs: 120 }, { text: 'Sure.', firstTokenMs: 340 }],
      callerLines: ['Can you help?'],
      session: { metrics: { voiceToVoice: (ms) => void voiceToVoice.push(Math.round(ms)) } },
    });
    await until(() => engine.commits.length === 1);
    const speechEnded = Date.now() + 500;
    await caller.speak(500);
    await until(() => engine.commits.length === 2);
    const answeredWithin = Date.now() - speechEnded;
    await call.end('user_hangup');
    const ended: any = reports.events.at(-1);
    expect(ended.event).toBe('call_ended');
    // The caller's one turn: one end-to-end figure, at least the end-of-turn delay and at most what the test saw.
    expect(ended.latency.e2e).toHaveLength(1);
    expect(ended.latency.e2e[0]).toBeGreaterThanOrEqual(250);
    expect(ended.latency.e2e[0]).toBeLessThanOrEqual(answeredWithin);
    expect(ended.latency.llm).toEqual([120, 340]);
    expect(ended.latency.tts).toHaveLength(2);
    expect(ended.latency.tts.every((ms: number) => Number.isInteger(ms) && ms >= 0)).toBe(true);
    expect(ended.latency.asr).toHaveLength(1);
    expect(call.latency).toEqual(ended.latency);
    // The same figure goes to the worker's VoiceToVoiceMs metric.
    expect(voiceToVoice).toEqual(ended.latency.e2e);
  });

  it('reports no figures when nothing was measured', async () => {
    const { call, reports } = await scriptedCall({ agent: { begin_message_delay_ms: 5000 }, replies: [] });
    await call.end('user_hangup');
    expect(reports.events).toEqual([{ event: 'call_ended', disconnection_reason: 'user_hangup', at: expect.any(Number) }]);
  });
});

describe('transfers', () => {
  const transfer = {
    number: '+14155550123',
    kind: 'warm' as const,
    transfer_option: { type: 'warm_transfer', on_hold_music: 'ringtone' },
    custom_sip_headers: { 'X-Account': '{{account}}' },
  };

  it('reports the transfer with its raw option and headers, then stays quiet, holds with music, says the handoff on the bridge and leaves', async () => {
    const { call, engine, caller, until, reports, speaker } = await scriptedCall({
      replies: [{ text: 'Let me connect you.', transfer }],
      callerLines: ['Hello? Are you there?'],
    });
    await until(() => reports.events.some((event) => event.event === 'transfer_requested'));
    const asked = reports.events.find((event) => event.event === 'transfer_requested')!;
    expect(asked).toEqual({ event: 'transfer_requested', destination: '+14155550123', kind: 'warm', ...pick(transfer, 'transfer_option', 'custom_sip_headers'), at: expect.any(Number) });
    // The caller talks while the destination rings: transcribed, never answered.
    await caller.speak(500);
    await until(() => transcripts(reports.events).length === 2);
    await sleep(400);
    expect(engine.calls).toHaveLength(1);
    expect(transcripts(reports.events)[1]).toMatchObject({ role: 'user', content: 'Hello? Are you there?' });

    call.control({ type: 'transfer_hold', call_id: 'call_test', destination: '+14155550123', on_hold_music: 'ringtone', agentic: false });
    const before = speaker.segments.length;
    await until(() => speaker.playedMs >= 600);
    call.control({ type: 'transfer_bridge', call_id: 'call_test', destination: '+14155550123', audio_cue: true, public_handoff: 'You are now connected.' });
    await call.takenOver;
    // The music stopped (cut off), the cue played, then the handoff: no call_ended, the call goes on bridged.
    expect(speaker.segments[before]!.interrupted).toBe(true);
    expect(speaker.segments.length).toBe(before + 3);
    expect(transcripts(reports.events).map((line: any) => line.content)).toEqual(['Let me connect you.', 'Hello? Are you there?', 'You are now connected.']);
    expect(reports.events.map((event) => event.event)).not.toContain('call_ended');
  });

  it('comes off hold when the transfer is cancelled, and answers the caller again', async () => {
    const { call, engine, caller, until, speaker } = await scriptedCall({
      replies: [{ text: 'Connecting.', transfer }, 'I am still here.'],
      callerLines: ['Anyone?'],
    });
    await until(() => engine.commits.length === 1);
    call.control({ type: 'transfer_hold', call_id: 'call_test', destination: '+14155550123', on_hold_music: 'relaxing_sound', agentic: false });
    await until(() => speaker.playedMs >= 300);
    call.control({ type: 'transfer_cancelled', call_id: 'call_test', destination: '+14155550123', reason: 'dial_busy', note: 'The line was busy.' });
    await until(() => speaker.segments.length === 2);
    expect(speaker.segments[1]!.interrupted).toBe(true);
    await caller.speak(500);
    await until(() => engine.commits.length === 2);
    expect(engine.calls[1]!.event).toEqual({ type: 'user_said', text: 'Anyone?' });
    expect(engine.calls[1]!.state.agent_notes).toEqual([{ after: 1, content: 'The line was busy.' }]);
  });

  it('ends promptly when the caller hangs up on hold, the music cut', async () => {
    const { call, engine, until, speaker, reports } = await scriptedCall({ replies: [{ text: 'One moment.', transfer }] });
    await until(() => engine.commits.length === 1);
    call.control({ type: 'transfer_hold', call_id: 'call_test', destination: '+14155550123', on_hold_music: 'uplifting_beats', agentic: false });
    await until(() => speaker.playedMs >= 300);
    const hungUpAt = Date.now();
    expect(await call.end('transfer_cancelled')).toBe('transfer_cancelled');
    expect(Date.now() - hungUpAt).toBeLessThan(2000);
    expect(speaker.segments.at(-1)!.interrupted).toBe(true);
    expect(reports.events.at(-1)).toMatchObject({ event: 'call_ended', disconnection_reason: 'transfer_cancelled' });
  });

  it('leaves when a cold transfer\'s new leg joins, and not for a warm one', async () => {
    const cold = await scriptedCall({ replies: [{ text: 'Transferring.', transfer: { number: '+14155550123', kind: 'cold' } }] });
    await cold.until(() => cold.reports.events.some((event) => event.event === 'transfer_requested'));
    cold.call.participantJoined('web_user');
    cold.call.participantJoined('transfer-+14155550123');
    await cold.call.takenOver;

    const warm = await scriptedCall({ replies: [{ text: 'Transferring.', transfer }] });
    await warm.until(() => warm.reports.events.some((event) => event.event === 'transfer_requested'));
    warm.call.participantJoined('transfer-+14155550123');
    const left = await Promise.race([warm.call.takenOver.then(() => true), sleep(500).then(() => false)]);
    expect(left).toBe(false);
  });
});

describe('keys', () => {
  it('gathers the caller\'s keys to the termination key and answers them as the caller\'s line', async () => {
    const { call, engine, until, reports } = await scriptedCall({
      agent: { user_dtmf_options: { termination_key: '#', digit_limit: 6 } },
      replies: ['Enter your account number.', 'Thanks.'],
    });
    await until(() => engine.commits.length === 1);
    for (const digit of ['4', '2', 'x', '7', '#']) call.dtmf(digit);
    await until(() => engine.commits.length === 2);
    expect(engine.calls[1]!.event).toEqual({ type: 'user_said', text: '427' });
    expect(transcripts(reports.events).map((line: any) => [line.role, line.content])).toEqual([
      ['agent', 'Enter your account number.'],
      ['user', '427'],
      ['agent', 'Thanks.'],
    ]);
  });

  it('ends the keys at digit_limit, or timeout_ms after the last one', async () => {
    const limited = await scriptedCall({ agent: { user_dtmf_options: { digit_limit: 2 } }, replies: ['Hi.', 'Got it.'] });
    await limited.until(() => limited.engine.commits.length === 1);
    for (const digit of ['1', '2', '3']) limited.call.dtmf(digit);
    await limited.until(() => limited.engine.calls.length === 2);
    expect(limited.engine.calls[1]!.event).toEqual({ type: 'user_said', text: '12' });

    const timed = await scriptedCall({ agent: { user_dtmf_options: { timeout_ms: 1000 } }, replies: ['Hi.', 'Got it.'] });
    await timed.until(() => timed.engine.commits.length === 1);
    timed.call.dtmf('9');
    const pressedAt = Date.now();
    await sleep(500);
    timed.call.dtmf('8');
    await timed.until(() => timed.engine.calls.length === 2);
    expect(timed.engine.calls[1]!.event).toEqual({ type: 'user_said', text: '98' });
    expect(timed.engine.calls[1]!.at - pressedAt).toBeGreaterThanOrEqual(1500);
  });

  it('ignores the caller\'s keys when allow_user_dtmf is false', async () => {
    const { call, engine, until, reports } = await scriptedCall({ agent: { allow_user_dtmf: false, user_dtmf_options: { digit_limit: 1 } }, replies: ['Hi.'] });
    await until(() => engine.commits.length === 1);
    call.dtmf('5');
    await sleep(400);
    expect(engine.calls).toHaveLength(1);
    expect(transcripts(reports.events)).toHaveLength(1);
  });

  it('presses the agent\'s keys (press_digit) once the turn has played', async () => {
    const pressed: { digits: string; at: number }[] = [];
    const { engine, until, speaker } = await scriptedCall({
      replies: [{ text: 'Pressing two.', digits: '2#' }],
      session: { pressDigits: async (digits) => void pressed.push({ digits, at: Date.now() }) },
    });
    await until(() => pressed.length === 1);
    expect(pressed[0]!.digits).toBe('2#');
    expect(engine.commits).toHaveLength(1);
    expect(speaker.segments).toHaveLength(1);
  });
});

describe('voicemail and phone menus', () => {
  it('tells a voicemail greeting, a phone menu and a person apart by their words', () => {
    expect(machineHeard('Hi, you have reached Sam. Please leave a message after the beep.')).toBe('voicemail');
    expect(machineHeard('The person you are calling is not available. Please record your message.')).toBe('voicemail');
    expect(machineHeard('Thank you for calling Acme. For billing, press 1. For support, press 2.')).toBe('ivr');
    expect(machineHeard('Please listen carefully as our menu options have changed.')).toBe('ivr');
    expect(machineHeard('Hello, this is Sam speaking.')).toBeUndefined();
    expect(machineHeard('I pressed the button but nothing happened.')).toBeUndefined();
  });

  it('hangs up on voicemail (voicemail_reached) with the hangup action', async () => {
    const { call, caller, until, engine, reports } = await scriptedCall({
      agent: { voicemail_option: { action: { type: 'hangup' } } },
      replies: ['Hello, this is the clinic.'],
      callerLines: ['Hi, you have reached Sam. Please leave a message after the beep.'],
    });
    await until(() => engine.commits.length === 1);
    await caller.speak(600);
    expect(await call.ended).toBe('voicemail_reached');
    // Nothing is said to the machine (a reply it may have started is cut before its audio).
    await until(() => reports.events.at(-1)?.event === 'call_ended');
    expect(transcripts(reports.events).map((line: any) => line.role)).toEqual(['agent', 'user']);
  });

  it('leaves the static message (its variables filled), then hangs up', async () => {
    const { call, caller, until, engine, reports } = await scriptedCall({
      agent: { voicemail_option: { action: { type: 'static_text', text: 'Hi, this is the clinic calling for {{call_id}}.' } } },
      replies: ['Hello?'],
      callerLines: ['Sorry, I cannot take your call. Leave a message.'],
    });
    await until(() => engine.commits.length === 1);
    await caller.speak(600);
    expect(await call.ended).toBe('voicemail_reached');
    expect(transcripts(reports.events).at(-1)).toMatchObject({ role: 'agent', content: 'Hi, this is the clinic calling for call_test.' });
    expect(reports.events.at(-1)).toMatchObject({ event: 'call_ended', disconnection_reason: 'voicemail_reached' });
  });

  it('hangs up on a phone menu (ivr_reached) with ivr_option, and does nothing without the options', async () => {
    const menu = 'Thank you for calling. For billing, press 1.';
    const ivr = await scriptedCall({ agent: { ivr_option: { action: { type: 'hangup' } } }, replies: ['Hello.'], callerLines: [menu] });
    await ivr.until(() => ivr.engine.commits.length === 1);
    await ivr.caller.speak(600);
    expect(await ivr.call.ended).toBe('ivr_reached');

    const plain = await scriptedCall({ replies: ['Hello.', 'How can I help?'], callerLines: [menu] });
    await plain.until(() => plain.engine.commits.length === 1);
    await plain.caller.speak(600);
    await plain.until(() => plain.engine.commits.length === 2);
    expect(plain.engine.calls[1]!.event).toEqual({ type: 'user_said', text: menu });
  });
});

function pick<T extends Record<string, unknown>, K extends keyof T>(value: T, ...keys: K[]): Pick<T, K> {
  return Object.fromEntries(keys.map((key) => [key, value[key]])) as Pick<T, K>;
}

describe('keys on the room', () => {
  it('sends each key as its RFC 4733 event, 250 ms apart, skipping what is not a key', async () => {
    const { pressDigits } = await import('../src/agent.ts');
    const sent: { code: number; digit: string; at: number }[] = [];
    const room = { localParticipant: { publishDtmf: async (code: number, digit: string) => void sent.push({ code, digit, at: Date.now() }) } };
    await pressDigits(room as never, '1*x#0');
    expect(sent.map(({ code, digit }) => [code, digit])).toEqual([[1, '1'], [10, '*'], [11, '#'], [0, '0']]);
    expect(sent[1]!.at - sent[0]!.at).toBeGreaterThanOrEqual(240);
  });
});
