import { defineRoutes } from '../platform/http/route.ts';
import * as z from 'zod';
import { idOf, lazySchema, queryInt } from '../platform/http/schemas.ts';
import { TestWebhookBody, TestWebhookResult, WebhookDeliveryAttempt } from './schemas.ts';

export const webhookRoutes = defineRoutes({ domain: 'account', access: 'admin' }, {
  listWebhookDeliveries: {
    method: 'GET', path: '/webhook-deliveries', status: 200,
    summary: 'Webhook delivery attempts, newest first',
    query: lazySchema(() =>
      z.object({
        limit: queryInt({ min: 1, max: 1000, default: 100 }),
        pagination_key: idOf('webhookAttempt', 'a webhook attempt ID').optional().describe('The last webhook_attempt_id of the previous page: the page starts after it'),
      }),
    ),
    response: lazySchema(() => z.array(WebhookDeliveryAttempt)),
  },
  testWorkspaceWebhook: {
    method: 'POST', path: '/workspace/test-webhook', status: 200,
    throttle: 'outbound',
    summary: 'Send a signed test event and report whether the endpoint replied 2xx',
    body: TestWebhookBody, response: TestWebhookResult,
  },
});
