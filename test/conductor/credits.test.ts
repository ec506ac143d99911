import { randomBytes } from 'node:crypto';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { call, type ApiClient } from '../support/http.ts';
import { refusal } from '../support/refusal.ts';

/*
 * The assistant's credits (docs/assistant.md, "Credits"): charges driven through the public
 * module (as the assistant's messages call it) and read through the routes; both 402 codes
 * through their settings; the last credit under concurrent charges; pay-as-you-go in the
 * billing ledger once per message; a new UTC day (billing's clock, moved); who may change the
 * settings and read the routes; another workspace sees nothing.
 */
const app = await startTestApp();
const { config } = await import('../../shared/platform/config.ts');
const { assertAssistantCanSpend, chargeAssistantMessage } = await import('../../shared/conductor/credits/index.ts');
const { billingNow, setBillingClockOffset } = await import('../../shared/billing/clock.ts');
const { createSessionFor } = await import('../../shared/members/sessions.ts');

config.CONDUCTOR_FREE_CREDITS_PER_DAY = 5;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Midday (UTC) of a fixed day: no test straddles a day's end unless it moves the clock itself. */
const T0 = Date.UTC(2031, 2, 14, 12);
const at = (ms: number) => setBillingClockOffset(ms - Date.now());
beforeEach(() => at(T0));
afterAll(() => setBillingClockOffset(0));

const EXHAUSTED = "Today's 5 free assistant credits are used (they renew at 00:00 UTC); an admin can turn on pay-as-you-go with PATCH /billing/settings (conductor_pay_as_you_go) to continue";
const limitMessage = (limit: number, used: number, month = '2031-03') =>
  `The assistant's monthly limit of ${limit} credits is reached (${used} used in ${month}); an admin can raise or remove it with PATCH /billing/settings (conductor_monthly_limit)`;

const messageId = () => `message_${randomBytes(12).toString('hex')}`;
const SESSION = 'conductor_session_0123456789abcdef01234567';

/** Charges a message of `tokens` (input, output) now, on billing's clock. */
const charge = (workspaceId: string, tokens: [number, number], id = messageId(), nowMs = billingNow()) =>
  chargeAssistantMessage({ workspaceId, sessionId: SESSION, messageId: id, inputTokens: tokens[0], outputTokens: tokens[1], nowMs });

const credits = async (api: ApiClient) => {
  const res = await api.get('/conductor/credits');
  expect(res.status).toBe(200);
  return res.body;
};
const ledger = async (api: ApiClient, query = '') => {
  const res = await api.get(`/conductor/ledger${query}`);
  expect(res.status).toBe(200);
  return res.body as any[];
};
const conductorCharges = async (api: ApiClient) => (await api.get('/billing?limit=100')).body.entries.filter((entry: any) => entry.kind === 'conductor_charge');

const FRESH = {
  date: '2031-03-14',
  free_credits: 5,
  used_credits: 0,
  remaining_free_credits: 5,
  paid_credits: 0,
  pay_as_you_go: false,
  monthly_limit: null,
  month: '2031-03',
  month_used_credits: 0,
  month_remaining_credits: null,
  tokens_per_credit: 1000,
  credit_price_usd: 0.01,
};

describe("the assistant's credits", () => {
  it('go down with each message by its tokens, and the ledger grows newest first, a page at a time; a retried charge counts once', async () => {
    const ws = await app.newWorkspace();
    expect(await credits(ws.api)).toEqual(FRESH);
    expect(await ledger(ws.api)).toEqual([]);

    const first = messageId();
    const second = messageId();
    const third = messageId();
    expect(await charge(ws.workspace_id, [300, 200], first)).toEqual({ credits: 1 });
    expect(await charge(ws.workspace_id, [1500, 501], second)).toEqual({ credits: 3 });
    // No tokens still cost a credit.
    expect(await charge(ws.workspace_id, [0, 0], third)).toEqual({ credits: 1 });
    expect(await credits(ws.api)).toEqual({ ...FRESH, used_credits: 5, remaining_free_credits: 0, month_used_credits: 5 });

    const entries = await ledger(ws.api);
    expect(entries.map((entry) => entry.message_id)).toEqual([third, second, first]);
    expect(entries[1]).toEqual({
      entry_id: expect.stringMatching(/^conductor_charge_[0-9a-f]{24}$/),
      session_id: SESSION,
      message_id: second,
      input_tokens: 1500,
      output_tokens: 501,
      credits: 3,
      free_credits: 3,
      paid_credits: 0,
      paid: false,
      cost_usd: 0,
      created_timestamp: expect.any(Number),
    });
    expect(Math.abs(entries[1].created_timestamp - T0)).toBeLessThan(60_000);
    const page = await ledger(ws.api, '?limit=2');
    expect(page.map((entry) => entry.message_id)).toEqual([third, second]);
    expect((await ledger(ws.api, `?limit=2&pagination_key=${page[1].entry_id}`)).map((entry) => entry.message_id)).toEqual([first]);
    expect((await ws.api.get('/conductor/ledger?pagination_key=nope')).body).toEqual({ status: 400, message: 'Invalid pagination_key' });
    expect((await ws.api.get('/conductor/ledger?limit=0')).status).toBe(400);

    // A retried charge of the same message (even with other token counts) answers the first one's credits and counts nothing.
    expect(await charge(ws.workspace_id, [300, 200], second)).toEqual({ credits: 3 });
    expect(await charge(ws.workspace_id, [9000, 9000], first)).toEqual({ credits: 1 });
    expect((await credits(ws.api)).used_credits).toBe(5);
    expect(await ledger(ws.api)).toHaveLength(3);
    // All free: nothing in the billing ledger.
    expect(await conductorCharges(ws.api)).toEqual([]);
  });

  it('refuses with 402 conductor_credits_exhausted once the free credits are used with pay-as-you-go off; the message crossing them is free in full', async () => {
    const ws = await app.newWorkspace();
    expect(await charge(ws.workspace_id, [3500, 0])).toEqual({ credits: 4 });
    await expect(assertAssistantCanSpend(ws.workspace_id, billingNow())).resolves.toBeUndefined();
    // One free credit left: a three-credit message goes through, all of it free.
    expect(await charge(ws.workspace_id, [2000, 500])).toEqual({ credits: 3 });
    expect(await credits(ws.api)).toMatchObject({ used_credits: 7, remaining_free_credits: 0, paid_credits: 0 });
    expect((await ledger(ws.api))[0]).toMatchObject({ credits: 3, free_credits: 3, paid_credits: 0, paid: false });

    for (const refused of [await refusal(assertAssistantCanSpend(ws.workspace_id, billingNow())), await refusal(charge(ws.workspace_id, [10, 10]))]) {
      expect({ status: refused.status, errorCode: refused.errorCode, message: refused.message }).toEqual({ status: 402, errorCode: 'conductor_credits_exhausted', message: EXHAUSTED });
    }
    expect(await ledger(ws.api)).toHaveLength(2);
    expect(await conductorCharges(ws.api)).toEqual([]);
  });

  it('with pay-as-you-go on, charges the credits beyond the free ones in the billing ledger once per message, and asks the billing spend check', async () => {
    const ws = await app.newWorkspace();
    expect(await charge(ws.workspace_id, [4000, 0])).toEqual({ credits: 4 });
    const set = await ws.api.patch('/billing/settings', { body: { conductor_pay_as_you_go: true } });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ monthly_budget_usd: null, auto_recharge: null, conductor_pay_as_you_go: true, conductor_monthly_limit: null });

    // One free credit left: a three-credit message is one free and two paid.
    const crossing = messageId();
    expect(await charge(ws.workspace_id, [2500, 0], crossing)).toEqual({ credits: 3 });
    const beyond = messageId();
    expect(await charge(ws.workspace_id, [100, 100], beyond)).toEqual({ credits: 1 });
    // Retried charges: still one billing entry each.
    expect(await charge(ws.workspace_id, [2500, 0], crossing)).toEqual({ credits: 3 });
    expect(await charge(ws.workspace_id, [100, 100], beyond)).toEqual({ credits: 1 });

    expect(await credits(ws.api)).toEqual({ ...FRESH, pay_as_you_go: true, used_credits: 8, remaining_free_credits: 0, paid_credits: 3, month_used_credits: 8 });
    const entries = await ledger(ws.api);
    expect(entries.map(({ message_id, credits: c, free_credits, paid_credits, paid, cost_usd }) => ({ message_id, c, free_credits, paid_credits, paid, cost_usd }))).toEqual([
      { message_id: beyond, c: 1, free_credits: 0, paid_credits: 1, paid: true, cost_usd: 0.01 },
      { message_id: crossing, c: 3, free_credits: 1, paid_credits: 2, paid: true, cost_usd: 0.02 },
      { message_id: expect.any(String), c: 4, free_credits: 4, paid_credits: 0, paid: false, cost_usd: 0 },
    ]);
    const billed = await conductorCharges(ws.api);
    expect(billed).toEqual([
      {
        entry_id: expect.any(String),
        kind: 'conductor_charge',
        amount_usd: -0.01,
        lines: { conductor: 0.01 },
        description: `Assistant message ${beyond} in session ${SESSION} (1 credits)`,
        reference: beyond,
        created_timestamp: expect.any(Number),
      },
      {
        entry_id: expect.any(String),
        kind: 'conductor_charge',
        amount_usd: -0.02,
        lines: { conductor: 0.02 },
        description: `Assistant message ${crossing} in session ${SESSION} (2 credits)`,
        reference: crossing,
        created_timestamp: expect.any(Number),
      },
    ]);
    const overview = (await ws.api.get('/billing')).body;
    expect(overview).toMatchObject({ balance_usd: 9.97, month: '2031-03', month_charges_usd: 0.03 });

    // A paid message must also pass billing's spend check: the month's budget spent refuses it.
    await ws.api.patch('/billing/settings', { body: { monthly_budget_usd: 0.03 } });
    const refused = await refusal(assertAssistantCanSpend(ws.workspace_id, billingNow()));
    expect({ status: refused.status, errorCode: refused.errorCode, message: refused.message }).toEqual({
      status: 402,
      errorCode: 'budget_reached',
      message: 'Monthly budget of $0.03 is spent ($0.03 this month)',
    });
    expect((await ws.api.post('/billing/check', { body: { action: 'conductor' } })).body).toMatchObject({ action: 'conductor', allowed: false, error_code: 'budget_reached' });
  });

  it('refuses with 402 conductor_limit_reached once the month reaches its limit, whatever pay-as-you-go says, until an admin raises or removes it', async () => {
    const ws = await app.newWorkspace();
    expect((await ws.api.patch('/billing/settings', { body: { conductor_monthly_limit: 3, conductor_pay_as_you_go: true } })).status).toBe(200);
    expect(await credits(ws.api)).toMatchObject({ pay_as_you_go: true, monthly_limit: 3, month_used_credits: 0, month_remaining_credits: 3 });
    expect(await charge(ws.workspace_id, [1500, 0])).toEqual({ credits: 2 });
    // One credit under the limit: a two-credit message goes through and reaches it.
    expect(await charge(ws.workspace_id, [1200, 0])).toEqual({ credits: 2 });
    expect(await credits(ws.api)).toMatchObject({ used_credits: 4, remaining_free_credits: 1, month_used_credits: 4, month_remaining_credits: 0 });
    for (const refused of [await refusal(assertAssistantCanSpend(ws.workspace_id, billingNow())), await refusal(charge(ws.workspace_id, [1, 1]))]) {
      expect({ status: refused.status, errorCode: refused.errorCode, message: refused.message }).toEqual({ status: 402, errorCode: 'conductor_limit_reached', message: limitMessage(3, 4) });
    }
    // Off too: the limit comes first.
    await ws.api.patch('/billing/settings', { body: { conductor_pay_as_you_go: false } });
    expect((await refusal(charge(ws.workspace_id, [1, 1]))).errorCode).toBe('conductor_limit_reached');

    expect((await ws.api.patch('/billing/settings', { body: { conductor_monthly_limit: 10 } })).body.conductor_monthly_limit).toBe(10);
    expect(await charge(ws.workspace_id, [1, 1])).toEqual({ credits: 1 });
    expect((await refusal(charge(ws.workspace_id, [1, 1]))).errorCode).toBe('conductor_credits_exhausted');
    await ws.api.patch('/billing/settings', { body: { conductor_monthly_limit: 0 } });
    expect((await refusal(assertAssistantCanSpend(ws.workspace_id, billingNow()))).message).toBe(limitMessage(0, 5));
    expect((await ws.api.patch('/billing/settings', { body: { conductor_monthly_limit: null } })).body.conductor_monthly_limit).toBeNull();
    expect(await credits(ws.api)).toMatchObject({ monthly_limit: null, month_remaining_credits: null });
  });

  it('lets exactly as many concurrent messages through as credits are left, free or under the monthly limit', async () => {
    // Free credits, pay-as-you-go off: two left, eight one-credit messages at once.
    const free = await app.newWorkspace();
    await charge(free.workspace_id, [3000, 0]);
    const settled = await Promise.allSettled(Array.from({ length: 8 }, () => charge(free.workspace_id, [10, 10])));
    expect(settled.filter((result) => result.status === 'fulfilled')).toHaveLength(2);
    const refusals = settled.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(refusals).toHaveLength(6);
    for (const reason of refusals) expect({ status: reason.status, errorCode: reason.errorCode, message: reason.message }).toEqual({ status: 402, errorCode: 'conductor_credits_exhausted', message: EXHAUSTED });
    expect(await credits(free.api)).toMatchObject({ used_credits: 5, remaining_free_credits: 0, month_used_credits: 5 });
    expect(await ledger(free.api)).toHaveLength(3);

    // Pay-as-you-go on: all go through, exactly the two free ones free, the rest each charged once.
    const paying = await app.newWorkspace();
    await paying.api.patch('/billing/settings', { body: { conductor_pay_as_you_go: true } });
    await charge(paying.workspace_id, [3000, 0]);
    const ids = Array.from({ length: 6 }, () => messageId());
    expect(await Promise.all(ids.map((id) => charge(paying.workspace_id, [10, 10], id)))).toEqual(ids.map(() => ({ credits: 1 })));
    const entries = (await ledger(paying.api)).filter((entry) => ids.includes(entry.message_id));
    expect(entries.filter((entry) => entry.free_credits === 1)).toHaveLength(2);
    expect(entries.filter((entry) => entry.paid_credits === 1)).toHaveLength(4);
    const billed = await conductorCharges(paying.api);
    expect(billed.map((entry: any) => entry.reference).sort()).toEqual(entries.filter((entry) => entry.paid).map((entry) => entry.message_id).sort());
    expect(billed.every((entry: any) => entry.amount_usd === -0.01)).toBe(true);
    expect(await credits(paying.api)).toMatchObject({ used_credits: 9, paid_credits: 4 });

    // The monthly limit, pay-as-you-go on: three under it, eight at once.
    const limited = await app.newWorkspace();
    await limited.api.patch('/billing/settings', { body: { conductor_pay_as_you_go: true, conductor_monthly_limit: 4 } });
    await charge(limited.workspace_id, [10, 10]);
    const underLimit = await Promise.allSettled(Array.from({ length: 8 }, () => charge(limited.workspace_id, [10, 10])));
    expect(underLimit.filter((result) => result.status === 'fulfilled')).toHaveLength(3);
    const limitRefusals = underLimit.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(limitRefusals.map((reason) => [reason.status, reason.errorCode, reason.message])).toEqual(Array.from({ length: 5 }, () => [402, 'conductor_limit_reached', limitMessage(4, 4)]));
    expect(await credits(limited.api)).toMatchObject({ month_used_credits: 4, month_remaining_credits: 0 });
  });

  it('renews the free credits on a new UTC day, and the monthly count on a new month', async () => {
    const ws = await app.newWorkspace();
    await ws.api.patch('/billing/settings', { body: { conductor_monthly_limit: 100 } });
    await charge(ws.workspace_id, [5000, 0]);
    expect((await refusal(assertAssistantCanSpend(ws.workspace_id, billingNow()))).errorCode).toBe('conductor_credits_exhausted');

    // Just before midnight (UTC) it is still today; just after, a new day.
    at(Date.UTC(2031, 2, 14, 23, 59, 59));
    expect((await refusal(charge(ws.workspace_id, [1, 1]))).errorCode).toBe('conductor_credits_exhausted');
    at(T0 + DAY_MS);
    expect(await credits(ws.api)).toMatchObject({ date: '2031-03-15', used_credits: 0, remaining_free_credits: 5, month: '2031-03', month_used_credits: 5, month_remaining_credits: 95 });
    await expect(assertAssistantCanSpend(ws.workspace_id, billingNow())).resolves.toBeUndefined();
    expect(await charge(ws.workspace_id, [1500, 0])).toEqual({ credits: 2 });
    expect(await credits(ws.api)).toMatchObject({ date: '2031-03-15', used_credits: 2, remaining_free_credits: 3, month_used_credits: 7 });
    // A charge counts in the day of the time it is given: yesterday's credits stay used.
    expect((await refusal(charge(ws.workspace_id, [1, 1], messageId(), T0))).errorCode).toBe('conductor_credits_exhausted');
    expect((await credits(ws.api)).used_credits).toBe(2);
    at(T0);
    expect((await credits(ws.api)).used_credits).toBe(5);
    expect(await ledger(ws.api)).toHaveLength(2);

    at(Date.UTC(2031, 3, 1, 0, 0, 1));
    expect(await credits(ws.api)).toMatchObject({ date: '2031-04-01', used_credits: 0, month: '2031-04', month_used_credits: 0, month_remaining_credits: 100 });
  });

  it('lets only an admin change the settings, any member read the routes, and no key without admin', async () => {
    const ws = await app.newWorkspace();
    for (const [email, role] of [['admin@example.com', 'admin'], ['dev@example.com', 'developer'], ['member@example.com', 'member']]) {
      expect((await ws.api.post('/workspace/members', { body: { email, role } })).status).toBe(201);
    }
    const sessionOf = async (email: string) => ({ authorization: `Bearer ${(await createSessionFor(ws.workspace_id, email)).session_token}` });
    const admin = await sessionOf('admin@example.com');
    const developer = await sessionOf('dev@example.com');
    const member = await sessionOf('member@example.com');

    const byDeveloper = await call(app.url, 'PATCH', '/billing/settings', { headers: developer, body: { conductor_pay_as_you_go: true } });
    expect(byDeveloper.status).toBe(403);
    expect(byDeveloper.body).toEqual({ status: 403, message: 'Requires role: admin' });
    expect((await call(app.url, 'PATCH', '/billing/settings', { headers: member, body: { conductor_monthly_limit: 5 } })).body).toEqual({ status: 403, message: 'The member role is read-only' });
    const byAdmin = await call(app.url, 'PATCH', '/billing/settings', { headers: admin, body: { conductor_pay_as_you_go: true, conductor_monthly_limit: 50 } });
    expect(byAdmin.status).toBe(200);
    expect(byAdmin.body).toMatchObject({ conductor_pay_as_you_go: true, conductor_monthly_limit: 50 });
    // A field of the other settings stands beside them.
    expect((await ws.api.patch('/billing/settings', { body: { monthly_budget_usd: 20 } })).body).toEqual({ monthly_budget_usd: 20, auto_recharge: null, conductor_pay_as_you_go: true, conductor_monthly_limit: 50 });

    for (const body of [{ conductor_monthly_limit: -1 }, { conductor_monthly_limit: 2.5 }, { conductor_pay_as_you_go: 'yes' }]) {
      const bad = await ws.api.patch('/billing/settings', { body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(bad.body.message).toMatch(/^conductor_(monthly_limit|pay_as_you_go): /);
    }

    for (const headers of [admin, developer, member]) {
      for (const path of ['/conductor/credits', '/conductor/ledger']) expect((await call(app.url, 'GET', path, { headers })).status, path).toBe(200);
    }
    expect((await call(app.url, 'GET', '/conductor/credits', { headers: member })).body).toMatchObject({ pay_as_you_go: true, monthly_limit: 50 });

    const agentsOnly = (await ws.api.post('/api-keys', { body: { name: 'agents only', scopes: ['agents', 'calls', 'analytics'] } })).body.api_key;
    for (const path of ['/conductor/credits', '/conductor/ledger']) {
      expect((await ws.api.withKey(agentsOnly).get(path)).body, path).toEqual({ status: 403, message: 'This API key lacks the "admin" scope' });
    }
    const adminKey = (await ws.api.post('/api-keys', { body: { name: 'admin', scopes: ['admin'] } })).body.api_key;
    expect((await ws.api.withKey(adminKey).get('/conductor/credits')).status).toBe(200);
    expect((await call(app.url, 'GET', '/conductor/credits')).status).toBe(401);
  });

  it("keeps each workspace's credits, ledger and settings apart", async () => {
    const a = await app.newWorkspace();
    const b = await app.newWorkspace();
    await a.api.patch('/billing/settings', { body: { conductor_pay_as_you_go: true, conductor_monthly_limit: 20 } });
    const id = messageId();
    await charge(a.workspace_id, [7000, 0], id);
    expect(await credits(a.api)).toMatchObject({ used_credits: 7, paid_credits: 2 });
    expect(await credits(b.api)).toEqual(FRESH);
    expect(await ledger(b.api)).toEqual([]);
    const aEntry = (await ledger(a.api))[0];
    expect((await ledger(b.api, `?pagination_key=${aEntry.entry_id}`))).toEqual([]);
    expect(await conductorCharges(b.api)).toEqual([]);
    // The same message ID in another workspace is another message.
    expect(await charge(b.workspace_id, [10, 10], id)).toEqual({ credits: 1 });
    expect(await credits(b.api)).toMatchObject({ used_credits: 1 });
    expect((await ledger(a.api))).toHaveLength(1);
  });
});
