import { parse } from 'csv-parse/sync';
import { csvUnescapeCell } from './csv-write.ts';
import { badRequest } from '../errors.ts';
import { canonicalE164 } from '../telephony/phone.ts';

/*
 * The dashboard's CSV import rules (spec: Batch calls, detailed shapes), for any feature
 * that takes a list of numbers with per-row variables (batch calls, the contacts import):
 *
 * - the first row is the header;
 * - the first column is the phone number, whatever its header says;
 * - every other column is a variable, named by its header lower-cased with every character
 *   other than a letter, a digit or `_` replaced by `_`;
 * - spaces, brackets and dashes are removed from numbers; ten-digit Australian numbers
 *   starting 02, 03, 04, 07 or 08 become +61 numbers (the leading 0 dropped);
 * - a row whose number is not E.164 after that is skipped, and reported.
 *
 * Parsing is csv-parse's (RFC 4180: quoted fields, embedded commas, quotes and newlines,
 * CRLF or LF, a UTF-8 byte order mark); blank lines are ignored. Each cell read loses the
 * `'` our own writer's formula escaping adds (csvUnescapeCell, shared/platform/text/csv-write.ts),
 * so a file the product exported reads back as the values it holds: `'+14155550100` is the
 * number +14155550100 again. Only a cell that begins with `'`s and then `=`, `+`, `-`, `@`,
 * a tab or a CR loses one, the only cells the writer changes; that holds for every reader
 * (batch tasks, the contacts import, knowledge-base CSV files).
 */

interface CsvRow {
  /** The row's line in the file, the header being line 1 (what a user sees in a spreadsheet). */
  row: number;
  phone_number: string;
  variables: Record<string, string>;
}

export interface CsvSkippedRow {
  row: number;
  value: string;
  reason: string;
}

export interface DashboardCsv {
  /** The variable names, in column order (the normalised headers of columns 2 onwards). */
  variables: string[];
  rows: CsvRow[];
  skipped: CsvSkippedRow[];
}

/** A header as a variable name: lower case, anything but letters, digits and `_` becomes `_`. */
export const csvVariableName = (header: string): string => header.trim().toLowerCase().replace(/[^a-z0-9_]/g, '_');

const AU_TEN_DIGITS = /^0[23478][0-9]{8}$/;

/** A number as typed in a sheet, per the rules above: E.164, or undefined when it is not one. */
export function csvPhoneNumber(raw: string): string | undefined {
  const compact = raw.trim().replace(/[\s()[\]{}-]/g, '');
  const converted = AU_TEN_DIGITS.test(compact) ? `+61${compact.slice(1)}` : compact;
  return canonicalE164(converted);
}

export interface DashboardCsvOptions {
  /** Most data rows accepted (rows past it are a 400, not skipped). */
  maxRows: number;
  /** The field name in 400 messages, e.g. `tasks_csv`. */
  field: string;
}

export interface CsvRecord {
  /** The line the row ends on (a quoted field may span lines); the header is line 1. */
  row: number;
  cells: string[];
}

/**
 * CSV text as a header and its data records (csv-parse, the options above): malformed CSV,
 * no header or more than `maxRows` data rows is a 400 naming `field`. For features that
 * map columns themselves (the contacts import); parseDashboardCsv is the dashboard's rules
 * on top of it. `tooManyRows` replaces the message for too many rows.
 */
export function parseCsvRecords(
  text: string,
  options: DashboardCsvOptions & { tooManyRows?: string },
): { header: string[]; records: CsvRecord[] } {
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parse(text, {
      bom: true,
      skip_empty_lines: true,
      relax_column_count: true,
      info: true,
      // The header plus maxRows data rows, and one more to tell "too many" apart.
      to: options.maxRows + 2,
    }) as unknown as typeof records;
  } catch (error) {
    throw badRequest(`${options.field}: Not valid CSV: ${(error as Error).message}`);
  }
  const [first, ...data] = records;
  const header = first?.record;
  if (!header || header.length === 0) throw badRequest(`${options.field}: The CSV has no header row`);
  if (data.length > options.maxRows) {
    throw badRequest(`${options.field}: ${options.tooManyRows ?? `At most ${options.maxRows} rows (the header not counted)`}`);
  }
  return {
    header: header.map(csvUnescapeCell),
    records: data.map(({ record, info }) => ({ row: info.lines, cells: record.map(csvUnescapeCell) })),
  };
}

/** Parses CSV text by the dashboard's rules; malformed CSV or too many rows is a 400 naming `field`. */
export function parseDashboardCsv(text: string, options: DashboardCsvOptions): DashboardCsv {
  const { header, records } = parseCsvRecords(text, options);
  const variables = header.slice(1).map(csvVariableName);
  const rows: CsvRow[] = [];
  const skipped: CsvSkippedRow[] = [];
  records.forEach(({ row, cells: record }) => {
    const value = record[0] ?? '';
    const phone = csvPhoneNumber(value);
    if (!phone) {
      skipped.push({ row, value, reason: csvPhoneReason(value) });
      return;
    }
    const vars: Record<string, string> = {};
    variables.forEach((name, column) => {
      const cell = record[column + 1];
      if (cell !== undefined) vars[name] = cell;
    });
    rows.push({ row, phone_number: phone, variables: vars });
  });
  return { variables, rows, skipped };
}

/** Why a cell is not a number by the rules above. */
export const csvPhoneReason = (value: string): string =>
  value.trim() === '' ? 'No phone number' : `${value} is not a valid E.164 number`;
