/**
 * What other domains may use of webhooks: they import it from here, never from its files
 * (eslint no-restricted-imports). Custom function calls (shared/conversation) are signed
 * like webhooks, with the workspace's webhook key.
 */
export { NoSigningKey, signWebhook, verifyWebhookSignature, webhookSigningSecret } from './webhooks.ts';
