import { mockPaymentsProvider, paymentsProviderOverride, stripeSettings } from './index.ts';
import { StripeProvider } from './stripe.ts';
import type { PaymentsProvider } from './types.ts';

/*
 * The payments vendor, full half: Stripe through the `stripe` package, or the built-in mock.
 * Only the billing function imports this (the package is about 240 KiB minified); code on the
 * charge path uses index.ts.
 */

export { verifyStripeEvent,  } from './stripe.ts';

export async function paymentsProvider(): Promise<PaymentsProvider> {
  const override = paymentsProviderOverride();
  if (override) return override;
  const stripe = await stripeSettings();
  if (!stripe) return mockPaymentsProvider();
  const { vendorSetting } = await import('../../platform/aws/secrets.ts');
  return new StripeProvider({ ...stripe, webhookSecret: () => vendorSetting('STRIPE_WEBHOOK_SECRET') });
}
