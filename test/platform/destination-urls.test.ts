import { afterAll, describe, expect, it, vi } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { freshNumber, newAgent, newChatAgent } from '../support/factories.ts';
import { useProductionSettings } from '../support/production-settings.ts';

/*
 * Every URL Parley calls later is refused when it is saved, by the egress guard's own rules
 * (shared/platform/egress/egress-rules.ts through `destinationUrl`, shared/platform/http/schemas.ts):
 * 400 naming the field, with the message the guard gives when it refuses a request. Each
 * internal spelling against each such field, through the real HTTP layer; the development
 * policy here (loopback allowed but the local runtime's own ports), production's below.
 */

const app = await startTestApp({ TWILIO_ACCOUNT_SID: '' });
const dynamo = new URL(process.env.DYNAMODB_ENDPOINT!);
const api = new URL(app.url);

const METADATA = 'Destination not allowed: 169.254.169.254 is a link-local address';
const OWN_DYNAMO = `is the local runtime's own DynamoDB Local`;

/** [url, the refusal] for http(s); ws(s) fields get the same with their own scheme. */
const INTERNAL: [string, string][] = [
  ['http://169.254.169.254/latest/meta-data/', METADATA],
  ['http://[fd00:ec2::254]/latest/meta-data/', 'Destination not allowed: [fd00:ec2::254] is a unique-local address'],
  ['http://0.0.0.0/', 'Destination not allowed: 0.0.0.0 is an unspecified address'],
  ['http://0/', 'Destination not allowed: 0.0.0.0 is an unspecified address'],
  ['http://10.0.0.1/hook', 'Destination not allowed: 10.0.0.1 is a private address'],
  ['http://172.16.5.4/hook', 'Destination not allowed: 172.16.5.4 is a private address'],
  ['https://192.168.1.1/hook', 'Destination not allowed: 192.168.1.1 is a private address'],
  ['http://100.64.0.1/hook', 'Destination not allowed: 100.64.0.1 is a carrier-grade NAT (shared) address'],
  ['http://2852039166/', METADATA],
  ['http://0251.0376.0251.0376/', METADATA],
  ['http://0xa9fea9fe/', METADATA],
  ['http://0xA9.0xFE.0xA9.0xFE/', METADATA],
  ['http://169.254.43518/', METADATA],
  ['http://[::ffff:169.254.169.254]/', 'Destination not allowed: [::ffff:a9fe:a9fe] is a link-local address'],
  ['http://[64:ff9b::169.254.169.254]/', 'Destination not allowed: [64:ff9b::a9fe:a9fe] is a link-local address'],
  ['http://[2002:a9fe:a9fe::1]/', 'Destination not allowed: [2002:a9fe:a9fe::1] is a link-local address'],
  ['http://[fe80::1]/', 'Destination not allowed: [fe80::1] is a link-local address'],
  ['http://[::]/', 'Destination not allowed: [::] is an unspecified address'],
  ['http://224.0.0.1/', 'Destination not allowed: 224.0.0.1 is a multicast address'],
  ['http://255.255.255.255/', 'Destination not allowed: 255.255.255.255 is a broadcast address'],
  [`http://localhost:${dynamo.port}/`, `Destination not allowed: localhost:${dynamo.port} resolves to the local runtime's own DynamoDB Local`],
  [`http://api.localhost:${api.port}/`, `Destination not allowed: api.localhost:${api.port} resolves to the local runtime's own API`],
  [`http://127.1:${dynamo.port}/`, `Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}`],
  [`http://[::ffff:127.0.0.1]:${dynamo.port}/`, `Destination not allowed: [::ffff:7f00:1]:${dynamo.port} ${OWN_DYNAMO}`],
  ['http://metadata.google.internal/computeMetadata/v1/', 'Destination not allowed: metadata.google.internal is a private-network name'],
  ['http://instance-data/latest/meta-data/', 'Destination not allowed: instance-data is a private-network name'],
  ['http://printer.local./', 'Destination not allowed: printer.local. is a private-network name'],
  ['https://hooks.example.com:25/', 'Destination not allowed: port 25 is not allowed'],
  ['https://user:secret@hooks.example.com/', 'Destination not allowed: URLs with credentials are not allowed; send them in a header'],
];

const PUBLIC = 'https://hooks.example.com/parley';
const ws = (url: string) => url.replace(/^http/, 'ws');

interface Field {
  name: string;
  /** The request carrying `url` in the field. */
  send: (url: string) => Promise<{ status: number; body: any }>;
  /** The field's path in a 400's message. */
  path: string;
  /** The answer when the URL is accepted. */
  accepted: number;
  websocket?: boolean;
}

const workspace = await app.newWorkspace();
const { agent, llm } = await newAgent(workspace.api);
const { chatAgent } = await newChatAgent(workspace.api);
const flow = await workspace.api.post('/create-conversation-flow', {
  body: { model_choice: { type: 'cascading', model: 'gpt-4.1' }, start_speaker: 'agent', nodes: [{ id: 'end', type: 'end' }] },
});
const number = freshNumber();
const imported = await workspace.api.post('/import-phone-number', {
  body: { phone_number: number, termination_uri: 'sip:pbx.example.com', outbound_agent_id: agent.agent_id },
});

const FIELDS: Field[] = [
  { name: 'workspace webhook_url', send: (url) => workspace.api.patch('/workspace', { body: { webhook_url: url } }), path: 'webhook_url', accepted: 200 },
  { name: 'voice agent webhook_url', send: (url) => workspace.api.patch(`/update-agent/${agent.agent_id}`, { body: { webhook_url: url } }), path: 'webhook_url', accepted: 200 },
  { name: 'chat agent webhook_url', send: (url) => workspace.api.patch(`/update-chat-agent/${chatAgent.agent_id}`, { body: { webhook_url: url } }), path: 'webhook_url', accepted: 200 },
  {
    name: 'phone number inbound_webhook_url',
    send: (url) => workspace.api.patch(`/update-phone-number/${encodeURIComponent(number)}`, { body: { inbound_webhook_url: url } }),
    path: 'inbound_webhook_url',
    accepted: 200,
  },
  {
    name: 'custom LLM llm_websocket_url',
    send: (url) => workspace.api.patch(`/update-agent/${agent.agent_id}`, { body: { response_engine: { type: 'custom-llm', llm_websocket_url: url } } }),
    path: 'response_engine.llm_websocket_url',
    accepted: 200,
    websocket: true,
  },
  {
    name: 'Retell LLM custom tool url',
    send: (url) => workspace.api.patch(`/update-retell-llm/${llm.llm_id}`, { body: { general_tools: [{ type: 'custom', name: 'lookup', description: 'Look up', url }] } }),
    path: 'general_tools.0.url',
    accepted: 200,
  },
  {
    name: 'Retell LLM state tool url',
    send: (url) => workspace.api.patch(`/update-retell-llm/${llm.llm_id}`, { body: { starting_state: 'desk', states: [{ name: 'desk', tools: [{ type: 'custom', name: 'lookup', url }] }] } }),
    path: 'states.0.tools.0.url',
    accepted: 200,
  },
  {
    name: 'Retell LLM MCP server url',
    send: (url) => workspace.api.patch(`/update-retell-llm/${llm.llm_id}`, { body: { mcps: [{ name: 'm', url }] } }),
    path: 'mcps.0.url',
    accepted: 200,
  },
  {
    name: 'conversation flow custom tool url',
    send: (url) =>
      workspace.api.patch(`/update-conversation-flow/${flow.body.conversation_flow_id}`, { body: { tools: [{ type: 'custom', name: 'lookup', tool_id: 't1', url }] } }),
    path: 'tools.0.url',
    accepted: 200,
  },
  {
    name: 'conversation flow MCP server url',
    send: (url) => workspace.api.patch(`/update-conversation-flow/${flow.body.conversation_flow_id}`, { body: { mcps: [{ name: 'm', url }] } }),
    path: 'mcps.0.url',
    accepted: 200,
  },
  {
    name: 'workflow HTTP step url',
    send: (url) => workspace.api.put(`/agents/${agent.agent_id}/workflows/post_call`, { body: { steps: [{ type: 'http', name: 'notify', url }] } }),
    path: 'steps.0.url',
    accepted: 200,
  },
  {
    name: "a web call's agent_override webhook_url",
    send: (url) => workspace.api.post('/v2/create-web-call', { body: { agent_id: agent.agent_id, agent_override: { agent: { webhook_url: url } } } }),
    path: 'agent_override.agent.webhook_url',
    accepted: 201,
  },
  {
    name: "a web call's agent_override custom tool url",
    send: (url) =>
      workspace.api.post('/v2/create-web-call', {
        body: { agent_id: agent.agent_id, agent_override: { retell_llm: { general_tools: [{ type: 'custom', name: 'lookup', url }] } } },
      }),
    path: 'agent_override.retell_llm.general_tools.0.url',
    accepted: 201,
  },
  {
    name: "a batch task's agent_override webhook_url",
    send: (url) =>
      workspace.api.post('/create-batch-call', {
        body: { from_number: number, draft: true, tasks: [{ to_number: freshNumber(), agent_override: { agent: { webhook_url: url } } }] },
      }),
    path: 'tasks.0.agent_override.agent.webhook_url',
    accepted: 201,
  },
  {
    name: 'SSO issuer',
    send: (url) => workspace.api.put('/workspace/sso', { body: { issuer: url, client_id: 'c', client_secret: 's', allowed_domains: ['example.com'] } }),
    path: 'issuer',
    accepted: 200,
  },
  {
    name: 'app tenant_url',
    send: (url) => workspace.api.post('/create-app', { body: { provider: 'zendesk', type: 'support', tenant_url: url, auth_config: { type: 'api_key', api_key: 'k' } } }),
    path: 'tenant_url',
    accepted: 201,
  },
];

describe('URLs Parley calls later, at write', () => {
  it('the fixtures exist', () => {
    expect([flow.status, imported.status]).toEqual([201, 201]);
  });

  for (const field of FIELDS) {
    it(`${field.name}: every internal spelling is refused with 400 naming the field, a public https URL is accepted`, async () => {
      const answers: [string, unknown][] = [];
      for (const [url] of INTERNAL) {
        const res = await field.send(field.websocket ? ws(url) : url);
        answers.push([url, res.body]);
      }
      expect(answers).toEqual(INTERNAL.map(([url, refusal]) => [url, { status: 400, message: `${field.path}: ${refusal}` }]));
      const res = await field.send(field.websocket ? ws(PUBLIC) : PUBLIC);
      expect(res.status, JSON.stringify(res.body)).toBe(field.accepted);
    });
  }

  it('webhook URLs are stored only when accepted: the refused ones changed nothing', async () => {
    expect((await workspace.api.get('/workspace')).body.webhook_url).toBe(PUBLIC);
    expect((await workspace.api.get(`/get-phone-number/${encodeURIComponent(number)}`)).body.inbound_webhook_url).toBe(PUBLIC);
  });

  it("an agent's webhook_url may have placeholders after a literal host, never in it", async () => {
    const send = (url: string) => workspace.api.patch(`/update-agent/${agent.agent_id}`, { body: { webhook_url: url } });
    expect((await send('https://hooks.example.com/{{agent_id}}/calls?id={{call_id}}')).status).toBe(200);
    const literalHost = 'webhook_url: Must be an http:// or https:// URL with a literal host ({{variables}} may follow it)';
    for (const url of ['https://{{host}}/hook', 'http://169.254.169.{{n}}/', 'http://hooks.example.com:{{port}}/']) {
      expect((await send(url)).body, url).toEqual({ status: 400, message: literalHost });
    }
    expect((await send('http://169.254.169.254/{{call_id}}')).body).toEqual({ status: 400, message: `webhook_url: ${METADATA}` });
  });

  it('loopback on any other port is allowed outside production, so local receivers keep working', async () => {
    const res = await workspace.api.patch('/workspace', { body: { webhook_url: 'http://127.0.0.1:4010/hooks' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect((await workspace.api.patch('/workspace', { body: { webhook_url: 'http://localhost:4010/hooks' } })).status).toBe(200);
  });
});

// Last in the file: it loads the schemas afresh as a production function does (settings
// read at load), which the running app above must not pick up.
describe('in production', () => {
  afterAll(() => vi.resetModules());

  it('loopback is refused too, under every spelling', async () => {
    const restore = useProductionSettings();
    vi.resetModules();
    const { UpdateWorkspaceBody } = await import('../../shared/account/schemas.ts');
    const { parseOrThrow } = await import('../../shared/platform/http/validation.ts');
    restore();
    const problem = (url: string) => {
      try {
        parseOrThrow(UpdateWorkspaceBody, { webhook_url: url }, 'body');
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    };
    expect(
      ['http://127.0.0.1:4010/hooks', 'http://localhost/hooks', 'http://Localhost./', 'http://app.localhost/', 'http://2130706433/', 'http://[::1]/', 'http://[::ffff:127.0.0.1]/'].map(problem),
    ).toEqual([
      'webhook_url: Destination not allowed: 127.0.0.1 is a loopback address',
      'webhook_url: Destination not allowed: localhost resolves to a loopback address',
      'webhook_url: Destination not allowed: localhost. resolves to a loopback address',
      'webhook_url: Destination not allowed: app.localhost resolves to a loopback address',
      'webhook_url: Destination not allowed: 127.0.0.1 is a loopback address',
      'webhook_url: Destination not allowed: [::1] is a loopback address',
      'webhook_url: Destination not allowed: [::ffff:7f00:1] is a loopback address',
    ]);
    expect(problem('http://169.254.169.254/')).toBe(`webhook_url: ${METADATA}`);
    expect(problem(PUBLIC)).toBeUndefined();
  });
});
