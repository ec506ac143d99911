import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber, newChatAgent } from '../support/factories.ts';
import { call, type ApiClient } from '../support/http.ts';
import { eventually, webhookReceiver } from '../support/webhook-receiver.ts';

// New workspaces start with no free credit here, so the credit block is reachable at once.
const app = await startTestApp({ FREE_CREDIT_USD: '0', BATCH_TICK_MS: '500' });
const { startBackgroundWork } = await import('../../local/background.ts');
const { recordCallCharge } = await import('../../shared/billing/index.ts');
const { setBillingClockOffset } = await import('../../shared/billing/clock.ts');
const { runHourlyBilling } = await import('../../shared/billing/hourly-job.ts');
// The queues (call steps, webhooks) and the batch passes run; the hourly billing schedule does not: tests run it themselves.
const background = startBackgroundWork((await import('../../shared/jobs.ts')).JOBS.filter((job) => job.name !== 'billing-hourly'));
afterAll(() => background.stop());
afterEach(() => setBillingClockOffset(0));

type Ws = Awaited<ReturnType<typeof app.newWorkspace>>;

const DAY_MS = 24 * 60 * 60 * 1000;
const callee = () => `+1415555${String(1000 + Math.floor(Math.random() * 8000))}`;

async function credit(ws: { api: ApiClient }, amount: number) {
  const added = await ws.api.post('/billing/add-credits', { body: { amount_usd: amount } });
  expect(added.status).toBe(200);
  return added.body;
}

async function billing(ws: { api: ApiClient }, limit = 50) {
  const res = await ws.api.get(`/billing?limit=${limit}`);
  expect(res.status).toBe(200);
  return res.body;
}

/** A workspace with an agent and an imported number that dials with it. */
async function dialSetup(ws: Ws) {
  const { agent, number } = await newAgentWithNumber(ws.api);
  return { agent, number };
}

async function sandboxCall(ws: Ws, number: string, ms: number) {
  const created = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: callee(), metadata: { sandbox_call_ms: ms } } });
  expect(created.status).toBe(201);
  return created.body.call_id as string;
}

const endedCall = (ws: Ws, callId: string) =>
  eventually(
    async () => (await ws.api.get(`/v2/get-call/${callId}`)).body,
    (call) => call.call_status === 'ended',
    30_000,
  );

const chargeOf = async (ws: Ws, callId: string) =>
  eventually(
    async () => (await billing(ws)).entries.filter((entry: any) => entry.reference === callId),
    (entries) => entries.length > 0,
  );

describe('the ledger', () => {
  it('starts a workspace with FREE_CREDIT_USD (0 here) and records credits added', async () => {
    const ws = await app.newWorkspace();
    const fresh = await billing(ws);
    expect(fresh).toMatchObject({ workspace_id: ws.workspace_id, currency: 'usd', balance_usd: 0, month_charges_usd: 0, payment_provider: 'mock', open_invoice_ids: [] });
    expect(fresh.spend).toEqual({ allowed: false, error_code: 'credit_exhausted', message: 'Credit balance is $0.00; add credits to continue' });
    // The account status says the same.
    expect((await ws.api.get('/account-status')).body).toMatchObject({
      can_work: false,
      reasons: ['Credit balance is $0.00; add credits to continue'],
      spend: { state: 'blocked', codes: ['credit_exhausted'] },
    });
    expect(fresh.entries).toEqual([]);

    const added = await ws.api.post('/billing/add-credits', { body: { amount_usd: 12.5, idempotency_key: 'promo-1', description: 'Welcome' } });
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({ duplicate: false, balance_usd: 12.5, entry: { kind: 'credit_grant', amount_usd: 12.5, description: 'Welcome', lines: {} } });
    // The same idempotency key is the same grant.
    const again = await ws.api.post('/billing/add-credits', { body: { amount_usd: 12.5, idempotency_key: 'promo-1' } });
    expect(again.body).toMatchObject({ duplicate: true, balance_usd: 12.5, entry: { entry_id: added.body.entry.entry_id } });
    expect((await billing(ws)).entries).toHaveLength(1);
  });

  it('refuses bad amounts with a 400 naming the field', async () => {
    const ws = await app.newWorkspace();
    for (const [body, message] of [
      [{ amount_usd: 0 }, 'amount_usd: Must be at least 0.01'],
      [{ amount_usd: 1.234 }, 'amount_usd: Must have at most 2 decimal places'],
      [{ amount_usd: 'ten' }, 'amount_usd: Expected number, received string'],
    ] as const) {
      const res = await ws.api.post('/billing/add-credits', { body });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ status: 400, message });
    }
  });

  it('charges a sandbox call exactly its call_cost, by product line, once', async () => {
    const ws = await app.newWorkspace();
    await credit(ws, 3);
    const { number } = await dialSetup(ws);
    const callId = await sandboxCall(ws, number, 1500);
    const call = await endedCall(ws, callId);
    const [charge] = await chargeOf(ws, callId);
    const cents = call.call_cost.combined_cost as number;
    expect(charge).toMatchObject({ kind: 'call_charge', description: `Call ${callId}`, reference: callId });
    expect(charge.amount_usd).toBe(-Math.round(cents * 10_000) / 1_000_000);
    expect(Object.keys(charge.lines).sort()).toEqual(['llm', 'telephony', 'voice_engine']);
    for (const line of call.call_cost.product_costs) expect(charge.lines[line.product]).toBe(Math.round(line.cost * 10_000) / 1_000_000);
    const after = await billing(ws);
    expect(after.balance_usd).toBe((3_000_000 - Math.round(cents * 10_000)) / 1_000_000);
    expect(after.month_charges_usd).toBe(-charge.amount_usd);
    // The analysis step asks for the charge again: still one entry.
    await eventually(async () => (await ws.api.get(`/v2/get-call/${callId}`)).body, (c) => c.call_analysis !== undefined);
    expect((await billing(ws)).entries.filter((entry: any) => entry.kind === 'call_charge')).toHaveLength(1);

    const usage = await ws.api.get('/billing/usage');
    expect(usage.status).toBe(200);
    expect(usage.body.total_usd).toBe(-charge.amount_usd);
    expect(usage.body.days).toHaveLength(1);
    expect(usage.body.totals).toEqual(charge.lines);
  });

  it('writes a call\'s charge once under concurrent duplicate ends, and the balance once', async () => {
    const ws = await app.newWorkspace();
    await credit(ws, 1);
    const { number } = await dialSetup(ws);
    const callId = await sandboxCall(ws, number, 60_000);
    await eventually(async () => (await ws.api.get(`/v2/get-call/${callId}`)).body, (call) => call.call_status === 'ongoing');
    const stops = await Promise.all(Array.from({ length: 6 }, () => ws.api.post(`/v2/stop-call/${callId}`)));
    // Every stop either ended the call or found it ended (400); none failed.
    expect(stops.filter((stop) => stop.status === 200).length).toBeGreaterThanOrEqual(1);
    expect(stops.map((stop) => stop.status).every((status) => status === 200 || status === 400)).toBe(true);
    const call = await endedCall(ws, callId);
    // The end processed again many times at once (a redelivered step, a retried report): one entry.
    const results = await Promise.all(
      Array.from({ length: 12 }, () => recordCallCharge({ workspaceId: ws.workspace_id, callId, callCost: call.call_cost })),
    );
    expect(results.filter((result) => result?.created)).toHaveLength(0);
    const charges = (await billing(ws)).entries.filter((entry: any) => entry.reference === callId);
    expect(charges).toHaveLength(1);
    expect((await billing(ws)).balance_usd).toBe((1_000_000 - Math.round(call.call_cost.combined_cost * 10_000)) / 1_000_000);
  });

  it('keeps the balance exact under many concurrent charges of different calls', async () => {
    const ws = await app.newWorkspace();
    await credit(ws, 5);
    const cost = { product_costs: [{ product: 'voice_engine', cost: 1.2345 }, { product: 'llm', cost: 0.1 }] };
    const results = await Promise.all(
      Array.from({ length: 25 }, (_, i) => recordCallCharge({ workspaceId: ws.workspace_id, callId: `call_${String(i).padStart(24, '0')}`, callCost: cost })),
    );
    expect(results.filter((result) => result?.created)).toHaveLength(25);
    const after = await billing(ws);
    expect(after.balance_usd).toBe((5_000_000 - 25 * 13_345) / 1_000_000);
    expect(after.month_charges_usd).toBe((25 * 13_345) / 1_000_000);
  });
});

describe('the spend check (402)', () => {
  // register-phone-call needs SIP routing (LiveKit): test/billing/stripe.test.ts covers its 402.
  it('refuses every spend route with credit_exhausted at a zero balance, and no other route', async () => {
    const ws = await app.newWorkspace();
    const { agent, number } = await dialSetup(ws);
    const { chatAgent } = await newChatAgent(ws.api);
    const refused = [
      ['/v2/create-phone-call', { from_number: number, to_number: callee() }],
      ['/create-phone-call', { from_number: number, to_number: callee() }],
      ['/v3/create-web-call', { agent_id: agent.agent_id }],
      ['/v2/create-web-call', { agent_id: agent.agent_id }],
      ['/create-batch-call', { from_number: number, tasks: [{ to_number: callee() }] }],
      ['/create-chat', { agent_id: chatAgent.agent_id }],
    ] as const;
    for (const [path, body] of refused) {
      const res = await ws.api.post(path, { body });
      expect(res.status, path).toBe(402);
      expect(res.body, path).toEqual({ status: 402, message: 'Credit balance is $0.00; add credits to continue', error_code: 'credit_exhausted' });
    }
    // Nothing was written by a refused spend.
    expect((await ws.api.post('/v3/list-calls', { body: {} })).body.items ?? (await ws.api.post('/v3/list-calls', { body: {} })).body).toHaveLength(0);
    // Routes that do not spend are not checked.
    expect((await ws.api.get('/list-batch-calls')).status).toBe(200);
    expect((await ws.api.get('/get-concurrency')).status).toBe(200);
    expect((await ws.api.post('/create-retell-llm', { body: {} })).status).toBe(201);
    expect((await ws.api.post('/billing/check', { body: { action: 'chat' } })).body).toEqual({
      action: 'chat',
      allowed: false,
      error_code: 'credit_exhausted',
      message: 'Credit balance is $0.00; add credits to continue',
    });

    await credit(ws, 0.05);
    expect((await ws.api.post('/billing/check', { body: {} })).body).toEqual({ action: 'phone_call', allowed: true, error_code: null, message: null });
    const web = await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } });
    expect(web.status).toBe(201);
    const chat = await ws.api.post('/create-chat', { body: { agent_id: chatAgent.agent_id } });
    expect(chat.status).toBe(201);

    // Spent to zero: a chat completion is refused too.
    await recordCallCharge({ workspaceId: ws.workspace_id, callId: 'call_000000000000000000000spent', callCost: { product_costs: [{ product: 'llm', cost: 5 }] } });
    const completion = await ws.api.post('/create-chat-completion', { body: { chat_id: chat.body.chat_id, content: 'Hello' } });
    expect(completion.status).toBe(402);
    expect(completion.body.error_code).toBe('credit_exhausted');
  });

  it('refuses with budget_reached once the month\'s charges reach the budget, and sends each budget event once', async () => {
    const ws = await app.newWorkspace();
    const hooks = await webhookReceiver();
    expect((await ws.api.patch('/workspace', { body: { webhook_url: hooks.url } })).status).toBe(200);
    await credit(ws, 10);
    const { agent } = await dialSetup(ws);
    const set = await ws.api.patch('/billing/settings', { body: { monthly_budget_usd: 1 } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ monthly_budget_usd: 1, auto_recharge: null, conductor_pay_as_you_go: false, conductor_monthly_limit: null });
    const charge = (callId: string, cents: number) =>
      recordCallCharge({ workspaceId: ws.workspace_id, callId, callCost: { product_costs: [{ product: 'voice_engine', cost: cents }] } });

    await charge('call_000000000000000000000001', 50);
    expect(hooks.hits).toHaveLength(0);
    await charge('call_000000000000000000000002', 35); // 85%: the warning
    await eventually(async () => hooks.hits.length, (n) => n === 1);
    expect(hooks.hits[0]!.json).toMatchObject({ event: 'budget_warning', budget: { workspace_id: ws.workspace_id, monthly_budget_usd: 1, spent_usd: 0.85 } });
    await charge('call_000000000000000000000003', 5); // still under: no second warning
    await Promise.all([charge('call_000000000000000000000004', 10), charge('call_000000000000000000000005', 10)]); // reached, concurrently
    await eventually(async () => hooks.hits.length, (n) => n === 2);
    expect(hooks.hits[1]!.json).toMatchObject({ event: 'budget_reached', budget: { monthly_budget_usd: 1 } });

    const web = await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } });
    expect(web.status).toBe(402);
    expect(web.body).toEqual({ status: 402, error_code: 'budget_reached', message: 'Monthly budget of $1.00 is spent ($1.10 this month)' });
    const overview = await billing(ws);
    expect(overview).toMatchObject({ balance_usd: 8.9, month_charges_usd: 1.1, budget_remaining_usd: 0, settings: { monthly_budget_usd: 1 } });

    // A new month: the budget is fresh.
    setBillingClockOffset(32 * DAY_MS);
    expect((await ws.api.post('/billing/check', { body: {} })).body.allowed).toBe(true);
    setBillingClockOffset(0);
    // Removing the budget lifts the block.
    expect((await ws.api.patch('/billing/settings', { body: { monthly_budget_usd: null } })).body.monthly_budget_usd).toBeNull();
    expect((await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } })).status).toBe(201);
    expect(hooks.hits).toHaveLength(2);
  });

  it('issues an invoice whose lines sum to the ledger, blocks spending when it is 14 days unpaid, and a credit pays it', async () => {
    const ws = await app.newWorkspace();
    await credit(ws, 0.5);
    const { agent } = await dialSetup(ws);
    await recordCallCharge({
      workspaceId: ws.workspace_id,
      callId: 'call_00000000000000000000inv1',
      callCost: { product_costs: [{ product: 'voice_engine', cost: 40.1234 }, { product: 'llm', cost: 3.5 }, { product: 'telephony', cost: 8.6 }] },
    });
    await recordCallCharge({
      workspaceId: ws.workspace_id,
      callId: 'call_00000000000000000000inv2',
      callCost: { product_costs: [{ product: 'voice_engine', cost: 10 }, { product: 'batch_dial', cost: 1 }, { product: 'concurrency_burst', cost: 2.5 }] },
    });
    const month = new Date().toISOString().slice(0, 7);
    const early = await ws.api.post('/billing/invoices/usage', { body: { month } });
    expect(early.status).toBe(400);
    expect(early.body.message).toBe(`month: ${month} has not ended; its invoice is issued once it has`);

    // The next month, 1 day in.
    const nextMonthStart = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1);
    setBillingClockOffset(nextMonthStart + DAY_MS - Date.now());
    const issued = await ws.api.post('/billing/invoices/usage', { body: {} });
    expect(issued.status).toBe(200);
    const invoice = issued.body.invoice;
    expect(issued.body.created).toBe(true);
    const ledger = (await billing(ws)).entries.filter((entry: any) => entry.amount_usd < 0);
    const ledgerTotal = -ledger.reduce((sum: number, entry: any) => sum + Math.round(entry.amount_usd * 1e6), 0) / 1e6;
    expect(invoice).toMatchObject({ period: month, status: 'open', total_usd: ledgerTotal, credits_usd: 0.5, currency: 'usd' });
    expect(invoice.lines).toEqual([
      { product: 'batch_dial', description: 'Batch dials', amount_usd: 0.01 },
      { product: 'concurrency_burst', description: 'Burst concurrency', amount_usd: 0.025 },
      { product: 'llm', description: 'Language model', amount_usd: 0.035 },
      { product: 'telephony', description: 'Telephony', amount_usd: 0.086 },
      { product: 'voice_engine', description: 'Voice engine', amount_usd: 0.501234 },
    ]);
    expect(Math.round(invoice.lines.reduce((sum: number, line: any) => sum + line.amount_usd * 1e6, 0)) / 1e6).toBe(ledgerTotal);
    expect(invoice.amount_due_usd).toBe(Math.round((ledgerTotal - 0.5) * 1e6) / 1e6);
    // Issuing again answers the same invoice.
    const again = await ws.api.post('/billing/invoices/usage', { body: { month } });
    expect(again.body).toEqual({ invoice, created: false });
    expect((await ws.api.get('/billing/invoices')).body).toEqual([invoice]);

    const html = await ws.api.get(`/billing/invoices/${invoice.invoice_id}/html`);
    expect(html.status).toBe(200);
    expect(html.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(html.text).toContain(`Invoice <strong>${invoice.invoice_id}</strong>`);
    expect(html.text).toContain('<td>Voice engine</td><td class="n">$0.50</td>');

    // Another workspace sees none of it.
    const other = await app.newWorkspace();
    expect((await other.api.get(`/billing/invoices/${invoice.invoice_id}/html`)).status).toBe(404);
    expect((await other.api.get('/billing/invoices')).body).toEqual([]);

    // 15 days after issue: overdue, and spending is blocked (credit would not be enough either, overdue comes first).
    setBillingClockOffset(nextMonthStart + 16 * DAY_MS - Date.now());
    expect((await ws.api.get('/billing/invoices')).body[0].status).toBe('overdue');
    const blocked = await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } });
    expect(blocked.status).toBe(402);
    expect(blocked.body).toEqual({ status: 402, error_code: 'invoice_overdue', message: `Invoice ${invoice.invoice_id} is unpaid for 14 days or more; pay it to continue` });

    // Credit that brings the balance back to zero or above pays it.
    await credit(ws, 1);
    const paid = (await ws.api.get('/billing/invoices')).body[0];
    expect(paid).toMatchObject({ status: 'paid', amount_due_usd: 0 });
    expect((await billing(ws)).open_invoice_ids).toEqual([]);
    expect((await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } })).status).toBe(201);
  });

  it('gives a batch task a not_connected call with no_valid_payment when the credit runs out mid-batch', async () => {
    const ws = await app.newWorkspace();
    await credit(ws, 0.05);
    const { number } = await dialSetup(ws);
    const batch = await ws.api.post('/create-batch-call', { body: { from_number: number, draft: true, tasks: [{ to_number: callee() }, { to_number: callee() }] } });
    expect(batch.status).toBe(201);
    // Spent before the pass dials.
    await recordCallCharge({ workspaceId: ws.workspace_id, callId: 'call_0000000000000000000batch1', callCost: { product_costs: [{ product: 'voice_engine', cost: 5 }] } });
    expect((await ws.api.post(`/start-batch-call/${batch.body.batch_call_id}`)).status).toBe(200);
    const done = await eventually(
      async () => (await ws.api.get(`/get-batch-call/${batch.body.batch_call_id}`)).body,
      (view) => view.tasks.every((task: any) => task.status === 'failed'),
      30_000,
    );
    for (const task of done.tasks) {
      expect(task.error).toBe('no_valid_payment: Credit balance is $0.00; add credits to continue');
      const call = (await ws.api.get(`/v2/get-call/${task.call_id}`)).body;
      expect(call).toMatchObject({ call_status: 'not_connected', disconnection_reason: 'no_valid_payment' });
    }
    // A call that never dialled costs nothing: no charge beyond the one that spent the credit.
    expect((await billing(ws)).entries.filter((entry: any) => entry.kind === 'call_charge')).toHaveLength(1);
  });

  it('refuses outbound dials with verification_needed while verification is required and not approved', async () => {
    const { config } = await import('../../shared/platform/config.ts');
    const ws = await app.newWorkspace();
    await credit(ws, 1);
    const { agent, number } = await dialSetup(ws);
    config.REQUIRE_VERIFICATION_FOR_OUTBOUND = true;
    try {
      const dial = await ws.api.post('/v2/create-phone-call', { body: { from_number: number, to_number: callee() } });
      expect(dial.status).toBe(402);
      expect(dial.body).toEqual({ status: 402, error_code: 'verification_needed', message: 'Business verification is not_submitted; approved verification is required before outbound calls' });
      const batch = await ws.api.post('/create-batch-call', { body: { from_number: number, tasks: [{ to_number: callee() }] } });
      expect(batch.body.error_code).toBe('verification_needed');
      // Web calls are not outbound dials.
      expect((await ws.api.post('/v3/create-web-call', { body: { agent_id: agent.agent_id } })).status).toBe(201);
      expect((await ws.api.post('/billing/check', { body: { action: 'batch_call' } })).body.error_code).toBe('verification_needed');
    } finally {
      config.REQUIRE_VERIFICATION_FOR_OUTBOUND = false;
    }
  });
});

describe('concurrency billing', () => {
  it('charges purchased slots once a month under concurrent runs, only new slots mid-month, and again the next month', async () => {
    const ws = await app.newWorkspace();
    await credit(ws, 500);
    const initial = await ws.api.get('/concurrency-billing');
    expect(initial.status).toBe(200);
    expect(initial.body).toMatchObject({ concurrency_limit: 20, included_concurrency: 20, purchased_concurrency: 0, slot_price_usd: 12, burst_price_per_minute_usd: 0.15, charges: [] });
    expect((await ws.api.post('/concurrency-billing/charge')).body.charged).toBeNull();

    expect((await ws.api.patch('/workspace', { body: { concurrency_limit: 25 } })).status).toBe(200);
    const runs = await Promise.all(Array.from({ length: 6 }, () => ws.api.post('/concurrency-billing/charge')));
    const charged = runs.map((run) => run.body.charged).filter(Boolean);
    expect(charged).toHaveLength(1);
    expect(charged[0]).toMatchObject({ slots: 5, amount_usd: 60 });
    expect((await billing(ws)).balance_usd).toBe(440);

    // A mid-month raise charges only the new slots; lowering and raising again charges nothing twice.
    await ws.api.patch('/workspace', { body: { concurrency_limit: 27 } });
    expect((await ws.api.post('/concurrency-billing/charge')).body.charged).toMatchObject({ slots: 2, amount_usd: 24 });
    await ws.api.patch('/workspace', { body: { concurrency_limit: 22 } });
    await ws.api.post('/concurrency-billing/charge');
    await ws.api.patch('/workspace', { body: { concurrency_limit: 27 } });
    expect((await ws.api.post('/concurrency-billing/charge')).body.charged).toBeNull();
    const view = (await ws.api.get('/concurrency-billing')).body;
    expect(view).toMatchObject({ purchased_concurrency: 7, billed_slots_this_month: 7, unbilled_slots: 0 });
    expect(view.charges.map((charge: any) => charge.amount_usd)).toEqual([24, 60]);
    expect((await billing(ws)).balance_usd).toBe(416);

    // The next month the hourly job charges every purchased slot again, once.
    setBillingClockOffset(32 * DAY_MS);
    await Promise.all([runHourlyBilling(), runHourlyBilling()]);
    const next = (await ws.api.get('/concurrency-billing')).body;
    expect(next.charges.map((charge: any) => charge.amount_usd)).toEqual([84, 24, 60]);
    expect(next.billed_slots_this_month).toBe(7);
    expect((await billing(ws)).balance_usd).toBe(332);
    // ...and issued last month's invoice, whose lines sum to last month's charges.
    const [invoice] = (await ws.api.get('/billing/invoices')).body;
    expect(invoice).toMatchObject({ status: 'paid', total_usd: 84, lines: [{ product: 'purchased_concurrency', amount_usd: 84 }] });
  });
});

describe('payments with the built-in mock (no STRIPE_SECRET_KEY)', () => {
  it('completes a checkout on its page through its own signed event, saves a card, and auto-recharges below the threshold', async () => {
    const ws = await app.newWorkspace();
    const checkout = await ws.api.post('/billing/checkout', { body: { amount_usd: 20 } });
    expect(checkout.status).toBe(200);
    expect(checkout.body).toMatchObject({ provider: 'mock', amount_usd: 20 });
    expect(checkout.body.checkout_session_id).toMatch(/^cs_mock_[0-9a-f]{24}$/);
    expect(checkout.body.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/billing\/mock-checkout\/[\w-]{43}$/);
    expect((await billing(ws)).balance_usd).toBe(0);
    // The page's Pay button (test/billing/mock-checkout.test.ts covers the page itself).
    const pay = (url: string) => call(app.url, 'POST', new URL(url).pathname, { rawBody: 'action=pay', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    const paid = await pay(checkout.body.url);
    expect(paid.status).toBe(303);
    expect(paid.headers.location).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/billing\\?checkout=success&session_id=${checkout.body.checkout_session_id}&mock=true$`));
    const afterCheckout = await billing(ws);
    expect(afterCheckout.balance_usd).toBe(20);
    expect(afterCheckout.entries[0]).toMatchObject({ kind: 'credit_purchase', amount_usd: 20, reference: checkout.body.checkout_session_id });

    const session = await ws.api.post('/billing/checkout-session', { body: { amount_usd: 5 } });
    expect(Object.keys(session.body)).toEqual(['url']);
    expect((await billing(ws)).balance_usd).toBe(20);
    expect((await pay(session.body.url)).status).toBe(303);
    expect((await billing(ws)).balance_usd).toBe(25);

    const intent = await ws.api.post('/billing/payment-methods/setup-intent');
    expect(intent.status).toBe(200);
    const methods = (await ws.api.get('/billing/payment-methods')).body;
    expect(methods).toEqual([{ id: expect.stringMatching(/^pm_mock_/), type: 'card', brand: 'visa', last4: '4242', exp_month: 12, exp_year: expect.any(Number), is_default: true }]);
    expect((await billing(ws)).default_payment_method).toBe(methods[0].id);

    // Another workspace cannot touch it.
    const other = await app.newWorkspace();
    const stolen = await other.api.post('/billing/payment-methods/default', { body: { payment_method_id: methods[0].id } });
    expect(stolen.status).toBe(404);
    expect(stolen.body.message).toBe(`Payment method ${methods[0].id} not found`);
    expect((await other.api.delete(`/billing/payment-methods/${methods[0].id}`)).status).toBe(404);

    expect((await ws.api.patch('/billing/settings', { body: { auto_recharge: { threshold_usd: 10, amount_usd: 15 } } })).status).toBe(200);
    await recordCallCharge({ workspaceId: ws.workspace_id, callId: 'call_0000000000000000000auto1', callCost: { product_costs: [{ product: 'voice_engine', cost: 1600 }] } });
    const recharged = await billing(ws);
    expect(recharged.entries.map((entry: any) => [entry.kind, entry.amount_usd]).slice(0, 2)).toEqual([
      ['auto_recharge', 15],
      ['call_charge', -16],
    ]);
    expect(recharged.balance_usd).toBe(24);

    const portal = await ws.api.post('/billing/portal', { body: { return_url: 'https://app.example.com/billing' } });
    expect(portal.body).toEqual({ url: 'https://app.example.com/billing?portal=mock' });
    expect((await ws.api.delete(`/billing/payment-methods/${methods[0].id}`)).status).toBe(204);
    expect((await ws.api.get('/billing/payment-methods')).body).toEqual([]);
    expect((await billing(ws)).default_payment_method).toBeNull();
  });

  it('answers a forged mock-style event with 400 and changes nothing', async () => {
    const ws = await app.newWorkspace();
    const payload = JSON.stringify({ id: 'evt_forged', type: 'checkout.session.completed', data: { object: { id: 'cs_x', metadata: { workspace_id: ws.workspace_id, purpose: 'credits' }, payment_status: 'paid', amount_total: 100000 } } });
    const res = await app.api.post('/billing/stripe/webhook', { rawBody: payload, headers: { 'stripe-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ status: 400, message: 'Stripe-Signature does not match the body' });
    expect((await billing(ws)).balance_usd).toBe(0);
  });
});

describe('access', () => {
  it('needs the admin scope, and platform usage an operator key', async () => {
    const ws = await app.newWorkspace();
    const key = await ws.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } });
    const scoped = ws.api.withKey(key.body.api_key);
    const res = await scoped.get('/billing');
    expect(res.status).toBe(403);
    expect(res.body.message).toBe('This API key lacks the "admin" scope');
    const platform = await ws.api.get('/billing/platform-usage');
    expect(platform.status).toBe(403);
    expect(platform.body.message).toBe('Requires an operator key');

    // The operator's workspace sees every workspace's charges.
    const { config } = await import('../../shared/platform/config.ts');
    const operator = await app.newWorkspace();
    const customer = await app.newWorkspace();
    await credit(customer, 1);
    await recordCallCharge({ workspaceId: customer.workspace_id, callId: 'call_00000000000000000platform', callCost: { product_costs: [{ product: 'telephony', cost: 12.5 }] } });
    config.OPERATOR_WORKSPACE_IDS = [operator.workspace_id];
    try {
      const usage = await operator.api.get('/billing/platform-usage');
      expect(usage.status).toBe(200);
      expect(usage.body.workspaces).toContainEqual({ workspace_id: customer.workspace_id, products: { telephony: 0.125 }, total_usd: 0.125 });
      expect(usage.body.total_usd).toBeGreaterThanOrEqual(0.125);
      const bad = await operator.api.get('/billing/platform-usage?start_date=2026-02-30');
      expect(bad.status).toBe(400);
      expect(bad.body.message).toBe('start_date: Must be a real date');
    } finally {
      config.OPERATOR_WORKSPACE_IDS = [];
    }
  });
});
