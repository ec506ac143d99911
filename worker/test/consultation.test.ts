import { RoomEvent } from '@livekit/rtc-node';
import { EventEmitter } from 'node:events';
import type { ReadableStream } from 'node:stream/web';
import { describe, expect, it } from 'vitest';
import { roomListener } from '../src/consult-room.ts';
import { scriptedCall } from './support/scripted-call.ts';

/*
 * An agentic warm transfer's private consultation in the real AgentSession with scripted
 * vendors and engine (support/scripted-call.ts): Parley made the consultation private (its
 * side is test/calls/agentic-transfer-livekit.test.ts); the session listens to the
 * destination instead of the caller, asks it with the built-in mediator, reports what was
 * said and the decision, and gives the session back to the caller on a cancel. The room's
 * part (whom RoomIO links, the hold track) is injected and recorded.
 */

const transcripts = (events: { event: string }[]) =>
  events.filter((event): event is any => event.event === 'transcript_updated').flatMap((event: any) => event.utterances);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('an agentic warm transfer\'s consultation', () => {
  const DESK = '+14155550142';
  const agenticTransfer = { number: DESK, kind: 'warm' as const, transfer_option: { type: 'agentic_warm_transfer', on_hold_music: 'ringtone' } };

  /** A hold track that reads the music it is given until stopped, and a record of whom the session listens to. */
  function consultRoom() {
    const listened: (string | undefined)[] = [];
    const hold = { frames: 0, started: 0, stopped: 0 };
    const holdTrack = (audio: ReadableStream<unknown>) => {
      hold.started++;
      const reader = audio.getReader();
      void (async () => {
        for (;;) {
          const { done } = await reader.read();
          if (done) return;
          hold.frames++;
        }
      })();
      return {
        stop() {
          hold.stopped++;
          void reader.cancel();
        },
      };
    };
    return { listened, hold, session: { listenTo: (identity: string | undefined) => void listened.push(identity), holdTrack } };
  }

  /** The call up to the consultation: the caller asked, the agent transferred, Parley held the caller and said to consult. */
  async function consulting(destinationSays: string) {
    const room = consultRoom();
    const scripted = await scriptedCall({
      replies: ['Hello, how can I help?', { text: 'Let me connect you.', transfer: agenticTransfer }, 'I am sorry, the desk is busy.'],
      callerLines: ['I need help with my bill.', destinationSays, 'Are you still there?'],
      session: room.session as never,
    });
    const { call, engine, caller, until, reports, speaker } = scripted;
    await until(() => engine.commits.length === 1);
    await caller.speak(500);
    await until(() => reports.events.some((event) => event.event === 'transfer_requested'));
    call.control({ type: 'transfer_hold', call_id: 'call_test', destination: DESK, on_hold_music: 'ringtone', agentic: true });
    // The music is on the hold track, not in the agent's voice.
    await until(() => room.hold.frames >= 5);
    const segmentsBefore = speaker.segments.length;
    call.control({ type: 'transfer_consult', call_id: 'call_test', destination: DESK, participant_identity: `transfer-${DESK}`, action_on_timeout: 'cancel_transfer', transfer_timeout_ms: 30_000 });
    await until(() => speaker.segments.length === segmentsBefore + 1);
    return { ...scripted, room };
  }

  const greeting = 'Hello, I have a caller on hold who asked to be transferred to you. They said: "I need help with my bill." Can you take the call?';

  it('listens to the destination, asks it on the caller\'s behalf, and reports its yes as the decision to bridge', async () => {
    const { call, engine, caller, until, reports, speaker, room } = await consulting('Yes, I can take the call.');
    expect(room.listened).toEqual([`transfer-${DESK}`]);
    expect(room.hold).toMatchObject({ started: 1, stopped: 0 });
    expect(speaker.segments.at(-1)!.interrupted).toBe(false);
    await caller.speak(500);
    await until(() => reports.events.some((event) => event.event === 'transfer_decision'));
    // The consultation's lines: the mediator's and the destination's (the transfer target), and no turn of the engine.
    expect(transcripts(reports.events).map((line: any) => [line.role, line.content])).toEqual([
      ['agent', 'Hello, how can I help?'],
      ['user', 'I need help with my bill.'],
      ['agent', 'Let me connect you.'],
      ['agent', greeting],
      ['transfer_target', 'Yes, I can take the call.'],
    ]);
    expect(reports.events.filter((event) => event.event === 'transfer_decision')).toEqual([{ event: 'transfer_decision', decision: 'bridge', at: expect.any(Number) }]);
    expect(engine.calls).toHaveLength(2);
    call.control({ type: 'transfer_bridge', call_id: 'call_test', destination: DESK, audio_cue: false, public_handoff: 'You are now connected.' });
    await call.takenOver;
    expect(room.hold.stopped).toBe(1);
    expect(transcripts(reports.events).at(-1)).toMatchObject({ role: 'agent', content: 'You are now connected.' });
  });

  it('reports a decline as the decision to cancel, then listens to the caller again and answers them', async () => {
    const { call, engine, caller, until, reports, room } = await consulting('Sorry, I am busy right now.');
    await caller.speak(500);
    await until(() => reports.events.some((event) => event.event === 'transfer_decision'));
    expect(reports.events.filter((event) => event.event === 'transfer_decision')).toEqual([{ event: 'transfer_decision', decision: 'cancel', at: expect.any(Number) }]);
    call.control({ type: 'transfer_cancelled', call_id: 'call_test', destination: DESK, reason: 'transfer_declined', note: 'The desk declined.' });
    expect(room.listened).toEqual([`transfer-${DESK}`, undefined]);
    expect(room.hold.stopped).toBe(1);
    // The caller's next words are theirs again: answered by the engine, which knows the transfer did not go through.
    await caller.speak(500);
    await until(() => engine.commits.length === 3);
    expect(engine.calls[2]!.event).toEqual({ type: 'user_said', text: 'Are you still there?' });
    expect(engine.calls[2]!.state.agent_notes).toEqual([{ after: 3, content: 'The desk declined.' }]);
    expect(transcripts(reports.events).at(-2)).toMatchObject({ role: 'user', content: 'Are you still there?' });
  });

  it('without a room to listen in, consults nobody: Parley\'s timeout decides', async () => {
    const { call, engine, caller, until, reports, speaker } = await scriptedCall({
      replies: ['Hello.', { text: 'Let me connect you.', transfer: agenticTransfer }],
      callerLines: ['Billing, please.'],
    });
    await until(() => engine.commits.length === 1);
    await caller.speak(500);
    await until(() => reports.events.some((event) => event.event === 'transfer_requested'));
    const segments = speaker.segments.length;
    call.control({ type: 'transfer_consult', call_id: 'call_test', destination: DESK, participant_identity: `transfer-${DESK}` });
    await sleep(400);
    expect(speaker.segments.length).toBe(segments);
    expect(transcripts(reports.events).map((line: any) => line.content)).toEqual(['Hello.', 'Billing, please.', 'Let me connect you.']);
  });
});

describe('whom the room\'s session listens to', () => {
  it('links the destination, then the caller again when told or when the destination hangs up, before RoomIO sees it leave', () => {
    const room = new EventEmitter();
    const linked: (string | null)[] = [];
    const io = {
      linkedParticipant: { identity: 'callee' } as { identity: string } | undefined,
      setParticipant(identity: string | null) {
        linked.push(identity);
        io.linkedParticipant = identity ? { identity } : undefined;
      },
    };
    // RoomIO's own listener, registered when the session started: it closes the session when its linked participant leaves.
    const linkedWhenLeft: (string | undefined)[] = [];
    room.on(RoomEvent.ParticipantDisconnected, () => linkedWhenLeft.push(io.linkedParticipant?.identity));
    const listenTo = roomListener(room as never, () => ({ _roomIO: io }) as never);

    listenTo('transfer-+14155550142');
    expect(linked).toEqual(['transfer-+14155550142']);
    room.emit(RoomEvent.ParticipantDisconnected, { identity: 'transfer-+14155550142' });
    expect(linked).toEqual(['transfer-+14155550142', 'callee']);
    expect(linkedWhenLeft).toEqual(['callee']);
    // Already back with the caller: nothing changes.
    listenTo(undefined);
    room.emit(RoomEvent.ParticipantDisconnected, { identity: 'transfer-+14155550142' });
    expect(linked).toEqual(['transfer-+14155550142', 'callee']);

    listenTo('transfer-+14155550143');
    listenTo(undefined);
    expect(linked).toEqual(['transfer-+14155550142', 'callee', 'transfer-+14155550143', 'callee']);
  });
});
