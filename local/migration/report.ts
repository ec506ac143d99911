/*
 * What an import tells: one line of progress on stderr while it runs (only on a terminal:
 * redirected output gets no progress noise), and at the end a table of every object with
 * what happened to it and why.
 */

type Status = 'moved' | 'updated' | 'skipped' | 'not movable' | 'failed';
const STATUSES: readonly Status[] = ['moved', 'updated', 'skipped', 'not movable', 'failed'];

export interface Row {
  kind: string;
  name: string;
  source_id: string;
  parley_id?: string;
  status: Status;
  /** Why (failed, not movable, skipped) or what changed (updated), and the manual step. */
  detail?: string;
}

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

/** `[3/12] agent Sales desk` redrawn in place; nothing at all when the stream is not a terminal. */
export class Progress {
  private shown = false;
  constructor(
    private readonly stream: ProgressStream,
    private readonly total: number,
  ) {}

  step(done: number, label: string): void {
    if (!this.stream.isTTY) return;
    // A terminal that reports no width (0 columns: a pseudo-terminal given no window size) is
    // taken as 80 wide, not cut to the 20-column floor.
    const width = Math.max(20, (this.stream.columns || 80) - 1);
    const bar = this.total ? Math.round((done / this.total) * 20) : 20;
    const line = `[${'#'.repeat(bar)}${'.'.repeat(20 - bar)}] ${done}/${this.total} ${label}`;
    this.stream.write(`\r\x1b[K${line.slice(0, width)}`);
    this.shown = true;
  }

  /** A line that stays (a 429 wait), above the progress line. */
  note(text: string): void {
    if (this.stream.isTTY && this.shown) this.stream.write('\r\x1b[K');
    this.stream.write(`${text}\n`);
  }

  end(): void {
    if (this.shown) this.stream.write('\r\x1b[K');
    this.shown = false;
  }
}

/** The rows as an aligned text table, then one line of counts by status. */
export function summaryTable(rows: readonly Row[]): string {
  const header = ['KIND', 'NAME', 'SOURCE ID', 'PARLEY ID', 'RESULT', 'DETAIL'];
  const cells = rows.map((row) => [row.kind, row.name, row.source_id, row.parley_id ?? '-', row.status, row.detail ?? '']);
  const widths = header.slice(0, -1).map((title, i) => Math.max(title.length, ...cells.map((line) => Math.min(48, line[i]!.length))));
  const format = (line: string[]) =>
    line
      .map((cell, i) => (i < widths.length ? cell.slice(0, 48).padEnd(widths[i]!) : cell))
      .join('  ')
      .trimEnd();
  return [format(header), ...cells.map(format), '', countsLine(rows)].join('\n');
}

function countsLine(rows: readonly Row[]): string {
  return STATUSES.map((status) => `${rows.filter((row) => row.status === status).length} ${status}`).join(', ');
}
