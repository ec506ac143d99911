import { keys } from '../shared/platform/store/keys.ts';
import { queryAll } from '../shared/platform/store/query.ts';
import { table } from '../shared/platform/store/table.ts';
import type { LocalQueueStore, StoredMessage } from './local-queue.ts';

/**
 * The local queues' durable store: the table itself, in DynamoDB Local under DATA_DIR.
 * Why the table rather than files: it is already durable and already running, writes of
 * one item are atomic (no torn file after a kill -9), a message is one item keyed by its
 * ID (no rewriting a whole journal per change), and a restart reads one partition back.
 * Local runtime only: the keys are documented in docs/data-model.md as local-only items.
 */
interface QueueItem {
  message_id: string;
  body: string;
  md5_of_body: string;
  sent_timestamp: number;
  first_receive_timestamp?: number;
  receive_count: number;
  visible_at: number;
  receipt_handle?: string;
}

const toItem = (message: StoredMessage): QueueItem => ({
  message_id: message.messageId,
  body: message.body,
  md5_of_body: message.md5OfBody,
  sent_timestamp: message.sentTimestamp,
  first_receive_timestamp: message.firstReceiveTimestamp,
  receive_count: message.receiveCount,
  visible_at: message.visibleAt,
  receipt_handle: message.receiptHandle,
});

const fromItem = (item: QueueItem): StoredMessage => ({
  messageId: item.message_id,
  body: item.body,
  md5OfBody: item.md5_of_body,
  sentTimestamp: item.sent_timestamp,
  firstReceiveTimestamp: item.first_receive_timestamp,
  receiveCount: item.receive_count,
  visibleAt: item.visible_at,
  receiptHandle: item.receipt_handle,
});

export const tableQueueStore: LocalQueueStore = {
  async load(queue) {
    return (await queryAll<QueueItem>(keys.localQueueMessages(queue))).map(fromItem);
  },
  async save(queue, message) {
    // Undefined attributes (no receive yet) are left out rather than written as nulls.
    const item = Object.fromEntries(Object.entries(toItem(message)).filter(([, value]) => value !== undefined));
    await table.put({ Item: { ...keys.localQueueMessage(queue, message.messageId), ...item } });
  },
  async remove(queue, messageId) {
    await table.delete({ Key: keys.localQueueMessage(queue, messageId) });
  },
};
