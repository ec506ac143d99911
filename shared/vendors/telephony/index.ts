import { vendorSetting } from '../../platform/aws/secrets.ts';
import { MockProvider } from './mock.ts';
import { TwilioProvider } from './twilio.ts';
import type { TelephonyProvider } from './types.ts';

export * from './types.ts';

/**
 * The platform's telephony provider, picked per call from vendor settings: Twilio when
 * TWILIO_ACCOUNT_SID is set, else the offline mock. The implementations are loaded here,
 * never by the interface (types.ts), so they do not import each other in a cycle. They are
 * imported statically: behind an import() of their own (7.7 KiB) they split the numbers
 * function's cold code into three more chunk files, which cost Node more to load than the
 * two small adapters cost to compile (docs/performance.md, "One import() target for a domain's rare routes").
 */
export async function telephonyProvider(): Promise<TelephonyProvider> {
  const accountSid = await vendorSetting('TWILIO_ACCOUNT_SID');
  if (accountSid) {
    return TwilioProvider.fromSettings(accountSid);
  }
  return new MockProvider();
}

/** The offline mock, for numbers held at the mock carrier and for carriers without an adapter. */
export function mockTelephonyProvider(): TelephonyProvider {
  return new MockProvider();
}
