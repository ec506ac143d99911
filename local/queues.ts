import { config } from '../shared/platform/config.ts';
import { setLocalWebhookQueue } from '../shared/platform/aws/queue.ts';
import { LocalMessageQueue } from './local-queue.ts';

/**
 * Local visibility timeout: longer than one batch can take (deliveries run in parallel,
 * each at most 60 s), so a message is never redelivered while its attempt is still running.
 */
const LOCAL_WEBHOOK_VISIBILITY_SECONDS = 90;
const LOCAL_WEBHOOK_MAX_RECEIVES = 5;

let localWebhooks: LocalMessageQueue | undefined;

/**
 * The process-wide local webhook queue, installed as the platform's webhook queue on first
 * use (its consumer is started by local/background.ts). The local server calls this when
 * it starts, so every local runtime, tests included, queues through it.
 */
export function localWebhookQueue(): LocalMessageQueue {
  if (!localWebhooks) {
    localWebhooks = new LocalMessageQueue({
      name: 'parley-webhooks',
      visibilityTimeoutSeconds: LOCAL_WEBHOOK_VISIBILITY_SECONDS,
      maxReceiveCount: LOCAL_WEBHOOK_MAX_RECEIVES,
      region: config.AWS_REGION,
    });
    setLocalWebhookQueue(localWebhooks);
  }
  return localWebhooks;
}
