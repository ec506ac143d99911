import { vendorSetting } from '../../platform/aws/secrets.ts';
import type { TelephonyProvider } from './types.ts';

export * from './types.ts';

/**
 * The platform's telephony provider, picked per call from vendor settings: Twilio when
 * TWILIO_ACCOUNT_SID is set, else the offline mock. The implementations are loaded here,
 * never by the interface (types.ts), so they do not import each other in a cycle.
 */
export async function telephonyProvider(): Promise<TelephonyProvider> {
  const accountSid = await vendorSetting('TWILIO_ACCOUNT_SID');
  if (accountSid) {
    const { TwilioProvider } = await import('./twilio.ts');
    return TwilioProvider.fromSettings(accountSid);
  }
  const { MockProvider } = await import('./mock.ts');
  return new MockProvider();
}
