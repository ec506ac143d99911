/**
 * Measures every Lambda function of the stack as it would run in AWS, to size its memory and
 * timeout (docs/operations.md, "Function sizes"). For each function:
 *
 * 1. builds its bundle as CDK does (bench/bundles.ts buildBundle, the esbuild options read
 *    from lib/parley-function.ts);
 * 2. starts it cold in a fresh `node` process (no --max-old-space-size, only the settings a
 *    Lambda gets) against DynamoDB Local, with the run's local stand-ins: an SQS stand-in
 *    that records what the functions queue (the jobs are then fed those very messages), and
 *    a receiver for webhooks;
 * 3. invokes its handler over a representative mix, repeated `--rounds` times: HTTP
 *    functions a few of their routes' typical requests (route keys checked against the
 *    route table, authenticated with a workspace created for the run), jobs their typical
 *    messages (a batch pass over pending tasks, a webhook delivery, a contacts import chunk,
 *    the scheduled passes);
 * 4. records the cold start's init (the bundle's import), the first invocation, p50/p99 of
 *    the warm invocations and the process's peak RSS (process.resourceUsage().maxRSS).
 *
 * Prints a markdown table and writes bench/out/measure-functions.json. Not a test and not
 * in CI: `npm run measure:functions -- [--rounds 20] [--only agents,calls]`. Needs Java 17+
 * (DynamoDB Local). Uses the machine as it is: say what else was running when you quote it.
 */
import { execSync, spawn } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { buildBundle, bundleName, functionEntries } from '../bench/bundles.ts';
import { readCdkBundling } from '../bench/cdk-bundling.ts';
import { percentile } from '../bench/stats.ts';
import { apiGatewayEvent, lambdaContext } from '../test/support/events.ts';
import { startS3Server } from '../test/support/s3-server.ts';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '20' },
    only: { type: 'string' },
    tasks: { type: 'string', default: '200' },
  },
});
const ROUNDS = Math.max(2, Number(args.rounds));
const ONLY = args.only ? new Set(args.only.split(',')) : undefined;
const PENDING_TASKS = Number(args.tasks);
const OUT_DIR = resolve('bench/out/measure-functions');

// ---------------------------------------------------------------------------------------------
// Local stand-ins: SQS (records messages by queue) and a webhook receiver.

interface RecordedMessage {
  queue: string;
  body: string;
}

const QUEUES = {
  WEBHOOK_QUEUE_URL: 'webhooks',
  CALL_STEPS_QUEUE_URL: 'call-steps',
  CONTACT_JOBS_QUEUE_URL: 'contact-jobs',
  EXPORT_JOBS_QUEUE_URL: 'export-jobs',
  INTEGRATION_JOBS_QUEUE_URL: 'integration-jobs',
  KB_JOBS_QUEUE_URL: 'kb-jobs',
} as const;

/** SQS's JSON protocol, SendMessage only (what shared/platform/aws/queue.ts sends), with the MD5 the SDK checks. */
async function startFakeSqs(messages: RecordedMessage[]): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      const input = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as { QueueUrl?: string; MessageBody?: string };
      if (target !== 'AmazonSQS.SendMessage' || !input.QueueUrl || input.MessageBody === undefined) {
        res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' }).end(JSON.stringify({ __type: 'InvalidAction', message: target }));
        return;
      }
      messages.push({ queue: input.QueueUrl.split('/').pop()!, body: input.MessageBody });
      res.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' }).end(
        JSON.stringify({ MessageId: randomUUID(), MD5OfMessageBody: createHash('md5').update(input.MessageBody).digest('hex') }),
      );
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

async function startReceiver(): Promise<{ url: string; server: Server; count: () => number }> {
  let count = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, server, count: () => count };
}

/** API Gateway's management API (`@connections`): what the WebSocket monitor posts to and closes. */
async function startManagementApi(): Promise<{ url: string; server: Server; posts: () => number }> {
  let posts = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method === 'POST' && req.url?.startsWith('/@connections/')) posts += 1;
      res.writeHead(req.method === 'DELETE' ? 204 : 200).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, posts: () => posts };
}

// ---------------------------------------------------------------------------------------------
// The child: a cold start of one bundle, then the mix. Built-ins only, so it loads nothing but the bundle.

const CHILD = `
import { readFileSync, writeFileSync } from 'node:fs';
const [bundle, eventsFile, outFile, timeoutMs] = process.argv.slice(1);
const events = JSON.parse(readFileSync(eventsFile, 'utf8'));
const started = performance.now();
const { handler } = await import(bundle);
const initMs = performance.now() - started;
const rssAfterInitMb = process.memoryUsage().rss / 1048576;
const durations = [];
const outcomes = {};
for (const event of events) {
  const context = {
    callbackWaitsForEmptyEventLoop: false, functionName: 'measure', functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:us-east-1:000000000000:function:measure', memoryLimitInMB: '10240',
    awsRequestId: crypto.randomUUID(), logGroupName: '/aws/lambda/measure', logStreamName: 'measure',
    getRemainingTimeInMillis: () => Number(timeoutMs) - (performance.now() - t0),
    done() {}, fail() {}, succeed() {},
  };
  const t0 = performance.now();
  let outcome;
  try {
    const result = await handler(event, context);
    outcome = result && typeof result === 'object' && 'statusCode' in result ? String(result.statusCode)
      : result && typeof result === 'object' && result.policyDocument ? String(result.policyDocument.Statement?.[0]?.Effect).toLowerCase()
      : result && typeof result === 'object' && Array.isArray(result.batchItemFailures) ? (result.batchItemFailures.length ? 'item-failed' : 'ok') : 'ok';
  } catch (error) {
    outcome = 'threw: ' + String(error && error.message || error).slice(0, 80);
  }
  durations.push(performance.now() - t0);
  outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
}
writeFileSync(outFile, JSON.stringify({
  processToReadyMs: started + initMs, initMs, rssAfterInitMb, durations, outcomes,
  peakRssMb: process.resourceUsage().maxRSS / 1024,
}));
process.exit(0);
`;

interface ChildResult {
  initMs: number;
  processToReadyMs: number;
  rssAfterInitMb: number;
  durations: number[];
  outcomes: Record<string, number>;
  peakRssMb: number;
}

function runChild(bundle: string, events: unknown[], env: NodeJS.ProcessEnv, timeoutSeconds: number, work: string): Promise<ChildResult> {
  const eventsFile = join(work, `events-${randomUUID()}.json`);
  const outFile = join(work, `out-${randomUUID()}.json`);
  writeFileSync(eventsFile, JSON.stringify(events));
  return new Promise((done, fail) => {
    const child = spawn(
      process.execPath,
      ['--enable-source-maps', '--input-type=module', '-e', CHILD, pathToFileURL(bundle).href, eventsFile, outFile, String(timeoutSeconds * 1000)],
      { env, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
    child.once('error', fail);
    child.once('exit', (code) => {
      if (code !== 0) return fail(new Error(`exit ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ').slice(0, 300)}`));
      try {
        done(JSON.parse(readFileSync(outFile, 'utf8')) as ChildResult);
      } catch (error) {
        fail(error instanceof Error ? error : new Error(String(error)));
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------

const dataDir = mkdtempSync(join(tmpdir(), 'parley-measure-functions-'));
const messages: RecordedMessage[] = [];
const sqs = await startFakeSqs(messages);
const receiver = await startReceiver();
const s3 = await startS3Server();
const managementApi = await startManagementApi();
const queueUrls = Object.fromEntries(Object.entries(QUEUES).map(([setting, name]) => [setting, `${sqs.url}/000000000000/${name}`]));
const SETTINGS: Record<string, string> = {
  TABLE_NAME: 'parley-measure',
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  PARLEY_ENV: 'test',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  // Many requests from one key and one address: the measurement is not about the limits.
  RATE_LIMIT_PER_KEY: '100000',
  RATE_LIMIT_PER_IP: '10000000',
  // One batch pass per invocation (the minute's other passes only repeat it).
  BATCH_TICK_MS: '60000',
  DATA_DIR: dataDir,
  ...queueUrls,
  // The SDK's own endpoint settings: SQS and S3 (path-style, as the endpoint is an IP) go to the stand-ins.
  AWS_ENDPOINT_URL_SQS: sqs.url,
  AWS_ENDPOINT_URL_S3: s3.url,
  RECORDINGS_BUCKET: 'parley-measure-recordings',
  KNOWLEDGE_BASE_BUCKET: 'parley-measure-knowledge-bases',
};
Object.assign(process.env, SETTINGS);
const { startDynamoDbLocal } = await import('../local/dynamodb.ts');
const dynamoDbLocal = await startDynamoDbLocal();
process.env.DYNAMODB_ENDPOINT = dynamoDbLocal.endpoint;
/**
 * What Lambda sets in a function's environment: with it the bundle takes Lambda's path (the
 * tracer beside the bundle loaded on the first invocation and its subsegments built, the
 * metrics written to standard output). The X-Ray daemon's address has no listener: the
 * segments are UDP datagrams sent and lost, as cheap as in Lambda.
 */
const lambdaEnv = (name: string): NodeJS.ProcessEnv => ({
  AWS_LAMBDA_FUNCTION_NAME: `parley-measure-${name}`,
  AWS_LAMBDA_FUNCTION_VERSION: '1',
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs22.x',
  _X_AMZN_TRACE_ID: 'Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1',
  AWS_XRAY_DAEMON_ADDRESS: '127.0.0.1:2000',
  AWS_XRAY_CONTEXT_MISSING: 'IGNORE_ERROR',
  // The WebSocket monitor posts to the management API stand-in (in AWS, the WebSocket API's own endpoint).
  ...(name === 'live-ws' ? { LIVE_WS_MANAGEMENT_URL: managementApi.url } : {}),
});
const childEnv: NodeJS.ProcessEnv = { PATH: process.env.PATH, ...SETTINGS, DYNAMODB_ENDPOINT: dynamoDbLocal.endpoint };

const cleanup = async () => {
  await dynamoDbLocal.stop();
  sqs.server.close();
  receiver.server.close();
  managementApi.server.close();
  await s3.close();
  rmSync(dataDir, { recursive: true, force: true });
};

try {
  // Imported once the settings are in place (they read them at load), as lib/ does: CDK's lists of what ships beside each bundle.
  const [{ ensureTable }, { dynamo, tableName }, { createWorkspace }, { servedRoutes }, { JOBS }, { API_TIMEOUT_CEILING_SECONDS, functionNamed }, { besideBundleCommands }] = await Promise.all([
    import('../shared/platform/store/create-table.ts'),
    import('../shared/platform/store/db.ts'),
    import('../shared/account/workspaces.ts'),
    import('../shared/route-table.ts'),
    import('../shared/jobs.ts'),
    import('../lib/functions.ts'),
    import('../lib/parley-function.ts'),
  ]);
  await ensureTable(dynamo, tableName);
  const workspace = await createWorkspace('Measure functions');
  const authorization = `Bearer ${workspace.api_key}`;
  const routes = new Map(servedRoutes().map((route) => [route.key, route]));

  /** An API Gateway event for a route of the table (its key must exist and belong to `domain`). */
  const request = (
    domain: string,
    key: string,
    options: { params?: Record<string, string>; query?: Record<string, string>; body?: unknown; authorization?: string; cookie?: string } = {},
  ) => {
    const route = routes.get(key);
    if (!route) throw new Error(`no route ${key} in the route table`);
    if (route.domain !== domain) throw new Error(`${key} belongs to ${route.domain}, not ${domain}`);
    const path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(options.params?.[name] ?? `missing-${name}`));
    return apiGatewayEvent({
      routeKey: key,
      path,
      headers: {
        authorization: options.authorization ?? authorization,
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(options.cookie ? { cookie: options.cookie } : {}),
      },
      pathParameters: options.params,
      queryStringParameters: options.query,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
  };

  // Seeding runs the same handlers in this process (queued messages go to the SQS stand-in too).
  const handlers = new Map<string, (event: unknown, context: unknown) => Promise<{ statusCode: number; body: string; cookies?: string[] }>>();
  const invoke = async (domain: string, event: unknown) => {
    if (!handlers.has(domain)) handlers.set(domain, ((await import(`../functions/${domain}.ts`)) as { handler: never }).handler);
    return handlers.get(domain)!(event, lambdaContext());
  };
  const seed = async (domain: string, key: string, options: Parameters<typeof request>[2] = {}) => {
    const result = await invoke(domain, request(domain, key, options));
    if (result.statusCode >= 300) throw new Error(`seeding ${key} answered ${result.statusCode}: ${result.body.slice(0, 300)}`);
    return JSON.parse(result.body || '{}') as Record<string, string>;
  };

  const sqsEvent = (bodies: string[]) => ({
    Records: bodies.map((body) => ({
      messageId: randomUUID(),
      receiptHandle: randomUUID(),
      body,
      attributes: { ApproximateReceiveCount: '1', SentTimestamp: String(Date.now()), SenderId: 'measure', ApproximateFirstReceiveTimestamp: String(Date.now()) },
      messageAttributes: {},
      md5OfBody: createHash('md5').update(body).digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:measure',
      awsRegion: 'us-east-1',
    })),
  });
  /** A seed that fails leaves its mix's requests to answer 4xx (visible in the Outcomes column), not the run. */
  const failed = (error: Error): Record<string, string> => {
    console.error(`  ${error.message}`);
    return {};
  };
  console.error('Seeding…');
  const llm = await seed('agents', 'POST /create-retell-llm', { body: { general_prompt: 'You are a measurement.' } });
  const agentBody = { agent_name: 'Measure agent', voice_id: '11labs-Adrian', webhook_url: receiver.url, response_engine: { type: 'retell-llm', llm_id: llm.llm_id } };
  const agent = await seed('agents', 'POST /create-agent', { body: agentBody });
  const flowBody = {
    start_speaker: 'agent',
    model_choice: { type: 'cascading', model: 'gpt-4.1' },
    nodes: [{ id: 'start', type: 'conversation', instruction: { type: 'prompt', text: 'Greet the caller.' } }],
    start_node_id: 'start',
  };
  const chatAgentBody = { response_engine: { type: 'retell-llm', llm_id: llm.llm_id } };
  const chatAgent = await seed('chat-agents', 'POST /create-chat-agent', { body: chatAgentBody }).catch(failed);
  const number = await seed('numbers', 'POST /import-phone-number', {
    body: { phone_number: '+14155550199', termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }] },
  }).catch(failed);
  await seed('account', 'PATCH /workspace/settings', { body: { webhook_url: receiver.url } }).catch((error: Error) => console.error(`  ${error.message}`));
  const contact = await seed('contacts', 'POST /create-contact', { body: { phone_number: '+14155550100', name: 'Measure' } }).catch(failed);
  const csv = ['phone_number,name', ...Array.from({ length: 500 }, (_, i) => `+1415555${String(1000 + i).padStart(4, '0')},Contact ${i}`)].join('\n');
  const tasks = Array.from({ length: PENDING_TASKS }, (_, i) => ({ to_number: `+1415556${String(i).padStart(4, '0')}` }));
  const batch = await seed('batches', 'POST /create-batch-call', {
    body: { name: 'Measure batch', from_number: number.phone_number ?? '+14155550199', tasks, agent_id: agent.agent_id },
  }).catch(failed);
  const call = await seed('calls', 'POST /v2/create-web-call', { body: { agent_id: agent.agent_id ?? 'missing' } }).catch(failed);
  const chat = await seed('chats', 'POST /create-chat', { body: { agent_id: chatAgent.agent_id ?? chatAgent.chat_agent_id } }).catch(failed);
  const kb = await seed('knowledge-bases', 'POST /create-knowledge-base', {
    body: { knowledge_base_name: 'Measure', knowledge_base_texts: [{ title: 'Hours', text: 'We open at nine and close at five, Monday to Friday.' }] },
  }).catch(failed);

  /**
   * The CRM side (integration-jobs): per round a workspace of its own (a sync job runs one
   * at a time per workspace) with the built-in mock Salesforce connected through the OAuth
   * routes, 25 contacts, and a sandbox phone call run to its end by the call-steps handler
   * here, whose analysis queues the call's CRM push; then a sync job started. The job's mix
   * is each workspace's first sync step (a page of contacts pushed) and its call's push.
   */
  const crmWorkspaceIds: string[] = [];
  const crmWorkspaces = async () => {
    const callSteps = async (body: string) => invoke('call-steps', sqsEvent([body]));
    for (let round = 0; round < ROUNDS; round++) {
      const ws = await createWorkspace(`Measure CRM ${round}`);
      crmWorkspaceIds.push(ws.workspace_id);
      const auth = `Bearer ${ws.api_key}`;
      const wsSeed = (domain: string, key: string, options: Parameters<typeof request>[2] = {}) => seed(domain, key, { ...options, authorization: auth });
      const start = await invoke('integrations', request('integrations', 'POST /oauth/start', { body: { target: 'crm', provider: 'salesforce' }, authorization: auth }));
      if (start.statusCode !== 200) throw new Error(`seeding POST /oauth/start answered ${start.statusCode}: ${start.body.slice(0, 300)}`);
      const started = JSON.parse(start.body) as Record<string, string>;
      // The flow's binding cookie (name=value), which the callback needs as the starting browser's.
      const flowCookie = start.cookies?.[0]?.split(';', 1)[0];
      const authorizeUrl = new URL(started.authorize_url!, 'https://api.parley.test');
      const page = await invoke('integrations', request('integrations', 'GET /oauth/mock/authorize', { query: Object.fromEntries(authorizeUrl.searchParams) }));
      const approve = /id="approve" href="([^"]+)"/.exec(page.body)?.[1]?.replaceAll('&amp;', '&');
      if (!approve) throw new Error(`the mock provider's page has no approve link (${page.statusCode})`);
      const callback = await invoke('integrations', request('integrations', 'GET /oauth/callback', { query: Object.fromEntries(new URL(approve, 'https://api.parley.test').searchParams), cookie: flowCookie }));
      if (callback.statusCode !== 302) throw new Error(`the OAuth callback answered ${callback.statusCode}: ${callback.body.slice(0, 200)}`);
      const contactsCsv = ['phone_number,first_name', ...Array.from({ length: 25 }, (_, i) => `+1415557${String(round * 100 + i).padStart(4, '0')},Lead ${i}`)].join('\n');
      await wsSeed('contacts', 'POST /import-contacts', { body: { csv: contactsCsv } });
      const wsLlm = await wsSeed('agents', 'POST /create-retell-llm', { body: { general_prompt: 'You are a measurement.' } });
      const wsAgent = await wsSeed('agents', 'POST /create-agent', { body: { ...agentBody, response_engine: { type: 'retell-llm', llm_id: wsLlm.llm_id } } });
      const from = `+1415558${String(round).padStart(4, '0')}`;
      await wsSeed('numbers', 'POST /import-phone-number', {
        body: { phone_number: from, termination_uri: 'sip:trunk.example.com', outbound_agents: [{ agent_id: wsAgent.agent_id, weight: 1 }] },
      });
      const mark = messages.length;
      const dialled = await wsSeed('calls', 'POST /v2/create-phone-call', {
        body: { from_number: from, to_number: `+1415557${String(round * 100).padStart(4, '0')}`, metadata: { sandbox_call_ms: 0, sandbox_user_says: ['Hello?', 'I want the gold plan'] } },
      });
      // The call's steps, run here as SQS would hand them over, until its analysis queued the CRM push.
      for (let pass = 0; pass < 200 && !messages.slice(mark).some((m) => m.queue === 'integration-jobs' && m.body.includes(dialled.call_id!)); pass++) {
        const steps = messages.filter((m, index) => index >= mark && m.queue === 'call-steps');
        for (const step of steps) messages.splice(messages.indexOf(step), 1);
        if (steps.length === 0) await new Promise((done) => setTimeout(done, 200));
        for (const step of steps) await callSteps(step.body);
      }
      for (const other of messages.filter((m, index) => index >= mark && m.queue !== 'integration-jobs')) messages.splice(messages.indexOf(other), 1);
      await wsSeed('integrations', 'POST /run-crm-sync-job', { body: {} });
    }
  };
  await crmWorkspaces().catch(failed);

  /** Each HTTP function's mix: reads and writes a client typically sends it. */
  const httpMix: Record<string, () => unknown[]> = {
    account: () => [request('account', 'GET /get-api-key-info'), request('account', 'GET /workspace'), request('account', 'GET /api-keys'), request('account', 'GET /audit-log')],
    meta: () => [request('meta', 'GET /'), request('meta', 'GET /openapi.json'), request('meta', 'GET /docs')],
    agents: () => [
      request('agents', 'POST /create-agent', { body: agentBody }),
      request('agents', 'GET /get-agent/{agent_id}', { params: { agent_id: agent.agent_id ?? 'missing' } }),
      request('agents', 'GET /list-agents'),
      request('agents', 'PATCH /update-agent/{agent_id}', { params: { agent_id: agent.agent_id ?? 'missing' }, body: { agent_name: 'Measure agent 2' } }),
      request('agents', 'GET /get-retell-llm/{llm_id}', { params: { llm_id: llm.llm_id ?? 'missing' } }),
    ],
    'agent-tools': () => [
      request('agent-tools', 'GET /agent-estimates/{agent_id}', { params: { agent_id: agent.agent_id ?? 'missing' } }),
      request('agent-tools', 'GET /agents/{agent_id}/share-links', { params: { agent_id: agent.agent_id ?? 'missing' } }),
      request('agent-tools', 'GET /agents/{agent_id}/workflows', { params: { agent_id: agent.agent_id ?? 'missing' } }),
    ],
    flows: () => [request('flows', 'POST /create-conversation-flow', { body: flowBody }), request('flows', 'GET /list-conversation-flows')],
    'chat-agents': () => [
      request('chat-agents', 'POST /create-chat-agent', { body: chatAgentBody }),
      request('chat-agents', 'GET /list-chat-agents'),
    ],
    voices: () => [request('voices', 'GET /list-voices'), request('voices', 'GET /get-voice/{voice_id}', { params: { voice_id: '11labs-Adrian' } })],
    numbers: () => [request('numbers', 'GET /list-phone-numbers'), request('numbers', 'GET /list-sip-trunks'), request('numbers', 'GET /kyc')],
    calls: () => [
      request('calls', 'POST /v2/create-web-call', { body: { agent_id: agent.agent_id ?? 'missing' } }),
      request('calls', 'GET /v2/get-call/{call_id}', { params: { call_id: call.call_id ?? 'call_missing' } }),
      request('calls', 'POST /v2/list-calls', { body: { limit: 50 } }),
      request('calls', 'GET /get-concurrency'),
    ],
    chats: () => [
      request('chats', 'POST /create-chat', { body: { agent_id: chatAgent.agent_id ?? chatAgent.chat_agent_id } }),
      request('chats', 'GET /get-chat/{chat_id}', { params: { chat_id: chat.chat_id ?? 'chat_missing' } }),
      request('chats', 'GET /list-chats'),
    ],
    contacts: () => [
      request('contacts', 'GET /list-contacts'),
      request('contacts', 'GET /get-contact/{contact_id}', { params: { contact_id: contact.contact_id ?? 'missing' } }),
      request('contacts', 'POST /import-contacts', { body: { csv } }),
      request('contacts', 'POST /create-contact-import-job', { body: { csv } }),
    ],
    batches: () => [
      request('batches', 'POST /create-batch-call', { body: { name: 'Measure batch', from_number: number.phone_number ?? '+14155550199', tasks: tasks.slice(0, 50), agent_id: agent.agent_id } }),
      request('batches', 'GET /list-batch-calls'),
      request('batches', 'GET /get-batch-call/{batch_call_id}', { params: { batch_call_id: batch.batch_call_id ?? 'missing' } }),
    ],
    billing: () => [request('billing', 'GET /billing'), request('billing', 'GET /billing/usage'), request('billing', 'GET /billing/invoices')],
    'account-data': () => [
      request('account-data', 'GET /account-status'),
      request('account-data', 'GET /list-assets'),
      request('account-data', 'GET /exports'),
      request('account-data', 'POST /exports', { body: { type: 'calls', format: 'csv' } }),
      request('account-data', 'GET /workspace/reliability'),
    ],
    integrations: () => [request('integrations', 'GET /list-apps'), request('integrations', 'GET /list-app-types'), request('integrations', 'GET /oauth/providers')],
    members: () => [request('members', 'GET /workspace/members'), request('members', 'GET /workspace/invites'), request('members', 'GET /workspace/sso')],
    'knowledge-bases': () => [
      request('knowledge-bases', 'GET /list-knowledge-bases'),
      request('knowledge-bases', 'GET /get-knowledge-base/{knowledge_base_id}', { params: { knowledge_base_id: kb.knowledge_base_id ?? 'missing' } }),
    ],
    public: () => [request('public', 'GET /widget.js')],
  };

  const scheduled = (name: string) => ({
    version: '0',
    id: randomUUID(),
    'detail-type': 'Scheduled Event',
    source: 'aws.events',
    account: '000000000000',
    time: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    region: 'us-east-1',
    resources: [`arn:aws:events:us-east-1:000000000000:rule/parley-${name}`],
    detail: {},
  });
  /** A queue job's mix: the messages the HTTP functions queued for it, one per SQS event, as recorded. */
  const queued = (queue: string, limit: number) => () => {
    const bodies = messages.filter((message) => message.queue === queue).map((message) => message.body);
    if (bodies.length === 0) throw new Error(`nothing was queued on ${queue} by the HTTP mixes`);
    return Array.from({ length: limit }, (_, i) => sqsEvent([bodies[i % bodies.length]!]));
  };
  const jobMix: Record<string, (rounds: number) => unknown[]> = {
    // Each round a delivery of its own: a repeated message is a copy the consumer drops unsent.
    'webhook-delivery': (rounds) => {
      const bodies = messages.filter((message) => message.queue === 'webhooks').map((message) => message.body);
      if (bodies.length === 0) throw new Error('nothing was queued on webhooks by the HTTP mixes');
      return Array.from({ length: rounds }, (_, i) => {
        const message = JSON.parse(bodies[i % bodies.length]!) as { delivery_id: string };
        return sqsEvent([JSON.stringify({ ...message, delivery_id: `${message.delivery_id}_${i}` })]);
      });
    },
    'call-steps': (rounds) => [...queued('call-steps', rounds)(), sqsEvent([JSON.stringify({ kind: 'concurrency-sweep', scheduled_at: new Date().toISOString() })])],
    'contact-jobs': (rounds) => queued('contact-jobs', rounds)(),
    'export-jobs': (rounds) => [...queued('export-jobs', rounds)(), sqsEvent([JSON.stringify({ kind: 'retention-sweep', scheduled_at: new Date().toISOString() })])],
    // Each CRM workspace's first sync step and its call's push (seeded above), in the order queued.
    'integration-jobs': () => queued('integration-jobs', messages.filter((message) => message.queue === 'integration-jobs').length)(),
    'kb-jobs': (rounds) => queued('kb-jobs', rounds)(),
    'batch-tick': (rounds) => Array.from({ length: rounds }, () => scheduled('batch-tick')),
    'oauth-refresh': (rounds) => Array.from({ length: rounds }, () => scheduled('oauth-refresh')),
    'billing-hourly': (rounds) => Array.from({ length: rounds }, () => scheduled('billing-hourly')),
  };

  /**
   * The WebSocket monitor's mix, as API Gateway's WebSocket API invokes it: the $connect
   * route's REQUEST authorizer (the key, a call of its workspace), $connect, a message
   * (`{"action":"sync"}`: the call's frames posted to the management API stand-in) and
   * $disconnect, a new connection each round.
   */
  const liveWsMix = (rounds: number) =>
    Array.from({ length: rounds }, () => {
      const connectionId = `${randomUUID().slice(0, 12)}=`;
      const callId = call.call_id ?? 'call_missing';
      const requestContext = (routeKey: string, eventType: string, extra: Record<string, unknown> = {}) => ({
        routeKey,
        eventType,
        connectionId,
        domainName: 'ws.parley.test',
        stage: 'live',
        apiId: 'measure',
        requestId: randomUUID(),
        connectedAt: Date.now(),
        requestTimeEpoch: Date.now(),
        messageDirection: 'IN',
        identity: { sourceIp: '198.51.100.7' },
        ...extra,
      });
      const methodArn = 'arn:aws:execute-api:us-east-1:000000000000:measure/live/$connect';
      return [
        {
          type: 'REQUEST',
          methodArn,
          headers: { Authorization: authorization },
          queryStringParameters: { call_id: callId },
          requestContext: requestContext('$connect', 'CONNECT'),
        },
        { requestContext: requestContext('$connect', 'CONNECT', { authorizer: { workspace_id: workspace.workspace_id, principalId: 'measure' } }), queryStringParameters: { call_id: callId } },
        { requestContext: requestContext('$default', 'MESSAGE'), body: JSON.stringify({ action: 'sync' }), isBase64Encoded: false },
        { requestContext: requestContext('$disconnect', 'DISCONNECT') },
      ];
    }).flat();

  // Build every bundle first (esbuild is the slow, CPU-bound part), HTTP functions before jobs so jobs see their messages.
  const cdk = readCdkBundling();
  const jobNames = new Set(JOBS.map((job) => job.name as string));
  const entries = functionEntries().filter((entry) => !ONLY || ONLY.has(bundleName(entry)));
  entries.sort((a, b) => Number(jobNames.has(bundleName(a))) - Number(jobNames.has(bundleName(b))));
  mkdirSync(OUT_DIR, { recursive: true });
  const work = mkdtempSync(join(tmpdir(), 'parley-measure-events-'));

  interface Row {
    name: string;
    kind: 'http' | 'job' | 'ws';
    memoryMb: number;
    timeoutSeconds: number;
    bundleKiB?: number;
    mix?: string;
    result?: ChildResult;
    error?: string;
  }
  const rows: Row[] = [];
  const load = loadavg()[0]!.toFixed(2);
  for (const entry of entries) {
    const name = bundleName(entry);
    const job = JOBS.find((spec) => spec.name === name);
    const kind: Row['kind'] = job ? 'job' : name === 'live-ws' ? 'ws' : 'http';
    // The function's manifest entry (lib/functions.ts): its size and what ships beside its bundle.
    const spec = functionNamed(name as Parameters<typeof functionNamed>[0]);
    const row: Row = { name, kind, memoryMb: spec.memoryMb, timeoutSeconds: job?.timeoutSeconds ?? spec.timeoutSeconds ?? API_TIMEOUT_CEILING_SECONDS };
    rows.push(row);
    try {
      let events: unknown[];
      if (kind === 'http') {
        const mix = httpMix[name];
        if (!mix) throw new Error('no request mix for this function');
        const one = mix();
        row.mix = (one as { routeKey: string }[]).map((event) => event.routeKey).join(', ');
        events = Array.from({ length: ROUNDS }, () => mix()).flat();
      } else if (kind === 'job') {
        events = jobMix[name]!(ROUNDS);
        row.mix = `${events.length} events`;
      } else {
        events = liveWsMix(ROUNDS);
        row.mix = 'authorizer, $connect, $default (sync), $disconnect';
      }
      console.error(`${name}: building…`);
      const bundle = await buildBundle(cdk, name, entry, OUT_DIR, [], spec.workers);
      if (bundle.error) throw new Error(`build failed: ${bundle.error}`);
      row.bundleKiB = Math.round(bundle.bytes / 1024);
      // What CDK's afterBundling hook puts beside the bundle (the tracer, the function's files and folders).
      const besides = besideBundleCommands(process.cwd(), dirname(bundle.file), { files: spec.files, directories: spec.directories });
      for (const command of besides) execSync(command, { stdio: ['ignore', 'ignore', 'pipe'], shell: '/bin/sh' });
      console.error(`${name}: ${events.length} invocations…`);
      row.result = await runChild(bundle.file, events, { ...childEnv, ...lambdaEnv(name) }, row.timeoutSeconds, work);
      console.error(`${name}: ${JSON.stringify(row.result.outcomes)}`);
    } catch (error) {
      row.error = error instanceof Error ? error.message : String(error);
      console.error(`${name}: ${row.error}`);
    }
  }
  rmSync(work, { recursive: true, force: true });

  // What the CRM mix did (so a row of no-ops shows): calls logged and contacts pushed by the first sync steps.
  let crmEffects = '';
  if (rows.some((row) => row.name === 'integration-jobs' && row.result)) {
    const { getCrmConfig, listSyncJobs } = await import('../shared/integrations/index.ts');
    let callsPushed = 0;
    let contactsPushed = 0;
    for (const id of crmWorkspaceIds) {
      const config = await getCrmConfig(id);
      callsPushed += config.providers.reduce((sum, provider) => sum + (provider.calls_pushed ?? 0), 0);
      contactsPushed += (await listSyncJobs(id, 1)).reduce((sum, job) => sum + job.succeeded, 0);
    }
    crmEffects = ` integration-jobs logged ${callsPushed} calls and pushed ${contactsPushed} contacts to the mock CRM in ${crmWorkspaceIds.length} workspaces.`;
  }

  const fixed = (value: number, digits = 0) => (Number.isFinite(value) ? value.toFixed(digits) : 'n/a');
  const lines = [
    `Measured ${new Date().toISOString().slice(0, 10)} on ${cpus().length} cores (load ${load} at start), node ${process.version}, DynamoDB Local; ${ROUNDS} rounds of each mix; webhook receiver got ${receiver.count()} requests, the WebSocket management API ${managementApi.posts()} posts.${crmEffects}`,
    '',
    '| Function | Configured | Bundle | Init (cold import) | First invoke | p50 | p99 | Peak RSS | Outcomes |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const configured = `${row.memoryMb} MB, ${row.timeoutSeconds} s`;
    if (!row.result) {
      lines.push(`| ${row.name} | ${configured} | ${row.bundleKiB ?? '–'} KiB | not measured: ${row.error} | | | | | |`);
      continue;
    }
    const { durations, initMs, peakRssMb, outcomes } = row.result;
    const warm = durations.slice(1).sort((a, b) => a - b);
    lines.push(
      `| ${row.name} | ${configured} | ${row.bundleKiB} KiB | ${fixed(initMs)} ms | ${fixed(durations[0] ?? Number.NaN)} ms | ${fixed(percentile(warm, 50), 1)} ms | ${fixed(percentile(warm, 99), 1)} ms | ${fixed(peakRssMb)} MB | ${Object.entries(outcomes).map(([outcome, count]) => `${outcome}×${count}`).join(' ')} |`,
    );
  }
  const markdown = lines.join('\n');
  console.log(markdown);
  writeFileSync(join(OUT_DIR, '..', 'measure-functions.json'), JSON.stringify({ rows, load, rounds: ROUNDS }, null, 2));
  writeFileSync(join(OUT_DIR, '..', 'measure-functions.md'), `${markdown}\n`);
} finally {
  await cleanup();
}
process.exit(0);
