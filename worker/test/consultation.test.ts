import { RoomEvent } from '@livekit/rtc-node';
import { EventEmitter } from 'node:events';
import type { ReadableStream } from 'node:stream/web';
import { describe, expect, it } from 'vitest';
import { startTestApp } from '../../test/support/app.ts';
import { newAgent } from '../../test/support/factories.ts';
import { startFakeOpenAi, streamChunks, streamToolCallChunks, type RecordedRequest } from '../../test/support/fake-openai.ts';
import { roomListener } from '../src/consult-room.ts';
import { conversationState, scriptedCall } from './support/scripted-call.ts';

/*
 * An agentic warm transfer's private consultation in the real AgentSession with scripted
 * vendors and engine (support/scripted-call.ts): Parley made the consultation private (its
 * side is test/calls/agentic-transfer-livekit.test.ts); the session listens to the
 * destination instead of the caller, asks it with the built-in mediator, reports what was
 * said and the decision, and gives the session back to the caller on a cancel. The room's
 * part (whom RoomIO links, the hold track) is injected and recorded. A transfer option
 * naming a transfer agent runs that agent on Parley's real engine (a local Parley's table,
 * its model the fake OpenAI-compatible provider), as the sandbox does.
 */

const model = await startFakeOpenAi();
const parley = await startTestApp({ LLM_BASE_URL: model.url, LLM_API_KEY: 'llm-key' });

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
  async function consulting(destinationSays: string | string[], consult: { transfer_agent?: Record<string, unknown>; session?: Record<string, unknown> } = {}) {
    const room = consultRoom();
    const scripted = await scriptedCall({
      replies: ['Hello, how can I help?', { text: 'Let me connect you.', transfer: agenticTransfer }, 'I am sorry, the desk is busy.'],
      callerLines: ['I need help with my bill.', ...[destinationSays].flat(), 'Are you still there?'],
      session: { ...room.session, ...consult.session } as never,
    });
    const { call, engine, caller, until, reports, speaker } = scripted;
    await until(() => engine.commits.length === 1);
    await caller.speak(500);
    await until(() => reports.events.some((event) => event.event === 'transfer_requested'));
    call.control({ type: 'transfer_hold', call_id: 'call_test', destination: DESK, on_hold_music: 'ringtone', agentic: true });
    // The music is on the hold track, not in the agent's voice.
    await until(() => room.hold.frames >= 5);
    const segmentsBefore = speaker.segments.length;
    call.control({
      type: 'transfer_consult',
      call_id: 'call_test',
      destination: DESK,
      participant_identity: `transfer-${DESK}`,
      ...(consult.transfer_agent ? { transfer_agent: consult.transfer_agent } : {}),
      action_on_timeout: 'cancel_transfer',
      transfer_timeout_ms: 30_000,
    });
    // The opening is said (a transfer agent that cannot run decides at once instead).
    await until(() => speaker.segments.length === segmentsBefore + 1 || scripted.reports.events.some((event) => event.event === 'transfer_decision'));
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

  describe('with a transfer agent', () => {
    /** The transfer agent's model answers by the destination's last line (its requests recorded afresh). */
    const answerWith = (answers: Record<string, unknown[]>) => {
      model.reset();
      model.setDefault((request: RecordedRequest) => ({ events: answers[lastUser(request) ?? ''] ?? streamChunks(['Okay.']) }));
    };
    const lastUser = (request: RecordedRequest): string | undefined =>
      [...(request.body?.messages ?? [])].reverse().find((message: any) => message.role === 'user')?.content;

    /** A workspace's transfer agent (its begin message is the private handoff; its tools decide), and the call's conversation in that workspace. */
    async function transferAgent() {
      const ws = await parley.newWorkspace();
      const { agent } = await newAgent(ws.api, {
        llm: {
          begin_message: 'Hi, I have {{customer_name}} waiting about a bill. Can you take them?',
          general_tools: [
            { type: 'bridge_transfer', name: 'bridge_transfer' },
            { type: 'cancel_transfer', name: 'cancel_transfer' },
          ],
        },
      });
      return {
        transfer_agent: { agent_id: agent.agent_id, agent_version: agent.version },
        session: { state: { ...conversationState(), workspace_id: ws.workspace_id }, callVariables: { customer_name: 'Ada' } },
      };
    }

    const handoff = 'Hi, I have Ada waiting about a bill. Can you take them?';
    const toolReports = (events: { event: string }[]) =>
      events.filter((event: any) => event.event === 'tool_call_invoked' || event.event === 'tool_call_result').map((event: any) => [event.event, event.name ?? event.content]);

    it('says its opening, answers the destination with its model, and its bridge_transfer is the decision to bridge', async () => {
      answerWith({
        'Who is it again?': streamChunks(['It is Ada, ', 'about her bill.']),
        'Put them through.': streamToolCallChunks([], [{ id: 'call_bridge', name: 'bridge_transfer', arguments: {} }]),
      });
      const { caller, until, reports, room, engine } = await consulting(['Who is it again?', 'Put them through.'], await transferAgent());
      expect(room.listened).toEqual([`transfer-${DESK}`]);
      await caller.speak(500);
      await until(() => transcripts(reports.events).some((line: any) => line.content === 'It is Ada, about her bill.'));
      expect(reports.events.some((event) => event.event === 'transfer_decision')).toBe(false);
      await caller.speak(500);
      await until(() => reports.events.some((event) => event.event === 'transfer_decision'));
      expect(transcripts(reports.events).map((line: any) => [line.role, line.content])).toEqual([
        ['agent', 'Hello, how can I help?'],
        ['user', 'I need help with my bill.'],
        ['agent', 'Let me connect you.'],
        ['agent', handoff],
        ['transfer_target', 'Who is it again?'],
        ['agent', 'It is Ada, about her bill.'],
        ['transfer_target', 'Put them through.'],
      ]);
      expect(toolReports(reports.events)).toEqual([
        ['tool_call_invoked', 'bridge_transfer'],
        ['tool_call_result', 'Bridging the caller to you.'],
      ]);
      expect(reports.events.filter((event) => event.event === 'transfer_decision')).toEqual([{ event: 'transfer_decision', decision: 'bridge', at: expect.any(Number) }]);
      // The call's own engine answered nothing of the consultation.
      expect(engine.calls).toHaveLength(2);
      // The transfer agent's model was told who waits, and heard the destination as its user.
      const asked = model.requests.filter((request) => request.body?.stream);
      expect(asked.map(lastUser)).toEqual(['Who is it again?', 'Put them through.']);
      expect(asked[0]!.body.messages[1]).toEqual({
        role: 'system',
        content:
          'You are speaking with +14155550142, who is being asked to take a call that is on hold. Tell them who is waiting and why, then bridge the transfer if they accept or cancel it if they decline.' +
          '\nThe caller\'s conversation so far:\nAgent: Hello, how can I help?\nCaller: I need help with my bill.\nAgent: Let me connect you.',
      });
    });

    it('its cancel_transfer is the decision to cancel, after what it says with it; its lines are reported', async () => {
      answerWith({
        'Sorry, who is calling?': streamToolCallChunks(['Never mind, thank you.'], [{ id: 'call_cancel', name: 'cancel_transfer', arguments: {} }]),
      });
      const { call, caller, until, reports, room, speaker } = await consulting('Sorry, who is calling?', await transferAgent());
      const segments = speaker.segments.length;
      await caller.speak(500);
      await until(() => reports.events.some((event) => event.event === 'transfer_decision'));
      // Its last words were said to the destination before the decision was reported.
      expect(speaker.segments.length).toBe(segments + 1);
      expect(transcripts(reports.events).slice(3).map((line: any) => [line.role, line.content])).toEqual([
        ['agent', handoff],
        ['transfer_target', 'Sorry, who is calling?'],
        ['agent', 'Never mind, thank you.'],
      ]);
      expect(toolReports(reports.events)).toEqual([
        ['tool_call_invoked', 'cancel_transfer'],
        ['tool_call_result', 'The transfer was cancelled; the caller goes back to the agent.'],
      ]);
      expect(reports.events.filter((event) => event.event === 'transfer_decision')).toEqual([{ event: 'transfer_decision', decision: 'cancel', at: expect.any(Number) }]);
      call.control({ type: 'transfer_cancelled', call_id: 'call_test', destination: DESK, reason: 'transfer_declined', note: 'The desk declined.' });
      expect(room.listened).toEqual([`transfer-${DESK}`, undefined]);
    });

    it('a transfer agent that cannot run (not in the workspace) cancels, as in the sandbox', async () => {
      const { session } = await transferAgent();
      const { reports } = await consulting('Hello?', { transfer_agent: { agent_id: 'agent_missing', agent_version: 0 }, session });
      expect(transcripts(reports.events).map((line: any) => line.content)).toEqual(['Hello, how can I help?', 'I need help with my bill.', 'Let me connect you.']);
      expect(reports.events.filter((event) => event.event === 'transfer_decision')).toEqual([{ event: 'transfer_decision', decision: 'cancel', at: expect.any(Number) }]);
    });
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
