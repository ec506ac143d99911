import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { startBackgroundWork } from '../../local/background.ts';
import { useLanguageModel } from '../../shared/vendors/llm/index.ts';
import { sandboxMedia } from '../../shared/vendors/media/index.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { before, DESK, getCall, hitOf, outboundNumberFor, SANDBOX_TRANSFER_EVENTS } from '../support/transfers.ts';
import { RecordingModel } from '../support/recording-model.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * The agentic warm transfer in the sandbox (docs/calls.md, Agentic warm transfer): the
 * caller on hold (hold music told to the media), the destination consulted first (Parley's
 * built-in mediator, or a transfer agent with bridge_transfer / cancel_transfer tools),
 * then bridged with the cue and the public handoff, or cancelled with the agent told. Also:
 * `;transport=` on SIP destinations, and a custom LLM told of a cancelled transfer.
 * Events sent back to back may arrive in either order (deliveries run in parallel), so the
 * order is asserted only where a queue step separates them, and payloads otherwise.
 */

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const ALL_EVENTS = SANDBOX_TRANSFER_EVENTS;

const agenticTool = (option: Record<string, unknown>) => ({
  type: 'transfer_call',
  name: 'transfer_to_desk',
  description: 'Transfer the caller to the front desk.',
  transfer_destination: { type: 'predefined', number: DESK },
  transfer_option: { type: 'agentic_warm_transfer', ...option },
});

type Api = Awaited<ReturnType<typeof app.newWorkspace>>['api'];

async function setup(tools: Record<string, unknown>[] | ((api: Api) => Promise<Record<string, unknown>[]>)) {
  const ws = await app.newWorkspace();
  const hooks = await webhookReceiver();
  const general_tools = typeof tools === 'function' ? await tools(ws.api) : tools;
  const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url, webhook_events: ALL_EVENTS }, llm: { general_tools } });
  const number = await outboundNumberFor(ws.api, agent.agent_id);
  return { ws, hooks, agent, number, client: retellClient(app.url, ws.api_key) };
}

/** The data messages the engine sent the call's agent worker (the sandbox notes them). */
const toldMedia = (callId: string) =>
  sandboxMedia()
    .operations.filter((op) => op.op === 'send_data' && op.room === callId)
    .map((op) => (op as { data: Record<string, unknown> }).data);
const afterTransferTool = (entries: any[]) => entries.slice(entries.findIndex((entry) => entry.role === 'tool_call_result') + 1);

describe('an agentic warm transfer in the sandbox', () => {
  it('consults the destination with the built-in mediator, then bridges with the hold music, no cue and the public handoff', async () => {
    const tool = agenticTool({
      agentic_transfer_config: {},
      on_hold_music: 'relaxing_sound',
      enable_bridge_audio_cue: false,
      public_handoff_option: { type: 'static_message', message: 'You are now connected with the front desk, {{customer_name}}.' },
    });
    const { ws, hooks, number, client } = await setup([tool]);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      retell_llm_dynamic_variables: { customer_name: 'Ada' },
      metadata: { sandbox_call_ms: 60_000, sandbox_user_says: ['Please transfer me to the desk.'], sandbox_transfer_says: ['Hello?', 'Sure, put them through.'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (call) => call.transfer_end_timestamp !== undefined && call.call_analysis !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'transfer_bridged', transfer_destination: DESK });

    // The consultation is in transcript_with_tool_calls only; the caller hears the public handoff.
    expect(afterTransferTool(final.transcript_with_tool_calls)).toEqual([
      { role: 'agent', content: 'Hello, I have a caller on hold who asked to be transferred to you. They said: "Please transfer me to the desk." Can you take the call?', words: [] },
      { role: 'transfer_target', content: 'Hello?', words: [] },
      { role: 'transfer_target', content: 'Sure, put them through.', words: [] },
      { role: 'tool_call_invocation', tool_call_id: 'transfer_1_decision', name: 'bridge_transfer', arguments: '{}' },
      { role: 'tool_call_result', tool_call_id: 'transfer_1_decision', content: 'Bridging the caller to you.', successful: true },
      { role: 'agent', content: 'You are now connected with the front desk, Ada.', words: [] },
    ]);
    expect(final.transcript_object.map((entry: any) => entry.role)).toEqual(['agent', 'user', 'agent']);
    expect(final.transcript_object.at(-1).content).toBe('You are now connected with the front desk, Ada.');

    // The media: the caller on hold with the music, the destination dialled, then the bridge without a cue.
    expect(toldMedia(created.call_id)).toEqual([
      { call_id: created.call_id, type: 'transfer_hold', destination: DESK, on_hold_music: 'relaxing_sound', agentic: true },
      { call_id: created.call_id, type: 'transfer_bridge', destination: DESK, audio_cue: false, public_handoff: 'You are now connected with the front desk, Ada.' },
    ]);
    const dial = sandboxMedia().operations.filter((op) => op.op === 'warm_transfer' && op.request.call_id === created.call_id);
    expect(dial).toHaveLength(1);

    // The warm transfer's events, each once.
    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 6);
    expect([...events].sort()).toEqual(['call_analyzed', 'call_ended', 'call_started', 'transfer_bridged', 'transfer_ended', 'transfer_started']);
    before(events, 'call_started', 'transfer_started');
    before(events, 'transfer_started', 'transfer_bridged');
    before(events, 'call_ended', 'transfer_ended');
    expect(hitOf(hooks.hits, created.call_id, 'transfer_bridged').json.call).toMatchObject({ call_status: 'ongoing', transfer_destination: DESK });
    expect(hitOf(hooks.hits, created.call_id, 'call_ended').json.call).toMatchObject({ call_status: 'ended', disconnection_reason: 'transfer_bridged' });
    expect(((await ws.api.get('/get-concurrency')).body as any).current_concurrency).toBe(0);
  });

  it('a transfer agent that declines cancels it: the caller goes back to the agent, which is told', async () => {
    const { hooks, number, client } = await setup(async (api) => {
      // The transfer agent: its begin message is the private handoff; its tools decide.
      const { agent: mediator } = await newAgent(api, {
        llm: {
          begin_message: 'Hi, I have {{customer_name}} waiting about an order. Can you take them?',
          general_tools: [
            { type: 'bridge_transfer', name: 'bridge_transfer' },
            { type: 'cancel_transfer', name: 'cancel_transfer' },
          ],
        },
      });
      return [agenticTool({ agentic_transfer_config: { transfer_agent: { agent_id: mediator.agent_id, agent_version: mediator.version } } })];
    });
    const model = new RecordingModel();
    useLanguageModel(model);
    try {
      const created: any = await client.call.createPhoneCall({
        from_number: number,
        to_number: '+14155555555',
        retell_llm_dynamic_variables: { customer_name: 'Ada' },
        metadata: {
          sandbox_call_ms: 4000,
          sandbox_user_says: ['Please transfer me to the desk.', 'Okay, what are your hours?'],
          sandbox_transfer_says: ['Sorry, I am busy right now.'],
        },
      });
      const final = await eventually(() => getCall(client, created.call_id), (call) => call.call_analysis !== undefined);
      expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
      expect(final).not.toHaveProperty('transfer_destination');
      const consult = afterTransferTool(final.transcript_with_tool_calls);
      expect(consult.slice(0, 2)).toEqual([
        { role: 'agent', content: 'Hi, I have Ada waiting about an order. Can you take them?', words: [] },
        { role: 'transfer_target', content: 'Sorry, I am busy right now.', words: [] },
      ]);
      expect(consult[2]).toMatchObject({ role: 'tool_call_invocation', name: 'cancel_transfer' });
      expect(consult[3]).toMatchObject({ role: 'tool_call_result', successful: true });
      // The caller never heard the consultation; its next line came after it, and the agent answered.
      expect(final.transcript_object.map((entry: any) => entry.role)).toEqual(['agent', 'user', 'user', 'agent']);
      expect(JSON.stringify(final.transcript_object)).not.toContain('busy');

      const note =
        'The transfer to +14155550142 did not go through (the person you transferred to declined the call): the caller is still on the line with you. Tell them, and carry on helping them.';
      const next = model.requests.find((request) => request.messages.at(-1)?.content === 'Okay, what are your hours?');
      expect(next!.messages.filter((message) => message.role === 'system').at(-1)).toEqual({ role: 'system', content: note });
      // The transfer agent was told who waits: the caller's conversation is a note before its turns.
      const asked = model.requests.find((request) => request.messages.at(-1)?.content === 'Sorry, I am busy right now.');
      expect(asked!.messages[1]!.content).toContain('The caller\'s conversation so far:\nAgent: ');

      const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 5);
      expect(events.slice(0, 3)).toEqual(['call_started', 'transfer_started', 'transfer_cancelled']);
      expect([...events.slice(3)].sort()).toEqual(['call_analyzed', 'call_ended']);
      expect(hitOf(hooks.hits, created.call_id, 'transfer_cancelled').json.call).toMatchObject({ call_status: 'ongoing' });
      expect(toldMedia(created.call_id).map((data) => data.type)).toEqual(['transfer_hold']);
    } finally {
      useLanguageModel(undefined);
    }
  });

  it('a destination that never decides is the timeout: action_on_timeout cancel_transfer (the default) cancels', async () => {
    const { hooks, number, client } = await setup([agenticTool({ agentic_transfer_config: { transfer_timeout_ms: 5000 } })]);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      metadata: { sandbox_call_ms: 3000, sandbox_user_says: ['Please transfer me to the desk.', 'Alright.'], sandbox_transfer_says: ['Hmm, let me check something.'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (call) => call.call_analysis !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'user_hangup' });
    expect(afterTransferTool(final.transcript_with_tool_calls).map((entry: any) => entry.role).slice(0, 2)).toEqual(['agent', 'transfer_target']);
    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 5);
    expect(events.slice(0, 3)).toEqual(['call_started', 'transfer_started', 'transfer_cancelled']);
  });
});

describe('SIP transport on a transfer destination', () => {
  it('is checked when the LLM is saved (400 for anything but udp, tcp or tls) and carried to the REFER', async () => {
    const ws = await app.newWorkspace();
    const bad = await ws.api.post('/create-retell-llm', {
      body: {
        general_tools: [
          { type: 'transfer_call', name: 'to_pbx', transfer_destination: { type: 'predefined', number: 'sip:desk@pbx.example.com;transport=ws' }, transfer_option: { type: 'cold_transfer' } },
        ],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe('general_tools.0.transfer_destination.number: transport must be udp, tcp or tls (got ws)');

    const uri = 'sip:desk@pbx.example.com;transport=TCP';
    const { number, client } = await setup([
      { type: 'transfer_call', name: 'transfer_to_desk', description: 'Transfer to the desk.', transfer_destination: { type: 'predefined', number: uri }, transfer_option: { type: 'cold_transfer' } },
    ]);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155555555',
      metadata: { sandbox_call_ms: 60_000, sandbox_user_says: ['Please transfer me to the desk.'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (call) => call.transfer_end_timestamp !== undefined);
    expect(final).toMatchObject({ disconnection_reason: 'call_transfer', transfer_destination: uri });
    const refer = sandboxMedia().operations.find((op) => op.op === 'cold_transfer' && op.request.call_id === created.call_id);
    expect(refer).toMatchObject({ request: { to: uri } });
  });
});

describe('a custom LLM whose transfer is cancelled', () => {
  it('sees a system turn in the next response_required transcript', async () => {
    const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    const received: any[] = [];
    server.on('connection', (socket: WebSocket) => {
      socket.send(JSON.stringify({ response_type: 'response', response_id: 0, content: 'Hello, how can I help?', content_complete: true }));
      socket.on('message', (data) => {
        const message = JSON.parse(String(data));
        if (message.interaction_type !== 'response_required') return;
        received.push(message);
        const last = message.transcript.at(-1).content as string;
        if (/human/i.test(last)) {
          socket.send(JSON.stringify({ response_type: 'response', response_id: message.response_id, content: 'Transferring you now.', content_complete: true, transfer_number: '+14155550001' }));
        } else {
          socket.send(JSON.stringify({ response_type: 'response', response_id: message.response_id, content: 'We open at nine.', content_complete: true }));
        }
      });
    });
    try {
      const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/llm`;
      const ws = await app.newWorkspace();
      const hooks = await webhookReceiver();
      const agent = await ws.api.post('/create-agent', {
        body: { response_engine: { type: 'custom-llm', llm_websocket_url: url }, webhook_url: hooks.url, webhook_events: ALL_EVENTS },
      });
      expect(agent.status).toBe(201);
      const number = freshNumber();
      expect(
        (await ws.api.post('/import-phone-number', { body: { phone_number: number, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.body.agent_id, weight: 1 }] } }))
          .status,
      ).toBe(201);
      const client = retellClient(app.url, ws.api_key);
      const created: any = await client.call.createPhoneCall({
        from_number: number,
        to_number: '+14155555555',
        metadata: { sandbox_call_ms: 3000, sandbox_user_says: ['Can I speak to a human?', 'What are your hours?'] },
      });
      await eventually(() => getCall(client, created.call_id), (call) => call.call_status === 'ended');
      expect(received).toHaveLength(2);
      expect(received[1].transcript).toEqual([
        { role: 'agent', content: 'Hello, how can I help?' },
        { role: 'user', content: 'Can I speak to a human?' },
        { role: 'agent', content: 'Transferring you now.' },
        {
          role: 'system',
          content: 'The transfer to +14155550001 did not go through (the line was busy): the caller is still on the line with you. Tell them, and carry on helping them.',
        },
        { role: 'user', content: 'What are your hours?' },
      ]);
      const events = await eventually(async () => hooks.events(created.call_id), (list) => list.length >= 4);
      expect(events.slice(0, 3)).toEqual(['call_started', 'transfer_started', 'transfer_cancelled']);
    } finally {
      for (const client of server.clients) client.terminate();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
