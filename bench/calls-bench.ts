import { BatchGetCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';

/*
 * The calls variants of the latency benchmark (docs/performance.md, "Calls"):
 * - P3: `POST /v3/list-calls` answering a page of 1,000 calls, against the raw DynamoDB
 *   reads of the same items (the four listing-index Queries, then BatchGetItem of the
 *   1,000 items, as the listing itself must: the index projects only what lists filter on);
 * - `POST /v2/create-phone-call` in the sandbox, against one raw GetItem.
 * The 1,000 calls are written directly with the calls store (not through create-phone-call)
 * so seeding takes a second or two.
 */

export const P3_PAGE = 1000;

export interface CallsVariant {
  id: string;
  description: string;
  samples: number;
  run: () => Promise<void>;
}

type Http = (method: string, path: string, expected: number, body?: unknown, authorization?: string) => Promise<string>;

export interface CallsBenchContext {
  http: Http;
  /** Creates a workspace and answers its key. */
  newWorkspace: (name: string) => Promise<{ workspace_id: string; api_key: string }>;
  createSamples: number;
  listSamples: number;
}

/** A call as the sandbox leaves it after a short conversation: transcript, costs, analysis, latency. */
function endedCall(index: number, nowMs: number) {
  const start = nowMs - (P3_PAGE - index) * 60_000;
  const lines = [
    ['agent', 'Hello, this is the front desk of the dental clinic. How can I help you today?'],
    ['user', 'Hi, I would like to move my appointment to next week if possible.'],
    ['agent', 'Of course. Could you tell me your name and the date of your current appointment?'],
    ['user', `It is Ada Lovelace, on the ${(index % 28) + 1}th.`],
    ['agent', 'Thank you. I have moved it to the same time next week. Anything else?'],
    ['user', 'No, that is all, thank you.'],
  ] as const;
  return {
    call_type: 'phone_call' as const,
    call_status: 'ended' as const,
    agent_version: 0,
    agent_name: 'Benchmark agent',
    direction: 'outbound' as const,
    from_number: '+14155550100',
    to_number: `+1415556${String(index).padStart(4, '0')}`,
    start_timestamp: start,
    end_timestamp: start + 45_000,
    duration_ms: 45_000,
    disconnection_reason: 'user_hangup' as const,
    metadata: { customer_id: `cust-${index}`, campaign: 'spring' },
    retell_llm_dynamic_variables: { customer_name: 'Ada', visit: String(index) },
    transcript: lines.map(([role, text]) => `${role === 'agent' ? 'Agent' : 'User'}: ${text}`).join('\n'),
    transcript_object: lines.map(([role, content]) => ({ role, content })),
    call_cost: {
      product_costs: [
        { product: 'voice_engine', unit_price: 0.07, cost: 5.25 },
        { product: 'llm', unit_price: 0.006, cost: 0.45 },
        { product: 'telephony', unit_price: 0.015, cost: 1.13 },
      ],
      total_duration_seconds: 45,
      total_duration_unit_price: 0.091,
      combined_cost: 6.83,
    },
    call_analysis: { call_summary: 'The user moved an appointment to next week.', user_sentiment: 'Positive', call_successful: true, in_voicemail: false, custom_analysis_data: {} },
    latency: { e2e: { p50: 820, p90: 1100, p95: 1200, p99: 1400, max: 1500, min: 600, num: 3 } },
    user_sentiment: 'Positive',
    call_successful: true,
    in_voicemail: false,
    combined_cost: 6.83,
    e2e_latency_p50: 820,
  };
}

export async function callsVariants(context: CallsBenchContext): Promise<{ variants: CallsVariant[]; seededMs: number }> {
  const [{ newCallItem, putNewCall, CALL_LISTING_SHARDS }, { newTimeOrderedId }, { keys }, { db, tableName }, { sha256 }] = await Promise.all([
    import('../shared/calls/store.ts'),
    import('../shared/platform/ids.ts'),
    import('../shared/platform/store/keys.ts'),
    import('../shared/platform/store/db.ts'),
    import('../shared/platform/crypto/hash.ts'),
  ]);
  const { http } = context;

  // P3: a workspace holding exactly 1,000 ended calls.
  const listing = await context.newWorkspace('Benchmark calls');
  const listAuth = `Bearer ${listing.api_key}`;
  const llm = JSON.parse(await http('POST', '/create-retell-llm', 201, { general_prompt: 'You are a benchmark.' }, listAuth)) as { llm_id: string };
  const agent = JSON.parse(
    await http('POST', '/create-agent', 201, { agent_name: 'Benchmark agent', response_engine: { type: 'retell-llm', llm_id: llm.llm_id } }, listAuth),
  ) as { agent_id: string };
  const seedStarted = performance.now();
  const nowMs = Date.now();
  const items = Array.from({ length: P3_PAGE }, (_, i) =>
    newCallItem({
      ...endedCall(i, nowMs),
      call_id: newTimeOrderedId('call', nowMs - (P3_PAGE - i) * 60_000),
      workspace_id: listing.workspace_id,
      agent_id: agent.agent_id,
      created_timestamp: nowMs - (P3_PAGE - i) * 60_000,
      engine: {},
    }),
  );
  for (let i = 0; i < items.length; i += 50) await Promise.all(items.slice(i, i + 50).map((item) => putNewCall(item)));
  const seededMs = performance.now() - seedStarted;
  const expectedIds = items.map((item) => item.call_id).sort().reverse();

  const listBody = { limit: P3_PAGE };
  const first = JSON.parse(await http('POST', '/v3/list-calls', 200, listBody, listAuth)) as { call_id: string }[];
  if (first.length !== P3_PAGE || first.some((call, i) => call.call_id !== expectedIds[i])) {
    throw new Error(`list-calls answered ${first.length} calls, not the ${P3_PAGE} seeded ones newest first`);
  }

  // The raw reads of the same page: every shard of the index in parallel, then the items by key.
  const indexQueries = () =>
    Promise.all(
      Array.from({ length: CALL_LISTING_SHARDS }, (_, shard) =>
        db.send(
          new QueryCommand({
            TableName: tableName,
            IndexName: 'gsi1',
            KeyConditionExpression: 'gsi1pk = :gpk',
            ExpressionAttributeValues: { ':gpk': keys.callListing(listing.workspace_id, shard).gsi1pk },
            ScanIndexForward: false,
            Limit: P3_PAGE,
          }),
        ),
      ),
    );
  const rawList = async () => {
    const entries = (await indexQueries()).flatMap((out) => (out.Items ?? []) as { pk: string; sk: string }[]);
    const batches: { pk: string; sk: string }[][] = [];
    for (let i = 0; i < entries.length; i += 100) batches.push(entries.slice(i, i + 100));
    const outs = await Promise.all(
      batches.map((batch) =>
        db.send(new BatchGetCommand({ RequestItems: { [tableName]: { Keys: batch.map(({ pk, sk }) => ({ pk, sk })), ConsistentRead: true } } })),
      ),
    );
    const count = outs.reduce((sum, out) => sum + (out.Responses?.[tableName]?.length ?? 0), 0);
    if (count !== P3_PAGE) throw new Error(`raw reads found ${count} calls`);
  };

  // create-phone-call: a number whose calls the sandbox reports busy (no conversation runs
  // behind the measurement), with room for every call the run places.
  const dialer = await context.newWorkspace('Benchmark dialer');
  const dialAuth = `Bearer ${dialer.api_key}`;
  await http('PATCH', '/workspace', 200, { concurrency_limit: 1000 }, dialAuth);
  const dialLlm = JSON.parse(await http('POST', '/create-retell-llm', 201, { general_prompt: 'You are a benchmark.' }, dialAuth)) as { llm_id: string };
  const dialAgent = JSON.parse(
    await http('POST', '/create-agent', 201, { agent_name: 'Dialer', response_engine: { type: 'retell-llm', llm_id: dialLlm.llm_id } }, dialAuth),
  ) as { agent_id: string };
  const fromNumber = '+14155550123';
  await http(
    'POST',
    '/import-phone-number',
    201,
    { phone_number: fromNumber, termination_uri: 'sip:trunk.example.com', cps_limit: 1000, outbound_agents: [{ agent_id: dialAgent.agent_id, weight: 1 }] },
    dialAuth,
  );
  const createBody = { from_number: fromNumber, to_number: '+14155550001', metadata: { sandbox_call_ms: 0 } };
  const credentialKey = keys.credential(sha256(dialer.api_key));

  return {
    seededMs,
    variants: [
      {
        id: 'calls:ddb-get',
        description: 'baseline of the calls variants: one GetCommand of a credential, interleaved with them',
        samples: context.createSamples,
        run: async () => {
          const out = await db.send(new GetCommand({ TableName: tableName, Key: credentialKey }));
          if (!out.Item) throw new Error('credential item not found');
        },
      },
      {
        id: 'create-phone-call',
        description: 'POST /v2/create-phone-call over HTTP, sandbox media (number, agent, CPS token, concurrency slot, call item, first step queued)',
        samples: context.createSamples,
        run: async () => void (await http('POST', '/v2/create-phone-call', 201, createBody, dialAuth)),
      },
      {
        id: 'list-calls-1000',
        description: `POST /v3/list-calls {limit: ${P3_PAGE}} over HTTP: the four index shards, BatchGetItem of the page, the array as JSON`,
        samples: context.listSamples,
        run: async () => void (await http('POST', '/v3/list-calls', 200, listBody, listAuth)),
      },
      {
        id: 'raw-list-1000',
        description: `P3 baseline: raw Query of the four gsi1 shards in parallel, then BatchGetItem (100 keys each, in parallel) of the ${P3_PAGE} items`,
        samples: context.listSamples,
        run: rawList,
      },
      {
        id: 'raw-query-1000',
        description: `the four gsi1 Queries alone (the index entries of the ${P3_PAGE} calls, without the items)`,
        samples: context.listSamples,
        run: async () => void (await indexQueries()),
      },
    ],
  };
}
