import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent, newChatAgent, publicKeyBody } from '../support/factories.ts';
import { call, type ApiClient } from '../support/http.ts';

// New workspaces start without credit (the 402s are reachable); the main one is given some.
// A small per-token window makes its 429 cheap to reach.
const PER_TOKEN = 12;
const app = await startTestApp({ FREE_CREDIT_USD: '0', PUBLIC_RATE_LIMIT_PER_TOKEN: String(PER_TOKEN) });
const { table } = await import('../../shared/platform/store/table.ts');
const { keys } = await import('../../shared/platform/store/keys.ts');

const SHOP = 'https://shop.example';
const EVIL = 'https://evil.example';

async function credit(api: ApiClient) {
  expect((await api.post('/billing/add-credits', { body: { amount_usd: 50 } })).status).toBe(200);
}
await credit(app.api);

async function publicKey(api: ApiClient, origins = [SHOP]) {
  const created = await api.post('/public-keys', { body: publicKeyBody({ allowed_origins: origins }) });
  expect(created.status).toBe(201);
  return created.body as { public_key: string; public_key_id: string };
}

async function chatAgent(api: ApiClient = app.api) {
  return (await newChatAgent(api, { chatAgent: { agent_name: 'Shop helper' }, llm: { begin_message: 'Hi! How can I help?' } })).chatAgent as { agent_id: string };
}

const post = (path: string, body: unknown, headers: Record<string, string> = {}, key?: string) =>
  call(app.url, 'POST', path, { body, headers, key });

async function startChat(key: string, agentId: string, origin = SHOP) {
  const started = await post('/public/chat/start', { agent_id: agentId, metadata: { page: '/pricing' } }, { origin }, key);
  expect(started.status).toBe(201);
  return started;
}

describe('public chats (the widget)', () => {
  it('start with a public key from an allowed origin, answer with the secret, and talk only to its holder', async () => {
    const { public_key } = await publicKey(app.api);
    const agent = await chatAgent();
    const started = await startChat(public_key, agent.agent_id);
    expect(started.headers['access-control-allow-origin']).toBe(SHOP);
    expect(started.body).toMatchObject({ agent_id: agent.agent_id, chat_status: 'ongoing', metadata: { page: '/pricing', source: 'widget' } });
    expect(started.body.chat_secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(started.body.message_with_tool_calls).toEqual([expect.objectContaining({ role: 'agent', content: 'Hi! How can I help?' })]);
    const { chat_id: chatId, chat_secret: secret } = started.body;

    // Only the secret's hash is stored.
    const stored = await table.get(keys.publicChat(chatId));
    expect(stored).toMatchObject({ chat_id: chatId, started_by: { kind: 'public_key' } });
    expect(JSON.stringify(stored)).not.toContain(secret);

    const reply = await post(`/public/chat/${chatId}/message`, { content: 'Do you ship to Norway?', chat_secret: secret }, { origin: SHOP });
    expect(reply.status).toBe(200);
    expect(reply.headers['access-control-allow-origin']).toBe(SHOP);
    expect(reply.body.chat_id).toBe(chatId);
    expect(reply.body.chat_status).toBe('ongoing');
    expect(reply.body.messages.length).toBeGreaterThan(0);
    expect(reply.body.messages.every((m: { role: string }) => m.role !== 'user')).toBe(true);

    // The owner sees the same chat through the API.
    const seen = await app.api.get(`/get-chat/${chatId}`);
    expect(seen.body.message_with_tool_calls.filter((m: { role: string }) => m.role === 'user')).toEqual([
      expect.objectContaining({ content: 'Do you ship to Norway?' }),
    ]);

    // A wrong secret, and the right secret on another chat, are the same 404.
    const wrong = await post(`/public/chat/${chatId}/message`, { content: 'hi', chat_secret: 'x'.repeat(43) }, { origin: SHOP });
    expect(wrong.status).toBe(404);
    expect(wrong.body).toEqual({ status: 404, message: 'Chat not found' });
    const other = await startChat(public_key, agent.agent_id);
    const crossed = await post(`/public/chat/${other.body.chat_id}/message`, { content: 'hi', chat_secret: secret }, { origin: SHOP });
    expect(crossed.body).toEqual({ status: 404, message: 'Chat not found' });
    expect((await post(`/public/chat/chat_nope/end`, { chat_secret: secret }, { origin: SHOP })).status).toBe(404);
    // A missing secret is a 400 naming it.
    const missing = await post(`/public/chat/${chatId}/message`, { content: 'hi' }, { origin: SHOP });
    expect(missing.body).toEqual({ status: 400, message: 'chat_secret: Required' });

    const ended = await post(`/public/chat/${chatId}/end`, { chat_secret: secret }, { origin: SHOP });
    expect(ended.status).toBe(200);
    expect(ended.body).toEqual({ chat_id: chatId, chat_status: 'ended' });
    expect((await app.api.get(`/get-chat/${chatId}`)).body.chat_status).toBe('ended');
  });

  it('refuse a disallowed origin (401, no CORS header) and a public key on any other route (403)', async () => {
    const { public_key } = await publicKey(app.api);
    const agent = await chatAgent();
    const refused = await post('/public/chat/start', { agent_id: agent.agent_id }, { origin: EVIL }, public_key);
    expect(refused.status).toBe(401);
    expect(refused.body).toEqual({ status: 401, message: 'Missing or invalid API key / session' });
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    const noOrigin = await post('/public/chat/start', { agent_id: agent.agent_id }, {}, public_key);
    expect(noOrigin.status).toBe(401);

    // A chat started from the shop answers only there.
    const started = await startChat(public_key, agent.agent_id);
    const elsewhere = await post(`/public/chat/${started.body.chat_id}/message`, { content: 'hi', chat_secret: started.body.chat_secret }, { origin: EVIL });
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.headers['access-control-allow-origin']).toBeUndefined();

    for (const [method, path] of [['GET', '/list-chats'], ['POST', '/create-chat-completion'], ['GET', '/public-keys']] as const) {
      const other = await call(app.url, method, path, { key: public_key, headers: { origin: SHOP }, ...(method === 'POST' ? { body: {} } : {}) });
      expect(other.status).toBe(403);
      expect(other.body).toEqual({ status: 403, message: 'A public key can only start web calls and chats' });
    }
  });

  it('stop answering a chat once its public key is deleted', async () => {
    const { public_key, public_key_id } = await publicKey(app.api);
    const started = await startChat(public_key, (await chatAgent()).agent_id);
    expect((await app.api.delete(`/public-keys/${public_key_id}`)).status).toBe(204);
    const after = await post(`/public/chat/${started.body.chat_id}/message`, { content: 'hi', chat_secret: started.body.chat_secret }, { origin: SHOP });
    expect(after.status).toBe(401);
  });

  it('are spend-checked: a workspace without credit gets 402 credit_exhausted', async () => {
    const poor = await app.newWorkspace();
    const { public_key } = await publicKey(poor.api);
    const agent = await chatAgent(poor.api);
    const refused = await post('/public/chat/start', { agent_id: agent.agent_id }, { origin: SHOP }, public_key);
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ status: 402, error_code: 'credit_exhausted' });
    // Nothing is left behind: no chat.
    expect((await poor.api.get('/list-chats')).body).toEqual([]);
  });
});

describe('CORS', () => {
  it('answers preflights and responses of browser routes with exactly the origins public keys allow', async () => {
    await publicKey(app.api, ['https://cors.example']);
    const preflight = (path: string, origin: string) =>
      call(app.url, 'OPTIONS', path, { headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' } });
    for (const path of ['/public/chat/start', '/public/chat/chat_x/message', '/v3/create-web-call', '/v2/create-web-call', '/create-chat']) {
      const allowed = await preflight(path, 'https://cors.example');
      expect(allowed.status).toBe(204);
      expect(allowed.headers['access-control-allow-origin']).toBe('https://cors.example');
      expect(allowed.headers['access-control-allow-headers']).toBe('authorization,content-type');
      const refused = await preflight(path, 'https://nobody.example');
      expect(refused.status).toBe(204);
      expect(refused.headers['access-control-allow-origin']).toBeUndefined();
    }
    // Share links' routes are for Parley's own page: no CORS at all.
    expect((await preflight('/public/share/abc/web-call', 'https://cors.example')).headers['access-control-allow-origin']).toBeUndefined();
    // Every other route keeps `*`.
    expect((await preflight('/v2/get-call/call_x', 'https://nobody.example')).headers['access-control-allow-origin']).toBe('*');
    expect((await app.api.get('/workspace')).headers['access-control-allow-origin']).toBe('*');
  });

  it('forgets an origin once no key allows it', async () => {
    const { public_key_id } = await publicKey(app.api, ['https://gone.example']);
    const preflight = () =>
      call(app.url, 'OPTIONS', '/public/chat/start', { headers: { origin: 'https://gone.example', 'access-control-request-method': 'POST' } });
    expect((await preflight()).headers['access-control-allow-origin']).toBe('https://gone.example');
    expect((await app.api.patch(`/public-keys/${public_key_id}`, { body: { allowed_origins: ['https://kept.example'] } })).status).toBe(200);
    expect((await preflight()).headers['access-control-allow-origin']).toBeUndefined();
  });
});

describe('web calls with a public key', () => {
  it('start on /v3 and /v2/create-web-call from an allowed origin', async () => {
    const { public_key } = await publicKey(app.api);
    const { agent } = await newAgent(app.api);
    for (const path of ['/v3/create-web-call', '/v2/create-web-call']) {
      const created = await post(path, { agent_id: agent.agent_id }, { origin: SHOP }, public_key);
      expect(created.status).toBe(201);
      expect(created.headers['access-control-allow-origin']).toBe(SHOP);
      expect(created.body).toMatchObject({ call_type: 'web_call', agent_id: agent.agent_id, transport: 'livekit' });
      expect((await post(path, { agent_id: agent.agent_id }, { origin: EVIL }, public_key)).status).toBe(401);
    }
  });
});

describe('what a public key may send', () => {
  const OVERRIDE = { agent: { webhook_url: 'https://attacker.example/hooks', max_call_duration_ms: 3_600_000 } };
  const refusal = (field: string, why: string) => ({ status: 403, message: `A public key cannot send ${field}: ${why}` });
  const NO_OVERRIDE = refusal('agent_override', 'a browser starts the agent as configured; override it from your server with a secret key');
  const NO_VERSION = refusal('agent_version', "a browser starts the agent's default version (latest); choose another from your server with a secret key");
  const NO_SCRIPT = refusal('metadata.sandbox_user_says', 'sandbox scripts need a secret key');

  it('web calls: no agent_override, agent_version or sandbox script from a public key; a secret key may send each', async () => {
    const { public_key } = await publicKey(app.api);
    const { agent } = await newAgent(app.api);
    const fromPage = (body: Record<string, unknown>) => post('/v2/create-web-call', { agent_id: agent.agent_id, ...body }, { origin: SHOP }, public_key);
    const cases: [Record<string, unknown>, unknown][] = [
      [{ agent_override: OVERRIDE }, NO_OVERRIDE],
      [{ agent_version: 3 }, NO_VERSION],
      [{ agent_version: '0' }, NO_VERSION],
      [{ metadata: { sandbox_user_says: ['I want a refund'] } }, NO_SCRIPT],
      [{ metadata: { sandbox_call_ms: 3_600_000 } }, refusal('metadata.sandbox_call_ms', 'sandbox scripts need a secret key')],
      [{ metadata: { sandbox_transfer_says: ['hi'] } }, refusal('metadata.sandbox_transfer_says', 'sandbox scripts need a secret key')],
      [{ current_node_id: 'node_after_checks' }, refusal('current_node_id', 'a browser starts the agent at its beginning')],
    ];
    for (const [body, expected] of cases) {
      const refused = await fromPage(body);
      expect(refused.status, JSON.stringify(body)).toBe(403);
      expect(refused.body).toEqual(expected);
    }
    // Nothing was created by the refusals.
    const listed = await app.api.post('/v3/list-calls', { body: { filter_criteria: { agent_id: [agent.agent_id] } } });
    expect(listed.body).toEqual([]);

    // The agent as configured, with the visitor's context, still starts.
    const plain = await fromPage({ agent_version: 'latest', metadata: { page: '/pricing' }, retell_llm_dynamic_variables: { name: 'Ada' }, current_node_id: null });
    expect(plain.status).toBe(201);
    expect(plain.body).toMatchObject({ agent_version: 0, metadata: { page: '/pricing' }, retell_llm_dynamic_variables: { name: 'Ada' } });

    // A secret key (a server) may still send every one of them.
    const server = await app.api.post('/v2/create-web-call', {
      body: { agent_id: agent.agent_id, agent_override: OVERRIDE, agent_version: 0, metadata: { sandbox_user_says: ['hello'], sandbox_call_ms: 1000 } },
    });
    expect(server.status).toBe(201);
  });

  it('chats: create-chat and /public/chat/start refuse the same fields from a public key; a secret key may send them', async () => {
    const { public_key } = await publicKey(app.api);
    const agent = await chatAgent();
    for (const path of ['/create-chat', '/public/chat/start']) {
      const fromPage = (body: Record<string, unknown>) => post(path, { agent_id: agent.agent_id, ...body }, { origin: SHOP }, public_key);
      for (const [body, expected] of [
        [{ agent_override: OVERRIDE }, NO_OVERRIDE],
        [{ agent_version: 3 }, NO_VERSION],
        [{ metadata: { sandbox_user_says: ['I want a refund'] } }, NO_SCRIPT],
      ] as const) {
        const refused = await fromPage(body);
        expect(refused.status, `${path} ${JSON.stringify(body)}`).toBe(403);
        expect(refused.body).toEqual(expected);
      }
      expect((await fromPage({ metadata: { page: '/help' } })).status).toBe(201);
    }
    const server = await app.api.post('/create-chat', { body: { agent_id: agent.agent_id, agent_override: OVERRIDE, agent_version: 0, metadata: { sandbox_user_says: ['hi'] } } });
    expect(server.status).toBe(201);
    const serverWidget = await app.api.post('/public/chat/start', { body: { agent_id: agent.agent_id, agent_version: 0, metadata: { sandbox_user_says: ['hi'] } } });
    expect(serverWidget.status).toBe(201);
  });

  it('bounds metadata and dynamic variables from a browser (public keys and share links), not from a secret key', async () => {
    const { public_key } = await publicKey(app.api);
    const { agent } = await newAgent(app.api);
    const chat = await chatAgent();
    const many = Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`v${i}`, 'x']));
    const long = { note: 'x'.repeat(17_000) };
    const TOO_MANY = { status: 400, message: 'retell_llm_dynamic_variables: Must have at most 100 variables when sent from a browser' };
    const TOO_LONG = { status: 400, message: 'retell_llm_dynamic_variables: Must be at most 16384 bytes as JSON when sent from a browser' };
    const BIG_METADATA = { status: 400, message: 'metadata: Must be at most 16384 bytes as JSON when sent from a browser' };
    const IDENTITY = { status: 400, message: 'retell_llm_dynamic_variables: from_number is set by the platform and cannot be sent from a browser' };
    for (const [path, agentId] of [['/v3/create-web-call', agent.agent_id], ['/create-chat', chat.agent_id], ['/public/chat/start', chat.agent_id]] as const) {
      const fromPage = (body: Record<string, unknown>) => post(path, { agent_id: agentId, ...body }, { origin: SHOP }, public_key);
      expect((await fromPage({ retell_llm_dynamic_variables: many })).body).toEqual(TOO_MANY);
      expect((await fromPage({ retell_llm_dynamic_variables: long })).body).toEqual(TOO_LONG);
      expect((await fromPage({ metadata: long })).body).toEqual(BIG_METADATA);
      expect((await fromPage({ retell_llm_dynamic_variables: { from_number: '+14155550100' } })).body).toEqual(IDENTITY);
    }
    const voiceLink = await shareLink(app.api, agent.agent_id);
    const chatLink = await shareLink(app.api, chat.agent_id);
    for (const path of [`/public/share/${voiceLink.token}/web-call`, `/public/share/${chatLink.token}/chat`]) {
      expect((await post(path, { retell_llm_dynamic_variables: many })).body).toEqual(TOO_MANY);
      expect((await post(path, { retell_llm_dynamic_variables: long })).body).toEqual(TOO_LONG);
      expect((await post(path, { retell_llm_dynamic_variables: { from_number: '+14155550100' } })).body).toEqual(IDENTITY);
    }
    expect((await app.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id, retell_llm_dynamic_variables: many, metadata: long } })).status).toBe(201);
  });
});

describe('public keys limited to some agents (allowed_agent_ids)', () => {
  it('start calls and chats only with the listed agents, on every public route', async () => {
    const { agent: allowed } = await newAgent(app.api);
    const { agent: other } = await newAgent(app.api);
    const allowedChat = await chatAgent();
    const otherChat = await chatAgent();
    const created = await app.api.post('/public-keys', {
      body: publicKeyBody({ allowed_origins: [SHOP], allowed_agent_ids: [allowed.agent_id, allowedChat.agent_id, allowed.agent_id] }),
    });
    expect(created.status).toBe(201);
    expect(created.body.allowed_agent_ids).toEqual([allowed.agent_id, allowedChat.agent_id]);
    const key = created.body.public_key as string;
    const notAllowed = (agentId: string) => ({ status: 403, message: `This public key is not allowed for agent ${agentId}` });

    for (const path of ['/v3/create-web-call', '/v2/create-web-call']) {
      const refused = await post(path, { agent_id: other.agent_id }, { origin: SHOP }, key);
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual(notAllowed(other.agent_id));
      expect((await post(path, { agent_id: allowed.agent_id }, { origin: SHOP }, key)).status).toBe(201);
    }
    for (const path of ['/create-chat', '/public/chat/start']) {
      const refused = await post(path, { agent_id: otherChat.agent_id }, { origin: SHOP }, key);
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual(notAllowed(otherChat.agent_id));
      expect((await post(path, { agent_id: allowedChat.agent_id }, { origin: SHOP }, key)).status).toBe(201);
    }
    // A secret key is not limited by any public key's list.
    expect((await app.api.post('/v3/create-web-call', { body: { agent_id: other.agent_id } })).status).toBe(201);

    // A chat the key started answers only while the key still allows its agent.
    const started = await startChat(key, allowedChat.agent_id);
    const message = () => post(`/public/chat/${started.body.chat_id}/message`, { content: 'hi', chat_secret: started.body.chat_secret }, { origin: SHOP });
    expect((await message()).status).toBe(200);
    const narrowed = await app.api.patch(`/public-keys/${created.body.public_key_id}`, { body: { allowed_agent_ids: [allowed.agent_id] } });
    expect(narrowed.status).toBe(200);
    expect(narrowed.body.allowed_agent_ids).toEqual([allowed.agent_id]);
    expect((await message()).body).toEqual(notAllowed(allowedChat.agent_id));
    expect((await post(`/public/chat/${started.body.chat_id}/end`, { chat_secret: started.body.chat_secret }, { origin: SHOP })).body).toEqual(notAllowed(allowedChat.agent_id));

    // [] allows every agent again.
    const widened = await app.api.patch(`/public-keys/${created.body.public_key_id}`, { body: { allowed_agent_ids: [] } });
    expect(widened.body.allowed_agent_ids).toEqual([]);
    expect((await post('/v3/create-web-call', { agent_id: other.agent_id }, { origin: SHOP }, key)).status).toBe(201);
    expect((await message()).status).toBe(200);
  });

  it("refuse at create and update an agent that is not the workspace's, and an ID that is no agent's", async () => {
    const { agent } = await newAgent(app.api);
    const elsewhere = await app.newWorkspace();
    const { agent: foreign } = await newAgent(elsewhere.api);
    const foreignChat = await chatAgent(elsewhere.api);

    const create = (ids: string[]) => app.api.post('/public-keys', { body: publicKeyBody({ allowed_agent_ids: ids }) });
    expect((await create([agent.agent_id, foreign.agent_id])).body).toEqual({ status: 400, message: `allowed_agent_ids.1: Agent ${foreign.agent_id} not found` });
    expect((await create([foreignChat.agent_id])).body).toEqual({ status: 400, message: `allowed_agent_ids.0: Chat agent ${foreignChat.agent_id} not found` });
    expect((await create(['llm_0123456789abcdef01234567'])).body).toEqual({
      status: 400,
      message: 'allowed_agent_ids.0: Must be an agent or chat agent ID (agent_ or chat_agent_ followed by 24 hex characters)',
    });

    const { public_key_id } = await publicKey(app.api);
    const update = await app.api.patch(`/public-keys/${public_key_id}`, { body: { allowed_agent_ids: [foreign.agent_id] } });
    expect(update.body).toEqual({ status: 400, message: `allowed_agent_ids.0: Agent ${foreign.agent_id} not found` });
    const listed = (await app.api.get('/public-keys')).body as { public_key_id: string; allowed_agent_ids: string[] }[];
    expect(listed.find((key) => key.public_key_id === public_key_id)?.allowed_agent_ids).toEqual([]);
  });
});

async function shareLink(api: ApiClient, agentId: string) {
  const created = await api.post(`/agents/${agentId}/share-links`);
  expect(created.status).toBe(201);
  return created.body as { token: string; share_link_id: string };
}

describe('share links', () => {
  it('serve the Voice Orb: the agent, a web call with source voice_orb, its log for the token holder; revoked at once', async () => {
    const { agent } = await newAgent(app.api, { agent: { agent_name: 'Front desk' } });
    const link = await shareLink(app.api, agent.agent_id);

    const page = await call(app.url, 'GET', `/public/share/${link.token}`);
    expect(page.status).toBe(200);
    expect(page.body).toEqual({
      agent_id: agent.agent_id,
      agent_name: 'Front desk',
      agent_type: 'voice',
      start: 'web_call',
      web_call_path: `/public/share/${link.token}/web-call`,
      chat_path: null,
    });
    expect(page.headers['access-control-allow-origin']).toBeUndefined();

    const web = await post(`/public/share/${link.token}/web-call`, {});
    expect(web.status).toBe(201);
    expect(Object.keys(web.body).sort()).toEqual(['access_token', 'agent_id', 'call_id', 'call_status', 'expires_at', 'ice_servers', 'livekit_url', 'transport']);
    expect(web.body.livekit_url).toBe('ws://127.0.0.1:7880');
    const stored = await app.api.get(`/v2/get-call/${web.body.call_id}`);
    expect(stored.body.metadata).toEqual({ source: 'voice_orb', share_link_id: link.share_link_id });

    // The call's log and retrievals need its own access token, as a bearer or a query parameter.
    const logPath = `/public/calls/${web.body.call_id}/log`;
    const byHeader = await call(app.url, 'GET', logPath, { headers: { authorization: `Bearer ${web.body.access_token}` } });
    expect(byHeader.status).toBe(200);
    expect(byHeader.body).toMatchObject({ call_id: web.body.call_id, call_status: 'registered', agent_id: agent.agent_id, transcript_object: [] });
    expect(byHeader.body.metadata).toBeUndefined();
    expect((await call(app.url, 'GET', `${logPath}?access_token=${web.body.access_token}`)).status).toBe(200);
    expect((await call(app.url, 'GET', logPath)).body).toEqual({ status: 401, message: 'Missing or invalid API key / session' });
    const another = await post(`/public/share/${link.token}/web-call`, {});
    expect((await call(app.url, 'GET', logPath, { headers: { authorization: `Bearer ${another.body.access_token}` } })).status).toBe(401);
    const retrievals = await call(app.url, 'GET', `/public/calls/${web.body.call_id}/kb-retrievals?access_token=${web.body.access_token}`);
    expect(retrievals.body).toEqual({ status: 404, message: `No knowledge base retrievals for ${web.body.call_id}` });

    // Revoked: every route of the token is a 404 from the next request on.
    expect((await app.api.delete(`/share-links/${link.share_link_id}`)).status).toBe(204);
    expect((await call(app.url, 'GET', `/public/share/${link.token}`)).body).toEqual({ status: 404, message: 'Share link not found' });
    expect((await post(`/public/share/${link.token}/web-call`, {})).status).toBe(404);
    expect((await call(app.url, 'GET', '/public/share/not-a-token')).status).toBe(404);
  });

  it("start chats with a chat agent's link, which stop when the link is revoked", async () => {
    const agent = await chatAgent();
    const link = await shareLink(app.api, agent.agent_id);
    expect((await call(app.url, 'GET', `/public/share/${link.token}`)).body).toMatchObject({ agent_type: 'chat', start: 'chat', agent_name: 'Shop helper' });
    expect((await post(`/public/share/${link.token}/web-call`, {})).body).toEqual({ status: 400, message: 'This share link is for a chat agent: start a chat instead' });

    const started = await post(`/public/share/${link.token}/chat`, {});
    expect(started.status).toBe(201);
    expect(started.body).toMatchObject({ agent_id: agent.agent_id, chat_status: 'ongoing', messages: [expect.objectContaining({ role: 'agent', content: 'Hi! How can I help?' })] });
    const { chat_id: chatId, chat_secret: secret } = started.body;
    expect((await app.api.get(`/get-chat/${chatId}`)).body.metadata).toEqual({ source: 'share_link' });
    expect((await post(`/public/chat/${chatId}/message`, { content: 'Hello', chat_secret: secret })).status).toBe(200);

    expect((await app.api.delete(`/share-links/${link.share_link_id}`)).status).toBe(204);
    expect((await post(`/public/chat/${chatId}/message`, { content: 'Hello', chat_secret: secret })).body).toEqual({ status: 404, message: 'Share link not found' });
    expect((await post(`/public/share/${link.token}/chat`, {})).status).toBe(404);
  });

  it('are billed to the workspace: 402 with its error_code when it cannot spend', async () => {
    const poor = await app.newWorkspace();
    const { agent } = await newAgent(poor.api);
    const voice = await shareLink(poor.api, agent.agent_id);
    const refused = await post(`/public/share/${voice.token}/web-call`, {});
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ status: 402, error_code: 'credit_exhausted' });
    const chat = await shareLink(poor.api, (await chatAgent(poor.api)).agent_id);
    expect((await post(`/public/share/${chat.token}/chat`, {})).body).toMatchObject({ status: 402, error_code: 'credit_exhausted' });
  });

  it('are rate-limited per token: 429 past PUBLIC_RATE_LIMIT_PER_TOKEN a minute, other tokens unaffected', async () => {
    const { agent } = await newAgent(app.api);
    const busy = await shareLink(app.api, agent.agent_id);
    const quiet = await shareLink(app.api, agent.agent_id);
    for (let i = 0; i < PER_TOKEN; i++) expect((await call(app.url, 'GET', `/public/share/${busy.token}`)).status).toBe(200);
    const limited = await call(app.url, 'GET', `/public/share/${busy.token}`);
    expect(limited.status).toBe(429);
    expect(limited.body.message).toMatch(new RegExp(`^Rate limit exceeded for this share link: ${PER_TOKEN} requests per minute\\. Retry in \\d+s\\.$`));
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect((await call(app.url, 'GET', `/public/share/${quiet.token}`)).status).toBe(200);
  });
});

describe('GET /widget.js', () => {
  it('serves the widget with a content-hash ETag and cache headers, 304 when unchanged', async () => {
    const first = await call(app.url, 'GET', '/widget.js');
    expect(first.status).toBe(200);
    expect(first.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(first.headers['cache-control']).toBe('public, max-age=300, stale-while-revalidate=86400');
    expect(first.headers.etag).toMatch(/^"[A-Za-z0-9_-]{43}"$/);
    expect(first.text).toContain('/public/chat/start');
    const again = await call(app.url, 'GET', '/widget.js', { headers: { 'if-none-match': first.headers.etag! } });
    expect(again.status).toBe(304);
    expect(again.text).toBe('');
  });
});
