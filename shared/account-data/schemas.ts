import * as z from 'zod';
import { epochMs, idOf, lazySchema, optionalQueryInt } from '../platform/http/schemas.ts';
import { isUploadedFile, type UploadedFile } from '../platform/http/multipart.ts';
import { createUploadBody, PresignedUploadView } from '../platform/http/upload-schemas.ts';

/*
 * The account-data API contract (docs/account-data.md): exports, assets, privacy requests,
 * reliability settings, account status and egress. The spec shows only the paths; shapes
 * follow retell-sdk where it has them (asset.create, exportRequest.list), ours elsewhere.
 */

// ---------------------------------------------------------------------------------------
// Exports

const EXPORT_TYPES = ['calls', 'chats', 'contacts', 'sms'] as const;
const EXPORT_FORMATS = ['csv', 'jsonl'] as const;
const EXPORT_STATUSES = ['pending', 'running', 'complete', 'failed'] as const;
export type ExportType = (typeof EXPORT_TYPES)[number];
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

/** How long an export's file (and its record) is kept. */
export const EXPORT_RETENTION_DAYS = 7;
/** How long a download URL works. */
export const DOWNLOAD_URL_SECONDS = 15 * 60;

export const CreateExportBody = lazySchema(() =>
  z
    .object({
      type: z.enum(EXPORT_TYPES),
      format: z.enum(EXPORT_FORMATS).default('csv'),
      start_timestamp: epochMs().optional().describe('Only records created at or after this time'),
      end_timestamp: epochMs().optional().describe('Only records created before this time'),
      filter_criteria: z
        .record(z.string(), z.unknown())
        .optional()
        .describe('Calls only: the filter_criteria of POST /v3/list-calls (retell-sdk FilterCriteria), checked by that route\'s schema'),
    })
    .superRefine((body, ctx) => {
      if (body.start_timestamp !== undefined && body.end_timestamp !== undefined && body.end_timestamp <= body.start_timestamp) {
        ctx.addIssue({ code: 'custom', path: ['end_timestamp'], message: 'Must be after start_timestamp' });
      }
      if (body.filter_criteria !== undefined && body.type !== 'calls') {
        ctx.addIssue({ code: 'custom', path: ['filter_criteria'], message: 'Only calls exports take filter_criteria' });
      }
    }),
);
export type CreateExportInput = z.infer<typeof CreateExportBody>;

export const ExportRequest = lazySchema(() =>
  z.object({
    export_id: z.string(),
    type: z.enum(EXPORT_TYPES),
    format: z.enum(EXPORT_FORMATS),
    status: z.enum(EXPORT_STATUSES),
    start_timestamp: epochMs().optional(),
    end_timestamp: epochMs().optional(),
    filter_criteria: z.record(z.string(), z.unknown()).optional(),
    row_count: z.number().int().describe('Rows written so far (all of them once complete)'),
    size_bytes: z.number().int().describe('The file\'s size once complete (0 before)'),
    failure_reason: z.string().optional(),
    created_timestamp: epochMs(),
    started_timestamp: epochMs().optional(),
    completed_timestamp: epochMs().optional(),
    expiration_timestamp: epochMs().describe('When the file and this record are deleted'),
  }),
);
export type ExportRequest = z.infer<typeof ExportRequest>;

export const CreatedExport = lazySchema(() => z.object({ export_id: z.string(), status: z.enum(EXPORT_STATUSES) }));

export const exportParams = lazySchema(() => z.object({ id: idOf('export', 'an export ID') }));

export const ListExportsQuery = lazySchema(() => z.object({ limit: optionalQueryInt({ min: 1, max: 1000 }) }));

export const DownloadLink = lazySchema(() =>
  z.object({ export_id: z.string(), url: z.string(), expiration_timestamp: epochMs(), size_bytes: z.number().int(), row_count: z.number().int() }),
);

/** retell-sdk's exportRequest.list (GET /v2/list-export-requests). */
export const ListExportRequestsQuery = lazySchema(() =>
  z.object({
    limit: optionalQueryInt({ min: 1, max: 1000 }),
    pagination_key: idOf('export', 'an export ID').optional(),
    sort_order: z.enum(['ascending', 'descending']).optional(),
  }),
);

export const ExportRequestPage = lazySchema(() =>
  z.object({
    has_more: z.boolean(),
    items: z.array(
      z.object({
        export_request_id: z.string(),
        channel: z.enum(['call', 'chat']).optional(),
        status: z.enum(['created', 'processing', 'completed', 'error']),
        created_timestamp: epochMs(),
        url: z.string().optional(),
      }),
    ),
    pagination_key: z.string().optional(),
  }),
);

// ---------------------------------------------------------------------------------------
// Assets

export const ASSET_MAX_BYTES = 10 * 1024 * 1024;
export const ASSET_MAX_AUDIO_MS = 210_000;
/** A multipart body of one 10 MB file, its part headers and boundary. */
export const ASSET_MAX_BODY_BYTES = ASSET_MAX_BYTES + 64 * 1024;
export const ASSET_UPLOAD_LIMITS = { maxFileBytes: ASSET_MAX_BYTES, maxFiles: 1 };

/**
 * Multipart `file` (retell-sdk's asset.create), or JSON `{upload_id}` naming a presigned
 * upload (POST /create-asset-upload) for files past API Gateway's ~6 MB request limit.
 */
export const CreateAssetBody = lazySchema(() =>
  z
    .object({
      file: z
        .array(z.custom<UploadedFile>(isUploadedFile, { message: 'Must be a file sent as multipart/form-data' }))
        .length(1, 'Send one file')
        .optional(),
      upload_id: idOf('upload', 'an upload ID from POST /create-asset-upload').optional(),
    })
    .superRefine((body, ctx) => {
      if (body.file && body.upload_id) ctx.addIssue({ code: 'custom', path: ['upload_id'], message: 'Send either file or upload_id, not both' });
      else if (!body.file && !body.upload_id) ctx.addIssue({ code: 'custom', path: ['file'], message: 'Required (or upload_id, a presigned upload)' });
    }),
);

/** POST /create-asset-upload: a presigned PUT for one asset file (up to 10 MB), then `POST /create-asset {upload_id}`. */
export const CreateAssetUploadBody = lazySchema(createUploadBody);
export const AssetUpload = lazySchema(PresignedUploadView);

export const Asset = lazySchema(() =>
  z.object({
    asset_id: z.string(),
    content_type: z.string().describe('Decided from the bytes, not the name'),
    kind: z.enum(['image', 'audio']),
    file_name: z.string(),
    file_size: z.number().int(),
    duration_ms: z.number().int().optional().describe('Audio whose length could be read (WAV, FLAC)'),
    created_timestamp: epochMs(),
    url: z.string().describe('Public URL (no key needed)'),
  }),
);
export type Asset = z.infer<typeof Asset>;

export const assetParams = lazySchema(() => z.object({ asset_id: idOf('asset', 'an asset ID') }));

// ---------------------------------------------------------------------------------------
// Privacy

export const DeletePhoneNumberBody = lazySchema(() =>
  z.object({ phone_number: z.string().regex(/^\+[1-9][0-9]{6,14}$/, 'Must be an E.164 number, e.g. +14155550100') }),
);

export const ErasureReport = lazySchema(() =>
  z.object({
    calls_deleted: z.number().int(),
    recordings_deleted: z.number().int(),
    chats_deleted: z.number().int(),
    sms_deleted: z.number().int(),
    contacts_deleted: z.number().int(),
    exports_deleted: z.number().int(),
    batch_tasks_erased: z.number().int().describe('Batch-call tasks to the number: not yet dialled ones skipped, all with the number and variables replaced'),
    audit_entries_masked: z.number().int().describe('Audit entries whose target was the number, now its last four digits'),
    log_entries_deleted: z.number().int().describe('Webhook delivery and telephony provider log entries quoting the number'),
  }),
);
export type ErasureReport = z.infer<typeof ErasureReport>;

export const RetentionReport = lazySchema(() =>
  z.object({
    calls_deleted: z.number().int(),
    chats_deleted: z.number().int(),
    calls_examined: z.number().int(),
    chats_examined: z.number().int(),
  }),
);
export type RetentionReport = z.infer<typeof RetentionReport>;

export const PrivacyRequest = lazySchema(() =>
  z.object({
    request_id: z.string(),
    kind: z.enum(['delete_phone_number', 'run_retention']),
    status: z.enum(['pending', 'running', 'complete', 'failed']),
    phone_number_masked: z.string().optional().describe('The erased number\'s last four digits only'),
    report: z.union([ErasureReport, RetentionReport]).optional(),
    failure_reason: z.string().optional(),
    created_timestamp: epochMs(),
    completed_timestamp: epochMs().optional(),
  }),
);
export type PrivacyRequest = z.infer<typeof PrivacyRequest>;

export const privacyRequestParams = lazySchema(() => z.object({ request_id: idOf('privacyRequest', 'a privacy request ID') }));
export const privacyCallParams = lazySchema(() => z.object({ call_id: idOf('call', 'a call ID') }));

export const PrivacyCallView = lazySchema(() =>
  z.object({
    call_id: z.string(),
    data_storage_setting: z.enum(['everything', 'everything_except_pii', 'basic_attributes_only']),
    data_storage_retention_days: z.number().int().nullable(),
    retention_timestamp: epochMs().nullable().describe('When retention deletes the call (null: kept until deleted)'),
    stored_fields: z.array(z.string()).describe('The call\'s fields that hold a value'),
    personal_fields: z.array(z.string()).describe('Of those, the ones that can identify the caller'),
    recording: z.boolean(),
    scrubbed: z.boolean().describe('remove-call-sensitive-data has run on the call'),
    unscrubbed_copy: z.boolean().describe('An admin-only unscrubbed copy is kept'),
  }),
);

// ---------------------------------------------------------------------------------------
// Reliability, account status, egress

const MIN_LLM_TOKEN_LIMIT = 1_024;
const MAX_LLM_TOKEN_LIMIT = 131_072;
export const DEFAULT_LLM_TOKEN_LIMIT = 32_768;

export const ReliabilitySettings = lazySchema(() =>
  z.object({
    llm_token_limit: z.number().int(),
    fallback_llm_model: z.string().nullable(),
    fallback_voice_ids: z.array(z.string()),
  }),
);
export type ReliabilitySettings = z.infer<typeof ReliabilitySettings>;

export const PutReliabilityBody = lazySchema(() =>
  z.object({
    llm_token_limit: z
      .number()
      .int('Must be a whole number')
      .min(MIN_LLM_TOKEN_LIMIT, `Must be from ${MIN_LLM_TOKEN_LIMIT} to ${MAX_LLM_TOKEN_LIMIT}`)
      .max(MAX_LLM_TOKEN_LIMIT, `Must be from ${MIN_LLM_TOKEN_LIMIT} to ${MAX_LLM_TOKEN_LIMIT}`)
      .optional(),
    fallback_llm_model: z.string().min(1).max(100).nullable().optional(),
    fallback_voice_ids: z.array(z.string().min(1).max(200)).max(5).optional(),
  }),
);
export type PutReliabilityInput = z.infer<typeof PutReliabilityBody>;

export const AccountStatus = lazySchema(() =>
  z.object({
    workspace_id: z.string(),
    status: z.enum(['active', 'suspended']),
    can_work: z.boolean(),
    reasons: z.array(z.string()).describe('Why the workspace cannot work (empty when it can)'),
    verification: z.object({ status: z.string() }),
    spend: z.object({ state: z.enum(['ok', 'blocked']), codes: z.array(z.string()) }),
    concurrency: z.object({ limit: z.number().int(), in_use: z.number().int() }),
    rate_limits: z.object({ per_key_per_minute: z.number().int(), per_ip_per_minute: z.number().int() }),
  }),
);

export const Egress = lazySchema(() =>
  z.object({
    fixed: z.boolean().describe('Whether outbound requests leave from fixed addresses'),
    addresses: z.array(z.string()).describe('IPs/CIDR blocks to allowlist'),
  }),
);
