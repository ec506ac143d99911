import * as z from 'zod';
import { badRequest } from '../platform/errors.ts';
import { logger } from '../platform/logger.ts';
import { paymentsProvider, stripeSignatureProblem, type PaymentsProvider, type SelfSignedEvent } from '../vendors/payments/index.ts';
import { billingNow } from './clock.ts';
import { writeEntry } from './entries.ts';
import { settleInvoices } from './settle.ts';
import { billingStore } from './store.ts';

/*
 * Stripe's webhook (`POST /billing/stripe/webhook`): the only way money reaches the ledger.
 * The `Stripe-Signature` header must sign the raw body with the endpoint's secret, within 5
 * minutes (else 400, nothing changes). Each event ID is processed once: its marker is
 * claimed first (a replay answers `duplicate: true` and changes nothing); the credit itself
 * is also idempotent by its source (the checkout session or payment intent), so a session
 * announced by two different events still credits once. An event names its workspace in
 * metadata (set by Parley when it created the session), and must come from the customer
 * that workspace holds at this provider, so one workspace's payment never credits another.
 */

const StripeEvent = z.object({
  id: z.string().min(1).max(255),
  type: z.string().min(1).max(255),
  data: z.object({ object: z.looseObject({}) }),
});
type StripeEvent = z.infer<typeof StripeEvent>;

export interface WebhookOutcome {
  received: true;
  duplicate: boolean;
  /** What the event did: `credited`, `default_payment_method`, or `ignored` with a reason. */
  applied: string;
}

const PROBLEMS = {
  missing: 'Missing Stripe-Signature header',
  malformed: 'Invalid Stripe-Signature header',
  mismatch: 'Stripe-Signature does not match the body',
  too_old: 'Stripe-Signature timestamp is outside the tolerance',
} as const;

export async function receiveStripeWebhook(rawBody: string, signature: string | undefined): Promise<WebhookOutcome> {
  const provider = await paymentsProvider();
  return receiveWith(provider, rawBody, signature);
}

/** Events the mock provider produced for itself go through the same checks as Stripe's. */
export async function deliverSelfSignedEvents(provider: PaymentsProvider, events: readonly SelfSignedEvent[] | undefined): Promise<void> {
  for (const event of events ?? []) await receiveWith(provider, event.payload, event.signature);
}

async function receiveWith(provider: PaymentsProvider, rawBody: string, signature: string | undefined): Promise<WebhookOutcome> {
  const secret = await provider.webhookSecret();
  if (!secret) throw badRequest('Stripe webhooks are not configured (STRIPE_WEBHOOK_SECRET)');
  const problem = stripeSignatureProblem(rawBody, signature, secret, Math.floor(Date.now() / 1000));
  if (problem) throw badRequest(PROBLEMS[problem]);
  let event: StripeEvent;
  try {
    event = StripeEvent.parse(JSON.parse(rawBody));
  } catch {
    throw badRequest('Invalid Stripe event');
  }
  if (!(await billingStore.claimStripeEvent(event.id, billingNow()))) return { received: true, duplicate: true, applied: 'ignored: already processed' };
  try {
    const applied = await apply(provider, event);
    logger.info('Stripe event', { event_id: event.id, type: event.type, applied });
    return { received: true, duplicate: false, applied };
  } catch (error) {
    // Nothing took effect (or what did is idempotent): let Stripe's retry process it again.
    await billingStore.releaseStripeEvent(event.id);
    throw error;
  }
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const idOf = (value: unknown): string | undefined => text(value) ?? text((value as { id?: unknown } | null | undefined)?.id);

/** The workspace an object belongs to, when its customer is the one that workspace holds at this provider. */
async function workspaceOf(provider: PaymentsProvider, object: Record<string, unknown>): Promise<string | undefined> {
  const workspaceId = text((object.metadata as Record<string, unknown> | undefined)?.workspace_id);
  if (!workspaceId) return undefined;
  const account = await billingStore.account(workspaceId);
  const customer = account?.[`customer_${provider.kind}`];
  return customer && customer === idOf(object.customer) ? workspaceId : undefined;
}

async function credit(workspaceId: string, input: { kind: 'credit_purchase' | 'auto_recharge'; cents: number; sourceKey: string; reference: string }): Promise<string> {
  if (!Number.isInteger(input.cents) || input.cents <= 0) return 'ignored: no amount';
  const { created } = await writeEntry(workspaceId, {
    kind: input.kind,
    amount: input.cents * 10_000,
    description: input.kind === 'auto_recharge' ? 'Auto-recharge' : 'Credit purchase',
    sourceKey: input.sourceKey,
    reference: input.reference,
  });
  await settleInvoices(workspaceId);
  return created ? 'credited' : 'ignored: already credited';
}

async function apply(provider: PaymentsProvider, event: StripeEvent): Promise<string> {
  const object = event.data.object as Record<string, unknown>;
  const purpose = text((object.metadata as Record<string, unknown> | undefined)?.purpose);
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      if (purpose !== 'credits') return 'ignored: not a credit purchase';
      if (object.payment_status !== 'paid') return 'ignored: not paid yet';
      const workspaceId = await workspaceOf(provider, object);
      if (!workspaceId) return 'ignored: unknown customer';
      return credit(workspaceId, { kind: 'credit_purchase', cents: Number(object.amount_total), sourceKey: `stripe:checkout:${event.data.object.id as string}`, reference: String(object.id) });
    }
    case 'payment_intent.succeeded': {
      if (purpose !== 'auto_recharge') return 'ignored: not an auto-recharge';
      const workspaceId = await workspaceOf(provider, object);
      if (!workspaceId) return 'ignored: unknown customer';
      const applied = await credit(workspaceId, {
        kind: 'auto_recharge',
        cents: Number(object.amount_received ?? object.amount),
        sourceKey: `stripe:payment_intent:${String(object.id)}`,
        reference: String(object.id),
      });
      await billingStore.releaseAutoRecharge(workspaceId);
      return applied;
    }
    case 'setup_intent.succeeded': {
      const workspaceId = await workspaceOf(provider, object);
      const paymentMethod = idOf(object.payment_method);
      if (!workspaceId || !paymentMethod) return 'ignored: unknown customer';
      const account = await billingStore.account(workspaceId);
      if (account?.default_payment_method) return 'ignored: a default payment method is set';
      await provider.setDefaultPaymentMethod(idOf(object.customer)!, paymentMethod);
      await billingStore.setDefaultPaymentMethod(workspaceId, paymentMethod);
      return 'default_payment_method';
    }
    default:
      return `ignored: ${event.type}`;
  }
}
