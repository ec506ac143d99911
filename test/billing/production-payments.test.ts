import { afterAll, describe, expect, it, vi } from 'vitest';
import { useProductionSettings } from '../support/production-settings.ts';

/*
 * The built-in payments mock pays without money. A production deployment without Stripe
 * must not fall back to it: every action that could add credit or save a card is refused
 * (503, the operator's configuration is missing) before anything is stored. Settings are
 * read at load, so the modules are loaded fresh under production settings.
 */
const restore = useProductionSettings();
vi.resetModules();
const payments = await import('../../shared/billing/payments/payments.ts');
const vendor = await import('../../shared/vendors/payments/index.ts');
restore();
// The deployment has no STRIPE_SECRET_KEY: the provider is the mock (set directly, as reading the vendor secret would reach AWS).
vendor.usePaymentsProvider(vendor.mockPaymentsProvider());
afterAll(() => vi.resetModules());

const REFUSAL = 'Payments are not configured on this deployment: set STRIPE_SECRET_KEY (and STRIPE_WEBHOOK_SECRET) in the vendor settings';

describe('payments in production without Stripe', () => {
  it.each([
    ['a credit checkout', () => payments.createCheckout('ws_0123456789abcdef01234567', { amount_usd: 20 })],
    ['paying an invoice', () => payments.createInvoiceCheckout('ws_0123456789abcdef01234567', 'inv_1', {})],
    ['saving a card', () => payments.createSetupIntent('ws_0123456789abcdef01234567')],
    ['choosing the default card', () => payments.setDefaultPaymentMethod('ws_0123456789abcdef01234567', 'pm_mock_1')],
    ['the customer portal', () => payments.createPortal('ws_0123456789abcdef01234567')],
  ])('refuses %s with 503 instead of the mock', async (_action, act) => {
    await expect(act()).rejects.toMatchObject({ status: 503, message: REFUSAL });
  });
});
