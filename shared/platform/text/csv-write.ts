/*
 * Every CSV the product writes goes through csvLine (a module of its own, without the
 * parser and the phone module that the reader in csv.ts needs, so a writer's bundle stays
 * small).
 *
 * - Quoting is RFC 4180's: a cell with a comma, a quote, CR or LF is quoted, its quotes
 *   doubled; lines end with CRLF. undefined and null are empty cells; objects and arrays
 *   are their JSON text in one cell.
 * - Formula escaping (OWASP, CSV injection): a spreadsheet evaluates a cell that begins with
 *   `=`, `+`, `-`, `@`, a tab or a CR, so a contact named `=HYPERLINK(...)` would become a
 *   live link or a command in the sheet of whoever opens the export. Such a cell is written
 *   with a leading `'`, which makes it text. A cell that already begins with one or more
 *   `'` before one of those characters gets one more, so the escaping can be undone
 *   exactly: csvUnescapeCell (applied by the reader, parseCsvRecords) removes one leading
 *   `'` from a cell that begins with `'`s and then one of those characters, and nothing
 *   from any other cell. An export imported back (a contacts export into the contacts
 *   import) gives back the values exported, `+14155550100` and `=HYPERLINK(...)` alike.
 */

const NEEDS_ESCAPE = /^'*[=+\-@\t\r]/;
const ESCAPED = /^'+[=+\-@\t\r]/;

/** A cell's text with the formula escaping above (before quoting). */
const csvEscapeFormula = (text: string): string => (NEEDS_ESCAPE.test(text) ? `'${text}` : text);

/** The inverse of csvEscapeFormula: a cell as read, without the `'` the escaping added. */
export const csvUnescapeCell = (text: string): string => (ESCAPED.test(text) ? text.slice(1) : text);

/** One value as a CSV cell: its text, formula-escaped, quoted when it has to be. */
export function csvCell(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = csvEscapeFormula(typeof value === 'object' ? JSON.stringify(value) : String(value));
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV line (CRLF-terminated) of the given cells. */
export const csvLine = (cells: readonly unknown[]): string => `${cells.map(csvCell).join(',')}\r\n`;
