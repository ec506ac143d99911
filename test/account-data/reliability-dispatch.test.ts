import { describe, expect, it } from 'vitest';
import { startLiveKitTestApp } from '../support/fake-livekit.ts';
import { newAgent } from '../support/factories.ts';

/*
 * The workspace's fallback voices (and fallback model) travel to the agent worker with the
 * call, in its LiveKit dispatch metadata (docs/calls-media.md), so the worker can switch
 * voices when the agent's voice provider fails.
 */
const { livekit, app } = await startLiveKitTestApp();

const dispatchOf = (callId: string) => {
  const dispatch = livekit.calls('AgentDispatchService/CreateDispatch').find((request) => request.body.room === callId);
  expect(dispatch).toBeDefined();
  return JSON.parse(dispatch!.body.metadata) as Record<string, unknown>;
};

describe('the fallback voices', () => {
  it('are in the dispatch metadata, in order, with the fallback model; a workspace without fallbacks sends none', async () => {
    const ws = await app.newWorkspace();
    const set = await ws.api.put('/workspace/reliability', { body: { fallback_voice_ids: ['cartesia-Cleo', '11labs-Adrian'], fallback_llm_model: 'gpt-4.1-mini' } });
    expect(set.status).toBe(200);
    const { agent } = await newAgent(ws.api);
    const web = await ws.api.post('/v2/create-web-call', { body: { agent_id: agent.agent_id } });
    expect(web.status).toBe(201);
    expect(dispatchOf(web.body.call_id)).toMatchObject({
      call_id: web.body.call_id,
      reliability: { fallback_voice_ids: ['cartesia-Cleo', '11labs-Adrian'], fallback_llm_model: 'gpt-4.1-mini' },
    });

    // Voices only: the model is null.
    await ws.api.put('/workspace/reliability', { body: { fallback_llm_model: null } });
    const second = await ws.api.post('/v2/create-web-call', { body: { agent_id: agent.agent_id } });
    expect(dispatchOf(second.body.call_id).reliability).toEqual({ fallback_voice_ids: ['cartesia-Cleo', '11labs-Adrian'], fallback_llm_model: null });

    const plain = await app.newWorkspace();
    const other = await newAgent(plain.api);
    const call = await plain.api.post('/v2/create-web-call', { body: { agent_id: other.agent.agent_id } });
    expect(call.status).toBe(201);
    expect(dispatchOf(call.body.call_id)).not.toHaveProperty('reliability');
  });
});
