import { logger } from '../../platform/logger.ts';
import { PaymentRequired } from '../../platform/errors.ts';
import { billingNow } from '../clock.ts';
import { toMicros } from '../prices.ts';
import { billingStore } from '../store.ts';
import type * as Payments from '../../vendors/payments/index.ts';
import type * as StripeEvents from './stripe-events.ts';
import { loadOnce } from '../../platform/lazy.ts';

/*
 * Auto-recharge (`settings.auto_recharge: {threshold_usd, amount_usd}`): after a charge
 * leaves the balance below the threshold, the default payment method is charged off-session
 * for `amount_usd`. The credit arrives only with Stripe's signed `payment_intent.succeeded`
 * (stripe-webhook.ts). A lock on the account (10 minutes, released by that event) keeps
 * concurrent charges from starting two payments; the payment's idempotency key is the
 * workspace and the lock's start, so a retried request is the same payment.
 *
 * This runs right after a charge, in whichever function wrote it (calls, chats, batches,
 * billing), so it uses the payments vendor's light half: the off-session payment is one REST
 * call without the `stripe` package, and the mock's success event is handled in process.
 */

const AUTO_RECHARGE_LOCK_MS = 10 * 60 * 1000;

/**
 * The payment vendor and the handling of its events, loaded when a recharge is due: every
 * charge (a call's, a chat's) runs this check, and almost none recharges, so the functions
 * that charge do not load them at a cold start (docs/performance.md, "Sizes: cold and lazy").
 */
const loadCharging = loadOnce((): Promise<[typeof Payments, typeof StripeEvents]> => Promise.all([import('../../vendors/payments/index.ts'), import('./stripe-events.ts')]));

export async function maybeAutoRecharge(workspaceId: string): Promise<boolean> {
  const account = await billingStore.account(workspaceId);
  const rule = account?.settings?.auto_recharge;
  if (!account || !rule || account.balance >= toMicros(rule.threshold_usd) || !account.default_payment_method) return false;
  const [{ offSessionCharger }, { handleOwnEvents }] = await loadCharging();
  const charger = await offSessionCharger();
  const customer = account[`customer_${charger.kind}`];
  if (!customer) return false;
  const nowMs = billingNow();
  if (!(await billingStore.claimAutoRecharge(workspaceId, nowMs, nowMs + AUTO_RECHARGE_LOCK_MS))) return false;
  try {
    const payment = await charger.chargeOffSession({
      customerId: customer,
      paymentMethodId: account.default_payment_method,
      amountCents: Math.round(rule.amount_usd * 100),
      workspaceId,
      purpose: 'auto_recharge',
      idempotencyKey: `auto-recharge:${workspaceId}:${nowMs}`,
    });
    await handleOwnEvents({ kind: charger.kind }, payment.events);
    return true;
  } catch (error) {
    // A decline keeps the lock until it expires, so every later charge does not retry the card at once.
    if (error instanceof PaymentRequired) logger.warn('auto-recharge declined', { workspace_id: workspaceId, message: error.message });
    else throw error;
    return false;
  }
}
