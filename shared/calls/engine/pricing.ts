import { BATCH_DIAL_USD, PER_MINUTE_USD } from '../../billing/index.ts';

/*
 * One price table for call costs (retell-sdk CallCost: cents, unit prices in cents per
 * second). Rates are per minute in USD, as a price list states them; billing charges the
 * same lines (shared/billing/prices.ts holds the table). Spec Limits: calls over the concurrency limit (burst) cost
 * an extra $0.15 a minute (`concurrency_burst`), batch dials $0.01 each (`batch_dial`).
 */

// The price table is billing's, so calls and the ledger charge from one table.
;

interface ProductCost {
  product: string;
  unit_price: number;
  cost: number;
}

export interface CallCost {
  product_costs: ProductCost[];
  total_duration_seconds: number;
  total_duration_unit_price: number;
  combined_cost: number;
}

const centsPerSecond = (usdPerMinute: number) => (usdPerMinute * 100) / 60;
const round = (value: number, places = 6) => Math.round(value * 10 ** places) / 10 ** places;

/** The call's cost from its duration and what it used. */
export function callCost(input: { durationMs: number; phone: boolean; burst: boolean; batchDial?: boolean }): CallCost {
  const seconds = Math.max(0, input.durationMs) / 1000;
  const perMinute: [string, number][] = [
    ['voice_engine', PER_MINUTE_USD.voice_engine],
    ['llm', PER_MINUTE_USD.llm_default],
    ...(input.phone ? ([['telephony', PER_MINUTE_USD.telephony]] as [string, number][]) : []),
    ...(input.burst ? ([['concurrency_burst', PER_MINUTE_USD.concurrency_burst]] as [string, number][]) : []),
  ];
  const product_costs: ProductCost[] = perMinute.map(([product, usd]) => ({
    product,
    unit_price: round(centsPerSecond(usd)),
    cost: round(centsPerSecond(usd) * seconds, 4),
  }));
  if (input.batchDial) product_costs.push({ product: 'batch_dial', unit_price: 0, cost: BATCH_DIAL_USD * 100 });
  const total_duration_unit_price = round(perMinute.reduce((sum, [, usd]) => sum + centsPerSecond(usd), 0));
  return {
    product_costs,
    total_duration_seconds: Math.round(seconds),
    total_duration_unit_price,
    combined_cost: round(product_costs.reduce((sum, line) => sum + line.cost, 0), 4),
  };
}
