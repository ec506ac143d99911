/** Small, dependency-free statistics and formatting helpers for the benchmark. */

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const sum = sorted.reduce((total, value) => total + value, 0);
  return {
    n: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
  };
}

export const median = (samples: readonly number[]) => percentile([...samples].sort((a, b) => a - b), 50);

/** Rounds for JSON output: keeps results.json readable without losing meaningful precision. */
export function round(value: number, digits = 3): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function roundSummary(summary: Summary, digits = 3): Summary {
  return Object.fromEntries(
    Object.entries(summary).map(([key, value]) => [key, key === 'n' ? value : round(value, digits)]),
  ) as unknown as Summary;
}

export const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
export const ms = (value: number, digits = 2) => (Number.isFinite(value) ? `${value.toFixed(digits)} ms` : 'n/a');
export const times = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a');

/** A plain-text table with right-aligned numeric-looking cells. */
export function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows.map((row) => row.map(String))];
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  const numeric = /^[-+]?[\d.,]+(\s?(ms|KiB|MB|×|%))?$|^n\/a$/;
  const line = (row: string[]) =>
    row
      .map((cell, column) => (numeric.test(cell) && column > 0 ? cell.padStart(widths[column]!) : cell.padEnd(widths[column]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((width) => '-'.repeat(width)).join('  ');
  return [line(cells[0]!), rule, ...cells.slice(1).map(line)].join('\n');
}

/**
 * The order of `items` in interleaving round `round`: rotated one place per round, so each
 * item takes every position equally often, and reversed every other full cycle, so no item
 * always follows the same neighbour (for two items: AB BA BA AB …).
 */
export function roundOrder<T>(items: readonly T[], round: number): T[] {
  if (items.length === 0) return [];
  const shift = round % items.length;
  const order = [...items.slice(shift), ...items.slice(0, shift)];
  return Math.floor(round / items.length) % 2 === 1 ? order.reverse() : order;
}
