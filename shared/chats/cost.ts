import { CHAT_MESSAGE_USD, SMS_USD } from '../billing/index.ts';

/*
 * A chat's cost (retell-sdk ChatCost: cents), from billing's price table, the same prices
 * the ledger charges (shared/billing/prices.ts): each user or agent message of the ended
 * chat (line `chat`, charged once at the end) and, for an SMS chat, each SMS the carrier
 * took (line `sms`, charged per message when sent). `unit_price` is cents per message.
 */

interface ChatProductCost {
  product: string;
  unit_price: number;
  cost: number;
}

export interface ChatCost {
  product_costs: ChatProductCost[];
  combined_cost: number;
}

const round = (value: number, places = 4) => Math.round(value * 10 ** places) / 10 ** places;

/** The cost of `messages` chat messages and, for an SMS chat (`sms` given), `sms` messages sent. */
export function chatCost(input: { messages: number; sms?: number }): ChatCost {
  const lines: [string, number, number][] = [['chat', CHAT_MESSAGE_USD * 100, input.messages]];
  if (input.sms !== undefined) lines.push(['sms', SMS_USD * 100, input.sms]);
  const product_costs = lines.map(([product, cents, count]) => ({ product, unit_price: round(cents), cost: round(cents * Math.max(0, count)) }));
  return { product_costs, combined_cost: round(product_costs.reduce((sum, line) => sum + line.cost, 0)) };
}
