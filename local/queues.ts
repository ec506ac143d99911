import { config } from '../shared/platform/config.ts';
import { setLocalQueue, type QueueName } from '../shared/platform/aws/queue.ts';
import { jobNamed, type JobName } from '../shared/jobs.ts';
import { LocalMessageQueue } from './local-queue.ts';
import { tableQueueStore } from './queue-store.ts';

/** The job consuming each queue (its timeout bounds how long a batch may take). */
const CONSUMER: Record<QueueName, JobName> = {
  webhooks: 'webhook-delivery',
  'call-steps': 'call-steps',
  'contact-jobs': 'contact-jobs',
  'export-jobs': 'export-jobs',
  'integration-jobs': 'integration-jobs',
  'kb-jobs': 'kb-jobs',
};

/**
 * Local visibility timeout: longer than one batch can take (a batch's messages run in
 * parallel, each within the consuming job's timeout), so a message is never redelivered
 * while its attempt is still running. Messages a stopped process had received come back
 * after it, as in SQS.
 */
const visibilitySeconds = (name: QueueName) => jobNamed(CONSUMER[name]).timeoutSeconds + 30;
const LOCAL_MAX_RECEIVES = 5;

const localQueues = new Map<QueueName, LocalMessageQueue>();

/**
 * The process-wide local queue of that name, installed as the platform's queue on first use
 * (its consumer is started by local/background.ts). Its messages are kept in the table
 * (local/queue-store.ts), so a restarted `npm start` resumes them. The local server calls
 * installLocalQueues when it starts, so every local runtime, tests included, queues through
 * these.
 */
export function localQueue(name: QueueName): LocalMessageQueue {
  let queue = localQueues.get(name);
  if (!queue) {
    queue = new LocalMessageQueue({
      name: `parley-${name}`,
      visibilityTimeoutSeconds: visibilitySeconds(name),
      maxReceiveCount: LOCAL_MAX_RECEIVES,
      consumerTimeoutMs: jobNamed(CONSUMER[name]).timeoutSeconds * 1000,
      region: config.AWS_REGION,
      store: tableQueueStore,
    });
    localQueues.set(name, queue);
    setLocalQueue(name, queue);
  }
  return queue;
}

export const localWebhookQueue = (): LocalMessageQueue => localQueue('webhooks');

/** Every local queue, installed (and resuming what the table holds) before the first request. */
export function installLocalQueues(): void {
  for (const name of Object.keys(CONSUMER) as QueueName[]) localQueue(name);
}
