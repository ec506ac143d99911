import { randomInt } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { fakeSrvDns } from '../support/fake-dns.ts';
import { startTestApp } from '../support/app.ts';
import type { ApiClient } from '../support/http.ts';
import { newAgent as newAgentWithLlm } from '../support/factories.ts';

/*
 * Every caller of the egress guard, through the real HTTP layer on DynamoDB Local: a
 * destination the guard refuses is reported in the caller's own failure shape, and
 * nothing is sent. Also the per-workspace cap on concurrent outbound test requests.
 */

const CAP = 2;
const app = await startTestApp({ OUTBOUND_TEST_CONCURRENCY: String(CAP), TWILIO_ACCOUNT_SID: '' });
const { deliverWebhook, MAX_ATTEMPTS } = await import('../../shared/webhooks/webhooks.ts');
const { probeSipUri } = await import('../../shared/numbers/connection-tests/sip-options.ts');
const { ApiError } = await import('../../shared/platform/errors.ts');
const { acquireOutboundSlot, OUTBOUND_SLOT_LEASE_MS } = await import('../../shared/platform/egress/outbound-slots.ts');

const dynamo = new URL(process.env.DYNAMODB_ENDPOINT!);
const OWN_DYNAMO = "is the local runtime's own DynamoDB Local";
const METADATA = 'Destination not allowed: 169.254.169.254 is a link-local address';

const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  await Promise.all(closers.map((close) => close()));
});

async function httpServer(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const hits: IncomingMessage[] = [];
  const server: Server = createServer((req, res) => {
    hits.push(req);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

const newAgent = async (api: ApiClient = app.api, llm: Record<string, unknown> = {}) => (await newAgentWithLlm(api, { llm })).agent as { agent_id: string };

/** The request that read every workspace's items from DynamoDB Local. */
const scanStep = (name: string, url: string) => ({
  type: 'http',
  name,
  method: 'POST',
  url,
  headers: {
    'content-type': 'application/x-amz-json-1.0',
    'x-amz-target': 'DynamoDB_20120810.Scan',
    authorization:
      'AWS4-HMAC-SHA256 Credential=local/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-target, Signature=00',
  },
  body: JSON.stringify({ TableName: process.env.TABLE_NAME }),
  outputs: { [`${name}_items`]: '$body' },
  continue_on_error: true,
});

describe('workflow HTTP steps', () => {
  const targets = (): [string, string][] => [
    [`${dynamo.origin}/`, `Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}`],
    [`http://localhost:${dynamo.port}/`, `Destination not allowed: localhost:${dynamo.port} resolves to the local runtime's own DynamoDB Local`],
    [`http://[::1]:${dynamo.port}/`, `Destination not allowed: [::1]:${dynamo.port} ${OWN_DYNAMO}`],
    [`http://[::ffff:127.0.0.1]:${dynamo.port}/`, `Destination not allowed: [::ffff:7f00:1]:${dynamo.port} ${OWN_DYNAMO}`],
    [`http://2130706433:${dynamo.port}/`, `Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}`],
    [`http://127.0.0.2:${dynamo.port}/`, `Destination not allowed: 127.0.0.2:${dynamo.port} ${OWN_DYNAMO}`],
    [`http://0.0.0.0:${dynamo.port}/`, 'Destination not allowed: 0.0.0.0 is an unspecified address'],
    ['http://169.254.169.254/latest/meta-data/', METADATA],
    ['http://10.0.0.1/', 'Destination not allowed: 10.0.0.1 is a private address'],
  ];

  it('refuse the local DynamoDB Local endpoint (the Scan exploit) under every spelling when saved or tested: 400 naming each step', async () => {
    const agent = await newAgent();
    const steps = targets().map(([url], i) => scanStep(`scan${i}`, url));
    const message = targets()
      .map(([, error], i) => `workflow.steps.${i}.url: ${error}`)
      .join('; ');
    const tested = await app.api.post(`/agents/${agent.agent_id}/workflows/pre_call/test`, { body: { variables: {}, workflow: { steps } } });
    expect(tested.body).toEqual({ status: 400, message });
    const saved = await app.api.put(`/agents/${agent.agent_id}/workflows/pre_call`, { body: { steps } });
    expect(saved.body).toEqual({ status: 400, message: message.replaceAll('workflow.steps.', 'steps.') });
    expect((await app.api.get(`/agents/${agent.agent_id}/workflows`)).body).toEqual([]);
    const runs = (await app.api.get(`/agents/${agent.agent_id}/workflow-runs`)).body;
    expect(JSON.stringify(runs)).not.toContain('Items');
  });

  it('a step that reaches the runner anyway (saved before the rule) fails with the refusal and reads nothing', async () => {
    const { executeWorkflow } = await import('../../shared/agent-tools/workflows.ts');
    const steps = targets().map(([url], i) => ({ ...scanStep(`scan${i}`, url), method: 'POST' as const, timeout_ms: 5000 }));
    const run = await executeWorkflow('agent_000000000000000000000001', 'pre_call', steps as unknown as Parameters<typeof executeWorkflow>[2], {}, { trigger: 'test', budgetMs: 20_000, keepExcerpts: true });
    expect(run).toMatchObject({ status: 'failed', outputs: {} });
    expect(run.steps).toEqual(
      targets().map(([, error], i) => ({
        name: `scan${i}`,
        type: 'http',
        status: 'failed',
        duration_ms: expect.any(Number),
        outputs: [],
        request: expect.objectContaining({ method: 'POST' }),
        error,
      })),
    );
    expect(JSON.stringify(run)).not.toContain('Items');
  });
});

describe('the local API itself', () => {
  it('is refused on the port it learned only when it listened (PORT=0), so a step cannot call the API with another key', async () => {
    const api = new URL(app.url);
    const ws = await app.newWorkspace();
    const res = await ws.api.post('/workspace/test-webhook', { body: { url: `${app.url}/workspace` } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ success: false, status: null, error: `Destination not allowed: 127.0.0.1:${api.port} is the local runtime's own API` });
  });
});

describe('webhooks', () => {
  it('test-webhook reports a refused destination as its failure and records the attempt', async () => {
    const ws = await app.newWorkspace();
    for (const [url, error] of [
      ['http://169.254.169.254/hook', METADATA],
      [`http://localhost:${dynamo.port}/`, `Destination not allowed: localhost:${dynamo.port} resolves to the local runtime's own DynamoDB Local`],
      ['http://user:secret@example.com/hook', 'Destination not allowed: URLs with credentials are not allowed; send them in a header'],
    ]) {
      const res = await ws.api.post('/workspace/test-webhook', { body: { url } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toEqual({ success: false, status: null, latency_ms: expect.any(Number), error });
    }
    const log = (await ws.api.get('/webhook-deliveries')).body;
    expect(log.map((entry: { error: string }) => entry.error)).toContain(METADATA);
  });

  it('delivery refuses a destination the guard refuses, recorded as a failed attempt', async () => {
    const ws = await app.newWorkspace();
    const sent: object[] = [];
    await deliverWebhook(
      {
        delivery_id: 'webhook_delivery_000000000000000000000077',
        workspace_id: ws.workspace_id,
        url: `${dynamo.origin}/`,
        event: 'call_started',
        body: '{"event":"call_started"}',
        attempt: MAX_ATTEMPTS,
      },
      { queue: { send: async (message) => void sent.push(message) } },
    );
    const log = (await ws.api.get('/webhook-deliveries')).body;
    expect(log).toEqual([
      expect.objectContaining({
        success: false,
        status: null,
        error: `Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}`,
        will_retry: false,
      }),
    ]);
    expect(sent).toEqual([]);
  });
});

describe('MCP servers', () => {
  it('are refused when the LLM is saved: 400 naming the field', async () => {
    const res = await app.api.post('/create-retell-llm', {
      body: {
        mcps: [
          { name: 'metadata', url: 'http://169.254.169.254/mcp' },
          { name: 'store', url: `${dynamo.origin}/mcp` },
        ],
      },
    });
    expect(res.body).toEqual({
      status: 400,
      message: `mcps.0.url: ${METADATA}; mcps.1.url: Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}`,
    });
  });

  it('a server that reaches the tool listing anyway (saved before the rule) answers 400 naming it', async () => {
    const { listServerTools } = await import('../../shared/agent-tools/mcp-tools.ts');
    const refusal = (server: { name: string; url: string }) => listServerTools(server).then(() => undefined, (error: unknown) => error);
    expect(await refusal({ name: 'metadata', url: 'http://169.254.169.254/mcp' })).toMatchObject({
      status: 400,
      message: `MCP server "metadata": ${METADATA}`,
    });
    expect(await refusal({ name: 'store', url: `${dynamo.origin}/mcp` })).toMatchObject({
      status: 400,
      message: `MCP server "store": Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}`,
    });
  });
});

describe('custom LLM connection test', () => {
  it('reports a refused WebSocket destination as its failure', async () => {
    for (const [url, error] of [
      ['ws://169.254.169.254/llm', METADATA],
      [`ws://127.0.0.1:${dynamo.port}/llm`, `Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}`],
      ['wss://[fd00:ec2::254]/llm', 'Destination not allowed: [fd00:ec2::254] is a unique-local address'],
    ]) {
      const res = await app.api.post('/test-custom-llm-connection', { body: { llm_websocket_url: url } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ success: false, latency_ms: null, error });
    }
  });
});

describe('SIP connection tests', () => {
  it('answer 400 for a refused termination URI, over every transport', async () => {
    for (const [uri, message] of [
      ['sip:169.254.169.254', METADATA],
      ['sip:169.254.169.254;transport=udp', METADATA],
      ['sips:169.254.169.254', METADATA],
      [`sip:127.0.0.1:${dynamo.port}`, `Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}`],
      [`sip:localhost:${dynamo.port};transport=udp`, `Destination not allowed: localhost:${dynamo.port} resolves to the local runtime's own DynamoDB Local`],
      ['sip:[fd00:ec2::254]:5060', 'Destination not allowed: [fd00:ec2::254] is a unique-local address'],
      ['sip:192.168.0.10', 'Destination not allowed: 192.168.0.10 is a private address'],
    ]) {
      const res = await app.api.post('/test-sip-connection', { body: { termination_uri: uri, timeout_ms: 2000 } });
      expect(res.body, uri).toEqual({ status: 400, message });
    }
  });

  it('refuse an internal termination URI when a number is imported or updated and when a SIP trunk is saved (400 naming the field)', async () => {
    const phone = `+1415${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`;
    const cases = [
      ['sip:169.254.169.254', '169.254.169.254 is a link-local address'],
      ['169.254.169.254:5060', '169.254.169.254 is a link-local address'],
      ['sips:[::ffff:169.254.169.254]', '[::ffff:169.254.169.254] is a link-local address'],
      ['sip:10.0.0.7;transport=udp', '10.0.0.7 is a private address'],
      ['sip:pbx.corp.internal', 'pbx.corp.internal is a private-network name'],
      [`sip:localhost:${dynamo.port}`, `localhost:${dynamo.port} resolves to the local runtime's own DynamoDB Local`],
    ] as const;
    for (const [uri, refusal] of cases) {
      const expected = { status: 400, message: `termination_uri: Destination not allowed: ${refusal}` };
      expect((await app.api.post('/import-phone-number', { body: { phone_number: phone, termination_uri: uri } })).body, uri).toEqual(expected);
      expect((await app.api.post('/create-sip-trunk', { body: { name: 'Inside', termination_uri: uri } })).body, uri).toEqual(expected);
    }
    expect((await app.api.post('/import-phone-number', { body: { phone_number: phone, termination_uri: 'sip:trunk.example.com' } })).status).toBe(201);
    const update = await app.api.patch(`/update-phone-number/${encodeURIComponent(phone)}`, { body: { termination_uri: 'sip:192.168.1.1' } });
    expect(update.body).toEqual({ status: 400, message: 'termination_uri: Destination not allowed: 192.168.1.1 is a private address' });
  });

  it('check the SRV target and its addresses too', async () => {
    const { server: dns } = await fakeSrvDns({
      '_sip._tcp.store.parley.test': [10, 5, Number(dynamo.port), '127.0.0.1'],
      '_sip._tcp.inside.parley.test': [10, 5, 5060, 'pbx.inside.parley.test'],
    });
    const refusal = (uri: string, resolver?: () => Promise<{ address: string; family: 4 | 6 }[]>) =>
      probeSipUri(uri, { timeoutMs: 3000, dnsServers: [dns], resolver }).then(
        () => undefined,
        (error: unknown) => error,
      );
    const store = await refusal('sip:store.parley.test');
    expect(store).toBeInstanceOf(ApiError);
    expect(store).toMatchObject({ status: 400, message: `Destination not allowed: 127.0.0.1:${dynamo.port} ${OWN_DYNAMO}` });
    const inside = await refusal('sip:inside.parley.test', async () => [{ address: '10.9.8.7', family: 4 }]);
    expect(inside).toMatchObject({ status: 400, message: 'Destination not allowed: pbx.inside.parley.test resolves to a private address' });
  });

  it('the phone-number connection test answers 400 for a refused termination URI (a number saved before the URI was checked on save)', async () => {
    const phone = `+1415${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`;
    const imported = await app.api.post('/import-phone-number', {
      body: { phone_number: phone, termination_uri: 'sip:trunk.example.com', sip_trunk_auth_username: 'alice', sip_trunk_auth_password: 's3cret-pass' },
    });
    expect(imported.status, JSON.stringify(imported.body)).toBe(201);
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    const { db, tableName } = await import('../../shared/platform/store/db.ts');
    const { keys } = await import('../../shared/platform/store/keys.ts');
    await db.send(
      new UpdateCommand({
        TableName: tableName,
        Key: keys.phoneNumber(app.workspace.workspace_id, phone),
        UpdateExpression: 'SET termination_uri = :uri',
        ExpressionAttributeValues: { ':uri': 'sip:169.254.169.254' },
      }),
    );
    const res = await app.api.post(`/test-phone-number-connection/${encodeURIComponent(phone)}`, { body: { timeout_ms: 2000 } });
    expect(res.body).toEqual({ status: 400, message: METADATA });
  });
});

describe('concurrent outbound test requests per workspace', () => {
  it(`answers 429 with retry-after past ${CAP} in flight, for every slow test route, and frees the slots after`, async () => {
    const ws = await app.newWorkspace();
    const held: ServerResponse[] = [];
    let arrived: () => void = () => undefined;
    const slow = await httpServer((_req, res) => {
      held.push(res);
      if (held.length === CAP) arrived();
    });
    const allArrived = new Promise<void>((resolve) => (arrived = resolve));
    const inFlight = Array.from({ length: CAP }, () => ws.api.post('/workspace/test-webhook', { body: { url: `${slow.url}/hook` } }));
    await allArrived;

    const agent = await newAgent(ws.api, { mcps: [{ name: 'm', url: `${slow.url}/mcp` }] });
    const over = [
      await ws.api.post('/workspace/test-webhook', { body: { url: `${slow.url}/hook` } }),
      await ws.api.post(`/agents/${agent.agent_id}/workflows/pre_call/test`, {
        body: { workflow: { steps: [{ type: 'http', name: 'x', url: `${slow.url}/x`, outputs: {} }] } },
      }),
      await ws.api.get(`/get-mcp-tools/${agent.agent_id}`),
      await ws.api.post('/test-custom-llm-connection', { body: { llm_websocket_url: `ws${slow.url.slice(4)}/llm` } }),
      await ws.api.post('/test-sip-connection', { body: { termination_uri: 'sip:127.0.0.1:5060' } }),
    ];
    for (const res of over) {
      expect(res.status, JSON.stringify(res.body)).toBe(429);
      expect(res.body).toEqual({ status: 429, message: expect.stringMatching(/^Outbound test request limit reached: 2 at a time per workspace .*Retry in [1-5]s\.$/) });
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(5);
    }
    // Nothing of the refused requests reached the receiver.
    expect(slow.hits).toHaveLength(CAP);

    // Another workspace has its own slots.
    const other = await app.newWorkspace();
    const quick = await httpServer((_req, res) => res.end('ok'));
    expect((await other.api.post('/workspace/test-webhook', { body: { url: quick.url } })).body).toMatchObject({ success: true, status: 200 });

    for (const res of held) res.writeHead(200).end('ok');
    for (const res of await Promise.all(inFlight)) expect(res.body).toMatchObject({ success: true, status: 200 });

    // Slots are released when the requests end: the next ones pass.
    for (let i = 0; i < CAP + 1; i++) {
      expect((await ws.api.post('/workspace/test-webhook', { body: { url: quick.url } })).body).toMatchObject({ success: true });
    }
  });
});

describe('outbound slots', () => {
  it('come back when the lease of a holder that never released ends, and a late release frees only its own', async () => {
    const workspace = `ws_slots_${randomInt(1e9)}`;
    let now = 1_900_000_000_000;
    const options = { cap: 1, now: () => now };
    const crashed = await acquireOutboundSlot(workspace, options);
    await expect(acquireOutboundSlot(workspace, options)).rejects.toMatchObject({ status: 429, headers: { 'retry-after': '5' } });

    now += OUTBOUND_SLOT_LEASE_MS;
    const next = await acquireOutboundSlot(workspace, options);
    expect(next.index).toBe(crashed.index);
    // The first holder's late release must not free the slot its successor holds.
    await crashed.release();
    await expect(acquireOutboundSlot(workspace, options)).rejects.toMatchObject({ status: 429 });
    await next.release();
    await (await acquireOutboundSlot(workspace, options)).release();
  });
});
