import type { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { config } from '../config.ts';
import { awsClientOptions } from './client-options.ts';
import { tagAwsClient } from './unavailable.ts';

export interface SendOptions {
  /** Seconds before the message can be received: 0–900, as SQS allows. */
  delaySeconds?: number;
}

/** Where work is handed to a queue consumer: SQS in AWS, an in-process stand-in locally. */
export interface MessageQueue {
  send(message: object, options?: SendOptions): Promise<void>;
}

/**
 * One client per process, reused by warm invocations; created on the first send rather
 * than at load, so functions that never queue do not evaluate the SQS client at cold start.
 */
let sqs: Promise<{ client: SQSClient; SendMessageCommand: typeof SendMessageCommand }> | undefined;
const sqsClient = () =>
  (sqs ??= import('@aws-sdk/client-sqs').then(({ SQSClient, SendMessageCommand }) => ({
    client: tagAwsClient(new SQSClient({ region: config.AWS_REGION, ...awsClientOptions() }), 'SQS'),
    SendMessageCommand,
  })));

export class SqsMessageQueue implements MessageQueue {
  constructor(private readonly queueUrl: string) {}

  async send(message: object, options: SendOptions = {}): Promise<void> {
    const { client, SendMessageCommand } = await sqsClient();
    await client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(message),
        DelaySeconds: options.delaySeconds,
      }),
    );
  }
}

/**
 * The queues Parley hands work to, each with its setting: `webhooks` (deliveries and their
 * retries), `call-steps` (the call engine's timed steps, sent with sendAt from
 * ./due-time.ts) `contact-jobs` (the steps of contacts jobs: the backfill) and `export-jobs` (account-data jobs: exports, privacy erases, retention runs). In AWS each is an SQS queue whose URL CDK sets on every function; locally
 * the setting is unset and an in-process stand-in is installed instead.
 */
export type QueueName = 'webhooks' | 'call-steps' | 'contact-jobs' | 'export-jobs' | 'integration-jobs' | 'kb-jobs';

const QUEUE_URL_SETTING = {
  webhooks: 'WEBHOOK_QUEUE_URL',
  'call-steps': 'CALL_STEPS_QUEUE_URL',
  'contact-jobs': 'CONTACT_JOBS_QUEUE_URL',
  'export-jobs': 'EXPORT_JOBS_QUEUE_URL',
  'integration-jobs': 'INTEGRATION_JOBS_QUEUE_URL',
  'kb-jobs': 'KB_JOBS_QUEUE_URL',
} as const satisfies Record<QueueName, keyof typeof config>;

const localQueues = new Map<QueueName, MessageQueue>();
const sqsQueues = new Map<QueueName, SqsMessageQueue>();

/**
 * Installs the in-process stand-in used when the queue's URL setting is not set. The local
 * runtime does this (local/queues.ts); the stand-in lives in local/ and is injected, so no
 * deployed bundle contains it.
 */
export function setLocalQueue(name: QueueName, queue: MessageQueue): void {
  localQueues.set(name, queue);
}

export function queueNamed(name: QueueName): MessageQueue {
  const url = config[QUEUE_URL_SETTING[name]];
  if (!url) {
    const local = localQueues.get(name);
    if (!local) throw new Error(`${QUEUE_URL_SETTING[name]} is not set and no local ${name} queue is installed`);
    return local;
  }
  let queue = sqsQueues.get(name);
  if (!queue) {
    queue = new SqsMessageQueue(url);
    sqsQueues.set(name, queue);
  }
  return queue;
}

export const webhookQueue = (): MessageQueue => queueNamed('webhooks');
