/*
 * The one price table (docs/billing.md). Calls price themselves from it at their end
 * (shared/calls/engine/pricing.ts: call_cost's product lines), and billing charges those lines;
 * the concurrency charges and the spend limits read the rest. Rates in USD as a price list
 * states them; the ledger keeps integer micro-dollars (µUSD).
 */

/** Per-minute rates by product line of a call. */
export const PER_MINUTE_USD = {
  /** The voice engine: speech in and out, turn taking. */
  voice_engine: 0.07,
  /** Telephony for phone calls (either direction); web calls have none. */
  telephony: 0.015,
  /** Response engines: the model's share, by the agent's LLM model family. */
  llm_default: 0.006,
  /** Calls above the concurrency limit (burst), on top of the rest (spec Limits). */
  concurrency_burst: 0.15,
} as const;

/** Each batch dial attempt (line `batch_dial`, spec Limits). */
export const BATCH_DIAL_USD = 0.01;

/**
 * Chats and SMS (the spec's Limits give no price for either; these are Parley's, documented in
 * docs/billing.md): each message of an ended chat, the user's and the agent's (line `chat`),
 * charged once when the chat ends; each SMS Parley sends, an agent's reply in an SMS chat or a
 * send-sms (line `sms`), charged once when the carrier took it. An SMS chat pays both.
 */
export const CHAT_MESSAGE_USD = 0.002;
export const SMS_USD = 0.0075;

/**
 * QA scoring (line `qa_scoring`, Parley's price: the spec gives none): each minute of a
 * scored call beyond the month's free QA minutes (QA_FREE_MINUTES_PER_MONTH), a call's
 * duration rounded up to the minute. Charged once per result (docs/qa.md, "Usage and billing").
 */
export const QA_MINUTE_USD = 0.01;

/**
 * The assistant (line `conductor`, Parley's price: the spec gives none): each credit a
 * message uses beyond the workspace's free daily credits, with pay-as-you-go on. Charged
 * once per message (docs/assistant.md, "Credits").
 */
export const CONDUCTOR_CREDIT_USD = 0.01;

/** Concurrency slots included in the price; each slot above costs SLOT_PRICE_USD a month. */
export const INCLUDED_CONCURRENCY = 20;
export const SLOT_PRICE_USD = 12;

/** An invoice unpaid this long blocks spending (402 invoice_overdue). */
export const INVOICE_OVERDUE_DAYS = 14;

/** Budget events: a warning at this share of the monthly budget, then budget_reached. */
export const BUDGET_WARNING_SHARE = 0.8;

const MICROS_PER_USD = 1_000_000;

/** USD (any precision) → whole µUSD. */
export const toMicros = (usd: number): number => Math.round(usd * MICROS_PER_USD);
/** µUSD → USD, exact to the micro-dollar. */
export const toUsd = (micros: number): number => Math.round(micros) / MICROS_PER_USD;
/** A call_cost amount (cents, up to 4 decimals) → µUSD. */
export const centsToMicros = (cents: number): number => Math.round(cents * 10_000);
