import * as z from 'zod';
import { epochMs, httpUrl, lazySchema } from '../platform/http/schemas.ts';

export const WebhookDeliveryAttempt = lazySchema(() =>
  z.object({
  webhook_attempt_id: z.string(),
  webhook_delivery_id: z.string().describe('Shared by every attempt at delivering the same webhook'),
  event: z.string(),
  url: z.string(),
  attempt: z.number().int().describe('1 for the first try, up to 4 after 3 retries'),
  success: z.boolean().describe('The endpoint replied 2xx'),
  status: z.number().int().nullable().describe('HTTP status; null on timeout or network error'),
  error: z.string().nullable(),
  latency_ms: z.number().int(),
  will_retry: z.boolean().describe('false on success and on the final failed attempt'),
  test: z.boolean().describe('Sent by POST /workspace/test-webhook'),
  created_timestamp: epochMs().describe('When the attempt started'),
  }),
);
export type WebhookDeliveryAttempt = z.infer<typeof WebhookDeliveryAttempt>;

export const TestWebhookBody = lazySchema(() =>
  z.object({
    url: httpUrl().optional().describe('Defaults to the workspace webhook_url'),
  }),
);

export const TestWebhookResult = lazySchema(() =>
  z.object({
  success: z.boolean().describe('The endpoint replied 2xx'),
  status: z.number().int().nullable().describe('HTTP status; null on timeout or network error'),
  latency_ms: z.number().int(),
  error: z.string().nullable(),
  }),
);
export type TestWebhookResult = z.infer<typeof TestWebhookResult>;
