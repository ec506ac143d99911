import { MockPaymentsProvider } from './mock.ts';
import { StripeProvider } from './stripe.ts';
import type { PaymentsProvider } from './types.ts';

/*
 * The payments vendor billing uses: Stripe when the vendor setting `STRIPE_SECRET_KEY` is
 * set (with `STRIPE_WEBHOOK_SECRET`, the endpoint's signing secret, and optionally
 * `STRIPE_API_BASE_URL`, default https://api.stripe.com; tests point it at a fake on
 * 127.0.0.1), else the built-in mock (mock.ts). Settings come from the VENDOR_SECRET_ID
 * secret in AWS, the environment locally, read on each use (rotations are picked up).
 */

export type { PaymentMethodInfo, PaymentsProvider, PaymentsProviderKind, SelfSignedEvent } from './types.ts';
export { stripeSignatureHeader, stripeSignatureProblem, STRIPE_SIGNATURE_TOLERANCE_SECONDS, type SignatureProblem } from './signature.ts';

let mock: MockPaymentsProvider | undefined;
let override: PaymentsProvider | undefined;

export async function paymentsProvider(): Promise<PaymentsProvider> {
  if (override) return override;
  const { vendorSetting } = await import('../../platform/aws/secrets.ts');
  if (await vendorSetting('STRIPE_SECRET_KEY')) {
    return new StripeProvider({
      baseUrl: (await vendorSetting('STRIPE_API_BASE_URL')) ?? 'https://api.stripe.com',
      secretKey: () => vendorSetting('STRIPE_SECRET_KEY'),
      webhookSecret: () => vendorSetting('STRIPE_WEBHOOK_SECRET'),
    });
  }
  mock ??= new MockPaymentsProvider();
  return mock;
}

/** Replaces the provider (tests); undefined restores the settings' choice. */
export function usePaymentsProvider(provider: PaymentsProvider | undefined): void {
  override = provider;
}
