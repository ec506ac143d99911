import type { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { config } from '../config.ts';
import { LocalMessageQueue } from './local-queue.ts';

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
    client: new SQSClient({ region: config.AWS_REGION }),
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
 * Local visibility timeout: longer than one batch can take (deliveries run in parallel,
 * each at most 60 s), so a message is never redelivered while its attempt is still running.
 */
const LOCAL_WEBHOOK_VISIBILITY_SECONDS = 90;
const LOCAL_WEBHOOK_MAX_RECEIVES = 5;

let localWebhooks: LocalMessageQueue | undefined;
let sqsWebhooks: SqsMessageQueue | undefined;

/** The process-wide local webhook queue (its consumer is started by local/background.ts). */
export function localWebhookQueue(): LocalMessageQueue {
  localWebhooks ??= new LocalMessageQueue({
    name: 'parley-webhooks',
    visibilityTimeoutSeconds: LOCAL_WEBHOOK_VISIBILITY_SECONDS,
    maxReceiveCount: LOCAL_WEBHOOK_MAX_RECEIVES,
    region: config.AWS_REGION,
  });
  return localWebhooks;
}

export function webhookQueue(): MessageQueue {
  if (!config.WEBHOOK_QUEUE_URL) return localWebhookQueue();
  sqsWebhooks ??= new SqsMessageQueue(config.WEBHOOK_QUEUE_URL);
  return sqsWebhooks;
}
