import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent } from '../support/factories.ts';
import { completion, defaultReply, startFakeOpenAi } from '../support/fake-openai.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';
import { deskTool, uploadAsset } from '../support/transfers.ts';
import { wav } from '../support/audio-fixtures.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

/*
 * agent_override (docs/calls.md, Agent override): the agent version's configuration with the
 * call's override laid over it, for that call only. Validated like update-agent, the LLM
 * update and the flow update (400 naming the field at create; dropped and logged when the
 * inbound webhook answers an invalid one). Nothing is written to the agent or its LLM.
 */

const app = await startTestApp();
const background = startBackgroundWork();
afterAll(() => background.stop());
const fake = await startFakeOpenAi();
const { OfflineModel, OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');

const LLM = { general_prompt: 'You are the day desk.', begin_message: 'Hello from the agent.', model: 'gpt-4.1' };

async function setup() {
  const ws = await app.newWorkspace();
  const agentHooks = await webhookReceiver();
  const { agent, llm } = await newAgent(ws.api, { agent: { webhook_url: agentHooks.url }, llm: LLM });
  const number = freshNumber();
  const imported = await ws.api.post('/import-phone-number', {
    body: {
      phone_number: number,
      termination_uri: 'sip:trunk.example.com',
      outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }],
      inbound_agents: [{ agent_id: agent.agent_id, weight: 1 }],
    },
  });
  expect(imported.status).toBe(201);
  return { ws, agentHooks, agent, llm, number, client: retellClient(app.url, ws.api_key) };
}

const analyzed = (client: ReturnType<typeof retellClient>, callId: string) =>
  eventually(() => client.call.retrieve(callId) as Promise<any>, (call) => call.call_analysis !== undefined);

describe('agent_override on create-phone-call', () => {
  it('changes the first line, the prompt, the model and the webhook URL for that call only', async () => {
    const { ws, agentHooks, agent, llm, number, client } = await setup();
    const overrideHooks = await webhookReceiver();
    // A real provider's view: the fake records what the model is asked (analysis gets a JSON answer).
    fake.setDefault((request) =>
      request.body?.response_format
        ? { body: completion(JSON.stringify({ call_summary: 'ok', user_sentiment: 'Neutral', call_successful: true, in_voicemail: false, custom_analysis_data: {} })) }
        : defaultReply(request),
    );
    useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, retryBaseMs: 10 }));
    try {
      const created: any = await client.call.createPhoneCall({
        from_number: number,
        to_number: '+14155555555',
        retell_llm_dynamic_variables: { customer: 'Ada' },
        metadata: { sandbox_call_ms: 1500, sandbox_user_says: ['What are your hours?'] },
        agent_override: {
          // response_engine is ignored (even one that would not validate).
          agent: { webhook_url: overrideHooks.url, voice_speed: 1.5, response_engine: { type: 'custom-llm', llm_websocket_url: 'nope' } } as never,
          // general_prompt is an LLM update field (the spec's rule), beyond retell-sdk's typed list.
          retell_llm: { begin_message: 'Hi {{customer}}, this is the night desk.', general_prompt: 'You are the night desk.', model: 'gpt-4.1-mini' } as never,
        },
      });
      const call = await analyzed(client, created.call_id);
      expect(call.transcript_object[0]).toMatchObject({ role: 'agent', content: 'Hi Ada, this is the night desk.' });
      expect(call.transcript_object[1]).toMatchObject({ role: 'user', content: 'What are your hours?' });
      expect(call.transcript_object[2]).toMatchObject({ role: 'agent', content: 'fake reply' });
      expect(call).not.toHaveProperty('agent_override');
      const asked = fake.requests.filter((req) => !req.body.response_format && JSON.stringify(req.body.messages).includes('What are your hours?'));
      expect(asked).toHaveLength(1);
      expect(asked[0]!.body.model).toBe('gpt-4.1-mini');
      expect(asked[0]!.body.messages[0]).toEqual({ role: 'system', content: 'You are the night desk.' });

      // The call's events went to the override's URL, none to the agent's.
      await eventually(async () => overrideHooks.events(created.call_id), (events) => events.length >= 3);
      expect([...overrideHooks.events(created.call_id)].sort()).toEqual(['call_analyzed', 'call_ended', 'call_started']);
      expect(agentHooks.events(created.call_id)).toEqual([]);
    } finally {
      useLanguageModel(new OfflineModel());
      fake.reset();
    }

    // Nothing was written to the agent or its LLM.
    const agentNow = await ws.api.get(`/get-agent/${agent.agent_id}`);
    expect(agentNow.body).toMatchObject({ webhook_url: agentHooks.url, version: 0 });
    expect(agentNow.body.voice_speed).not.toBe(1.5);
    const llmNow = await ws.api.get(`/get-retell-llm/${llm.llm_id}`);
    expect(llmNow.body).toMatchObject(LLM);

    // The next call without an override runs the agent as it is.
    const plain: any = await client.call.createPhoneCall({ from_number: number, to_number: '+14155555555', metadata: { sandbox_call_ms: 0, sandbox_user_says: [] } });
    const plainCall = await analyzed(client, plain.call_id);
    expect(plainCall.transcript_object[0]).toMatchObject({ role: 'agent', content: 'Hello from the agent.' });
    await eventually(async () => agentHooks.events(plain.call_id), (events) => events.length >= 3);
    expect(overrideHooks.events(plain.call_id)).toEqual([]);
  });

  it('refuses an invalid override with 400 naming the field, before anything is created', async () => {
    const { ws, agent, number, client } = await setup();
    const cases: [Record<string, unknown>, string][] = [
      [{ agent: { voice_speed: 9 } }, 'agent_override.agent.voice_speed: Must be at most 2'],
      [{ agent: { voice_id: 'nobody-voice' } }, 'agent_override.agent.voice_id: Unknown voice nobody-voice'],
      [{ retell_llm: { model: 'gpt-0' } }, 'agent_override.retell_llm.model: Unknown model "gpt-0"; use one of'],
      [{ conversation_flow: { model_temperature: 3 } }, 'agent_override.conversation_flow.model_temperature: Must be at most 1'],
    ];
    for (const [override, message] of cases) {
      const res = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: '+14155555555', agent_override: override } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.message.startsWith(message), res.body.message).toBe(true);
    }
    const web = await sdkFailure(client.call.createWebCall({ agent_id: agent.agent_id, agent_override: { agent: { voice_speed: 9 } } as never }));
    expect(web.status).toBe(400);
    expect((web.body as any).message).toBe('agent_override.agent.voice_speed: Must be at most 2');
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toEqual([]);
  });

  it('checks transfer tools against the workspace as a saved LLM or flow is: hold-music asset and transfer agent', async () => {
    const { ws, agent, number, client } = await setup();
    const other = await app.newWorkspace();
    const audio = await uploadAsset(app.url, ws.api_key, wav(1), 'hold.wav', 'audio/wav');
    const othersAudio = await uploadAsset(app.url, other.api_key, wav(1), 'hold.wav', 'audio/wav');
    const { agent: mediator } = await newAgent(ws.api);
    const { agent: othersAgent } = await newAgent(other.api);
    const hold = (assetId: string) => deskTool({ type: 'warm_transfer', on_hold_music: 'custom', custom_on_hold_music_asset_id: assetId });
    const agentic = (agentId: string, version: number | string = 0) =>
      ({ ...deskTool({ type: 'agentic_warm_transfer', agentic_transfer_config: { transfer_agent: { agent_id: agentId, agent_version: version } } }), name: 'to_mediator' });
    const phoneCall = (agent_override: Record<string, unknown>) =>
      ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: '+14155555555', metadata: { sandbox_call_ms: 0, sandbox_user_says: [] }, agent_override } });
    const at = 'transfer_option.custom_on_hold_music_asset_id';
    const agentAt = 'transfer_option.agentic_transfer_config.transfer_agent';

    const cases: [Record<string, unknown>, string][] = [
      [{ retell_llm: { general_tools: [hold(othersAudio)] } }, `agent_override.retell_llm.general_tools.0.${at}: Asset ${othersAudio} not found`],
      [{ retell_llm: { general_tools: [hold('asset_missing')] } }, `agent_override.retell_llm.general_tools.0.${at}: Asset asset_missing not found`],
      [{ retell_llm: { states: [{ name: 'desk', tools: [agentic(othersAgent.agent_id)] }] } }, `agent_override.retell_llm.states.0.tools.0.${agentAt}: Agent ${othersAgent.agent_id} not found`],
      [{ conversation_flow: { tools: [agentic(mediator.agent_id, 7)] } }, `agent_override.conversation_flow.tools.0.${agentAt}: Agent ${mediator.agent_id} has no version 7`],
      // Every problem in one 400, joined by '; ', as on save.
      [
        { retell_llm: { general_tools: [hold(othersAudio), agentic(othersAgent.agent_id)] } },
        `agent_override.retell_llm.general_tools.0.${at}: Asset ${othersAudio} not found; agent_override.retell_llm.general_tools.1.${agentAt}: Agent ${othersAgent.agent_id} not found`,
      ],
    ];
    for (const [override, message] of cases) {
      const res = await phoneCall(override);
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body).toEqual({ status: 400, message });
    }
    // create-web-call the same way.
    const web = await sdkFailure(client.call.createWebCall({ agent_id: agent.agent_id, agent_override: { retell_llm: { general_tools: [hold(othersAudio)] } } as never }));
    expect(web.status).toBe(400);
    expect((web.body as any).message).toBe(`agent_override.retell_llm.general_tools.0.${at}: Asset ${othersAudio} not found`);
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body).toEqual([]);

    // The workspace's own asset and agent: created.
    const good = await phoneCall({ retell_llm: { general_tools: [hold(audio), agentic(mediator.agent_id)] }, conversation_flow: { tools: [agentic(mediator.agent_id, 'latest')] } });
    expect(good.status, JSON.stringify(good.body)).toBe(201);
    const goodWeb: any = await client.call.createWebCall({ agent_id: agent.agent_id, agent_override: { retell_llm: { general_tools: [hold(audio)] } } as never });
    expect(goodWeb.call_id).toEqual(expect.any(String));
    const listed = (await ws.api.post('/v3/list-calls', { body: {} })).body as { call_id: string }[];
    expect(listed.map((call) => call.call_id).sort()).toEqual([good.body.call_id, goodWeb.call_id].sort());
  });

  it('applies to web calls too (their first line)', async () => {
    const { agent, client } = await setup();
    const web: any = await client.call.createWebCall({
      agent_id: agent.agent_id,
      metadata: { sandbox_call_ms: 0, sandbox_user_says: [] },
      agent_override: { retell_llm: { begin_message: 'Welcome to the web desk.' } },
    });
    const call = await analyzed(client, web.call_id);
    expect(call.transcript_object[0]).toMatchObject({ role: 'agent', content: 'Welcome to the web desk.' });
  });
});

describe('agent_override in the call_inbound webhook answer', () => {
  const ringWith = async (answer: unknown) => {
    const inbound = await webhookReceiver(() => ({ status: 200, body: JSON.stringify({ call_inbound: answer }) }));
    const context = await setup();
    await context.ws.api.patch(`/update-phone-number/${encodeURIComponent(context.number)}`, { body: { inbound_webhook_url: inbound.url } });
    const res = await context.ws.api.post('/sandbox/inbound-call', { body: { from_number: '+14155550123', to_number: context.number } });
    expect(res.status).toBe(201);
    const callId = res.body.call_id as string;
    const live = await eventually(() => context.client.call.retrieve(callId) as Promise<any>, (call) => (call.transcript_object ?? []).length > 0);
    await context.client.call.stop(callId);
    return live;
  };

  it('is applied to that call', async () => {
    const live = await ringWith({ agent_override: { retell_llm: { begin_message: 'Thanks for calling the override line.' } } });
    expect(live.transcript_object[0].content).toBe('Thanks for calling the override line.');
  });

  it('is dropped when invalid, and the call goes on with the agent as it is', async () => {
    const live = await ringWith({ agent_override: { retell_llm: { begin_message: 'Never said.', model_temperature: 7 } } });
    expect(live.transcript_object[0].content).toBe('Hello from the agent.');
    // A transfer tool naming an asset the workspace does not have: dropped the same way.
    const missingAsset = await ringWith({
      agent_override: { retell_llm: { begin_message: 'Never said.', general_tools: [deskTool({ type: 'warm_transfer', on_hold_music: 'custom', custom_on_hold_music_asset_id: 'asset_missing' })] } },
    });
    expect(missingAsset.transcript_object[0].content).toBe('Hello from the agent.');
  });
});
