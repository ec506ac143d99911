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

let localWebhooks: MessageQueue | undefined;
let sqsWebhooks: SqsMessageQueue | undefined;

/**
 * Installs the in-process stand-in used when WEBHOOK_QUEUE_URL is not set. The local
 * runtime does this (local/queues.ts); the stand-in lives in local/ and is injected, so no
 * deployed bundle contains it.
 */
export function setLocalWebhookQueue(queue: MessageQueue): void {
  localWebhooks = queue;
}

export function webhookQueue(): MessageQueue {
  if (!config.WEBHOOK_QUEUE_URL) {
    if (!localWebhooks) throw new Error('WEBHOOK_QUEUE_URL is not set and no local webhook queue is installed');
    return localWebhooks;
  }
  sqsWebhooks ??= new SqsMessageQueue(config.WEBHOOK_QUEUE_URL);
  return sqsWebhooks;
}
