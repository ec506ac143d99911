import { config } from '../platform/config.ts';
import { newId } from '../platform/ids.ts';
import { keys } from '../platform/store/keys.ts';
import { TransactionCancelled, type TransactOp } from '../platform/store/table.ts';
import { billingNow, dayOf, monthOf } from './clock.ts';
import { toMicros } from './prices.ts';
import { billingStore, type BillingAccountItem, type EntryKind, type LedgerEntryItem } from './store.ts';

/*
 * The ledger's writes (docs/billing.md): append-only, one entry per source key, the balance
 * kept in the account item by the same transaction. `writeEntry` only writes; charges/ledger.ts
 * adds what follows a new entry (budget events, auto-recharge, settling invoices). It sits
 * beside store.ts, below the sub-folders: payments/ credits and refunds through `writeEntry`
 * (their effects are its own) and every part opens the account with `ensureAccount`, while
 * charges/ledger.ts reaches payments/ and invoices/ for those effects, so neither could live
 * in charges/ without a cycle.
 */

export interface NewEntry {
  kind: EntryKind;
  /** Signed µUSD: credits positive, charges negative. */
  amount: number;
  lines?: Record<string, number>;
  description: string;
  sourceKey: string;
  reference?: string;
  paymentIntent?: string;
}

export interface AppendResult {
  entry: LedgerEntryItem;
  /** False when the source had already written its entry (this is that entry). */
  created: boolean;
}

/** The month's billed concurrency slots moved under a charge computed on the old count. */
export class SlotsMoved extends Error {
  constructor() {
    super('The billed concurrency slots changed meanwhile');
    this.name = 'SlotsMoved';
  }
}

/** The account, opened with the free credit on first use. */
export async function ensureAccount(workspaceId: string): Promise<BillingAccountItem> {
  const existing = await billingStore.account(workspaceId);
  if (existing) return existing;
  await billingStore.openAccount(workspaceId, { entryId: newId('ledgerEntry'), amount: toMicros(config.FREE_CREDIT_USD), nowMs: billingNow() });
  return (await billingStore.account(workspaceId))!;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Appends an entry once per source key; concurrent writers to one account retry their transaction. */
export interface WriteOptions {
  /** The month's billed concurrency slots, moved from `previous` to `next` in the same write. */
  slots?: { previous: number; next: number };
  /** Operations that must be written with the entry or not at all (built per attempt: an audit entry's time-ordered ID). */
  extra?: (nowMs: number) => TransactOp[];
}

export async function writeEntry(workspaceId: string, input: NewEntry, options: WriteOptions = {}): Promise<AppendResult> {
  for (let attempt = 0; ; attempt++) {
    const nowMs = billingNow();
    const entryId = newId('ledgerEntry');
    const entry: LedgerEntryItem = {
      ...keys.ledgerEntry(workspaceId, nowMs, entryId),
      workspace_id: workspaceId,
      entry_id: entryId,
      kind: input.kind,
      amount: input.amount,
      ...(input.lines && Object.keys(input.lines).length ? { lines: input.lines } : {}),
      description: input.description,
      source_key: input.sourceKey,
      ...(input.reference ? { reference: input.reference } : {}),
      ...(input.paymentIntent ? { payment_intent: input.paymentIntent } : {}),
      created_timestamp: nowMs,
    };
    let outcome: Awaited<ReturnType<typeof billingStore.appendEntry>>;
    try {
      outcome = await billingStore.appendEntry(entry, { month: monthOf(nowMs), day: dayOf(nowMs), slots: options.slots, extra: options.extra?.(nowMs) });
    } catch (error) {
      // Another transaction on the same account won the race: try again, a little later each time.
      if (error instanceof TransactionCancelled && error.conflicted && attempt < 30) {
        await pause(Math.min(250, 5 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random()));
        continue;
      }
      throw error;
    }
    if (outcome === 'no-account' && attempt < 30) {
      await ensureAccount(workspaceId);
      continue;
    }
    if (outcome === 'slots-moved') throw new SlotsMoved();
    if (outcome === 'duplicate') {
      const existing = await billingStore.entryOfSource(workspaceId, input.sourceKey);
      return { entry: existing ?? entry, created: false };
    }
    if (outcome !== 'written') throw new Error(`Ledger write for ${workspaceId} failed: ${outcome}`);
    return { entry, created: true };
  }
}

