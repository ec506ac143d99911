import * as z from 'zod';

/*
 * The request and answer of a presigned upload (shared/platform/uploads.ts), for every route
 * handing one out. `type` is what the content type is for that purpose: an example of one in
 * its message, and what the upload gets when the request leaves it out.
 */

export const createUploadBody = (type: { example: string; default: string } = { example: 'audio/mpeg', default: 'application/octet-stream' }) =>
  z.object({
    filename: z.string().trim().min(1).max(255),
    content_type: z
      .string()
      .trim()
      .toLowerCase()
      .min(1)
      .max(200)
      .regex(/^[\w.+-]+\/[\w.+-]+$/, `Must be a media type such as ${type.example}`)
      .optional()
      .describe(`The type the PUT will send (signed); ${type.default} when left out`),
    content_length: z.number().int().min(1).describe('The exact size in bytes the PUT will send (signed)'),
    checksum_sha256: z
      .string()
      .regex(/^[A-Za-z0-9+/]{43}=$/, 'Must be the file\'s SHA-256 in base64 (44 characters)')
      .optional()
      .describe('The file\'s SHA-256 in base64: signed, so the store refuses any other bytes (send it as x-amz-checksum-sha256)'),
  });

export const PresignedUploadView = () =>
  z.object({
    upload_id: z.string(),
    upload_url: z.string().describe('PUT the file here, with `headers`, before expires_at'),
    method: z.literal('PUT'),
    headers: z.record(z.string(), z.string()).describe('Headers the PUT must send (all signed)'),
    expires_at: z.number().describe('When upload_url stops working (epoch ms)'),
    max_bytes: z.number(),
  });
