import { round, roundSummary, summarize, type Summary } from './stats.ts';

/**
 * P7, the alert half (docs/performance.md): one alert tick's pass over 100 rules and over
 * 10,000 (100 rules in each of 1 and of 100 workspaces), every rule due, on the local
 * runtime. Each workspace has the minute cells of 1,000 calls over the last hour, by 5
 * agents, synthesised directly (as the query half does); the rules mix metrics (call counts,
 * rates, p90 latency, custom-function and API-error counters), agent filters, windows of 1 to
 * 60 minutes and relative thresholds, and none is crossed, so a pass measures evaluation
 * (no webhook). Goal: a pass's time per rule at 10,000 rules within 1.5× its time at 100:
 * the due index is read by due time, each rule costs its own claim, and its reads are shared
 * with its workspace's rules, never with the whole table's. The first pass writes every
 * rule's value (none held one); later passes write only the values that changed (none here).
 */
export interface P7AlertVolume {
  rules: number;
  workspaces: number;
  pass: Summary;
  perRuleMs: number;
  evaluated: number;
}

export interface P7AlertResult {
  volumes: P7AlertVolume[];
  ratio: number;
  met: { ratio: boolean };
}

export const P7_ALERT_TARGETS = { ratio: 1.5 };

const RULES_PER_WORKSPACE = 100;
const AGENTS = 5;
const SHARDS = 4;
const MINUTE = 60_000;
const CALLS_PER_WORKSPACE = 1_000;
const METRICS = ['call_count', 'success_rate', 'negative_sentiment_rate', 'latency_p90', 'total_cost', 'custom_function_failures', 'api_errors'] as const;

export async function measureP7Alerts(options: { volumes: number[]; passes: number }, log: (line: string) => void): Promise<P7AlertResult> {
  const { startDynamoDbLocal } = await import('../local/dynamodb.ts');
  const dynamoDbLocal = await startDynamoDbLocal();
  process.env.DYNAMODB_ENDPOINT = dynamoDbLocal.endpoint;
  try {
    const [{ ensureTable }, { dynamo, tableName }, { table }, { keys }, model, { putCells }, { runAlertTick }] = await Promise.all([
      import('../shared/platform/store/create-table.ts'),
      import('../shared/platform/store/db.ts'),
      import('../shared/platform/store/table.ts'),
      import('../shared/platform/store/keys.ts'),
      import('../shared/analytics/rollups/model.ts'),
      import('../shared/analytics/rollups/store.ts'),
      import('../shared/analytics/alerts/index.ts'),
    ]);
    await ensureTable(dynamo, tableName);
    const base = Math.floor(Date.now() / MINUTE) * MINUTE;
    const volumes: P7AlertVolume[] = [];
    for (const [volumeIndex, rules] of options.volumes.entries()) {
      const workspaces = Math.max(1, Math.round(rules / RULES_PER_WORKSPACE));
      // Each volume evaluates a fresh hour, so the first's rules are never due in the second's passes.
      const now = base + volumeIndex * 24 * 60 * MINUTE;
      const items: Record<string, unknown>[] = [];
      for (let w = 0; w < workspaces; w++) {
        const workspaceId = `ws_bench${String(volumeIndex).padStart(2, '0')}${String(w).padStart(14, '0')}`;
        // The last hour's minute cells: all and by agent, every shard, calls spread evenly.
        const cells: Parameters<typeof putCells>[1][number][] = [];
        const perCell = Math.max(1, Math.round(CALLS_PER_WORKSPACE / (60 * AGENTS * SHARDS)));
        for (let minute = 1; minute <= 60; minute++) {
          const bucket = model.bucketKey('minute', now - minute * MINUTE);
          for (let agent = 0; agent < AGENTS; agent++) {
            for (let shard = 0; shard < SHARDS; shard++) {
              const totals = model.emptyTotals();
              totals.count = perCell;
              totals.counters.analyzed = perCell;
              totals.counters.successful = perCell;
              totals.columns.latency_ms = { count: perCell, sum: perCell * 900, bins: { [model.binName(900)]: perCell } };
              totals.columns.cost = { count: perCell, sum: perCell * 10, bins: {} };
              cells.push({ table: 'calls', level: 'minute', view: ['agent_id'], bucket, values: [`agent_${String(agent).padStart(24, '0')}`], shard, totals });
              if (agent === 0) cells.push({ table: 'calls', level: 'minute', view: [], bucket, values: [], shard, totals: model.mergeTotals(model.emptyTotals(), { ...totals, count: perCell * AGENTS }) });
            }
          }
        }
        await putCells(workspaceId, cells);
        for (let r = 0; r < RULES_PER_WORKSPACE && items.length / 2 < rules; r++) {
          const alertId = `alert_${String(volumeIndex).padStart(2, '0')}${String(w).padStart(10, '0')}${String(r).padStart(12, '0')}`;
          const metric = METRICS[r % METRICS.length]!;
          const agentFilter = metric !== 'api_errors' && r % 2 === 0 ? { filters: { agent_id: `agent_${String(r % AGENTS).padStart(24, '0')}` } } : {};
          const relative = r % 3 === 0;
          const due = now - 1_000;
          items.push({
            ...keys.alert(workspaceId, alertId),
            workspace_id: workspaceId,
            alert_id: alertId,
            name: `Rule ${r}`,
            metric,
            ...agentFilter,
            comparator: 'gt',
            threshold: relative ? { type: 'relative', percent: 10_000 } : { type: 'absolute', value: 1e12 },
            window_minutes: 1 + (r % 30),
            frequency_minutes: 1,
            frequency_ms: MINUTE,
            webhook_url: null,
            enabled: true,
            state: 'ok',
            last_value: null,
            last_evaluation_timestamp: null,
            next_evaluation_timestamp: due,
            transitions: 0,
            revision: 1,
            created_timestamp: due,
            last_modification_timestamp: due,
          });
          items.push({ ...keys.alertDue(workspaceId, alertId, due), workspace_id: workspaceId, alert_id: alertId, due_at: due });
        }
      }
      await table.batchPut(items);
      log(`  ${rules.toLocaleString('en-US')} rules in ${workspaces} workspace(s), each with the last hour's minute cells of ${CALLS_PER_WORKSPACE.toLocaleString('en-US')} calls`);
      const samples: number[] = [];
      let evaluated = 0;
      for (let pass = 0; pass < options.passes; pass++) {
        const began = performance.now();
        const result = await runAlertTick({ now: now + pass * MINUTE, budgetMs: Number.POSITIVE_INFINITY });
        samples.push(performance.now() - began);
        if (result.evaluated !== rules || result.failed !== 0 || result.triggered !== 0) throw new Error(`P7 alert pass: ${JSON.stringify(result)} of ${rules} rules`);
        evaluated += result.evaluated;
      }
      // Out of the next volume's passes: its rules' entries go (the rules themselves are never read again).
      for (let partition = 0; partition < 4; partition++) {
        const entries = await table.queryAll<{ pk: string; sk: string }>({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': keys.alertDuePartition(partition).pk }, ProjectionExpression: 'pk, sk' });
        await table.batchDelete(entries);
      }
      const pass = summarize(samples);
      volumes.push({ rules, workspaces, pass: roundSummary(pass, 1), perRuleMs: round(pass.p50 / rules, 3), evaluated });
      log(`  ${rules.toLocaleString('en-US')} rules: a pass p50 ${pass.p50.toFixed(0)} ms (${(pass.p50 / rules).toFixed(2)} ms a rule) over ${pass.n} passes`);
    }
    const ratio = round(volumes.at(-1)!.perRuleMs / volumes[0]!.perRuleMs, 2);
    return { volumes, ratio, met: { ratio: ratio <= P7_ALERT_TARGETS.ratio } };
  } finally {
    await dynamoDbLocal.stop();
  }
}

/** Run alone (`npm run bench -- --only=p7` spawns this in its own process, with its own DynamoDB Local). */
if (process.argv[1]?.endsWith('alert-pass.ts')) {
  await import('../local/quiet-aws-sdk.ts');
  const passes = Number(process.argv.find((arg) => arg.startsWith('--passes='))?.slice(9) ?? 2);
  const volumes = (process.argv.find((arg) => arg.startsWith('--rules='))?.slice(8) ?? '100,10000').split(',').map(Number);
  const result = await measureP7Alerts({ volumes, passes }, (line) => process.stderr.write(`${line}\n`));
  process.stdout.write(`${JSON.stringify(result)}\n`);
  process.exit(0);
}
