import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { sandboxMedia } from '../../shared/vendors/media/index.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent, newAgentOn, newFlow } from '../support/factories.ts';
import type { ApiClient } from '../support/http.ts';
import { retellClient } from '../support/sdk.ts';
import { DESK, deskTool, getCall, outboundNumberFor, SANDBOX_TRANSFER_EVENTS, uploadAsset } from '../support/transfers.ts';
import { wav } from '../support/audio-fixtures.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * A transfer_call tool's (and flow transfer node's) custom SIP headers, show_transferee_as_caller
 * and cold_transfer_mode, and what is checked when the LLM or flow is saved: the header
 * rules of a call, show_transferee_as_caller only with sip_invite, custom hold music naming
 * an audio asset of the workspace, an agentic transfer agent of the workspace
 * (docs/calls.md, Transfers). The sandbox records what production would send.
 */

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());

const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from('rest of a png')]);

type Api = Awaited<ReturnType<typeof app.newWorkspace>>['api'];
const createLlm = (api: Api, tool: Record<string, unknown>) => api.post('/create-retell-llm', { body: { general_tools: [tool] } });

const transferOps = (callId: string) =>
  sandboxMedia().operations.filter((op) => (op.op === 'cold_transfer' || op.op === 'warm_transfer') && op.request.call_id === callId);

/** Saves a conversation flow whose one node is a transfer to the desk, with `node`'s fields. */
const createTransferFlow = (api: ApiClient, node: Record<string, unknown>) =>
  api.post('/create-conversation-flow', {
    body: {
      model_choice: { model: 'gpt-4.1', type: 'cascading' },
      start_speaker: 'agent',
      nodes: [
        {
          id: 'xfer',
          type: 'transfer_call',
          transfer_destination: { type: 'predefined', number: DESK },
          edge: { id: 'failed', transition_condition: { type: 'prompt', prompt: 'Transfer failed' } },
          ...node,
        },
      ],
    },
  });

describe('a transfer_call tool, when saved', () => {
  it('follows a call\'s custom_sip_headers rules (LLM tools, state tools, flow nodes; and create-phone-call itself)', async () => {
    const ws = await app.newWorkspace();
    const badName = await createLlm(ws.api, deskTool({ type: 'cold_transfer' }, { custom_sip_headers: { 'X Team': 'billing' } }));
    expect(badName.status).toBe(400);
    expect(badName.body).toEqual({
      status: 400,
      message: "general_tools.0.custom_sip_headers.X Team: Must be a SIP header name: 1 to 128 letters, digits or !%'*+-._`~",
    });

    const state = await ws.api.post('/create-retell-llm', {
      body: { states: [{ name: 'desk', tools: [deskTool({ type: 'warm_transfer' }, { custom_sip_headers: { 'X-Team': 'billing\r\nVia: SIP/2.0/UDP evil' } })] }] },
    });
    expect(state.status).toBe(400);
    expect(state.body.message).toBe('states.0.tools.0.custom_sip_headers.X-Team: Must be one line without control characters');

    const tooMany = await createLlm(ws.api, deskTool({ type: 'cold_transfer' }, { custom_sip_headers: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`X-H${i}`, 'v'])) }));
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toBe('general_tools.0.custom_sip_headers: Must have at most 50 headers');

    const node = await createTransferFlow(ws.api, { transfer_option: { type: 'cold_transfer' }, custom_sip_headers: { 'X-Long': 'x'.repeat(1025) } });
    expect(node.status).toBe(400);
    expect(node.body.message).toBe('nodes.0.custom_sip_headers.X-Long: Must be at most 1024 characters');

    // The call's own custom_sip_headers: the same rule.
    const { agent } = await newAgent(ws.api);
    const number = await outboundNumberFor(ws.api, agent.agent_id);
    const call = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: '+14155550177', custom_sip_headers: { 'X:Bad': '1' } } });
    expect(call.status).toBe(400);
    expect(call.body.message).toBe("custom_sip_headers.X:Bad: Must be a SIP header name: 1 to 128 letters, digits or !%'*+-._`~");

    const good = await createLlm(ws.api, deskTool({ type: 'cold_transfer' }, { custom_sip_headers: { 'X-Team': 'billing {{customer_id}}' } }));
    expect(good.status).toBe(201);
    expect(good.body.general_tools[0].custom_sip_headers).toEqual({ 'X-Team': 'billing {{customer_id}}' });
  });

  it('accepts show_transferee_as_caller with sip_refer (the default; no effect, as retell-sdk documents) and refuses an unknown cold_transfer_mode', async () => {
    const ws = await app.newWorkspace();
    const mode = await createLlm(ws.api, deskTool({ type: 'cold_transfer', cold_transfer_mode: 'sip_bye' }));
    expect(mode.status).toBe(400);
    expect(mode.body.message).toBe('general_tools.0.transfer_option.cold_transfer_mode: Expected one of "sip_refer", "sip_invite"');

    for (const option of [
      { type: 'cold_transfer', cold_transfer_mode: 'sip_invite', show_transferee_as_caller: true },
      { type: 'cold_transfer', cold_transfer_mode: 'sip_refer', show_transferee_as_caller: false },
      { type: 'cold_transfer', cold_transfer_mode: 'sip_refer', show_transferee_as_caller: true },
      { type: 'cold_transfer', show_transferee_as_caller: true },
      { type: 'warm_transfer', show_transferee_as_caller: true },
    ]) {
      expect((await createLlm(ws.api, deskTool(option))).status).toBe(201);
    }
  });

  it('needs custom hold music to be an audio asset of the workspace, and a transfer agent of the workspace', async () => {
    const ws = await app.newWorkspace();
    const other = await app.newWorkspace();
    const audio = await uploadAsset(app.url, ws.api_key, wav(2), 'hold.wav', 'audio/wav');
    const image = await uploadAsset(app.url, ws.api_key, PNG, 'logo.png', 'image/png');
    const othersAudio = await uploadAsset(app.url, other.api_key, wav(2), 'hold.wav', 'audio/wav');
    const { agent: mediator } = await newAgent(ws.api);
    const { agent: othersAgent } = await newAgent(other.api);
    const at = (i: number, field: string) => `general_tools.${i}.transfer_option.${field}`;

    const missing = await createLlm(ws.api, deskTool({ type: 'warm_transfer', on_hold_music: 'custom' }));
    expect(missing.status).toBe(400);
    expect(missing.body.message).toBe(`${at(0, 'custom_on_hold_music_asset_id')}: Required when on_hold_music is custom`);

    const bad = await ws.api.post('/create-retell-llm', {
      body: {
        general_tools: [
          deskTool({ type: 'warm_transfer', on_hold_music: 'custom', custom_on_hold_music_asset_id: othersAudio }),
          { ...deskTool({ type: 'agentic_warm_transfer', on_hold_music: 'custom', custom_on_hold_music_asset_id: image, agentic_transfer_config: { transfer_agent: { agent_id: othersAgent.agent_id, agent_version: 0 } } }), name: 'second' },
          { ...deskTool({ type: 'agentic_warm_transfer', agentic_transfer_config: { transfer_agent: { agent_id: mediator.agent_id, agent_version: 7 } } }), name: 'third' },
        ],
      },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toBe(
      [
        `${at(0, 'custom_on_hold_music_asset_id')}: Asset ${othersAudio} not found`,
        `${at(1, 'custom_on_hold_music_asset_id')}: Asset ${image} is an image, not audio`,
        `${at(1, 'agentic_transfer_config.transfer_agent')}: Agent ${othersAgent.agent_id} not found`,
        `${at(2, 'agentic_transfer_config.transfer_agent')}: Agent ${mediator.agent_id} has no version 7`,
      ].join('; '),
    );

    const good = deskTool({
      type: 'agentic_warm_transfer',
      on_hold_music: 'custom',
      custom_on_hold_music_asset_id: audio,
      agentic_transfer_config: { transfer_agent: { agent_id: mediator.agent_id, agent_version: 0 } },
    });
    const saved = await createLlm(ws.api, good);
    expect(saved.status).toBe(201);
    // An update is checked the same way; a deleted asset is gone for the next save.
    expect((await ws.api.delete(`/delete-asset/${audio}`)).status).toBe(204);
    const updated = await ws.api.patch(`/update-retell-llm/${saved.body.llm_id}`, { body: { general_tools: [good] } });
    expect(updated.status).toBe(400);
    expect(updated.body.message).toBe(`${at(0, 'custom_on_hold_music_asset_id')}: Asset ${audio} not found`);

    // A flow's transfer node and a shared component's tool are checked too.
    const flowNode = await createTransferFlow(ws.api, {
      transfer_option: { type: 'agentic_warm_transfer', agentic_transfer_config: { transfer_agent: { agent_id: othersAgent.agent_id, agent_version: 'latest' } } },
    });
    expect(flowNode.status).toBe(400);
    expect(flowNode.body.message).toBe(`nodes.0.transfer_option.agentic_transfer_config.transfer_agent: Agent ${othersAgent.agent_id} not found`);
    const component = await ws.api.post('/create-conversation-flow-component', {
      body: {
        name: 'desk',
        nodes: [{ id: 'start', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' } }],
        tools: [deskTool({ type: 'warm_transfer', on_hold_music: 'custom', custom_on_hold_music_asset_id: othersAudio })],
      },
    });
    expect(component.status).toBe(400);
    expect(component.body.message).toBe(`tools.0.transfer_option.custom_on_hold_music_asset_id: Asset ${othersAudio} not found`);
  });
});

describe('a transfer in the sandbox records what production would send', () => {
  it('a cold REFER carries the tool\'s headers, placeholders filled', async () => {
    const ws = await app.newWorkspace();
    const tool = deskTool({ type: 'cold_transfer' }, { custom_sip_headers: { 'X-Team': 'billing', 'X-Customer': '{{customer_id}}' } });
    const { agent } = await newAgent(ws.api, { llm: { general_tools: [tool] } });
    const number = await outboundNumberFor(ws.api, agent.agent_id);
    const client = retellClient(app.url, ws.api_key);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155550177',
      retell_llm_dynamic_variables: { customer_id: 'c-42' },
      metadata: { sandbox_call_ms: 60_000, sandbox_user_says: ['Can I speak to a human, please?'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (c) => c.transfer_end_timestamp !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'call_transfer' });
    expect(transferOps(created.call_id)).toEqual([
      {
        op: 'cold_transfer',
        request: { call_id: created.call_id, participant_identity: 'callee', to: DESK, sip_headers: { 'X-Team': 'billing', 'X-Customer': 'c-42' } },
        outcome: { bridged: true, participant_identity: 'callee' },
      },
    ]);
  });

  it('a cold transfer in sip_invite mode dials the destination showing the callee\'s number, with the headers; the leg ends later', async () => {
    const ws = await app.newWorkspace();
    const hooks = await webhookReceiver();
    const tool = deskTool({ type: 'cold_transfer', cold_transfer_mode: 'sip_invite', show_transferee_as_caller: true }, { custom_sip_headers: { 'X-Team': 'billing' } });
    const { agent } = await newAgent(ws.api, { agent: { webhook_url: hooks.url, webhook_events: SANDBOX_TRANSFER_EVENTS }, llm: { general_tools: [tool] } });
    const number = await outboundNumberFor(ws.api, agent.agent_id);
    const client = retellClient(app.url, ws.api_key);
    const created: any = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155550177',
      metadata: { sandbox_call_ms: 60_000, sandbox_user_says: ['Can I speak to a human, please?'] },
    });
    const final = await eventually(() => getCall(client, created.call_id), (c) => c.transfer_end_timestamp !== undefined);
    expect(final).toMatchObject({ call_status: 'ended', disconnection_reason: 'call_transfer', transfer_destination: DESK });
    // The leg was followed (transfer_ended after the sandbox's two-second leg), not ended at the bridge.
    expect(final.transfer_end_timestamp - final.end_timestamp).toBeGreaterThanOrEqual(1500);
    expect(transferOps(created.call_id)).toEqual([
      {
        op: 'warm_transfer',
        request: { call_id: created.call_id, from_number: number, caller_id: '+14155550177', to_number: DESK, sip_headers: { 'X-Team': 'billing' } },
        outcome: { connected: true, voicemail: false, participant_identity: `transfer-${DESK}` },
      },
    ]);
    // No hold music or handoff: those are warm transfers'.
    expect(sandboxMedia().operations.filter((op) => op.op === 'send_data' && op.room === created.call_id)).toEqual([]);
    const events = await eventually(async () => hooks.events(created.call_id), (list) => list.includes('transfer_ended'));
    expect(events.filter((event) => event?.startsWith('transfer_')).sort()).toEqual(['transfer_bridged', 'transfer_ended', 'transfer_started']);
  });

  it('a flow\'s warm transfer node on an inbound call shows the caller\'s number, with the node\'s headers', async () => {
    const ws = await app.newWorkspace();
    const flow = await newFlow(ws.api, {
      start_node_id: 'xfer',
      nodes: [
        {
          id: 'xfer',
          type: 'transfer_call',
          transfer_destination: { type: 'predefined', number: DESK },
          transfer_option: { type: 'warm_transfer', show_transferee_as_caller: true },
          custom_sip_headers: { 'X-Origin': 'ivr' },
          edge: { id: 'failed', transition_condition: { type: 'prompt', prompt: 'Transfer failed' } },
        },
      ],
    });
    const agent = await newAgentOn(ws.api, { type: 'conversation-flow', conversation_flow_id: flow.conversation_flow_id });
    const number = await outboundNumberFor(ws.api, agent.agent_id);
    expect((await ws.api.patch(`/update-phone-number/${number}`, { body: { inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] } })).status).toBe(200);
    const inbound = await ws.api.post('/sandbox/inbound-call', { body: { from_number: '+14155550123', to_number: number } });
    expect(inbound.status).toBe(201);
    const callId = inbound.body.call_id as string;
    await eventually(async () => transferOps(callId), (ops) => ops.length === 1);
    expect(transferOps(callId)).toEqual([
      {
        op: 'warm_transfer',
        request: { call_id: callId, from_number: number, caller_id: '+14155550123', to_number: DESK, sip_headers: { 'X-Origin': 'ivr' } },
        outcome: { connected: true, voicemail: false, participant_identity: `transfer-${DESK}` },
      },
    ]);
    await retellClient(app.url, ws.api_key).call.stop(callId).catch(() => undefined);
  });
});
