import { registeredWorkspaceIds } from '../../account/index.ts';
import type { Principal } from '../../platform/auth/gate.ts';
import { config } from '../../platform/config.ts';
import { badRequest, forbidden } from '../../platform/errors.ts';
import { billingNow, dayOf, monthBounds, monthOf } from '../clock.ts';
import { toUsd } from '../prices.ts';
import type { UsageQueryInput, UsageView } from './schemas.ts';
import { billingStore, type UsageDayItem } from '../store.ts';

/*
 * Usage reports from the day items each charge adds to in its own transaction (no scan of
 * the ledger): `GET /billing/usage` for the caller's workspace, `GET /billing/platform-usage`
 * for the operator across every workspace (OPERATOR_WORKSPACE_IDS).
 */

const MAX_RANGE_DAYS = 366;
const DAY_MS = 24 * 60 * 60 * 1000;

function range(query: UsageQueryInput): { start: string; end: string } {
  const nowMs = billingNow();
  const start = query.start_date ?? dayOf(monthBounds(monthOf(nowMs)).start);
  const end = query.end_date ?? dayOf(nowMs);
  if (start > end) throw badRequest('start_date: Must not be after end_date');
  if ((Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`)) / DAY_MS >= MAX_RANGE_DAYS) {
    throw badRequest(`end_date: The range may span at most ${MAX_RANGE_DAYS} days`);
  }
  return { start, end };
}

function products(item: UsageDayItem): Record<string, number> {
  return Object.fromEntries(
    Object.entries(item)
      .filter(([name]) => name.startsWith('p_'))
      .map(([name, micros]) => [name.slice(2), toUsd(micros as number)]),
  );
}

function sum(days: readonly UsageDayItem[]): { totals: Record<string, number>; total: number } {
  const totals: Record<string, number> = {};
  let total = 0;
  for (const day of days) {
    total += day.total;
    for (const [name, micros] of Object.entries(day)) {
      if (name.startsWith('p_')) totals[name.slice(2)] = (totals[name.slice(2)] ?? 0) + (micros as number);
    }
  }
  return { totals: Object.fromEntries(Object.entries(totals).map(([name, micros]) => [name, toUsd(micros)])), total: toUsd(total) };
}

export async function workspaceUsage(workspaceId: string, query: UsageQueryInput): Promise<UsageView> {
  const { start, end } = range(query);
  const days = await billingStore.usageDays(workspaceId, start, end);
  const { totals, total } = sum(days);
  return {
    start_date: start,
    end_date: end,
    days: days.map((day) => ({ date: day.day, products: products(day), total_usd: toUsd(day.total) })),
    totals,
    total_usd: total,
  };
}

function assertOperator(principal: Principal): void {
  if (!config.OPERATOR_WORKSPACE_IDS.includes(principal.workspaceId)) throw forbidden('Requires an operator key');
}

export async function platformUsage(principal: Principal, query: UsageQueryInput) {
  assertOperator(principal);
  const { start, end } = range(query);
  const workspaces = [];
  const all: UsageDayItem[] = [];
  for (const workspaceId of await registeredWorkspaceIds()) {
    const days = await billingStore.usageDays(workspaceId, start, end);
    if (days.length === 0) continue;
    all.push(...days);
    const { totals, total } = sum(days);
    workspaces.push({ workspace_id: workspaceId, products: totals, total_usd: total });
  }
  const { totals, total } = sum(all);
  return { start_date: start, end_date: end, workspaces: workspaces.sort((a, b) => b.total_usd - a.total_usd), totals, total_usd: total };
}
