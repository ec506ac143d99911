import * as z from 'zod';
import { epochMs, lazySchema, queryInt } from '../../platform/http/schemas.ts';

/*
 * The assistant's credits (docs/assistant.md, "Credits"). retell-sdk has no assistant
 * resource and the spec shows no shapes, so these are ours: snake_case like the rest of the API.
 */

export const ConductorCredits = lazySchema(() =>
  z.object({
    date: z.string().describe('Today (UTC), YYYY-MM-DD: the day the free credits are counted in'),
    free_credits: z.number().int().describe('Free credits of a day (CONDUCTOR_FREE_CREDITS_PER_DAY)'),
    used_credits: z.number().int().describe('Credits used today, free and paid'),
    remaining_free_credits: z.number().int(),
    paid_credits: z.number().int().describe('Credits used today beyond the free ones, charged in the billing ledger'),
    pay_as_you_go: z.boolean().describe('Credits beyond the free ones are allowed and charged (PATCH /billing/settings conductor_pay_as_you_go)'),
    monthly_limit: z.number().int().nullable().describe('Credits a month may use, free ones included (PATCH /billing/settings conductor_monthly_limit); null: no limit'),
    month: z.string().describe('This month (UTC), YYYY-MM'),
    month_used_credits: z.number().int(),
    month_remaining_credits: z.number().int().nullable().describe('Credits left under the monthly limit; null: no limit'),
    tokens_per_credit: z.number().int().describe("A message's input and output tokens together, per credit (at least one credit a message)"),
    credit_price_usd: z.number().describe('The price of a credit beyond the free ones'),
  }),
);
export type ConductorCredits = z.infer<typeof ConductorCredits>;

export const ConductorLedgerQuery = lazySchema(() =>
  z
    .object({
      limit: queryInt({ min: 1, max: 1000, default: 100 }),
      pagination_key: z.string().max(100).optional().describe('The last entry_id of the previous page: the page starts after it'),
    })
    .strict(),
);
export type ConductorLedgerInput = z.infer<typeof ConductorLedgerQuery>;

export const ConductorLedgerEntry = lazySchema(() =>
  z.object({
    entry_id: z.string(),
    session_id: z.string(),
    message_id: z.string(),
    input_tokens: z.number().int(),
    output_tokens: z.number().int(),
    credits: z.number().int().describe("The message's credits: free_credits + paid_credits"),
    free_credits: z.number().int(),
    paid_credits: z.number().int().describe('Credits beyond the free ones (pay-as-you-go), charged in the billing ledger'),
    paid: z.boolean().describe('Whether any of its credits were charged'),
    cost_usd: z.number().describe('paid_credits × the credit price'),
    created_timestamp: epochMs(),
  }),
);
export type ConductorLedgerEntry = z.infer<typeof ConductorLedgerEntry>;

export const ConductorLedger = lazySchema(() => z.array(ConductorLedgerEntry));
