import { MockPaymentsProvider } from './mock.ts';
import { chargeOffSessionOverRest } from './stripe-off-session.ts';
import type { OffSessionChargeInput, PaymentsProvider, PaymentsProviderKind } from './types.ts';

/*
 * The payments vendor, light half: which provider is configured, the built-in mock, and the
 * off-session charge auto-recharge makes. This is what code reached from the charge path
 * (calls, chats, batches) may import; it never loads the `stripe` package. The full provider
 * (checkouts, payment methods, the portal, the webhook's signature check, all through the
 * package) is `provider.ts`, which only the billing function imports.
 *
 * Stripe when the vendor setting `STRIPE_SECRET_KEY` is set (with `STRIPE_WEBHOOK_SECRET`,
 * the endpoint's signing secret, and optionally `STRIPE_API_BASE_URL`, default
 * https://api.stripe.com; tests point it at a fake on 127.0.0.1), else the built-in mock
 * (mock.ts). Settings come from the VENDOR_SECRET_ID secret in AWS, the environment locally,
 * read on each use (rotations are picked up).
 */

export type { CheckoutInput, MockCheckoutSession, OffSessionChargeInput, PaymentMethodInfo, PaymentsProvider, PaymentsProviderKind, SelfSignedEvent } from './types.ts';
export { stripeSignatureHeader } from './signature.ts';

let mock: MockPaymentsProvider | undefined;
let override: PaymentsProvider | undefined;

export const DEFAULT_STRIPE_API_BASE_URL = 'https://api.stripe.com';

/** The process's mock provider (its signing secret and saved cards live as long as the process). */
export function mockPaymentsProvider(): MockPaymentsProvider {
  mock ??= new MockPaymentsProvider();
  return mock;
}

/** Replaces the provider (tests); undefined restores the settings' choice. */
export function usePaymentsProvider(provider: PaymentsProvider | undefined): void {
  override = provider;
}

export const paymentsProviderOverride = (): PaymentsProvider | undefined => override;

/** Stripe's settings, when STRIPE_SECRET_KEY is set. */
export async function stripeSettings(): Promise<{ secretKey: string; baseUrl: string } | undefined> {
  const { vendorSetting } = await import('../../platform/aws/secrets.ts');
  const secretKey = await vendorSetting('STRIPE_SECRET_KEY');
  if (!secretKey) return undefined;
  return { secretKey, baseUrl: (await vendorSetting('STRIPE_API_BASE_URL')) ?? DEFAULT_STRIPE_API_BASE_URL };
}

export async function paymentsProviderKind(): Promise<PaymentsProviderKind> {
  if (override) return override.kind;
  return (await stripeSettings()) ? 'stripe' : 'mock';
}

export interface OffSessionCharger {
  readonly kind: PaymentsProviderKind;
  chargeOffSession: PaymentsProvider['chargeOffSession'];
}

/** What auto-recharge charges with: the configured provider's off-session payment, without the `stripe` package. */
export async function offSessionCharger(): Promise<OffSessionCharger> {
  if (override) return override;
  const stripe = await stripeSettings();
  if (!stripe) return mockPaymentsProvider();
  return { kind: 'stripe', chargeOffSession: (input: OffSessionChargeInput) => chargeOffSessionOverRest(stripe, input) };
}
