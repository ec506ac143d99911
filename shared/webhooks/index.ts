/**
 * What other domains may use of webhooks: queue a delivery, and sign or verify a body the
 * way every outgoing webhook (and custom function request) is signed.
 */
export {
  enqueueWebhook,
  newDeliveryId,
  NoSigningKey,
  recordDirectAttempt,
  signWebhook,
  transportError,
  verifyWebhookSignature,
  webhookSigningSecret,
} from './webhooks.ts';
;
export { fillUrlPlaceholders, sendAgentEvent,  } from './routing.ts';
/** A privacy erase (shared/account-data) deletes the delivery log entries quoting the number. */
export { deleteDeliveriesMentioning } from './store.ts';
/** Where a workspace's delivery log and delivery slots are: the workspace purge empties them. */
export { deliveryLogPartitions } from './store.ts';
export { deliverySlotPartitions } from './delivery-slots.ts';
