import { vendorSetting } from '../../platform/aws/secrets.ts';
import { recordProviderOperation } from '../telephony/operation-log.ts';
import type { MessagingProvider } from './types.ts';

export * from './types.ts';
export { verifyTwilioSignature, twilioSignature } from './twilio-signature.ts';

/**
 * The platform's messaging provider, picked per call from vendor settings: Twilio
 * Messaging when TWILIO_ACCOUNT_SID is set, else the offline mock. The implementations are
 * loaded here, never by the interface (types.ts).
 */
export async function messagingProvider(): Promise<MessagingProvider> {
  const accountSid = await vendorSetting('TWILIO_ACCOUNT_SID');
  if (accountSid) {
    const { TwilioMessaging } = await import('./twilio.ts');
    return TwilioMessaging.fromSettings(accountSid);
  }
  const { MockMessaging } = await import('./mock.ts');
  return new MockMessaging();
}

/** The auth token Twilio signs its webhooks with (the platform account's), or undefined when Twilio is not configured. */
export async function twilioWebhookToken(): Promise<string | undefined> {
  return (await vendorSetting('TWILIO_AUTH_TOKEN')) || undefined;
}

/**
 * What the carrier told Parley about messages, in the same provider operation log as what
 * Parley sent: an inbound SMS (`receive_sms`) and a delivery status (`sms_status`).
 */
export async function recordCarrierReport(
  workspaceId: string,
  provider: 'twilio' | 'mock',
  operation: 'receive_sms' | 'sms_status',
  request: Record<string, unknown>,
): Promise<void> {
  await recordProviderOperation(workspaceId, { provider, operation, request, outcome: 'ok' });
}
