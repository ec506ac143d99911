import { keys } from '../../platform/store/keys.ts';
import { table } from '../../platform/store/table.ts';

/*
 * The assistant's credits (docs/data-model.md, docs/assistant.md "Credits"), in the
 * workspace's billing partition beside the billing items they lead to:
 * - `CONDUCTORDAY#<YYYY-MM-DD>`: the credits used on a UTC day (`used`, free and paid) and
 *   how many were paid (`paid`), with the day's `messages`;
 * - `CONDUCTORMONTH#<YYYY-MM>`: the same for a month, which the monthly limit counts;
 * - `CONDUCTORCHARGE#<message id>`: a message's charge (its entry's ID, credits and split),
 *   written only if absent, so a message is counted once however often its charge is retried;
 * - `CONDUCTORENTRY#<entry id>`: the ledger entry (time-ordered IDs: the ledger lists newest first).
 *
 * A charge writes all four in one transaction, and sets the day's and the month's `used`
 * conditional on the values read, so two messages charged at the same time never both take
 * the last free credit (or the last of the monthly limit): the loser reads again.
 */

export interface CreditCounter {
  /** Credits used, free and paid; undefined while nothing was (no item yet). */
  used: number | undefined;
  paid: number;
}

export interface ConductorChargeItem {
  workspace_id: string;
  message_id: string;
  session_id: string;
  entry_id: string;
  credits: number;
  free_credits: number;
  paid_credits: number;
  created_timestamp: number;
}

export interface ConductorLedgerItem extends ConductorChargeItem {
  input_tokens: number;
  output_tokens: number;
  /** µUSD charged in the billing ledger for the paid credits, at the price of the time. */
  cost_micros: number;
}

const counterOf = (item: { used?: number; paid?: number } | undefined): CreditCounter => ({ used: item?.used, paid: item?.paid ?? 0 });

/** The day's and the month's counters, as a charge conditions on them. */
export async function readCounters(workspaceId: string, day: string, month: string): Promise<{ day: CreditCounter; month: CreditCounter }> {
  const [dayItem, monthItem] = await Promise.all([
    table.get<{ used?: number; paid?: number }>(keys.conductorCreditDay(workspaceId, day)),
    table.get<{ used?: number; paid?: number }>(keys.conductorCreditMonth(workspaceId, month)),
  ]);
  return { day: counterOf(dayItem), month: counterOf(monthItem) };
}

export const findCharge = (workspaceId: string, messageId: string): Promise<ConductorChargeItem | undefined> =>
  table.get<ConductorChargeItem>(keys.conductorCharge(workspaceId, messageId));

/** A counter's update: `used` set from the value read (only if it still is), `paid` and `messages` added. */
function counterUpdate(key: ReturnType<typeof keys.conductorCreditDay>, period: { name: 'day' | 'month'; value: string }, before: number | undefined, credits: number, paid: number, workspaceId: string) {
  return {
    Update: {
      Key: key,
      UpdateExpression: 'SET #used = :after, #ws = :ws, #period = :period ADD #paid :paid, #messages :one',
      ConditionExpression: before === undefined ? 'attribute_not_exists(#used)' : '#used = :before',
      ExpressionAttributeNames: { '#used': 'used', '#paid': 'paid', '#messages': 'messages', '#ws': 'workspace_id', '#period': period.name },
      ExpressionAttributeValues: {
        ':after': (before ?? 0) + credits,
        ':paid': paid,
        ':one': 1,
        ':ws': workspaceId,
        ':period': period.value,
        ...(before === undefined ? {} : { ':before': before }),
      },
    },
  };
}

/**
 * Writes a message's charge: its marker and ledger entry (only if the message has none) and
 * both counters (only if they still hold `dayBefore` and `monthBefore`). Throws
 * TransactionCancelled when any condition failed or another write raced it.
 */
export async function writeCharge(input: {
  day: string;
  month: string;
  dayBefore: number | undefined;
  monthBefore: number | undefined;
  entry: ConductorLedgerItem;
}): Promise<void> {
  const { entry } = input;
  const ws = entry.workspace_id;
  const marker: ConductorChargeItem = {
    workspace_id: ws,
    message_id: entry.message_id,
    session_id: entry.session_id,
    entry_id: entry.entry_id,
    credits: entry.credits,
    free_credits: entry.free_credits,
    paid_credits: entry.paid_credits,
    created_timestamp: entry.created_timestamp,
  };
  await table.transact([
    { Put: { Item: { ...keys.conductorCharge(ws, entry.message_id), ...marker }, ConditionExpression: 'attribute_not_exists(pk)' } },
    { Put: { Item: { ...keys.conductorLedgerEntry(ws, entry.entry_id), ...entry }, ConditionExpression: 'attribute_not_exists(pk)' } },
    counterUpdate(keys.conductorCreditDay(ws, input.day), { name: 'day', value: input.day }, input.dayBefore, entry.credits, entry.paid_credits, ws),
    counterUpdate(keys.conductorCreditMonth(ws, input.month), { name: 'month', value: input.month }, input.monthBefore, entry.credits, entry.paid_credits, ws),
  ]);
}

/** A page of the ledger, newest first, after the entry `after` (an entry ID of this workspace's ledger). */
export async function ledgerPage(workspaceId: string, limit: number, after?: string): Promise<ConductorLedgerItem[]> {
  const ledger = keys.conductorLedgerEntries(workspaceId);
  const { items } = await table.queryPage<ConductorLedgerItem>({
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': ledger.pk, ':prefix': ledger.skPrefix },
    ScanIndexForward: false,
    Limit: limit,
    ...(after ? { ExclusiveStartKey: keys.conductorLedgerEntry(workspaceId, after) } : {}),
  });
  return items;
}
