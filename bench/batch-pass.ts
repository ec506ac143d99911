import { randomInt } from 'node:crypto';
import { round } from './stats.ts';

/**
 * P4: the batch scheduler pass (docs/performance.md). For each scenario a fresh workspace
 * with one number and a batch of `pending` sandbox tasks; one pass runs, and we record
 * dials ÷ min(pending, free capacity, CPS × tick) (must be 1.0) and the pass's time. The
 * 1,000-pending scenario is the "pass time at 1,000 pending tasks". The calls are
 * long sandbox calls and the call-steps consumer does not run, so only the pass is timed.
 */
export interface BatchPassScenario {
  pending: number;
  limit: number;
  cps: number;
}

export interface BatchPassMeasurement extends BatchPassScenario {
  expected: number;
  dialled: number;
  ratio: number;
  passMs: number;
}

/**
 * The first scenario warms the process (module init, JIT, connections, the first dial's
 * lazy settings) and is not recorded: the scheduler runs in a warm Lambda every second, so a
 * cold first pass is not what a pass costs.
 */
const WARM_UP: BatchPassScenario = { pending: 5, limit: 20, cps: 1000 };

export const SCENARIOS: BatchPassScenario[] = [
  { pending: 1000, limit: 20, cps: 1000 },
  { pending: 7, limit: 20, cps: 10 },
  { pending: 1000, limit: 100, cps: 4 },
];

export async function measureBatchPasses(log: (line: string) => void): Promise<{ scenarios: BatchPassMeasurement[]; met: boolean }> {
  const { startDynamoDbLocal } = await import('../local/dynamodb.ts');
  const dynamoDbLocal = await startDynamoDbLocal();
  process.env.DYNAMODB_ENDPOINT = dynamoDbLocal.endpoint;
  try {
    const [{ ensureTable }, { dynamo, tableName }, { startLocalServer }, { createWorkspace }, { runBatchPass }, { config }] = await Promise.all([
      import('../shared/platform/store/create-table.ts'),
      import('../shared/platform/store/db.ts'),
      import('../local/server.ts'),
      import('../shared/account/workspaces.ts'),
      import('../shared/batches/scheduler.ts'),
      import('../shared/platform/config.ts'),
    ]);
    await ensureTable(dynamo, tableName);
    const server = await startLocalServer({ port: 0, host: '127.0.0.1' });
    const scenarios: BatchPassMeasurement[] = [];
    try {
      for (const scenario of [WARM_UP, ...SCENARIOS]) {
        const ws = await createWorkspace(`bench batches ${randomInt(1e6)}`);
        const request = async (method: string, path: string, body?: unknown) => {
          const response = await fetch(`${server.url}${path}`, {
            method,
            headers: { authorization: `Bearer ${ws.api_key}`, 'content-type': 'application/json' },
            body: body === undefined ? undefined : JSON.stringify(body),
          });
          const json = (await response.json().catch(() => undefined)) as Record<string, string | number>;
          if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${JSON.stringify(json)}`);
          return json;
        };
        await request('PATCH', '/workspace', { concurrency_limit: scenario.limit });
        const llm = await request('POST', '/create-retell-llm', { general_prompt: 'Bench.' });
        const agent = await request('POST', '/create-agent', { response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, voice_id: '11labs-Chloe' });
        const number = `+1415${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`;
        await request('POST', '/import-phone-number', {
          phone_number: number,
          termination_uri: 'sip:trunk.example.com',
          cps_limit: scenario.cps,
          outbound_agents: [{ agent_id: agent.agent_id, weight: 1 }],
        });
        const tasks = Array.from({ length: scenario.pending }, (_, i) => ({
          to_number: `+1415${200 + Math.floor(i / 100)}${String(5000 + (i % 100)).padStart(4, '0')}`,
          metadata: { sandbox_call_ms: 600_000 },
        }));
        const batch = await request('POST', '/create-batch-call', { from_number: number, tasks });
        const expected = Math.min(scenario.pending, scenario.limit, Math.floor((scenario.cps * config.BATCH_TICK_MS) / 1000));
        const started = performance.now();
        await runBatchPass();
        const passMs = performance.now() - started;
        // This batch's dials (its counter), then stopped so later scenarios' passes skip it.
        const after = await request('GET', `/get-batch-call/${batch.batch_call_id}`);
        const dialled = after.sent_count as number;
        if (after.status !== 'sent') await request('POST', `/stop-batch-call/${batch.batch_call_id}`);
        const measurement = { ...scenario, expected, dialled, ratio: round(dialled / expected, 3), passMs: round(passMs, 1) };
        if (scenario === WARM_UP) {
          log(`  warm-up pass (not recorded): ${dialled}/${expected} dials, ${measurement.passMs} ms`);
          continue;
        }
        log(`  pending ${scenario.pending}, limit ${scenario.limit}, cps ${scenario.cps}: ${dialled}/${expected} dials, pass ${measurement.passMs} ms`);
        scenarios.push(measurement);
      }
    } finally {
      await server.close();
    }
    return { scenarios, met: scenarios.every((s) => s.ratio === 1) };
  } finally {
    await dynamoDbLocal.stop();
  }
}

/** Run alone (`npm run bench -- --only=batches` spawns this in its own process, with its own DynamoDB Local). */
if (process.argv[1]?.endsWith('batch-pass.ts')) {
  await import('../local/quiet-aws-sdk.ts');
  const result = await measureBatchPasses((line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
