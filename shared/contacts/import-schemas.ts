import * as z from 'zod';
import { idOf, lazySchema, queryInt } from '../platform/http/schemas.ts';
import { isUploadedFile, type UploadedFile } from '../platform/http/multipart.ts';
import { isSupportedCountry } from '../platform/telephony/phone.ts';
import { FieldMapping, MAX_FIELD_MAPPINGS, MAX_TAG_CHARS, MAX_TAGS } from './schemas.ts';

/*
 * The contact imports' API contract (docs/contacts.md, Imports): `POST /import-contacts`
 * (at once, up to 1,000 rows), import jobs (in the background, up to 100,000 rows), and
 * retell-sdk's upload-then-import spelling. A body is `{csv}` text, `{contacts: [...]}` or a
 * multipart `file` (a CSV), with an optional `column_mapping`, `tags` and `default_country`.
 */

export const MAX_SYNC_IMPORT_ROWS = 1000;
export const MAX_IMPORT_JOB_ROWS = 100_000;
/** API Gateway's own payload cap is 10 MB: an import body is refused with 413 above it. */
export const IMPORT_MAX_BODY_BYTES = 10 * 1024 * 1024;
export const IMPORT_UPLOAD_LIMITS = { maxFileBytes: IMPORT_MAX_BODY_BYTES, maxFiles: 1 };
/** Row errors kept on a job (all of them are counted in `failed`). */
export const MAX_JOB_ERRORS = 100;

const csvFile = () =>
  z
    .custom<UploadedFile>(isUploadedFile, { message: 'Must be a CSV file sent as multipart/form-data' })
    .refine((file) => file.size > 0, 'The file is empty')
    .meta({ type: 'string', format: 'binary', description: 'A CSV file (UTF-8; the first row is the header)' } as Record<string, unknown>);

/** A multipart text field holding JSON (`column_mapping`) arrives as a string: read it as JSON. */
const jsonText = (value: unknown) => {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return value;
  }
};

/** `tags` in a multipart body: a JSON array, a comma list, or the field repeated. */
const tagsText = (value: unknown) => {
  if (typeof value !== 'string') return value;
  const parsed = jsonText(value);
  return Array.isArray(parsed) ? parsed : value.split(',').map((tag) => tag.trim()).filter(Boolean);
};

/** retell-sdk's column_mapping: CSV header → contact field; exactly one targets phone_number. */
export const ColumnMapping = lazySchema(() =>
  z
    .array(FieldMapping)
    .min(1)
    .max(MAX_FIELD_MAPPINGS)
    .superRefine((mappings, context) => {
      const columns = new Set<string>();
      const targets = new Set<string>();
      mappings.forEach((mapping, index) => {
        const column = mapping.external_field_name.toLowerCase();
        if (columns.has(column)) context.addIssue({ code: 'custom', path: [index, 'external_field_name'], message: 'Is mapped twice' });
        if (targets.has(mapping.field_name)) context.addIssue({ code: 'custom', path: [index, 'field_name'], message: 'Is the target of two columns' });
        columns.add(column);
        targets.add(mapping.field_name);
      });
      if (!targets.has('phone_number')) context.addIssue({ code: 'custom', message: 'Exactly one mapping must target phone_number' });
    }),
);
export type ColumnMapping = z.infer<typeof ColumnMapping>;

const importOptions = () => ({
  column_mapping: z
    .preprocess(jsonText, ColumnMapping)
    .optional()
    .describe('CSV header → contact field for this import (unmapped columns are ignored); without it, the workspace\'s contact-field-mappings, then column names'),
  tags: z
    .preprocess(tagsText, z.array(z.string().trim().min(1).max(MAX_TAG_CHARS)).max(MAX_TAGS))
    .optional()
    .describe('Added to every imported contact; existing tags are kept'),
  default_country: z
    .string()
    .refine((code) => /^[A-Z]{2}$/.test(code) && isSupportedCountry(code), 'Must be an ISO 3166-1 alpha-2 country code (capitals)')
    .optional()
    .describe('Country of numbers written without a country code; without it, such rows are skipped (the dashboard CSV rules)'),
});

const importBody = (maxRows: number) =>
  z
    .object({
      csv: z.string().min(1).optional().describe('CSV text: the first row is the header, the first column the phone number unless a mapping names it'),
      contacts: z.array(z.unknown()).max(maxRows).optional().describe('Contacts shaped as create-contact\'s body'),
      file: z.array(csvFile()).max(1, 'Send one file').optional().describe('A CSV file (multipart/form-data)'),
      ...importOptions(),
    })
    .superRefine((body, context) => {
      const given = (['csv', 'contacts', 'file'] as const).filter((name) => body[name] !== undefined && !(name === 'file' && body.file!.length === 0));
      if (given.length !== 1) {
        context.addIssue({ code: 'custom', path: [], message: given.length === 0 ? 'Send one of csv, contacts or a multipart file' : `Send only one of ${given.join(', ')}` });
      }
    });

export const ImportContactsBody = lazySchema(() => importBody(MAX_SYNC_IMPORT_ROWS));
export const CreateImportJobBody = lazySchema(() => importBody(MAX_IMPORT_JOB_ROWS));
export type ImportInput = z.infer<ReturnType<typeof importBody>>;

/** retell-sdk's createImport: an uploaded file, its column mapping and options. */
export const CreateImportFromUploadBody = lazySchema(() =>
  z.object({
    ...importOptions(),
    upload_id: idOf('contactImportUpload', 'an upload ID from upload-contact-import-file'),
    column_mapping: ColumnMapping,
  }),
);
export type CreateImportFromUploadInput = z.infer<typeof CreateImportFromUploadBody>;

export const UploadImportFileBody = lazySchema(() =>
  z.object({ file: z.array(csvFile()).length(1, 'Send one file') }),
);

export const ImportRowError = lazySchema(() =>
  z.object({
    row: z.number().int().describe('CSV: the line in the file (the header is 1); contacts: the position in the array (from 1)'),
    phone_number: z.string().optional().describe('The number as given'),
    reason: z.string(),
  }),
);
export type ImportRowError = z.infer<typeof ImportRowError>;

const counts = () => ({
  total_rows: z.number().int(),
  processed_rows: z.number().int(),
  created: z.number().int(),
  updated: z.number().int(),
  failed: z.number().int(),
});

export const ImportReport = lazySchema(() =>
  z.object({
    status: z.literal('completed'),
    ...counts(),
    errors: z.array(ImportRowError).describe('Every row not imported, in file order'),
  }),
);
export type ImportReport = z.infer<typeof ImportReport>;

const jobFields = () => ({
  import_job_id: z.string(),
  status: z.enum(['queued', 'running', 'completed', 'failed']),
  source: z.enum(['csv', 'contacts', 'file', 'upload']),
  file_name: z.string().optional(),
  ...counts(),
  succeeded: z.number().int().describe('created + updated'),
  error_count: z.number().int().describe('Rows not imported (= failed)'),
  errors_truncated: z.boolean().describe(`Whether more rows failed than the first ${MAX_JOB_ERRORS} kept in errors`),
  failure_reason: z.string().optional().describe('Why a failed job stopped'),
  tags: z.array(z.string()),
  triggered_by: z.literal('manual'),
  created_timestamp: z.number().int(),
  start_timestamp: z.number().int(),
  end_timestamp: z.number().int().nullable(),
});

export const ImportJob = lazySchema(() => z.object({ ...jobFields(), errors: z.array(ImportRowError).describe(`The first ${MAX_JOB_ERRORS} rows not imported`) }));
export type ImportJob = z.infer<typeof ImportJob>;
/** In lists, without the row errors. */
export const ImportJobSummary = lazySchema(() => z.object(jobFields()));

/** retell-sdk's ContactGetImportResponse / ContactCreateImportResponse, plus the job's own fields. */
export const RetellImportStatus = lazySchema(() =>
  z.object({
    status: z.enum(['queued', 'running', 'idle']).describe('idle once the job has completed or failed (and before any)'),
    succeeded: z.number().int().optional(),
    failed: z.number().int().optional(),
    start_timestamp: z.number().int().optional(),
    end_timestamp: z.number().int().optional(),
    triggered_by: z.literal('manual').optional(),
    import_job_id: z.string().optional(),
    job_status: z.enum(['queued', 'running', 'completed', 'failed']).optional(),
    total_rows: z.number().int().optional(),
    processed_rows: z.number().int().optional(),
    created: z.number().int().optional(),
    updated: z.number().int().optional(),
  }),
);
export type RetellImportStatus = z.infer<typeof RetellImportStatus>;

export const UploadedImportFile = lazySchema(() =>
  z.object({ upload_id: z.string(), file_name: z.string(), size_bytes: z.number().int(), total_rows: z.number().int() }),
);

export const importJobParams = lazySchema(() => z.object({ import_job_id: idOf('contactImportJob', 'a contact import job ID') }));
export const ListImportJobsQuery = lazySchema(() => z.object({ limit: queryInt({ min: 1, max: 1000, default: 100 }) }));
