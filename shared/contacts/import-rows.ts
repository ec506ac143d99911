import { badRequest } from '../platform/errors.ts';
import { csvPhoneNumber, csvPhoneReason, csvVariableName, parseCsvRecords } from '../platform/text/csv.ts';
import { formatIssues } from '../platform/http/validation.ts';
import { nationalToE164 } from '../platform/telephony/phone.ts';
import type { ColumnMapping } from './import-schemas.ts';
import { BUILT_IN_FIELDS, CreateContactBody, CUSTOM_FIELD_NAME, MAPPABLE_BUILT_IN, MAX_CUSTOM_FIELDS, type CreateContactInput } from './schemas.ts';

/*
 * Import rows (docs/contacts.md, Imports): CSV text or a `contacts` array becomes, row by
 * row, either the validated fields of one contact write or the reason it is not imported.
 * Everything about a row is decided here, before anything is written, so the sync import and
 * the job apply the same rows the same way.
 *
 * CSV (the spec's dashboard CSV rules, shared/platform/text/csv.ts): the first row is the header;
 * numbers are cleaned and normalised by csvPhoneNumber (AU ten-digit rule), rows whose
 * number is not E.164 after that are reported, not imported. Columns become contact fields:
 * - with a `column_mapping` (retell-sdk's createImport), only the mapped columns; one must
 *   target phone_number;
 * - otherwise the workspace's contact-field-mappings name columns first; any other column is
 *   a built-in field when its name is one (`first_name`, `email`, `tags`, ...) or a custom
 *   field named by its header as the dashboard names variables (lower case, `_`). The phone
 *   number is the column mapped to phone_number, or else the first column whatever its header.
 * Empty cells are left out (an import never blanks a field); `tags` cells are lists split on
 * `,` or `;`; `do_not_call` cells are true/false, yes/no, 1/0.
 */

export interface ImportRow {
  row: number;
  /** The validated contact fields (absent when the row is not imported). */
  fields?: CreateContactInput;
  /** Why the row is not imported. */
  error?: string;
  /** The number as given, for the report. */
  phone?: string;
}

export interface RowOptions {
  /** retell-sdk's column_mapping: only these columns are read. */
  columnMapping?: ColumnMapping;
  /** The workspace's contact-field-mappings (used without a column_mapping). */
  workspaceMappings: ColumnMapping | readonly { external_field_name: string; field_name: string }[];
  /** Tags added to every row. */
  tags?: string[];
  /** Numbers without a country code are read in this country. */
  defaultCountry?: string;
}

function phoneOf(raw: string, defaultCountry: string | undefined): string | undefined {
  return csvPhoneNumber(raw) ?? (defaultCountry && raw.trim() !== '' ? nationalToE164(raw.trim(), defaultCountry) : undefined);
}

const TRUE = new Set(['true', 'yes', 'y', '1']);
const FALSE = new Set(['false', 'no', 'n', '0']);

/** Validates a row's fields as create-contact's body; the reason names the field. */
function validated(row: number, phone: string | undefined, fields: Record<string, unknown>, tags: string[] | undefined): ImportRow {
  const withTags = tags?.length ? { ...fields, tags: [...((fields.tags as string[] | undefined) ?? []), ...tags] } : fields;
  const result = CreateContactBody.safeParse(withTags, { reportInput: true });
  if (!result.success) return { row, phone, error: formatIssues(result.error.issues, 'contact') };
  return { row, phone, fields: result.data };
}

/** A column's target: a built-in field name or `custom_fields.<name>`; undefined: ignored. */
type Plan = (string | undefined)[];

function columnPlan(header: string[], options: RowOptions): { plan: Plan; phoneColumn: number } {
  const columnKey = (text: string) => text.trim().toLowerCase();
  const lookup = (mappings: readonly { external_field_name: string; field_name: string }[]) => {
    const byColumn = new Map(mappings.map((mapping) => [columnKey(mapping.external_field_name), mapping.field_name]));
    return header.map((column) => byColumn.get(columnKey(column)));
  };
  let plan: Plan;
  if (options.columnMapping) {
    plan = lookup(options.columnMapping);
    const found = new Set(header.map(columnKey));
    const missing = options.columnMapping.filter((mapping) => !found.has(columnKey(mapping.external_field_name)));
    if (missing.length) {
      throw badRequest(`column_mapping: ${missing.map((mapping) => `"${mapping.external_field_name}"`).join(', ')} ${missing.length === 1 ? 'is' : 'are'} not a column of the CSV header`);
    }
  } else {
    const mapped = lookup(options.workspaceMappings);
    const phoneMapped = mapped.includes('phone_number');
    plan = header.map((column, index) => {
      if (mapped[index]) return mapped[index];
      if (index === 0 && !phoneMapped) return 'phone_number';
      const name = csvVariableName(column);
      if (name === '') return undefined; // A column without a header (a trailing comma) is ignored.
      if ((MAPPABLE_BUILT_IN as readonly string[]).includes(name)) return name === 'phone_number' ? undefined : name;
      if ((BUILT_IN_FIELDS as readonly string[]).includes(name)) {
        throw badRequest(`csv: Column "${column}" names the built-in field ${name}, which an import cannot set; rename the column or map it (contact-field-mappings)`);
      }
      if (!CUSTOM_FIELD_NAME.test(name)) {
        throw badRequest(`csv: Column "${column}" cannot be a custom field name (it must start with a letter or _ and hold only letters, digits and _, at most 64); rename the column or map it (contact-field-mappings)`);
      }
      return `custom_fields.${name}`;
    });
  }
  const seen = new Map<string, number>();
  plan.forEach((target, index) => {
    if (!target) return;
    const earlier = seen.get(target);
    if (earlier !== undefined) throw badRequest(`csv: Columns "${header[earlier]}" and "${header[index]}" both fill ${target}`);
    seen.set(target, index);
  });
  if (plan.filter((target) => target?.startsWith('custom_fields.')).length > MAX_CUSTOM_FIELDS) {
    throw badRequest(`csv: At most ${MAX_CUSTOM_FIELDS} custom field columns`);
  }
  return { plan, phoneColumn: seen.get('phone_number') ?? 0 };
}

/** CSV text as import rows (see above); a malformed CSV, a bad header or too many rows is a 400. */
export function csvImportRows(text: string, options: RowOptions & { maxRows: number; field: string; tooManyRows: string }): ImportRow[] {
  const { header, records } = parseCsvRecords(text, { maxRows: options.maxRows, field: options.field, tooManyRows: options.tooManyRows });
  const { plan, phoneColumn } = columnPlan(header, options);
  return records.map(({ row, cells }) => {
    const raw = cells[phoneColumn] ?? '';
    const phone = phoneOf(raw, options.defaultCountry);
    const given = raw.trim() === '' ? undefined : raw;
    if (!phone) return { row, phone: given, error: csvPhoneReason(raw) };
    const fields: Record<string, unknown> = { phone_number: phone };
    const custom: Record<string, string> = {};
    for (const [index, target] of plan.entries()) {
      const cell = cells[index]?.trim();
      if (!target || target === 'phone_number' || cell === undefined || cell === '') continue;
      if (target.startsWith('custom_fields.')) custom[target.slice('custom_fields.'.length)] = cell;
      else if (target === 'tags') fields.tags = cell.split(/[,;]/).map((tag) => tag.trim()).filter(Boolean);
      else if (target === 'do_not_call') {
        const word = cell.toLowerCase();
        if (!TRUE.has(word) && !FALSE.has(word)) return { row, phone: given, error: `do_not_call: Must be true or false (got "${cell.slice(0, 50)}")` };
        fields.do_not_call = TRUE.has(word);
      } else fields[target] = cell;
    }
    if (Object.keys(custom).length) fields.custom_fields = custom;
    return validated(row, given, fields, options.tags);
  });
}

/** A `contacts` array as import rows: each entry is create-contact's body (row = position from 1). */
export function contactImportRows(entries: readonly unknown[], options: Pick<RowOptions, 'tags' | 'defaultCountry'>): ImportRow[] {
  return entries.map((entry, index) => {
    const row = index + 1;
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return { row, error: 'contact: Must be an object' };
    const fields = entry as Record<string, unknown>;
    const raw = fields.phone_number;
    if (typeof raw !== 'string') return { row, error: raw === undefined ? 'phone_number: Required' : 'phone_number: Must be a string' };
    const phone = phoneOf(raw, options.defaultCountry);
    if (!phone) return { row, phone: raw.slice(0, 64), error: `phone_number: ${csvPhoneReason(raw.slice(0, 64))}` };
    return validated(row, raw, { ...fields, phone_number: phone }, options.tags);
  });
}
