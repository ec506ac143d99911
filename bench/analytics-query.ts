import { randomInt } from 'node:crypto';
import { round, roundSummary, summarize, type Summary } from './stats.ts';

/**
 * P7, the query half (docs/performance.md): a 90-day `POST /analytics/query` grouped by
 * agent with step day, over the rollups of 10,000 and of 1,000,000 calls by 5 agents. The
 * rollups are synthesised directly (the day cells of the `agent_id` view, every agent and
 * shard of every day, with the sums, counters and sketch bins the calls would have added),
 * not recorded call by call. The cell count is the same at both volumes; what grows is each
 * cell's sketch bins, bounded by the sketch's accuracy. Goals: under 1 s at 1,000,000 calls,
 * and its time within 1.5× its time at 10,000. A count, sum or average reads the cells'
 * counts and sums only; percentiles read their sketch items as well (measured beside it).
 */
export interface P7Volume {
  calls: number;
  cells: number;
  /** The cells' attributes on average (the bins grow with the calls, to the sketches' bound). */
  attributesPerCell: number;
  query: Summary;
  /** The same query with p50 and p90 of latency, which read the sketch items too (a note, not a target), or why it failed. */
  percentiles: Summary | { error: string };
}

export interface P7Result {
  days: number;
  agents: number;
  volumes: P7Volume[];
  ratio: number;
  met: { underOneSecond: boolean; ratio: boolean };
}

export const P7_TARGETS = { p50Ms: 1000, ratio: 1.5 };

const DAYS = 90;
const AGENTS = 5;
const SHARDS = 4;
const DAY_MS = 86_400_000;

/** A log-normal figure around `median` (Box–Muller), as durations and latencies spread. */
function logNormal(median: number, sigma: number): number {
  const u = 1 - Math.random();
  const v = Math.random();
  return Math.round(median * Math.exp(sigma * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)));
}

export async function measureP7(options: { volumes: number[]; samples: number }, log: (line: string) => void): Promise<P7Result> {
  const { startDynamoDbLocal } = await import('../local/dynamodb.ts');
  const dynamoDbLocal = await startDynamoDbLocal();
  process.env.DYNAMODB_ENDPOINT = dynamoDbLocal.endpoint;
  try {
    const [{ ensureTable }, { dynamo, tableName }, { startLocalServer }, { createWorkspace }, model, { putCells }] = await Promise.all([
      import('../shared/platform/store/create-table.ts'),
      import('../shared/platform/store/db.ts'),
      import('../local/server.ts'),
      import('../shared/account/workspaces.ts'),
      import('../shared/analytics/rollups/model.ts'),
      import('../shared/analytics/rollups/store.ts'),
    ]);
    await ensureTable(dynamo, tableName);
    const server = await startLocalServer({ port: 0, host: '127.0.0.1' });
    const end = Math.floor(Date.now() / DAY_MS) * DAY_MS;
    const start = end - DAYS * DAY_MS;
    const volumes: P7Volume[] = [];
    try {
      for (const calls of options.volumes) {
        const ws = await createWorkspace(`bench p7 ${randomInt(1e6)}`);
        type Cell = Parameters<typeof putCells>[1][number];
        const cells: Cell[] = [];
        const perCell = calls / (DAYS * AGENTS * SHARDS);
        let attributes = 0;
        let placed = 0;
        for (let day = 0; day < DAYS; day++) {
          for (let agent = 0; agent < AGENTS; agent++) {
            for (let shard = 0; shard < SHARDS; shard++) {
              const index = (day * AGENTS + agent) * SHARDS + shard;
              const here = Math.round(perCell * (index + 1)) - placed;
              placed += here;
              const totals = model.emptyTotals();
              for (let call = 0; call < here; call++) {
                const duration = logNormal(120_000, 0.8);
                const figures = { duration_ms: duration, cost: round((duration / 60_000) * 7, 2), latency_ms: logNormal(900, 0.3) };
                totals.count++;
                for (const column of model.COLUMNS) {
                  const into = totals.columns[column];
                  into.count++;
                  into.sum += figures[column];
                  const bin = model.binName(figures[column]);
                  into.bins[bin] = (into.bins[bin] ?? 0) + 1;
                }
                const outcome = Math.random();
                totals.counters.analyzed++;
                totals.counters[outcome < 0.7 ? 'successful' : 'unsuccessful']++;
                totals.counters[outcome < 0.5 ? 'sentiment_positive' : outcome < 0.8 ? 'sentiment_neutral' : 'sentiment_negative']++;
              }
              attributes += 3 + model.COLUMNS.reduce((sum, column) => sum + 2 + Object.keys(totals.columns[column].bins).length, 0) + 5;
              cells.push({ table: 'calls', level: 'day', view: ['agent_id'], bucket: model.bucketKey('day', start + day * DAY_MS), values: [`agent_${agent}`], shard, totals });
            }
          }
        }
        await putCells(ws.workspace_id, cells);
        log(`  ${calls.toLocaleString('en-US')} calls: ${cells.length} day cells written, ${Math.round(attributes / cells.length)} attributes a cell with its sketch item`);
        const bodyOf = (percentiles: boolean) => JSON.stringify({
          queries: [{
            table: 'calls',
            time_range: { start_timestamp: start, end_timestamp: end, step: 'day', timezone: 'UTC' },
            group_by: ['agent_id'],
            operations: [
              { operation: 'count' }, { operation: 'sum', column: 'duration_ms' }, { operation: 'avg', column: 'cost' }, { operation: 'avg', column: 'successful' },
              ...(percentiles ? [{ operation: 'p50', column: 'latency_ms' }, { operation: 'p90', column: 'latency_ms' }] : []),
            ],
          }],
        });
        const once = async (body: string) => {
          const began = performance.now();
          const response = await fetch(`${server.url}/analytics/query`, { method: 'POST', headers: { authorization: `Bearer ${ws.api_key}`, 'content-type': 'application/json' }, body });
          const json = (await response.json()) as { results: { result: { count: number }[] }[] };
          const took = performance.now() - began;
          const rows = json.results?.[0]?.result ?? [];
          const counted = rows.reduce((sum, row) => sum + row.count, 0);
          if (response.status !== 200 || rows.length !== DAYS * AGENTS || counted !== calls) {
            throw new Error(`P7 query: ${response.status}, ${rows.length} rows, ${counted} calls counted of ${calls}`);
          }
          return took;
        };
        const measure = async (body: string, runs: number) => {
          for (let warm = 0; warm < 3; warm++) await once(body);
          const samples: number[] = [];
          for (let sample = 0; sample < runs; sample++) samples.push(await once(body));
          return summarize(samples);
        };
        const query = await measure(bodyOf(false), options.samples);
        log(`  ${calls.toLocaleString('en-US')} calls: p50 ${query.p50.toFixed(1)} ms, p95 ${query.p95.toFixed(1)} ms over ${query.n} queries`);
        let percentiles: P7Volume['percentiles'];
        try {
          percentiles = roundSummary(await measure(bodyOf(true), Math.max(3, Math.floor(options.samples / 3))), 1);
          log(`  ${calls.toLocaleString('en-US')} calls, with p50 and p90 of latency: p50 ${percentiles.p50} ms over ${percentiles.n} queries`);
        } catch (error) {
          percentiles = { error: error instanceof Error ? error.message : String(error) };
          log(`  ${calls.toLocaleString('en-US')} calls, with p50 and p90 of latency: ${percentiles.error}`);
        }
        volumes.push({ calls, cells: cells.length, attributesPerCell: Math.round(attributes / cells.length), query: roundSummary(query, 1), percentiles });
      }
    } finally {
      await server.close();
    }
    const ratio = round(volumes.at(-1)!.query.p50 / volumes[0]!.query.p50, 2);
    return {
      days: DAYS,
      agents: AGENTS,
      volumes,
      ratio,
      met: { underOneSecond: volumes.every((volume) => volume.query.p50 < P7_TARGETS.p50Ms), ratio: ratio <= P7_TARGETS.ratio },
    };
  } finally {
    await dynamoDbLocal.stop();
  }
}

/** Run alone (`npm run bench -- --only=p7` spawns this in its own process, with its own DynamoDB Local). */
if (process.argv[1]?.endsWith('analytics-query.ts')) {
  await import('../local/quiet-aws-sdk.ts');
  const samples = Number(process.argv.find((arg) => arg.startsWith('--samples='))?.slice(10) ?? 15);
  const result = await measureP7({ volumes: [10_000, 1_000_000], samples }, (line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
