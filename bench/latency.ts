import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { callsVariants, P3_PAGE } from './calls-bench.ts';
import { roundOrder, summarize, type Summary } from './stats.ts';

export interface LatencyOptions {
  /** Measured requests per variant (fewer if the time budget runs out first). */
  samples: number;
  warmup: number;
  /** …and keep warming up for at least this long: DynamoDB Local's JVM needs time to JIT. */
  warmupMs: number;
  /** Sequential requests of one variant before switching to the next. */
  roundSize: number;
  /** Stop measuring at the end of the round in which this much time has passed. */
  budgetMs: number;
  /** Also measure the breakdown variants (gate alone, handler without HTTP, bare HTTP). */
  diagnostics: boolean;
  /** The calls variants (P3 list-calls, create-phone-call), measured after the others; undefined skips them. */
  calls?: { createSamples: number; listSamples: number; warmupMs: number; budgetMs: number };
  log: (line: string) => void;
}

export interface LatencyVariant {
  id: string;
  description: string;
  summary: Summary;
}

export interface LatencyResult {
  variants: LatencyVariant[];
  rounds: number;
  elapsedMs: number;
  /** p50(api) / p50(ddb-get) over the first and second half of the rounds: a noise check. */
  ratioByHalf: [number, number];
  settings: Record<string, string>;
  calls?: { variants: LatencyVariant[]; rounds: number; elapsedMs: number; seededMs: number; page: number };
}

/** The settings the shared modules read at load; the limits are high so nothing is refused. */
const SETTINGS = {
  TABLE_NAME: 'parley-bench',
  AWS_REGION: 'us-east-1',
  RATE_LIMIT_PER_KEY: '100000',
  RATE_LIMIT_PER_IP: '10000000',
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

interface Variant {
  id: string;
  description: string;
  run: () => Promise<void>;
  /** Its own sample count (else the run's). */
  samples?: number;
}

/**
 * Starts DynamoDB Local (in memory) and the local server in this process, creates a
 * workspace, then times single sequential operations of each variant, interleaved in
 * rounds so that noise on this shared machine falls on all of them alike.
 */
export async function measureLatency(options: LatencyOptions): Promise<LatencyResult> {
  const dataDir = mkdtempSync(join(tmpdir(), 'parley-bench-'));
  Object.assign(process.env, SETTINGS, { DATA_DIR: dataDir });
  const { startDynamoDbLocal } = await import('../local/dynamodb.ts');
  const dynamoDbLocal = await startDynamoDbLocal();
  process.env.DYNAMODB_ENDPOINT = dynamoDbLocal.endpoint;

  const closers: (() => Promise<void> | void)[] = [
    () => rmSync(dataDir, { recursive: true, force: true }),
    () => dynamoDbLocal.stop(),
  ];
  try {
    // Only now: these read the settings above once, at load.
    const [{ ensureTable }, { db, dynamo, tableName }, { startLocalServer }, { createWorkspace }] = await Promise.all([
      import('../shared/platform/store/create-table.ts'),
      import('../shared/platform/store/db.ts'),
      import('../local/server.ts'),
      import('../shared/account/workspaces.ts'),
    ]);
    const [{ GetCommand }, { keys }, { sha256 }, { countRequest }, { admit }, account] = await Promise.all([
      import('@aws-sdk/lib-dynamodb'),
      import('../shared/platform/store/keys.ts'),
      import('../shared/platform/crypto/hash.ts'),
      import('../shared/platform/auth/request-counter.ts'),
      import('../shared/platform/auth/gate.ts'),
      import('../functions/account.ts'),
    ]);
    await ensureTable(dynamo, tableName);
    const server = await startLocalServer({ port: 0, host: '127.0.0.1' });
    closers.unshift(() => server.close());
    const workspace = await createWorkspace('Benchmark');
    options.log(`DynamoDB Local at ${dynamoDbLocal.endpoint}, Parley at ${server.url}, workspace ${workspace.workspace_id}`);

    const credentialKey = keys.credential(sha256(workspace.api_key));
    const authorization = `Bearer ${workspace.api_key}`;

    // (b) the endpoint over HTTP, one keep-alive connection, one request in flight.
    const apiAgent = new Agent({ keepAlive: true, maxSockets: 1 });
    closers.unshift(() => apiAgent.destroy());
    const apiUrl = new URL('/get-api-key-info', server.url);
    const apiCall = async () => {
      const response = await httpGet(apiUrl, apiAgent, { authorization });
      if (response.status !== 200) throw new Error(`GET /get-api-key-info answered ${response.status}: ${response.body}`);
      return response.body;
    };
    const first = JSON.parse(await apiCall()) as { workspace_id?: string };
    if (first.workspace_id !== workspace.workspace_id) throw new Error('GET /get-api-key-info answered for another workspace');

    const variants: Variant[] = [
      {
        id: 'ddb-get',
        description: 'baseline: lib-dynamodb GetCommand of the credential item, with the app’s own client',
        run: async () => {
          const out = await db.send(new GetCommand({ TableName: tableName, Key: credentialKey }));
          if (!out.Item) throw new Error('credential item not found');
        },
      },
      {
        id: 'api',
        description: 'GET /get-api-key-info over HTTP (keep-alive), through the local server and the middy pipeline',
        run: async () => void (await apiCall()),
      },
    ];

    // Agents (issue 3): a create writes the agent's head and version 0 in one transaction
    // after reading its engine; a get reads the head.
    const call = async (method: string, path: string, expected: number, body?: unknown) => {
      const response = await httpRequest(method, new URL(path, server.url), apiAgent, { authorization }, body === undefined ? undefined : JSON.stringify(body));
      if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}: ${response.body}`);
      return JSON.parse(response.body) as Record<string, unknown>;
    };
    const llm = await call('POST', '/create-retell-llm', 201, { general_prompt: 'You are a benchmark.' });
    const agentBody = { agent_name: 'Benchmark agent', response_engine: { type: 'retell-llm', llm_id: llm.llm_id } };
    const agentPath = `/get-agent/${String((await call('POST', '/create-agent', 201, agentBody)).agent_id)}`;
    variants.push(
      {
        id: 'create-agent',
        description: 'POST /create-agent over HTTP: engine lookup, then a two-item transaction',
        run: async () => void (await call('POST', '/create-agent', 201, agentBody)),
      },
      {
        id: 'get-agent',
        description: 'GET /get-agent/{agent_id} over HTTP: one read of the agent head',
        run: async () => void (await call('GET', agentPath, 200)),
      },
    );

    if (options.diagnostics) {
      const noop = await startNoopServer();
      closers.unshift(() => noop.close());
      const noopAgent = new Agent({ keepAlive: true, maxSockets: 1 });
      closers.unshift(() => noopAgent.destroy());
      const noopUrl = new URL('/', noop.url);
      const route = { access: 'any-key' } as const;
      const workspaceKey = keys.workspace(workspace.workspace_id);
      variants.push(
        {
          id: 'ddb-get-x2',
          description: 'two GetCommands in parallel (credential and workspace): what concurrency costs here',
          run: async () => {
            const [a, b] = await Promise.all([
              db.send(new GetCommand({ TableName: tableName, Key: credentialKey })),
              db.send(new GetCommand({ TableName: tableName, Key: workspaceKey })),
            ]);
            if (!a.Item || !b.Item) throw new Error('item not found');
          },
        },
        {
          id: 'ddb-update',
          description: 'one UpdateItem (ALL_NEW) on the credential, as the gate counts a key (countRequest)',
          run: async () => {
            const item = await countRequest(credentialKey, Date.now(), { mustExist: true });
            if (!item) throw new Error('credential item not found');
          },
        },
        {
          id: 'gate',
          description: 'admit(): the per-IP and per-key UpdateItems in parallel plus the rules, no HTTP or middy',
          run: async () => {
            const admission = await admit(route, { sourceIp: '127.0.0.1', authorization });
            if (!admission.principal) throw new Error('gate did not admit the key');
          },
        },
        {
          id: 'handler',
          description: 'the account Lambda handler invoked in-process with an API Gateway v2 event (no HTTP)',
          run: async () => {
            const result = await account.handler(apiEvent(authorization), lambdaContext(), {
              signal: new AbortController().signal,
            });
            if (result?.statusCode !== 200) throw new Error(`handler answered ${result?.statusCode}`);
          },
        },
        {
          id: 'http-noop',
          description: 'HTTP round trip to a bare node:http server answering a fixed JSON body (the HTTP floor)',
          run: async () => {
            const response = await httpGet(noopUrl, noopAgent, { authorization });
            if (response.status !== 200) throw new Error(`no-op server answered ${response.status}`);
          },
        },
      );
    }

    options.log(
      `Warming up: at least ${options.warmup} operations per variant and ${options.warmupMs / 1000} s, interleaved…`,
    );
    const warmupStarted = performance.now();
    const warming = (round: number) =>
      round * options.roundSize < options.warmup || performance.now() - warmupStarted < options.warmupMs;
    for (let round = 0; warming(round); round++) {
      for (const variant of roundOrder(variants, round)) {
        for (let i = 0; i < options.roundSize; i++) await variant.run();
      }
    }
    options.log(
      `Measuring: ${options.samples} sequential operations per variant, ${options.roundSize} per turn, interleaved…`,
    );
    const started = performance.now();
    const measured = await runRounds(variants, options.samples, options.roundSize, options.budgetMs);
    const elapsedMs = performance.now() - started;

    let calls: LatencyResult['calls'];
    if (options.calls) {
      const http = async (method: string, path: string, expected: number, body?: unknown, auth = authorization) => {
        const response = await httpRequest(method, new URL(path, server.url), apiAgent, { authorization: auth }, body === undefined ? undefined : JSON.stringify(body));
        if (response.status !== expected) throw new Error(`${method} ${path} answered ${response.status}: ${response.body.slice(0, 500)}`);
        return response.body;
      };
      const { variants: callVariants, seededMs } = await callsVariants({
        http,
        newWorkspace: (name) => createWorkspace(name),
        createSamples: options.calls.createSamples,
        listSamples: options.calls.listSamples,
      });
      options.log(`Calls: seeded ${P3_PAGE} calls in ${(seededMs / 1000).toFixed(1)} s; warming up ${options.calls.warmupMs / 1000} s…`);
      const warmStarted = performance.now();
      for (let round = 0; performance.now() - warmStarted < options.calls.warmupMs; round++) {
        for (const variant of roundOrder(callVariants, round)) for (let i = 0; i < 3; i++) await variant.run();
      }
      options.log(`Calls: measuring ${options.calls.listSamples} list pages and ${options.calls.createSamples} creates, interleaved…`);
      const callsStarted = performance.now();
      // Rounds of 5 keep a slow list page and a fast create interleaved closely.
      const callsMeasured = await runRounds(callVariants, 0, 5, options.calls.budgetMs);
      calls = {
        variants: callVariants.map((variant) => ({ id: variant.id, description: variant.description, summary: summarize(callsMeasured.samples.get(variant.id)!) })),
        rounds: callsMeasured.rounds,
        elapsedMs: performance.now() - callsStarted,
        seededMs,
        page: P3_PAGE,
      };
    }

    const half = Math.floor(measured.rounds / 2);
    const ratioOf = (from: number, to: number) => {
      const pick = (id: string) =>
        measured.perRound
          .slice(from, to)
          .flatMap((round) => round.get(id) ?? []);
      return summarize(pick('api')).p50 / summarize(pick('ddb-get')).p50;
    };
    return {
      variants: variants.map((variant) => ({
        id: variant.id,
        description: variant.description,
        summary: summarize(measured.samples.get(variant.id)!),
      })),
      rounds: measured.rounds,
      elapsedMs,
      ratioByHalf: [ratioOf(0, half), ratioOf(half, measured.rounds)],
      settings: { ...SETTINGS, DYNAMODB: 'DynamoDB Local (in memory)' },
      ...(calls ? { calls } : {}),
    };
  } finally {
    for (const close of closers) await close();
  }
}

async function runRounds(variants: Variant[], samples: number, roundSize: number, budgetMs: number) {
  const all = new Map<string, number[]>(variants.map((variant) => [variant.id, []]));
  const perRound: Map<string, number[]>[] = [];
  const started = performance.now();
  let round = 0;
  const target = (variant: Variant) => variant.samples ?? samples;
  while (variants.some((variant) => all.get(variant.id)!.length < target(variant)) && performance.now() - started < budgetMs) {
    const thisRound = new Map<string, number[]>();
    for (const variant of roundOrder(variants, round)) {
      const list = all.get(variant.id)!;
      const count = Math.max(0, Math.min(roundSize, target(variant) - list.length));
      const timings: number[] = [];
      for (let i = 0; i < count; i++) {
        const t0 = performance.now();
        await variant.run();
        timings.push(performance.now() - t0);
      }
      list.push(...timings);
      thisRound.set(variant.id, timings);
    }
    perRound.push(thisRound);
    round++;
  }
  return { samples: all, perRound, rounds: round };
}

function httpGet(url: URL, agent: Agent, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return httpRequest('GET', url, agent, headers);
}

function httpRequest(
  method: string,
  url: URL,
  agent: Agent,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    const req = request(url, { method, agent, headers: sent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function startNoopServer(): Promise<{ url: string; close: () => Promise<void> }> {
  const body = JSON.stringify({ ok: true, note: 'fixed body of roughly the size of an API key description'.repeat(4) });
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** What API Gateway (and local/server.ts) hands the function for this request. */
function apiEvent(authorization: string): APIGatewayProxyEventV2 {
  const now = Date.now();
  return {
    version: '2.0',
    routeKey: 'GET /get-api-key-info',
    rawPath: '/get-api-key-info',
    rawQueryString: '',
    headers: { authorization, host: '127.0.0.1', 'user-agent': 'parley-bench' },
    isBase64Encoded: false,
    requestContext: {
      accountId: 'local',
      apiId: 'local',
      domainName: '127.0.0.1',
      domainPrefix: 'local',
      requestId: randomUUID(),
      routeKey: 'GET /get-api-key-info',
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
      http: {
        method: 'GET',
        path: '/get-api-key-info',
        protocol: 'HTTP/1.1',
        sourceIp: '127.0.0.1',
        userAgent: 'parley-bench',
      },
    },
  };
}

function lambdaContext(): Context {
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: 'parley-account',
    functionVersion: '$LATEST',
    invokedFunctionArn: 'arn:aws:lambda:local:000000000000:function:parley-account',
    memoryLimitInMB: '1024',
    awsRequestId: randomUUID(),
    logGroupName: '/aws/lambda/parley-account',
    logStreamName: 'bench',
    getRemainingTimeInMillis: () => 29_000,
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
