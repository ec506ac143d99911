import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { auditPut, type AuditRecord } from '../../account/index.ts';
import { badRequest } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import type { PaymentsProviderKind, SelfSignedEvent } from '../../vendors/payments/index.ts';
import { billingNow } from '../clock.ts';
import { writeEntry } from '../entries.ts';
import { settleInvoices } from '../invoices/index.ts';
import { billingStore, type EntryKind } from '../store.ts';

/*
 * What a Stripe event does, once its signature has been checked (stripe-webhook.ts, with the
 * `stripe` package, in the billing function) or it was made by the mock in this process. This
 * module never loads the package: auto-recharge (reached from every function that charges)
 * hands the mock's events here directly.
 *
 * Each event ID is processed once: its marker is claimed first (a replay answers `duplicate:
 * true` and changes nothing; if handling fails the claim is released so Stripe's retry can
 * succeed). Every ledger entry is also idempotent by its source (the checkout session, the
 * payment intent, the refund, the dispute), so one payment announced by two events credits
 * once. The workspace comes from metadata Parley set and must hold the object's customer at
 * this provider; refunds and disputes find their workspace through the payment they are about
 * (`STRIPEPAYMENT#<payment intent>`, written when it credited), so one workspace's payment
 * never moves another's money.
 */

const StripeEvent = lazySchema(() =>
  z.object({
    id: z.string().min(1).max(255),
    type: z.string().min(1).max(255),
    data: z.object({ object: z.looseObject({}) }),
  }),
);
type StripeEvent = z.infer<typeof StripeEvent>;

export interface WebhookOutcome {
  received: true;
  duplicate: boolean;
  /** What the event did: `credited`, `refunded`, `dispute_hold`, … or `ignored` with a reason. */
  applied: string;
}

/** The provider the event came from, and what the handler may ask of it. */
export interface EventContext {
  kind: PaymentsProviderKind;
  /** Sets the customer's default payment method at the provider (setup_intent.succeeded); absent where the full provider is not loaded. */
  setDefaultPaymentMethod?: (customerId: string, paymentMethodId: string) => Promise<void>;
}

export async function handleStripeEvent(context: EventContext, parsed: unknown): Promise<WebhookOutcome> {
  const result = StripeEvent.safeParse(parsed);
  if (!result.success) throw badRequest('Invalid Stripe event');
  const event = result.data;
  if (!(await billingStore.claimStripeEvent(event.id, billingNow()))) return { received: true, duplicate: true, applied: 'ignored: already processed' };
  try {
    const applied = await apply(context, event);
    logger.info('Stripe event', { event_id: event.id, type: event.type, applied });
    return { received: true, duplicate: false, applied };
  } catch (error) {
    // Nothing took effect (or what did is idempotent): let Stripe's retry process it again.
    await billingStore.releaseStripeEvent(event.id);
    throw error;
  }
}

/**
 * The mock's events for a payment made on the charge path (auto-recharge): handled at once,
 * without the signature check, since they never left this process (the check needs the
 * `stripe` package, which the charging functions do not bundle).
 */
export async function handleOwnEvents(context: EventContext, events: readonly SelfSignedEvent[] | undefined): Promise<void> {
  for (const event of events ?? []) await handleStripeEvent(context, JSON.parse(event.payload));
}

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const idOf = (value: unknown): string | undefined => text(value) ?? text((value as { id?: unknown } | null | undefined)?.id);
const metadataOf = (object: Record<string, unknown>) => (object.metadata ?? {}) as Record<string, unknown>;
const cents = (value: unknown): number => (typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : 0);

/** The workspace an object belongs to, when its customer is the one that workspace holds at this provider. */
async function workspaceOf(context: EventContext, object: Record<string, unknown>): Promise<string | undefined> {
  const workspaceId = text(metadataOf(object).workspace_id);
  if (!workspaceId) return undefined;
  const account = await billingStore.account(workspaceId);
  const customer = account?.[`customer_${context.kind}`];
  return customer && customer === idOf(object.customer) ? workspaceId : undefined;
}

/** The workspace a payment credited (by its PaymentIntent), when it still holds that customer; the object's own customer, if it names one, must match. */
async function workspaceOfPayment(context: EventContext, paymentIntentId: string | undefined, customer: string | undefined): Promise<string | undefined> {
  if (!paymentIntentId) return undefined;
  const payment = await billingStore.stripePayment(paymentIntentId);
  if (!payment || (customer && customer !== payment.customer)) return undefined;
  const account = await billingStore.account(payment.workspace_id);
  return account?.[`customer_${context.kind}`] === payment.customer ? payment.workspace_id : undefined;
}

interface CreditInput {
  kind: Extract<EntryKind, 'credit_purchase' | 'auto_recharge' | 'invoice_payment'>;
  cents: number;
  sourceKey: string;
  reference: string;
  description: string;
  /** The payment behind it, so its refunds and disputes find this workspace. */
  paymentIntent?: string;
  customer: string;
  /** The invoice this payment pays (purpose `invoice`): marked paid whatever the balance is by then. */
  invoiceId?: string;
}

async function credit(workspaceId: string, input: CreditInput): Promise<{ applied: string; entryId?: string }> {
  if (input.cents <= 0) return { applied: 'ignored: no amount' };
  const { created, entry } = await writeEntry(workspaceId, {
    kind: input.kind,
    amount: input.cents * 10_000,
    description: input.description,
    sourceKey: input.sourceKey,
    reference: input.reference,
    ...(input.paymentIntent ? { paymentIntent: input.paymentIntent } : {}),
  });
  // Written also for a duplicate: a retry after this failed must still record it.
  if (input.paymentIntent) {
    await billingStore.recordStripePayment(input.paymentIntent, { workspace_id: workspaceId, customer: input.customer, amount_cents: input.cents, entry_id: entry.entry_id });
  }
  const invoicePaid = input.invoiceId ? await billingStore.markInvoicePaid(workspaceId, input.invoiceId, billingNow()) : false;
  await settleInvoices(workspaceId);
  return { applied: `${created ? 'credited' : 'ignored: already credited'}${invoicePaid ? '; invoice_paid' : ''}`, entryId: entry.entry_id };
}

/** A balance movement that is not usage (a refund, a dispute's hold or release), with its audit entry in the same transaction. */
async function movement(
  workspaceId: string,
  input: { kind: Extract<EntryKind, 'refund' | 'dispute_hold' | 'dispute_release'>; cents: number; sourceKey: string; reference: string; description: string; audit: AuditRecord },
): Promise<boolean> {
  const sign = input.kind === 'dispute_release' ? 1 : -1;
  const { created } = await writeEntry(
    workspaceId,
    { kind: input.kind, amount: sign * input.cents * 10_000, description: input.description, sourceKey: input.sourceKey, reference: input.reference },
    { extra: (nowMs) => [auditPut(workspaceId, undefined, input.audit, nowMs)] },
  );
  if (created && sign > 0) await settleInvoices(workspaceId);
  return created;
}

async function apply(context: EventContext, event: StripeEvent): Promise<string> {
  const object = event.data.object as Record<string, unknown>;
  const purpose = text(metadataOf(object).purpose);
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      if (purpose !== 'credits' && purpose !== 'invoice') return 'ignored: not a credit purchase';
      if (object.payment_status !== 'paid') return 'ignored: not paid yet';
      const workspaceId = await workspaceOf(context, object);
      if (!workspaceId) return 'ignored: unknown customer';
      const sessionId = idOf(object.id)!;
      const invoiceId = purpose === 'invoice' ? text(metadataOf(object).invoice_id) : undefined;
      if (purpose === 'invoice' && !invoiceId) return 'ignored: no invoice';
      const { applied } = await credit(workspaceId, {
        kind: invoiceId ? 'invoice_payment' : 'credit_purchase',
        cents: cents(object.amount_total),
        sourceKey: `stripe:checkout:${sessionId}`,
        reference: invoiceId ?? sessionId,
        description: invoiceId ? `Payment of invoice ${invoiceId}` : 'Credit purchase',
        paymentIntent: idOf(object.payment_intent),
        customer: idOf(object.customer)!,
        ...(invoiceId ? { invoiceId } : {}),
      });
      return applied;
    }
    case 'payment_intent.succeeded': {
      if (purpose !== 'auto_recharge') return 'ignored: not an auto-recharge';
      const workspaceId = await workspaceOf(context, object);
      if (!workspaceId) return 'ignored: unknown customer';
      const intentId = idOf(object.id)!;
      const { applied } = await credit(workspaceId, {
        kind: 'auto_recharge',
        cents: cents(object.amount_received ?? object.amount),
        sourceKey: `stripe:payment_intent:${intentId}`,
        reference: intentId,
        description: 'Auto-recharge',
        paymentIntent: intentId,
        customer: idOf(object.customer)!,
      });
      await billingStore.releaseAutoRecharge(workspaceId);
      return applied;
    }
    case 'setup_intent.succeeded': {
      const workspaceId = await workspaceOf(context, object);
      const paymentMethod = idOf(object.payment_method);
      if (!workspaceId || !paymentMethod) return 'ignored: unknown customer';
      if (!context.setDefaultPaymentMethod) return 'ignored: not handled here';
      const account = await billingStore.account(workspaceId);
      if (account?.default_payment_method) return 'ignored: a default payment method is set';
      await context.setDefaultPaymentMethod(idOf(object.customer)!, paymentMethod);
      await billingStore.setDefaultPaymentMethod(workspaceId, paymentMethod);
      return 'default_payment_method';
    }
    case 'charge.refunded':
      return refunded(context, object);
    case 'charge.dispute.created':
    case 'charge.dispute.closed':
      return disputed(context, event.type, object);
    default:
      return `ignored: ${event.type}`;
  }
}

/**
 * `charge.refunded`: each refund of a payment that credited a workspace takes that credit back
 * (a `refund` entry, source `stripe:refund:<charge>:<refund>`, so each refund counts once
 * however often the charge is announced). When the event does not list the refunds (Stripe
 * stopped expanding `refunds` on charges in 2022-11-15), the part of `amount_refunded` not yet
 * recorded is one entry.
 */
async function refunded(context: EventContext, charge: Record<string, unknown>): Promise<string> {
  const chargeId = idOf(charge.id)!;
  const workspaceId = await workspaceOfPayment(context, idOf(charge.payment_intent), idOf(charge.customer));
  if (!workspaceId) return 'ignored: not a payment of a workspace';
  const prefix = `stripe:refund:${chargeId}:`;
  const listed = ((charge.refunds as { data?: unknown } | undefined)?.data ?? null) as Record<string, unknown>[] | null;
  const refunds: { sourceKey: string; cents: number; id: string }[] = [];
  if (Array.isArray(listed)) {
    for (const refund of listed) {
      const id = idOf(refund.id);
      if (id && (refund.status === 'succeeded' || refund.status === 'pending') && cents(refund.amount) > 0) {
        refunds.push({ sourceKey: `${prefix}${id}`, cents: cents(refund.amount), id });
      }
    }
  }
  const listedCents = refunds.reduce((sum, refund) => sum + refund.cents, 0);
  const total = cents(charge.amount_refunded);
  if (total > listedCents) {
    // Refunds the event does not list: what amount_refunded says beyond what is recorded.
    const recorded = -(await billingStore.entriesOfSources(workspaceId, prefix)).reduce((sum, entry) => sum + entry.amount, 0) / 10_000;
    const missing = total - Math.max(recorded, listedCents);
    if (missing > 0) refunds.push({ sourceKey: `${prefix}upto:${total}`, cents: missing, id: `${chargeId} (up to ${total})` });
  }
  let written = 0;
  for (const refund of refunds) {
    const created = await movement(workspaceId, {
      kind: 'refund',
      cents: refund.cents,
      sourceKey: refund.sourceKey,
      reference: chargeId,
      description: `Refund ${refund.id} of charge ${chargeId}`,
      audit: { action: 'billing.refund', target: { type: 'stripe_charge', id: chargeId }, changes: ['balance'] },
    });
    if (created) written++;
  }
  return written > 0 ? `refunded: ${written}` : 'ignored: already refunded';
}

/**
 * Disputes: `charge.dispute.created` holds the disputed amount (a `dispute_hold` entry: the
 * credit that payment bought cannot be spent while the bank decides); `charge.dispute.closed`
 * releases it when the dispute is won (`won`, `warning_closed`) and keeps it when lost (the
 * money went back to the cardholder). Each with an audit entry; each once per dispute.
 */
async function disputed(context: EventContext, type: string, dispute: Record<string, unknown>): Promise<string> {
  const disputeId = idOf(dispute.id)!;
  const workspaceId = await workspaceOfPayment(context, idOf(dispute.payment_intent), undefined);
  if (!workspaceId) return 'ignored: not a payment of a workspace';
  const amount = cents(dispute.amount);
  if (amount === 0) return 'ignored: no amount';
  const hold = () =>
    movement(workspaceId, {
      kind: 'dispute_hold',
      cents: amount,
      sourceKey: `stripe:dispute:${disputeId}:hold`,
      reference: disputeId,
      description: `Dispute ${disputeId}: disputed amount held`,
      audit: { action: 'billing.dispute_hold', target: { type: 'stripe_dispute', id: disputeId }, changes: ['balance'] },
    });
  if (type === 'charge.dispute.created') return (await hold()) ? 'dispute_hold' : 'ignored: already held';
  const status = text(dispute.status);
  if (status === 'won' || status === 'warning_closed') {
    // Released only what was held.
    if (!(await billingStore.entryOfSource(workspaceId, `stripe:dispute:${disputeId}:hold`))) return 'ignored: nothing held';
    const released = await movement(workspaceId, {
      kind: 'dispute_release',
      cents: amount,
      sourceKey: `stripe:dispute:${disputeId}:release`,
      reference: disputeId,
      description: `Dispute ${disputeId} won: held amount released`,
      audit: { action: 'billing.dispute_release', target: { type: 'stripe_dispute', id: disputeId }, changes: ['balance'] },
    });
    return released ? 'dispute_release' : 'ignored: already released';
  }
  if (status === 'lost') {
    // The hold stands (written now if its creation was missed); the loss is on the audit log.
    await hold();
    await billingStore.putAudit(auditPut(workspaceId, undefined, { action: 'billing.dispute_lost', target: { type: 'stripe_dispute', id: disputeId }, changes: ['balance'] }, billingNow()));
    return 'dispute_lost';
  }
  return `ignored: dispute ${status ?? 'closed'}`;
}
