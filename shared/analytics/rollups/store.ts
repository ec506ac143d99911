import { keys } from '../../platform/store/keys.ts';
import { table, TransactionCancelled, type TransactOp } from '../../platform/store/table.ts';
import {
  binName,
  bucketKey,
  bucketStart,
  cellPartition,
  COLUMNS,
  COUNTER_PARTITIONS,
  COUNTERS,
  emptyTotals,
  LEVEL_RETENTION_MS,
  mergeTotals,
  sketchPartition,
  type Counter,
  type RollupLevel,
  type RollupTable,
  type RollupTotals,
  type RollupView,
} from './model.ts';

/*
 * The rollup items: cells (figures of one bucket, view value and shard) and facts (that a
 * conversation's phase was counted). A cell's attributes are flat so that every write is
 * DynamoDB's atomic ADD, which needs top-level attributes: `n` (conversations), per column
 * `c_<column>` (how many had it), `s_<column>` (its sum) and `k_<column>_<bin>` (the
 * sketch's bin counts), `x_<counter>`; plus `bucket` and `value` for reading.
 */

/** What one phase adds to one cell. */
export interface CellDelta {
  partition: string;
  bucket: string;
  /** The view's values joined (encoded by cellValue). */
  value: string;
  shard: number;
  level: RollupLevel;
  count: number;
  columns: Partial<Record<(typeof COLUMNS)[number], number>>;
  counters: Partial<Record<Counter, number>>;
}

/** A cell's sort-key value: the view's values, `|`-joined, with `#`, `|` and `%` escaped. */
export function cellValue(values: readonly string[]): string {
  return values.length === 0 ? '-' : values.map((value) => value.replace(/%/g, '%25').replace(/#/g, '%23').replace(/\|/g, '%7C')).join('|');
}

function decodeCellValue(value: string): string[] {
  return value === '-' ? [] : value.split('|').map((part) => decodeURIComponent(part));
}

/** A cell's updates: its counts, sums and counters; and its sketch item's bins when the delta has figures. */
function cellUpdates(workspaceId: string, delta: CellDelta): TransactOp[] {
  const figures = COLUMNS.filter((column) => delta.columns[column] !== undefined);
  const counts = cellUpdate(workspaceId, delta, delta.partition, (add) => {
    if (delta.count) add('n', delta.count);
    for (const column of figures) {
      add(`c_${column}`, delta.count);
      add(`s_${column}`, delta.columns[column]! * delta.count);
    }
    for (const counter of COUNTERS) {
      const amount = delta.counters[counter];
      if (amount) add(`x_${counter}`, amount);
    }
  });
  if (figures.length === 0 || !delta.count) return [counts];
  const bins = cellUpdate(workspaceId, delta, sketchPartition(delta.partition), (add) => {
    for (const column of figures) add(`k_${column}_${binName(delta.columns[column]!)}`, delta.count);
  });
  return [counts, bins];
}

function cellUpdate(workspaceId: string, delta: CellDelta, partition: string, addAll: (add: (attribute: string, amount: number) => void) => void): TransactOp {
  const names: Record<string, string> = { '#bucket': 'bucket', '#value': 'value' };
  const values: Record<string, unknown> = { ':bucket': delta.bucket, ':value': delta.value };
  const adds: string[] = [];
  let index = 0;
  const add = (attribute: string, amount: number) => {
    const name = `#a${index}`;
    const placeholder = `:a${index}`;
    index++;
    names[name] = attribute;
    values[placeholder] = amount;
    adds.push(`${name} ${placeholder}`);
  };
  addAll(add);
  const sets = ['#bucket = :bucket', '#value = :value'];
  const retention = LEVEL_RETENTION_MS[delta.level];
  if (retention !== undefined) {
    names['#expires'] = 'expires_at';
    values[':expires'] = Math.floor((bucketStart(delta.bucket) + retention) / 1000);
    sets.push('#expires = :expires');
  }
  return {
    Update: {
      Key: keys.rollupCell(workspaceId, partition, delta.bucket, delta.value, delta.shard),
      UpdateExpression: `SET ${sets.join(', ')}${adds.length ? ` ADD ${adds.join(', ')}` : ''}`,
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

const CONFLICT_RETRIES = 6;

/**
 * Adds one phase of one conversation to its cells and writes its fact, in one transaction
 * on condition the fact is new: answers false when it was already counted (a repeated step,
 * a backfill meeting a live count). A transaction that meets another on a hot cell is
 * cancelled by DynamoDB and retried here after a short random wait.
 */
export async function applyCellDeltas(
  workspaceId: string,
  fact: { table: RollupTable; id: string; phase: string; timestamp: number },
  deltas: readonly CellDelta[],
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Promise<boolean> {
  const ops: TransactOp[] = [
    {
      Put: {
        Item: { ...keys.rollupFact(workspaceId, fact.table, fact.id, fact.phase), counted_at: fact.timestamp },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    ...deltas.flatMap((delta) => cellUpdates(workspaceId, delta)),
  ];
  for (let attempt = 0; ; attempt++) {
    try {
      await table.transact(ops);
      return true;
    } catch (error) {
      if (!(error instanceof TransactionCancelled)) throw error;
      if (error.failedAt.includes(0)) return false;
      if (!error.conflicted || attempt >= CONFLICT_RETRIES) throw error;
      await sleep(10 + Math.random() * 40 * 2 ** attempt);
    }
  }
}

/** Whether a conversation's phase was counted (the backfill asks before building its deltas). */
export async function factCounted(workspaceId: string, tableName: RollupTable, id: string, phase: string): Promise<boolean> {
  return (await table.get(keys.rollupFact(workspaceId, tableName, id, phase), { projection: 'pk' })) !== undefined;
}

/**
 * Asks the rollup backfill to look at a conversation again: written when a phase's
 * recording failed (docs/analytics.md, "Recording"), so the backfill's next run counts it.
 */
export async function requestRollupRepair(workspaceId: string, tableName: RollupTable, id: string, nowMs: number): Promise<void> {
  await table.put({ Item: { ...keys.rollupRepair(workspaceId, tableName, id), workspace_id: workspaceId, table: tableName, id, requested_at: nowMs } });
}

interface CellItem {
  bucket: string;
  value: string;
  n?: number;
  [attribute: string]: unknown;
}

function totalsOf(item: CellItem): RollupTotals {
  const totals = emptyTotals();
  totals.count = item.n ?? 0;
  for (const [attribute, raw] of Object.entries(item)) {
    if (typeof raw !== 'number') continue;
    if (attribute.startsWith('x_')) {
      const counter = attribute.slice(2) as Counter;
      if (counter in totals.counters) totals.counters[counter] += raw;
      continue;
    }
    for (const column of COLUMNS) {
      if (attribute === `c_${column}`) totals.columns[column].count += raw;
      else if (attribute === `s_${column}`) totals.columns[column].sum += raw;
      else if (attribute.startsWith(`k_${column}_`)) {
        const bin = attribute.slice(column.length + 3);
        totals.columns[column].bins[bin] = (totals.columns[column].bins[bin] ?? 0) + raw;
      }
    }
  }
  return totals;
}

/** One bucket and view value's figures, its shards merged. */
export interface RollupCell {
  /** The bucket's key (`2026-12-02T19`) and its UTC start in epoch ms. */
  bucket: string;
  bucketStart: number;
  /** The view's dimension values, in the view's order (empty for the totals view). */
  values: string[];
  totals: RollupTotals;
}

/**
 * The cells of one view at one level whose buckets start in [start, end): one query over the
 * view's partition (every shard of every bucket in the range), merged by bucket and value;
 * with `sketches` (the default), a second over its sketch items, for percentiles, min and max.
 */
export async function readCells(input: {
  workspaceId: string;
  table: RollupTable;
  level: RollupLevel;
  view: RollupView;
  start: number;
  end: number;
  sketches?: boolean;
}): Promise<RollupCell[]> {
  if (input.end <= input.start) return [];
  const partition = cellPartition(input.table, input.level, input.view);
  const range = (pk: string) => table.queryAll<CellItem>({
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: {
      ':pk': pk,
      ':from': bucketKey(input.level, input.start),
      ':to': `${bucketKey(input.level, input.end - 1)}#\uffff`,
    },
  });
  const [counted, binned] = await Promise.all([
    range(keys.rollupCells(input.workspaceId, partition).pk),
    input.sketches === false ? [] : range(keys.rollupCells(input.workspaceId, sketchPartition(partition)).pk),
  ]);
  const items = [...counted, ...binned];
  const cells = new Map<string, RollupCell>();
  for (const item of items) {
    const id = `${item.bucket}#${item.value}`;
    const cell = cells.get(id);
    if (cell) mergeTotals(cell.totals, totalsOf(item));
    else cells.set(id, { bucket: item.bucket, bucketStart: bucketStart(item.bucket), values: decodeCellValue(item.value), totals: totalsOf(item) });
  }
  return [...cells.values()].filter((cell) => cell.bucketStart >= input.start && cell.bucketStart < input.end);
}

/**
 * Writes cells with the figures given, replacing what they held: for measurements (the P7
 * bench synthesises a volume's rollups directly instead of recording its conversations).
 * Never used on a live workspace: recordConversation is the one writer that counts once.
 */
export async function putCells(
  workspaceId: string,
  cells: readonly { table: RollupTable; level: RollupLevel; view: RollupView; bucket: string; values: readonly string[]; shard: number; totals: RollupTotals }[],
): Promise<void> {
  await table.batchPut(
    cells.flatMap((cell) => {
      const value = cellValue(cell.values);
      const partition = cellPartition(cell.table, cell.level, cell.view);
      const item: Record<string, unknown> = { ...keys.rollupCell(workspaceId, partition, cell.bucket, value, cell.shard), bucket: cell.bucket, value, n: cell.totals.count };
      const sketch: Record<string, unknown> = { ...keys.rollupCell(workspaceId, sketchPartition(partition), cell.bucket, value, cell.shard), bucket: cell.bucket, value };
      for (const column of COLUMNS) {
        const figures = cell.totals.columns[column];
        if (figures.count === 0) continue;
        item[`c_${column}`] = figures.count;
        item[`s_${column}`] = figures.sum;
        for (const [bin, count] of Object.entries(figures.bins)) sketch[`k_${column}_${bin}`] = count;
      }
      for (const counter of COUNTERS) if (cell.totals.counters[counter]) item[`x_${counter}`] = cell.totals.counters[counter];
      return [item, sketch];
    }),
  );
}

/**
 * A custom function's request, counted for alerts in the minute it was answered: one ADD
 * into the workspace's cell and one into its agent's (`n` requests, `x_failed`, the latency's
 * count and sum), on a shard picked at random. No fact item: a request is counted where it
 * was made, once, and a lost count is one request short in one minute.
 */
export async function addFunctionCall(input: { workspaceId: string; agentId: string | undefined; latencyMs: number; failed: boolean; at: number }): Promise<void> {
  const bucket = bucketKey('minute', input.at);
  const shard = Math.floor(Math.random() * 4);
  const expires = Math.floor((bucketStart(bucket) + LEVEL_RETENTION_MS.minute!) / 1000);
  const cells: { partition: string; value: string }[] = [{ partition: COUNTER_PARTITIONS.functions, value: cellValue([]) }];
  if (input.agentId) cells.push({ partition: COUNTER_PARTITIONS.functionsByAgent, value: cellValue([input.agentId]) });
  await Promise.all(
    cells.map(({ partition, value }) =>
      table.update({
        Key: keys.rollupCell(input.workspaceId, partition, bucket, value, shard),
        UpdateExpression: 'SET #bucket = :bucket, #value = :value, expires_at = :expires ADD n :one, x_failed :failed, c_latency_ms :one, s_latency_ms :latency',
        ExpressionAttributeNames: { '#bucket': 'bucket', '#value': 'value' },
        ExpressionAttributeValues: { ':bucket': bucket, ':value': value, ':expires': expires, ':one': 1, ':failed': input.failed ? 1 : 0, ':latency': Math.max(0, Math.round(input.latencyMs)) },
      }),
    ),
  );
}

/** A counter partition's minute cells, every value and shard (readCounterCells). */
export type CounterCells = readonly CellItem[];

/**
 * The minute cells of a counter partition (COUNTER_PARTITIONS) whose buckets fall in
 * [start, end): one query, every value and shard; sumCounters adds up those wanted.
 */
export async function readCounterCells(input: { workspaceId: string; partition: string; start: number; end: number }): Promise<CounterCells> {
  if (input.end <= input.start) return [];
  return table.queryAll<CellItem>({
    KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
    ExpressionAttributeValues: {
      ':pk': keys.rollupCells(input.workspaceId, input.partition).pk,
      ':from': bucketKey('minute', input.start),
      ':to': `${bucketKey('minute', input.end - 1)}#\uffff`,
    },
  });
}

/**
 * The counters of counter cells whose buckets start in [start, end), summed over buckets and
 * shards: of one view value when given (an agent), else of all. Cells read over a wider
 * range sum the same (the alert tick shares one read among rules this way).
 */
export function sumCounters(cells: CounterCells, input: { start: number; end: number; value?: readonly string[] }): Record<string, number> {
  const wanted = input.value ? cellValue(input.value) : undefined;
  const sums: Record<string, number> = {};
  for (const item of cells) {
    if (wanted !== undefined && item.value !== wanted) continue;
    const start = bucketStart(item.bucket);
    if (start < input.start || start >= input.end) continue;
    for (const [attribute, raw] of Object.entries(item)) {
      if (typeof raw === 'number' && attribute !== 'expires_at') sums[attribute] = (sums[attribute] ?? 0) + raw;
    }
  }
  return sums;
}
