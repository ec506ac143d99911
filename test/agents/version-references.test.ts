import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent, newLlm } from '../support/factories.ts';
import { retellClient, sdkFailure } from '../support/sdk.ts';

/*
 * Versioning 4: wherever a version is referenced, it may be a number, `latest`,
 * `latest_published` or an environment tag name; retell-sdk types `version` as
 * `string | number`. A reference that names no version is a 404 naming it.
 */
const app = await startTestApp();
const retell = retellClient(app.url, app.workspace.api_key);

const BAD_REFERENCE = 'version: Must be a version number, "latest", "latest_published" or an environment tag name';

/** A voice agent with version 0 published (tagged `prod`) and version 1 its latest draft. */
async function publishedAgentWithDraft() {
  const { agent, llm } = await newAgent(app.api, { agent: { agent_name: 'first' } });
  await retell.agent.publish(agent.agent_id, { version: 0 });
  await retell.agent.update(agent.agent_id, { agent_name: 'second' });
  const tag = await app.api.post(`/agents/${agent.agent_id}/tags`, { body: { name: 'prod', version: 0 } });
  expect(tag.status).toBe(201);
  return { agentId: agent.agent_id, llmId: llm.llm_id as string };
}

describe('version references on versioned reads', () => {
  it('get-agent takes a number, latest, latest_published or a tag', async () => {
    const { agentId } = await publishedAgentWithDraft();
    const cases: [string | number, number, string][] = [
      [0, 0, 'first'],
      ['1', 1, 'second'],
      ['latest', 1, 'second'],
      ['latest_published', 0, 'first'],
      ['prod', 0, 'first'],
    ];
    for (const [version, expected, name] of cases) {
      expect(await retell.agent.retrieve(agentId, { version })).toMatchObject({ version: expected, agent_name: name });
    }
    expect(await retell.agent.retrieve(agentId, { version: 'latest' })).toEqual(await retell.agent.retrieve(agentId));
  });

  it('answers 404 naming a reference that resolves to nothing, and 400 for one that cannot be a reference', async () => {
    const { agent } = await newAgent(app.api);
    const id = agent.agent_id;
    const failures: [string | number, number, string][] = [
      [7, 404, `Agent ${id} has no version 7`],
      ['latest_published', 404, `Agent ${id} has no published version ("latest_published")`],
      ['staging', 404, `Agent ${id} has no version or tag "staging"`],
      ['-1', 400, BAD_REFERENCE],
      ['latest!', 400, BAD_REFERENCE],
      ['1e3', 404, `Agent ${id} has no version or tag "1e3"`],
      ['1234567890', 400, BAD_REFERENCE],
    ];
    for (const [version, status, message] of failures) {
      expect(await sdkFailure(retell.agent.retrieve(id, { version }))).toEqual({ status, body: { status, message } });
    }
  });

  it('get-chat-agent takes the same references (chat agents have no tags)', async () => {
    const llm = await newLlm(app.api);
    const chat = await retell.chatAgent.create({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, agent_name: 'first' });
    const id = chat.agent_id;
    expect(await sdkFailure(retell.chatAgent.retrieve(id, { version: 'latest_published' }))).toEqual({
      status: 404,
      body: { status: 404, message: `Chat agent ${id} has no published version ("latest_published")` },
    });
    await retell.chatAgent.publish(id, { version: 0 });
    await retell.chatAgent.update(id, { agent_name: 'second' });
    expect(await retell.chatAgent.retrieve(id, { version: 'latest_published' })).toMatchObject({ version: 0, agent_name: 'first' });
    expect(await retell.chatAgent.retrieve(id, { version: 'latest' })).toMatchObject({ version: 1, agent_name: 'second' });
    expect(await retell.chatAgent.retrieve(id, { version: '0' })).toMatchObject({ version: 0 });
    expect(await sdkFailure(retell.chatAgent.retrieve(id, { version: 'prod' }))).toEqual({
      status: 404,
      body: { status: 404, message: `Chat agent ${id} has no version or tag "prod"` },
    });
    expect((await app.api.get(`/get-chat-agent-version/${id}/latest_published`)).body).toMatchObject({ agent_id: id, version: 0 });
  });

  it('get-retell-llm and get-conversation-flow take them too, the engine versions an agent publishes', async () => {
    const { agentId, llmId } = await publishedAgentWithDraft();
    // retell-sdk types these as numbers; the API takes every reference form.
    const llmAt = (version: string) => retell.llm.retrieve(llmId, { version: version as unknown as number });
    expect(await llmAt('latest_published')).toMatchObject({ version: 0, is_published: true });
    expect(await llmAt('latest')).toMatchObject({ version: 1, is_published: false });
    expect(await sdkFailure(llmAt('prod'))).toEqual({
      status: 404,
      body: { status: 404, message: `Retell LLM ${llmId} has no version or tag "prod"` },
    });

    const flow = await retell.conversationFlow.create({
      model_choice: { model: 'gpt-4.1', type: 'cascading' },
      start_speaker: 'agent',
      nodes: [{ id: 'start', type: 'end' }],
    });
    const flowId = flow.conversation_flow_id;
    const flowAt = (version: string) => retell.conversationFlow.retrieve(flowId, { version: version as unknown as number });
    expect(await sdkFailure(flowAt('latest_published'))).toEqual({
      status: 404,
      body: { status: 404, message: `Conversation flow ${flowId} has no published version ("latest_published")` },
    });
    await retell.agent.update(agentId, { response_engine: { type: 'conversation-flow', conversation_flow_id: flowId } });
    await retell.agent.publish(agentId, { version: 1 });
    expect(await flowAt('latest_published')).toMatchObject({ version: 0, is_published: true });
    expect(await flowAt('latest')).toMatchObject({ version: 0 });
  });

  it('edits the draft a reference names, and refuses a published one', async () => {
    const { agentId } = await publishedAgentWithDraft();
    expect(await retell.agent.update(agentId, { version: 'latest', agent_name: 'third' })).toMatchObject({ version: 1, agent_name: 'third' });
    expect(await sdkFailure(retell.agent.update(agentId, { version: 'prod', agent_name: 'sneaky' }))).toEqual({
      status: 400,
      body: { status: 400, message: `Version 0 of agent ${agentId} is published and cannot be changed; create a new version from it` },
    });
    expect(await retell.agent.retrieve(agentId, { version: 'prod' })).toMatchObject({ agent_name: 'first' });
  });

  it('answers 404 for another workspace’s agent whatever the reference', async () => {
    const other = await app.newWorkspace();
    const { agent } = await newAgent(other.api);
    for (const version of ['latest', 'latest_published', 'prod', 0]) {
      expect(await sdkFailure(retell.agent.retrieve(agent.agent_id, { version }))).toEqual({
        status: 404,
        body: { status: 404, message: `Agent ${agent.agent_id} not found` },
      });
    }
  });
});
