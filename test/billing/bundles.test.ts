import { describe, expect, it } from 'vitest';
import { bundledInputs } from '../support/bundle.ts';

/**
 * The `stripe` package is about 240 KiB minified: only the billing function bundles it
 * (checkouts, payment methods, the portal, the webhook's signature check). Every function that
 * writes charges reaches auto-recharge through the payments vendor's light half
 * (shared/vendors/payments/index.ts), which never imports it (docs/billing.md).
 */
const CHARGING = ['calls', 'call-steps', 'chats', 'batches', 'batch-tick', 'billing-hourly'];

describe('the stripe package in bundles', () => {
  it('is bundled by the billing function only', async () => {
    const billing = await bundledInputs('functions/billing.ts');
    expect(billing).toContain('shared/vendors/payments/stripe.ts');
    for (const name of CHARGING) {
      const inputs = await bundledInputs(`functions/${name}.ts`);
      expect(inputs, name).toContain('shared/billing/charges/ledger.ts');
      expect(inputs.filter((input) => /vendors\/payments\/(stripe|provider)\.ts$|billing\/payments\/stripe-webhook\.ts$/.test(input)), name).toEqual([]);
    }
  }, 60_000);
});
