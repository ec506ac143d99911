import { describe, expect, it } from 'vitest';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { call } from '../support/http.ts';

/*
 * The assistant (docs/assistant.md) without a language model: the offline rules. An agent
 * made through it (proposed, confirmed, then made by the API as the caller, the audit log
 * marking the assistant), a cancelled proposal, the reply as server-sent events, sessions
 * listed, read, deleted, attachments checked, and who may do what.
 */
const app = await startTestApp();

const ID = /^conductor_session_[0-9a-f]{24}$/;

describe('assistant sessions', () => {
  it('creates an agent through the assistant after a confirmation turn, as the caller, marked in the audit log', async () => {
    const ws = await app.newWorkspace();
    const session = await ws.api.post('/conductor/sessions', { body: { title: 'First agent' } });
    expect(session.status).toBe(201);
    expect(session.body).toEqual({
      session_id: expect.stringMatching(ID),
      title: 'First agent',
      attachments: [],
      pending_action: null,
      message_count: 0,
      created_timestamp: expect.any(Number),
      last_modification_timestamp: session.body.created_timestamp,
    });
    const id = session.body.session_id as string;

    const proposed = await ws.api.post(`/conductor/sessions/${id}/messages`, {
      body: { content: 'Create an agent named Front Desk with prompt You answer calls for a dental clinic. Be brief.' },
    });
    expect(proposed.status).toBe(200);
    const action = proposed.body.pending_action;
    expect(action).toEqual({
      action_id: expect.stringMatching(/^conductor_action_[0-9a-f]{24}$/),
      summary: 'create an LLM with the prompt "You answer calls for a dental clinic. Be brief." and a voice agent named "Front Desk" on it',
      steps: [
        { tool: 'create_llm', arguments: { general_prompt: 'You answer calls for a dental clinic. Be brief.' } },
        { tool: 'create_agent', arguments: { agent_name: 'Front Desk', response_engine: { type: 'retell-llm', llm_id: '{{steps.0.llm_id}}' } } },
      ],
      created_timestamp: expect.any(Number),
    });
    expect(proposed.body.reply).toMatchObject({ role: 'assistant', pending_action: action });
    expect(proposed.body.reply.tool_calls).toBeUndefined();
    // Nothing was made yet.
    expect((await ws.api.get('/v2/list-agents')).body).toEqual([]);

    const done = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'yes' } });
    expect(done.status).toBe(200);
    expect(done.body.pending_action).toBeNull();
    const calls = done.body.reply.tool_calls;
    expect(calls.map((entry: { tool: string; status: string; http_status: number }) => [entry.tool, entry.status, entry.http_status])).toEqual([
      ['create_llm', 'ok', 201],
      ['create_agent', 'ok', 201],
    ]);
    const llmId = calls[0].result.llm_id as string;
    const agentId = calls[1].result.agent_id as string;
    expect(calls[1].arguments.response_engine).toEqual({ type: 'retell-llm', llm_id: llmId });
    expect(done.body.reply.content).toContain(`Done: ${action.summary}.`);
    expect(done.body.reply.content).toContain(agentId);

    const agent = (await ws.api.get(`/get-agent/${agentId}`)).body;
    expect(agent).toMatchObject({ agent_name: 'Front Desk', response_engine: { type: 'retell-llm', llm_id: llmId } });
    expect((await ws.api.get(`/get-retell-llm/${llmId}`)).body.general_prompt).toBe('You answer calls for a dental clinic. Be brief.');

    const audit = (await ws.api.get('/audit-log')).body as { action: string; actor: unknown; target: unknown; tool?: string; changes: string[] }[];
    const mine = audit.filter((entry) => entry.action === 'conductor.tool_call');
    const actor = { type: 'api_key', id: expect.stringMatching(/^key_/), via: 'conductor', conductor_session_id: id };
    // Both in the turn's transaction, at the same time: in either order.
    expect(mine).toHaveLength(2);
    expect(mine.map(({ actor, target, tool, changes }) => ({ actor, target, tool, changes }))).toEqual(
      expect.arrayContaining([
        { actor, target: { type: 'agent', id: agentId }, tool: 'create_agent', changes: ['agent_name', 'response_engine'] },
        { actor, target: { type: 'llm', id: llmId }, tool: 'create_llm', changes: ['general_prompt'] },
      ]),
    );

    const read = await ws.api.get(`/conductor/sessions/${id}`);
    expect(read.body).toMatchObject({ session_id: id, message_count: 4, pending_action: null });
    expect(read.body.messages.map((message: { role: string }) => message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(read.body.messages[3]).toEqual(done.body.reply);

    const listed = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'list my agents' } });
    expect(listed.body.reply.content).toBe(`The workspace has 1 voice agent:\n- Front Desk (${agentId})`);
    const renamed = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'rename agent front desk to Reception' } });
    expect(renamed.body.reply.content).toBe(`Renamed "Front Desk" (${agentId}) to "Reception".`);
    expect((await ws.api.get(`/get-agent/${agentId}`)).body.agent_name).toBe('Reception');
  });

  it('cancels a pending action on anything but a confirmation, and runs one confirmed by confirm_action_id', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api, { agent: { agent_name: 'Keeper' } });
    const id = (await ws.api.post('/conductor/sessions', { body: {} })).body.session_id as string;
    const proposed = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'delete agent Keeper' } });
    expect(proposed.body.pending_action).toMatchObject({ summary: `delete the agent "Keeper" (${agent.agent_id})`, steps: [{ tool: 'delete_agent', arguments: { agent_id: agent.agent_id } }] });
    const cancelled = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'no' } });
    expect(cancelled.body).toMatchObject({ pending_action: null, reply: { content: `Cancelled: delete the agent "Keeper" (${agent.agent_id}).` } });
    expect((await ws.api.get(`/conductor/sessions/${id}`)).body.pending_action).toBeNull();
    expect((await ws.api.get(`/get-agent/${agent.agent_id}`)).status).toBe(200);
    // A confirmation with no action pending is refused, and nothing runs.
    const stale = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { confirm_action_id: proposed.body.pending_action.action_id } });
    expect(stale.status).toBe(400);
    expect(stale.body).toEqual({ status: 400, message: `confirm_action_id: ${proposed.body.pending_action.action_id} is not the action pending in this session` });

    const again = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: `publish agent ${agent.agent_id}` } });
    expect(again.body.pending_action.steps).toEqual([{ tool: 'publish_agent', arguments: { agent_id: agent.agent_id } }]);
    const confirmed = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { confirm_action_id: again.body.pending_action.action_id } });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.reply.tool_calls).toMatchObject([{ tool: 'publish_agent', status: 'ok', http_status: 200 }]);
    expect((await ws.api.get(`/get-agent/${agent.agent_id}`)).body.is_published).toBe(true);
  });

  it('answers server-sent events when asked', async () => {
    const ws = await app.newWorkspace();
    const id = (await ws.api.post('/conductor/sessions', { body: {} })).body.session_id as string;
    const res = await call(app.url, 'POST', `/conductor/sessions/${id}/messages`, {
      key: ws.api_key,
      body: { content: 'list my agents' },
      headers: { accept: 'text/event-stream' },
    });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    const events = res.text
      .trim()
      .split('\n\n')
      .map((frame) => {
        const [event, data] = frame.split('\n');
        return { event: event!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) };
      });
    expect(events.map((frame) => frame.event)).toEqual(['message', 'tool_call', 'message', 'done']);
    expect(events[0]!.data).toMatchObject({ role: 'user', content: 'list my agents' });
    expect(events[1]!.data).toMatchObject({ tool: 'list_agents', status: 'ok', result: [] });
    expect(events[2]!.data.content).toBe('The workspace has no voice agents yet. Say "create an agent named <name> with prompt <prompt>" to make one.');
    expect(events[3]!.data).toEqual({ session_id: id, user_message: events[0]!.data, reply: events[2]!.data, pending_action: null });
  });

  it('lists sessions newest first a page at a time, deletes one with its messages, then 404', async () => {
    const ws = await app.newWorkspace();
    const ids: string[] = [];
    for (const title of ['one', 'two', 'three']) ids.push((await ws.api.post('/conductor/sessions', { body: { title } })).body.session_id);
    await ws.api.post(`/conductor/sessions/${ids[0]}/messages`, { body: { content: 'help' } });
    const first = await ws.api.get('/conductor/sessions?limit=2');
    expect(first.body.items.map((item: { session_id: string }) => item.session_id)).toEqual([ids[2], ids[1]]);
    expect(first.body).toMatchObject({ has_more: true, pagination_key: ids[1] });
    const rest = await ws.api.get(`/conductor/sessions?limit=2&pagination_key=${ids[1]}`);
    expect(rest.body).toMatchObject({ items: [{ session_id: ids[0], title: 'one', message_count: 2 }], has_more: false });
    expect(rest.body.pagination_key).toBeUndefined();

    expect((await ws.api.delete(`/conductor/sessions/${ids[0]}`)).status).toBe(204);
    for (const res of [
      await ws.api.get(`/conductor/sessions/${ids[0]}`),
      await ws.api.delete(`/conductor/sessions/${ids[0]}`),
      await ws.api.post(`/conductor/sessions/${ids[0]}/messages`, { body: { content: 'help' } }),
      await ws.api.put(`/conductor/sessions/${ids[0]}/attachments`, { body: { attachments: [] } }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: `Assistant session ${ids[0]} not found` });
    }
    const { listMessageItems } = await import('../../shared/conductor/sessions/store.ts');
    expect(await listMessageItems(ws.workspace_id, ids[0]!)).toEqual([]);
    expect((await ws.api.get('/conductor/sessions/conductor_session_x')).status).toBe(400);
  });

  it("refuses attachments of another workspace and keeps nothing; another workspace's session is not found", async () => {
    const ws = await app.newWorkspace();
    const other = await app.newWorkspace();
    const mine = await newAgent(ws.api);
    const theirs = await newAgent(other.api);
    const refused = await ws.api.post('/conductor/sessions', { body: { attachments: [{ type: 'agent', id: theirs.agent.agent_id }] } });
    expect(refused.status).toBe(404);
    expect(refused.body).toEqual({ status: 404, message: `attachments.0: agent ${theirs.agent.agent_id} not found` });
    expect((await ws.api.get('/conductor/sessions')).body.items).toEqual([]);

    const id = (await ws.api.post('/conductor/sessions', { body: { attachments: [{ type: 'agent', id: mine.agent.agent_id }] } })).body.session_id as string;
    const put = await ws.api.put(`/conductor/sessions/${id}/attachments`, {
      body: { attachments: [{ type: 'llm', id: mine.llm.llm_id }, { type: 'llm', id: theirs.llm.llm_id }] },
    });
    expect(put.status).toBe(404);
    expect(put.body).toEqual({ status: 404, message: `attachments.1: llm ${theirs.llm.llm_id} not found` });
    expect((await ws.api.get(`/conductor/sessions/${id}`)).body.attachments).toEqual([{ type: 'agent', id: mine.agent.agent_id }]);
    const kept = await ws.api.put(`/conductor/sessions/${id}/attachments`, { body: { attachments: [{ type: 'llm', id: mine.llm.llm_id }] } });
    expect(kept.status).toBe(200);
    expect(kept.body.attachments).toEqual([{ type: 'llm', id: mine.llm.llm_id }]);
    const tooMany = await ws.api.put(`/conductor/sessions/${id}/attachments`, { body: { attachments: Array.from({ length: 11 }, (_, i) => ({ type: 'call', id: `call_${i}` })) } });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.message).toBe('attachments: A session works on at most 10 attachments');

    for (const res of [
      await other.api.get(`/conductor/sessions/${id}`),
      await other.api.delete(`/conductor/sessions/${id}`),
      await other.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'help' } }),
    ]) {
      expect(res.status).toBe(404);
    }
    expect((await other.api.get('/conductor/sessions')).body.items).toEqual([]);
    expect((await ws.api.get(`/conductor/sessions/${id}`)).status).toBe(200);
  });
});

describe('who may use the assistant', () => {
  it('needs the admin scope of a key; a member reads only; a developer acts with its own role', async () => {
    const ws = await app.newWorkspace();
    const id = (await ws.api.post('/conductor/sessions', { body: {} })).body.session_id as string;
    const agentsOnly = (await ws.api.post('/api-keys', { body: { name: 'agents only', scopes: ['agents'] } })).body.api_key;
    for (const res of [
      await ws.api.withKey(agentsOnly).get('/conductor/sessions'),
      await ws.api.withKey(agentsOnly).post('/conductor/sessions', { body: {} }),
      await ws.api.withKey(agentsOnly).post(`/conductor/sessions/${id}/messages`, { body: { content: 'list my agents' } }),
      await ws.api.withKey(agentsOnly).get('/conductor/capabilities'),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'This API key lacks the "admin" scope' });
    }

    expect((await ws.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } })).status).toBe(201);
    for (const [email, role] of [['member@example.com', 'member'], ['dev@example.com', 'developer']]) {
      expect((await ws.api.post('/workspace/members', { body: { email, role } })).status).toBe(201);
    }
    const as = (session: { session_token: string }) => ({ authorization: `Bearer ${session.session_token}` });
    const member = as(await createSessionFor(ws.workspace_id, 'member@example.com'));
    const developer = as(await createSessionFor(ws.workspace_id, 'dev@example.com'));
    expect((await call(app.url, 'GET', '/conductor/sessions', { headers: member })).status).toBe(200);
    expect((await call(app.url, 'GET', `/conductor/sessions/${id}`, { headers: member })).status).toBe(200);
    expect((await call(app.url, 'GET', '/conductor/walkthrough', { headers: member })).status).toBe(200);
    for (const res of [
      await call(app.url, 'POST', '/conductor/sessions', { headers: member, body: {} }),
      await call(app.url, 'POST', `/conductor/sessions/${id}/messages`, { headers: member, body: { content: 'help' } }),
      await call(app.url, 'PUT', `/conductor/sessions/${id}/attachments`, { headers: member, body: { attachments: [] } }),
      await call(app.url, 'DELETE', `/conductor/sessions/${id}`, { headers: member }),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ status: 403, message: 'The member role is read-only' });
    }

    // A developer's session: the assistant's invite goes to the invites route as the developer, which admits admins only.
    const mine = await call(app.url, 'POST', '/conductor/sessions', { headers: developer, body: {} });
    expect(mine.status).toBe(201);
    const refused = await call(app.url, 'POST', `/conductor/sessions/${mine.body.session_id}/messages`, { headers: developer, body: { content: 'invite eve@example.com as admin' } });
    expect(refused.status).toBe(200);
    expect(refused.body.reply.tool_calls).toEqual([
      { tool: 'invite_member', arguments: { email: 'eve@example.com', role: 'admin' }, status: 'refused', http_status: 403, error: 'Requires role: admin' },
    ]);
    expect(refused.body.reply.content).toBe('The API refused invite_member (403): Requires role: admin');
    expect((await ws.api.get('/workspace/invites')).body).toEqual([]);
    expect((await ws.api.get('/audit-log')).body.filter((entry: { action: string }) => entry.action === 'conductor.tool_call')).toEqual([]);

    // The same request from a key with full access is made, and the invitation's token is not kept.
    const invited = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'invite eve@example.com as admin' } });
    expect(invited.body.reply.tool_calls).toMatchObject([{ tool: 'invite_member', status: 'ok', http_status: 201, result: { email: 'eve@example.com', role: 'admin' } }]);
    expect(invited.body.reply.tool_calls[0].result.token).toBeUndefined();
    expect(JSON.stringify((await ws.api.get(`/conductor/sessions/${id}`)).body)).not.toContain('"token"');
  });
});
