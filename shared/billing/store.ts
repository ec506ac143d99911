import { keys } from '../platform/store/keys.ts';
import { notFound } from '../platform/errors.ts';
import { ConditionFailed, defineEntity, table, TransactionCancelled, type TransactOp } from '../platform/store/table.ts';

/*
 * Billing's items (docs/billing.md, docs/data-model.md), all in the workspace's billing
 * partition `WS#<ws>#BILLING` except the Stripe event markers:
 *
 * - ACCOUNT: the balance (integer µUSD), the charges of each month (`charges_<YYYYMM>`), the
 *   concurrency slots billed each month (`slots_<YYYYMM>`), the budget events sent
 *   (`budget_<event>_<YYYYMM>`), settings, the open invoices and the Stripe customer.
 * - ENTRY#<12 hex ms>#<id>: the append-only ledger.
 * - SOURCE#<source key>: which entry a source (a call's end, a checkout) wrote, so each
 *   source writes one entry however often it is reported.
 * - USAGE#<YYYY-MM-DD>: that day's charges by product (`p_<product>`, µUSD) and `total`.
 * - INVOICE#<id>: invoices.
 * - MOCKCHECKOUT#<token hash> (its own partition): a checkout of the built-in mock until its page's Pay or Cancel.
 *
 * Every ledger write is one transaction: the source marker (only if absent), the entry, the
 * account's balance and month charges (ADD, so concurrent writes never lose one) and, for
 * charges, the day's usage. The balance is never derived by a scan.
 */

export type EntryKind =
  | 'free_credit'
  | 'credit_grant'
  | 'credit_purchase'
  | 'auto_recharge'
  | 'call_charge'
  | 'batch_dial'
  | 'purchased_concurrency'
  | 'chat_charge'
  | 'sms_charge'
  | 'simulation_charge'
  | 'qa_charge'
  | 'conductor_charge'
  | 'refund'
  | 'dispute_hold'
  | 'dispute_release'
  | 'invoice_payment';

/**
 * The kinds that are charges for usage: they count toward the month's charges (budget, spend
 * check, invoices) and the usage reports. Refunds and dispute holds also take credit away, but
 * are money moving back, not usage.
 */
export const CHARGE_KINDS: ReadonlySet<EntryKind> = new Set(['call_charge', 'batch_dial', 'purchased_concurrency', 'chat_charge', 'sms_charge', 'simulation_charge', 'qa_charge', 'conductor_charge']);
/** The kinds that add credit bought or granted (an invoice's "credits added in the period"). */
export const CREDIT_KINDS: ReadonlySet<EntryKind> = new Set(['free_credit', 'credit_grant', 'credit_purchase', 'auto_recharge', 'invoice_payment']);

export interface LedgerEntryItem {
  pk: string;
  sk: string;
  workspace_id: string;
  entry_id: string;
  kind: EntryKind;
  /** Signed µUSD: credits positive, charges negative. */
  amount: number;
  /** For charges: µUSD by product line (positive), summing to -amount. */
  lines?: Record<string, number>;
  description: string;
  source_key: string;
  /** What the entry is about: a call ID, a checkout session, a month. */
  reference?: string;
  /** The Stripe payment that credited it: the workspace purge finds the payment's record (`STRIPEPAYMENT#`) through it. */
  payment_intent?: string;
  created_timestamp: number;
}

export interface BillingSettingsItem {
  monthly_budget_usd: number | null;
  auto_recharge: { threshold_usd: number; amount_usd: number } | null;
  /** The assistant's credits beyond the free daily ones are charged (shared/conductor/credits); absent: off. */
  conductor_pay_as_you_go?: boolean;
  /** The assistant's credits a month may use, free ones included; absent or null: no limit. */
  conductor_monthly_limit?: number | null;
}

export interface BillingAccountItem {
  pk: string;
  sk: string;
  workspace_id: string;
  balance: number;
  created_timestamp: number;
  settings?: BillingSettingsItem;
  /** Invoice ID → when it was issued (epoch ms), while it is unpaid. */
  open_invoices?: Record<string, number>;
  /** The workspace's customer at Stripe, and at the built-in mock (kept apart, so switching providers never mixes them). */
  customer_stripe?: string;
  customer_mock?: string;
  default_payment_method?: string;
  auto_recharge_pending_until?: number;
  /**
   * The first month (`YYYY-MM`) whose every entry was written with its day's usage and the
   * month's credits (`credits_<YYYYMM>`): that month's invoice and later ones are summed from
   * those, not from the ledger. Absent on accounts no entry has touched since they were kept.
   */
  usage_days_since?: string;
  [monthly: `charges_${string}` | `credits_${string}` | `slots_${string}` | `budget_${string}`]: number | undefined;
}

export interface UsageDayItem {
  pk: string;
  sk: string;
  workspace_id: string;
  day: string;
  total: number;
  [product: `p_${string}`]: number;
}

export interface InvoiceLine {
  product: string;
  description: string;
  /** µUSD */
  amount: number;
}

export interface InvoiceItem {
  pk: string;
  sk: string;
  workspace_id: string;
  invoice_id: string;
  /** YYYY-MM (UTC). */
  period: string;
  period_start: number;
  period_end: number;
  lines: InvoiceLine[];
  /** µUSD: the sum of the lines, which is the sum of the period's charges in the ledger. */
  total: number;
  credits: number;
  /** µUSD not covered by credit when issued (a balance below zero). */
  amount_due: number;
  status: 'open' | 'paid';
  created_timestamp: number;
  paid_timestamp?: number;
}

/** A checkout session of the built-in mock, waiting for its page's Pay or Cancel (docs/billing.md). */
export interface MockCheckoutItem {
  pk: string;
  sk: string;
  session_id: string;
  workspace_id: string;
  customer_id: string;
  amount_cents: number;
  product_name: string;
  purpose: 'credits' | 'invoice';
  invoice_id?: string;
  success_url: string;
  cancel_url: string;
  status: 'open' | 'complete' | 'cancelled';
  created_timestamp: number;
  /** Epoch seconds (the table's TTL); the page refuses the session from then on. */
  expires_at: number;
}

/** `YYYYMM` of a month key `YYYY-MM`: the suffix of the account's monthly attributes. */
const monthSuffix = (month: string) => month.replace('-', '');
export const chargesAttribute = (month: string) => `charges_${monthSuffix(month)}` as const;
export const slotsAttribute = (month: string) => `slots_${monthSuffix(month)}` as const;
/** Credits added in a month (the credit kinds' amounts, µUSD), for its invoice. */
export const creditsAttribute = (month: string) => `credits_${monthSuffix(month)}` as const;
/** The month after `YYYY-MM`. */
const monthAfter = (month: string): string => {
  const [year, number] = month.split('-').map(Number) as [number, number];
  return number === 12 ? `${year + 1}-01` : `${year}-${String(number + 1).padStart(2, '0')}`;
};
export const budgetEventAttribute = (event: string, month: string) => `budget_${event}_${monthSuffix(month)}` as const;

const mockCheckouts = defineEntity<MockCheckoutItem, [tokenHash: string]>({
  key: keys.mockCheckout,
  notFound: () => notFound('Checkout session not found'),
});

export const billingStore = {
  mockCheckout: mockCheckouts.get,
  createMockCheckout: (item: Omit<MockCheckoutItem, 'pk' | 'sk'>, tokenHash: string) => mockCheckouts.create(item, tokenHash),

  /**
   * Moves an open session to `complete` (Pay; also from `complete`, so a repeated Pay finishes
   * what the first may not have) or to `cancelled` (only from open, or again from cancelled).
   * Answers the session as it was when the move was refused (another outcome already won).
   */
  async settleMockCheckout(tokenHash: string, status: 'complete' | 'cancelled'): Promise<{ moved: true } | { moved: false; item: MockCheckoutItem }> {
    try {
      await table.update({
        Key: keys.mockCheckout(tokenHash),
        UpdateExpression: 'SET #status = :status',
        ConditionExpression: 'attribute_exists(pk) AND (#status = :open OR #status = :status)',
        ExpressionAttributeNames: { '#status': 'status' },
        ExpressionAttributeValues: { ':status': status, ':open': 'open' },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      });
      return { moved: true };
    } catch (error) {
      if (error instanceof ConditionFailed && error.item) return { moved: false, item: error.item as unknown as MockCheckoutItem };
      if (error instanceof ConditionFailed) throw notFound('Checkout session not found');
      throw error;
    }
  },

  account: (workspaceId: string) => table.get<BillingAccountItem>(keys.billingAccount(workspaceId)),

  /** Opens the account with its free credit as its first entry; false when it already existed. */
  async openAccount(workspaceId: string, freeCredit: { entryId: string; amount: number; nowMs: number }): Promise<boolean> {
    const entry: LedgerEntryItem = {
      ...keys.ledgerEntry(workspaceId, freeCredit.nowMs, freeCredit.entryId),
      workspace_id: workspaceId,
      entry_id: freeCredit.entryId,
      kind: 'free_credit',
      amount: freeCredit.amount,
      description: 'Free credit for a new workspace',
      source_key: 'free-credit',
      created_timestamp: freeCredit.nowMs,
    };
    try {
      await table.transact([
        {
          Put: {
            Item: {
              ...keys.billingAccount(workspaceId),
              workspace_id: workspaceId,
              balance: freeCredit.amount,
              created_timestamp: freeCredit.nowMs,
              // Opened by this code: every entry of its first month is written with its usage day and credits.
              usage_days_since: new Date(freeCredit.nowMs).toISOString().slice(0, 7),
              ...(freeCredit.amount !== 0 ? { [creditsAttribute(new Date(freeCredit.nowMs).toISOString().slice(0, 7))]: freeCredit.amount } : {}),
              settings: { monthly_budget_usd: null, auto_recharge: null } satisfies BillingSettingsItem,
              open_invoices: {},
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          },
        },
        { Put: { Item: { ...keys.ledgerSource(workspaceId, 'free-credit'), entry_id: entry.entry_id }, ConditionExpression: 'attribute_not_exists(pk)' } },
        ...(freeCredit.amount !== 0 ? [{ Put: { Item: entry } } satisfies TransactOp] : []),
      ]);
      return true;
    } catch (error) {
      if (error instanceof TransactionCancelled && error.failedAt.length > 0) return false;
      throw error;
    }
  },

  /**
   * Appends an entry: answers 'written', 'duplicate' (its source already wrote one) or
   * 'no-account' (open the account first). A lost race with another transaction throws
   * TransactionCancelled (conflicted) for the caller to retry.
   */
  async appendEntry(
    entry: LedgerEntryItem,
    options: { month: string; day: string; slots?: { previous: number; next: number }; extra?: readonly TransactOp[] },
  ): Promise<'written' | 'duplicate' | 'no-account' | 'slots-moved'> {
    const charge = CHARGE_KINDS.has(entry.kind) && entry.amount < 0 ? -entry.amount : 0;
    const credit = CREDIT_KINDS.has(entry.kind) ? entry.amount : 0;
    const names: Record<string, string> = { '#charges': chargesAttribute(options.month), '#credits': creditsAttribute(options.month), '#since': 'usage_days_since' };
    // An account kept from before the usage days knew credits is complete from next month on.
    const values: Record<string, unknown> = { ':amount': entry.amount, ':charge': charge, ':credit': credit, ':since': monthAfter(options.month) };
    let condition = 'attribute_exists(pk)';
    let set = ', #since = if_not_exists(#since, :since)';
    if (options.slots) {
      // The month's billed concurrency slots move in the same write, from the count the charge was computed on.
      names['#slots'] = slotsAttribute(options.month);
      values[':prevSlots'] = options.slots.previous;
      values[':nextSlots'] = options.slots.next;
      condition += options.slots.previous === 0 ? ' AND (attribute_not_exists(#slots) OR #slots = :prevSlots)' : ' AND #slots = :prevSlots';
      set += ', #slots = :nextSlots';
    }
    const ops: TransactOp[] = [
      {
        Put: {
          Item: { ...keys.ledgerSource(entry.workspace_id, entry.source_key), entry_id: entry.entry_id, created_timestamp: entry.created_timestamp },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      {
        Update: {
          Key: keys.billingAccount(entry.workspace_id),
          UpdateExpression: `ADD balance :amount, #charges :charge, #credits :credit SET ${set.slice(2)}`,
          ConditionExpression: condition,
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: values,
        },
      },
      { Put: { Item: entry } },
    ];
    if (charge > 0) {
      const productNames: Record<string, string> = {};
      const values: Record<string, unknown> = { ':total': charge, ':ws': entry.workspace_id, ':day': options.day };
      // A charge without lines is one line of its kind (as its invoice reads it).
      const adds = Object.entries(entry.lines ?? { [entry.kind]: charge }).map(([product, amount], i) => {
        productNames[`#p${i}`] = `p_${product}`;
        values[`:p${i}`] = amount;
        return `#p${i} :p${i}`;
      });
      ops.push({
        Update: {
          Key: keys.billingUsageDay(entry.workspace_id, options.day),
          UpdateExpression: `SET workspace_id = :ws, #day = :day ADD #total :total${adds.length ? `, ${adds.join(', ')}` : ''}`,
          ExpressionAttributeNames: { '#total': 'total', '#day': 'day', ...productNames },
          ExpressionAttributeValues: values,
        },
      });
    }
    // What must happen with the entry or not at all (an audit entry, an invoice marked paid).
    ops.push(...(options.extra ?? []));
    try {
      await table.transact(ops);
      return 'written';
    } catch (error) {
      if (!(error instanceof TransactionCancelled) || error.conflicted) throw error;
      if (error.failedAt.includes(0)) return 'duplicate';
      if (error.failedAt.includes(1)) return options.slots ? 'slots-moved' : 'no-account';
      throw error;
    }
  },

  /** The entry a source wrote, if any. */
  async entryOfSource(workspaceId: string, sourceKey: string): Promise<LedgerEntryItem | undefined> {
    const marker = await table.get<{ entry_id: string; created_timestamp?: number }>(keys.ledgerSource(workspaceId, sourceKey));
    if (!marker) return undefined;
    if (marker.created_timestamp === undefined) return undefined;
    return table.get<LedgerEntryItem>(keys.ledgerEntry(workspaceId, marker.created_timestamp, marker.entry_id));
  },

  /** Ledger entries between two times (inclusive from, exclusive to), oldest first unless `newestFirst`. */
  async entries(workspaceId: string, range: { fromMs?: number; toMs?: number; limit?: number; newestFirst?: boolean }): Promise<LedgerEntryItem[]> {
    const { pk } = keys.ledgerEntries(workspaceId);
    const from = keys.ledgerEntryBound(range.fromMs ?? 0);
    const to = range.toMs === undefined ? 'ENTRY$' : keys.ledgerEntryBound(range.toMs);
    const input = {
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': pk, ':from': from, ':to': to },
      ScanIndexForward: !range.newestFirst,
    };
    const items = range.limit
      ? (await table.queryPage<LedgerEntryItem>({ ...input, Limit: range.limit })).items
      : await table.queryAll<LedgerEntryItem>(input);
    // BETWEEN includes the upper bound's prefix; an entry exactly at `toMs` belongs to the next range.
    return range.toMs === undefined ? items : items.filter((item) => item.created_timestamp < range.toMs!);
  },

  async usageDays(workspaceId: string, fromDay: string, toDay: string): Promise<UsageDayItem[]> {
    const { pk } = keys.billingUsageDays(workspaceId);
    return table.queryAll<UsageDayItem>({
      KeyConditionExpression: 'pk = :pk AND sk BETWEEN :from AND :to',
      ExpressionAttributeValues: { ':pk': pk, ':from': keys.billingUsageBound(fromDay), ':to': keys.billingUsageBound(toDay) },
    });
  },

  /** Sets the settings fields given (each its own path, so concurrent changes of different fields both stand). */
  async updateSettings(workspaceId: string, changes: Partial<BillingSettingsItem>): Promise<BillingAccountItem> {
    const entries = Object.entries(changes).filter(([, value]) => value !== undefined);
    if (entries.length === 0) return (await table.get<BillingAccountItem>(keys.billingAccount(workspaceId)))!;
    const out = await table.update<BillingAccountItem>({
      Key: keys.billingAccount(workspaceId),
      UpdateExpression: `SET ${entries.map((_, i) => `settings.#f${i} = :v${i}`).join(', ')}`,
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: Object.fromEntries(entries.map(([field], i) => [`#f${i}`, field])),
      ExpressionAttributeValues: Object.fromEntries(entries.map(([, value], i) => [`:v${i}`, value])),
      ReturnValues: 'ALL_NEW',
    });
    return out!;
  },

  /** The entries whose source keys start with `prefix` (e.g. every month's concurrency charge), oldest first. */
  async entriesOfSources(workspaceId: string, prefix: string): Promise<LedgerEntryItem[]> {
    const markers = await table.queryAll<{ entry_id: string; created_timestamp: number }>({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': keys.billingAccount(workspaceId).pk, ':prefix': keys.ledgerSource(workspaceId, prefix).sk },
    });
    const entries = await table.batchGet<LedgerEntryItem>(markers.map((marker) => keys.ledgerEntry(workspaceId, marker.created_timestamp, marker.entry_id)));
    return entries.sort((a, b) => a.created_timestamp - b.created_timestamp);
  },

  /** Marks a once-a-month event as sent; false when it already was. */
  async claimMonthlyFlag(workspaceId: string, attribute: string, nowMs: number): Promise<boolean> {
    try {
      await table.update({
        Key: keys.billingAccount(workspaceId),
        UpdateExpression: 'SET #flag = :now',
        ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#flag)',
        ExpressionAttributeNames: { '#flag': attribute },
        ExpressionAttributeValues: { ':now': nowMs },
      });
      return true;
    } catch (error) {
      if (error instanceof ConditionFailed) return false;
      throw error;
    }
  },

  /** Sets the workspace's customer at a payments provider once; answers the customer the account holds afterwards. */
  async setCustomer(workspaceId: string, provider: 'stripe' | 'mock', customerId: string): Promise<string> {
    const attribute = `customer_${provider}` as const;
    const out = await table.update<BillingAccountItem>({
      Key: keys.billingAccount(workspaceId),
      UpdateExpression: 'SET #customer = if_not_exists(#customer, :customer)',
      ConditionExpression: 'attribute_exists(pk)',
      ExpressionAttributeNames: { '#customer': attribute },
      ExpressionAttributeValues: { ':customer': customerId },
      ReturnValues: 'ALL_NEW',
    });
    return out![attribute]!;
  },

  async setDefaultPaymentMethod(workspaceId: string, paymentMethodId: string | null): Promise<void> {
    await table.update({
      Key: keys.billingAccount(workspaceId),
      UpdateExpression: paymentMethodId ? 'SET default_payment_method = :pm' : 'REMOVE default_payment_method',
      ConditionExpression: 'attribute_exists(pk)',
      ...(paymentMethodId ? { ExpressionAttributeValues: { ':pm': paymentMethodId } } : {}),
    });
  },

  /** Takes the auto-recharge lock until `untilMs`; false while another attempt holds it. */
  async claimAutoRecharge(workspaceId: string, nowMs: number, untilMs: number): Promise<boolean> {
    try {
      await table.update({
        Key: keys.billingAccount(workspaceId),
        UpdateExpression: 'SET auto_recharge_pending_until = :until',
        ConditionExpression: 'attribute_exists(pk) AND (attribute_not_exists(auto_recharge_pending_until) OR auto_recharge_pending_until < :now)',
        ExpressionAttributeValues: { ':until': untilMs, ':now': nowMs },
      });
      return true;
    } catch (error) {
      if (error instanceof ConditionFailed) return false;
      throw error;
    }
  },

  async releaseAutoRecharge(workspaceId: string): Promise<void> {
    await table.update({ Key: keys.billingAccount(workspaceId), UpdateExpression: 'REMOVE auto_recharge_pending_until' });
  },

  invoice: (workspaceId: string, invoiceId: string) => table.get<InvoiceItem>(keys.invoice(workspaceId, invoiceId)),

  async invoices(workspaceId: string): Promise<InvoiceItem[]> {
    const { pk, skPrefix } = keys.invoices(workspaceId);
    return table.queryAll<InvoiceItem>({
      KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
      ExpressionAttributeValues: { ':pk': pk, ':prefix': skPrefix },
    });
  },

  /** Writes an invoice once, with the account's open-invoice mark when something is due; false when it exists. */
  async createInvoice(invoice: Omit<InvoiceItem, 'pk' | 'sk'>): Promise<boolean> {
    const ops: TransactOp[] = [
      { Put: { Item: { ...invoice, ...keys.invoice(invoice.workspace_id, invoice.invoice_id) }, ConditionExpression: 'attribute_not_exists(pk)' } },
    ];
    if (invoice.status === 'open') {
      ops.push({
        Update: {
          Key: keys.billingAccount(invoice.workspace_id),
          UpdateExpression: 'SET open_invoices.#id = :issued',
          ConditionExpression: 'attribute_exists(open_invoices)',
          ExpressionAttributeNames: { '#id': invoice.invoice_id },
          ExpressionAttributeValues: { ':issued': invoice.created_timestamp },
        },
      });
    }
    try {
      await table.transact(ops);
      return true;
    } catch (error) {
      if (!(error instanceof TransactionCancelled) || error.conflicted) throw error;
      if (error.failedAt.includes(0)) return false;
      // The account has no open_invoices map yet: create it in the same write.
      await table.transact([
        ops[0]!,
        {
          Update: {
            Key: keys.billingAccount(invoice.workspace_id),
            UpdateExpression: 'SET open_invoices = :open',
            ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(open_invoices)',
            ExpressionAttributeValues: { ':open': { [invoice.invoice_id]: invoice.created_timestamp } },
          },
        },
      ]);
      return true;
    }
  },

  /** Marks an open invoice paid and takes it off the account's open list (one transaction; false if not open). */
  async markInvoicePaid(workspaceId: string, invoiceId: string, nowMs: number): Promise<boolean> {
    try {
      await table.transact([
        {
          Update: {
            Key: keys.invoice(workspaceId, invoiceId),
            UpdateExpression: 'SET #status = :paid, paid_timestamp = :now',
            ConditionExpression: '#status = :open',
            ExpressionAttributeNames: { '#status': 'status' },
            ExpressionAttributeValues: { ':paid': 'paid', ':open': 'open', ':now': nowMs },
          },
        },
        {
          Update: {
            Key: keys.billingAccount(workspaceId),
            UpdateExpression: 'REMOVE open_invoices.#id',
            ExpressionAttributeNames: { '#id': invoiceId },
          },
        },
      ]);
      return true;
    } catch (error) {
      if (error instanceof TransactionCancelled && !error.conflicted) return false;
      throw error;
    }
  },

  /** Records a Stripe event as processed; false when it already was (a replay). */
  async claimStripeEvent(eventId: string, nowMs: number): Promise<boolean> {
    try {
      await table.put({
        Item: { ...keys.stripeEvent(eventId), received_timestamp: nowMs },
        ConditionExpression: 'attribute_not_exists(pk)',
      });
      return true;
    } catch (error) {
      if (error instanceof ConditionFailed) return false;
      throw error;
    }
  },

  /** Records which workspace a Stripe payment credited (by PaymentIntent), so its refunds and disputes find it. */
  async recordStripePayment(paymentIntentId: string, payment: { workspace_id: string; customer: string; amount_cents: number; entry_id: string }): Promise<void> {
    await table.put({
      Item: { ...keys.stripePayment(paymentIntentId), payment_intent_id: paymentIntentId, ...payment },
      ConditionExpression: 'attribute_not_exists(pk) OR workspace_id = :ws',
      ExpressionAttributeValues: { ':ws': payment.workspace_id },
    });
  },

  stripePayment: (paymentIntentId: string) =>
    table.get<{ workspace_id: string; customer: string; amount_cents: number; entry_id: string }>(keys.stripePayment(paymentIntentId)),

  /** Writes an audit entry on its own (one not tied to a ledger write). */
  async putAudit(op: TransactOp): Promise<void> {
    await table.transact([op]);
  },

  /** Lets a Stripe event be processed again (its handling failed before it took effect). */
  async releaseStripeEvent(eventId: string): Promise<void> {
    await table.delete({ Key: keys.stripeEvent(eventId) });
  },
};
