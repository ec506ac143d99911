import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';
import { startFakeLiveKit } from '../support/fake-livekit.ts';
import { startFakeStripe } from '../support/fake-stripe.ts';
import type { ApiClient } from '../support/http.ts';

// Stripe is the fake on 127.0.0.1 (its REST API, and events signed with the endpoint secret).
const stripe = await startFakeStripe();
const livekit = await startFakeLiveKit();
const app = await startTestApp({
  FREE_CREDIT_USD: '0',
  STRIPE_SECRET_KEY: stripe.secretKey,
  STRIPE_WEBHOOK_SECRET: stripe.webhookSecret,
  STRIPE_API_BASE_URL: stripe.url,
  LIVEKIT_URL: livekit.url,
  LIVEKIT_API_KEY: livekit.apiKey,
  LIVEKIT_API_SECRET: livekit.apiSecret,
  LIVEKIT_SIP_URI: 'sip:parley-billing.sip.livekit.cloud;transport=tcp',
});
const { recordCallCharge } = await import('../../shared/billing/index.ts');
const { setBillingClockOffset } = await import('../../shared/billing/clock.ts');

const balance = async (api: ApiClient) => (await api.get('/billing')).body.balance_usd as number;
const postEvent = (event: { payload: string; signature: string }, signature: string | null = event.signature) =>
  app.api.post('/billing/stripe/webhook', { rawBody: event.payload, headers: { 'stripe-signature': signature, authorization: null } });

/** A workspace with a checkout started at the fake: its session ID and customer. */
async function checkout(amount: number) {
  const ws = await app.newWorkspace();
  const started = await ws.api.post('/billing/checkout', { body: { amount_usd: amount, success_url: 'https://app.example.com/paid' } });
  expect(started.status).toBe(200);
  const customer = stripe.requests.find((request) => request.path === '/v1/customers' && request.idempotencyKey === `customer:${ws.workspace_id}`);
  expect(customer).toBeDefined();
  const customerId = [...stripe.customers.values()].find((c) => c.metadata.workspace_id === ws.workspace_id)!.id;
  return { ws, session: started.body, customerId };
}

describe('a checkout through Stripe', () => {
  it('credits only when Stripe\'s signed event arrives, once, however often it is delivered', async () => {
    const { ws, session, customerId } = await checkout(25);
    expect(session).toMatchObject({ provider: 'stripe', amount_usd: 25 });
    expect(session.url).toMatch(/^https:\/\/checkout\.stripe\.test\/c\/pay\//);
    const created = stripe.requests.find((request) => request.path === '/v1/checkout/sessions' && request.form.customer === customerId)!;
    expect(created.form).toMatchObject({
      mode: 'payment',
      success_url: 'https://app.example.com/paid',
      'line_items[0][price_data][unit_amount]': '2500',
      'line_items[0][price_data][currency]': 'usd',
      'metadata[workspace_id]': ws.workspace_id,
      'metadata[purpose]': 'credits',
    });
    expect(created.idempotencyKey).toMatch(/^checkout:/);
    expect(await balance(ws.api)).toBe(0);

    const event = stripe.signedEvent('checkout.session.completed', stripe.paidSession(session.checkout_session_id));
    const delivered = await postEvent(event);
    expect(delivered.status).toBe(200);
    expect(delivered.body).toEqual({ received: true, duplicate: false, applied: 'credited' });
    expect(await balance(ws.api)).toBe(25);

    // Stripe retries, a replay by someone who captured it, concurrent deliveries: nothing more.
    const replays = await Promise.all([postEvent(event), postEvent(event), postEvent(event)]);
    expect(replays.map((replay) => [replay.status, replay.body.duplicate])).toEqual([
      [200, true],
      [200, true],
      [200, true],
    ]);
    // The same session in another event (checkout.session.async_payment_succeeded): still one credit.
    const other = await postEvent(stripe.signedEvent('checkout.session.async_payment_succeeded', stripe.paidSession(session.checkout_session_id)));
    expect(other.body).toEqual({ received: true, duplicate: false, applied: 'ignored: already credited' });
    const overview = (await ws.api.get('/billing')).body;
    expect(overview.balance_usd).toBe(25);
    expect(overview.entries).toEqual([expect.objectContaining({ kind: 'credit_purchase', amount_usd: 25, reference: session.checkout_session_id })]);
  });

  it('refuses a bad Stripe-Signature with 400 and changes nothing', async () => {
    const { ws, session } = await checkout(10);
    const paid = stripe.paidSession(session.checkout_session_id);
    const cases: [{ payload: string; signature: string }, string | null, string][] = [
      [stripe.signedEvent('checkout.session.completed', paid, { secret: 'whsec_not_the_secret' }), undefined as never, 'Stripe-Signature does not match the body'],
      [stripe.signedEvent('checkout.session.completed', paid), null, 'Missing Stripe-Signature header'],
      [stripe.signedEvent('checkout.session.completed', paid), 'v1=abc', 'Invalid Stripe-Signature header'],
      [stripe.signedEvent('checkout.session.completed', paid, { timestampSeconds: Math.floor(Date.now() / 1000) - 600 }), undefined as never, 'Stripe-Signature timestamp is outside the tolerance'],
    ];
    for (const [event, header, message] of cases) {
      const res = await postEvent(event, header === undefined ? event.signature : header);
      expect(res.status, message).toBe(400);
      expect(res.body).toEqual({ status: 400, message });
    }
    // A body changed after signing (a larger amount) fails too.
    const signed = stripe.signedEvent('checkout.session.completed', paid, { eventId: 'evt_tampered_once' });
    const tampered = await postEvent({ payload: signed.payload.replace('"amount_total":1000', '"amount_total":900000'), signature: signed.signature });
    expect(tampered.status).toBe(400);
    expect(await balance(ws.api)).toBe(0);
    // A refused delivery did not use up the event: the genuine one still credits.
    expect((await postEvent(signed)).body.applied).toBe('credited');
    expect(await balance(ws.api)).toBe(10);
  });

  it('never credits a workspace from another workspace\'s payment', async () => {
    const victim = await checkout(10);
    const attacker = await checkout(10);
    // The attacker's own paid session, relabelled with the victim's workspace (as if metadata were forged).
    const forged = { ...stripe.paidSession(attacker.session.checkout_session_id), metadata: { workspace_id: victim.ws.workspace_id, purpose: 'credits' } };
    const res = await postEvent(stripe.signedEvent('checkout.session.completed', forged));
    expect(res.body).toEqual({ received: true, duplicate: false, applied: 'ignored: unknown customer' });
    expect(await balance(victim.ws.api)).toBe(0);
    expect(await balance(attacker.ws.api)).toBe(0);
  });
});

describe('payment methods, the portal and auto-recharge through Stripe', () => {
  it('lists, sets the default and removes a saved card of the workspace only', async () => {
    const { ws, customerId } = await checkout(5);
    const intent = await ws.api.post('/billing/payment-methods/setup-intent');
    expect(intent.status).toBe(200);
    expect(intent.body).toMatchObject({ provider: 'stripe', setup_intent_id: expect.stringMatching(/^seti_/), client_secret: expect.any(String) });
    expect(stripe.requests.at(-1)!.form).toMatchObject({ customer: customerId, usage: 'off_session' });
    const card = stripe.addCard(customerId);
    expect((await ws.api.get('/billing/payment-methods')).body).toEqual([
      { id: card, type: 'card', brand: 'visa', last4: '4242', exp_month: 12, exp_year: 2030, is_default: false },
    ]);
    const set = await ws.api.post('/billing/payment-methods/default', { body: { payment_method_id: card } });
    expect(set.status).toBe(200);
    expect(set.body[0].is_default).toBe(true);
    expect(stripe.customers.get(customerId)!.default_payment_method).toBe(card);

    const other = await checkout(5);
    expect((await other.ws.api.post('/billing/payment-methods/default', { body: { payment_method_id: card } })).status).toBe(404);
    expect((await other.ws.api.delete(`/billing/payment-methods/${card}`)).status).toBe(404);
    expect((await ws.api.post('/billing/payment-methods/default', { body: { payment_method_id: 'pm_missing' } })).body).toEqual({
      status: 404,
      message: 'Payment method pm_missing not found',
    });

    const portal = await ws.api.post('/billing/portal', { body: {} });
    expect(portal.body.url).toMatch(/^https:\/\/billing\.stripe\.test\/p\/session\//);
    expect(stripe.requests.at(-1)!.form).toMatchObject({ customer: customerId, return_url: 'http://127.0.0.1:8080/billing' });

    expect((await ws.api.delete(`/billing/payment-methods/${card}`)).status).toBe(204);
    expect(stripe.requests.at(-1)!.path).toBe(`/v1/payment_methods/${card}/detach`);
    expect((await ws.api.get('/billing/payment-methods')).body).toEqual([]);
  });

  it('auto-recharges off-session, credited by the payment_intent.succeeded event; a declined card credits nothing', async () => {
    for (const declines of [true, false]) {
      const { ws, session, customerId } = await checkout(10);
      await postEvent(stripe.signedEvent('checkout.session.completed', stripe.paidSession(session.checkout_session_id)));
      const card = stripe.addCard(customerId, { declines });
      await ws.api.post('/billing/payment-methods/default', { body: { payment_method_id: card } });
      await ws.api.patch('/billing/settings', { body: { auto_recharge: { threshold_usd: 5, amount_usd: 20 } } });
      const before = stripe.requests.length;
      await recordCallCharge({ workspaceId: ws.workspace_id, callId: `call_${declines ? 'd' : 'a'}00000000000000000000000`, callCost: { product_costs: [{ product: 'voice_engine', cost: 600 }] } });
      const payment = stripe.requests.slice(before).find((request) => request.path === '/v1/payment_intents')!;
      expect(payment.form).toMatchObject({ amount: '2000', currency: 'usd', customer: customerId, payment_method: card, off_session: 'true', confirm: 'true', 'metadata[purpose]': 'auto_recharge' });
      expect(await balance(ws.api)).toBe(4); // nothing credited without the event
      // A second charge while the first attempt holds the lock starts no second payment.
      await recordCallCharge({ workspaceId: ws.workspace_id, callId: `call_${declines ? 'd' : 'a'}00000000000000000000001`, callCost: { product_costs: [{ product: 'voice_engine', cost: 100 }] } });
      expect(stripe.requests.slice(before).filter((request) => request.path === '/v1/payment_intents')).toHaveLength(1);
      if (declines) continue;
      const intent = { id: 'pi_auto_1', object: 'payment_intent', status: 'succeeded', amount: 2000, amount_received: 2000, customer: customerId, metadata: { workspace_id: ws.workspace_id, purpose: 'auto_recharge' } };
      expect((await postEvent(stripe.signedEvent('payment_intent.succeeded', intent))).body.applied).toBe('credited');
      expect(await balance(ws.api)).toBe(23);
    }
  });
});

describe('refunds and disputes through the signed webhook', () => {
  /** A workspace whose checkout of `amount` was paid and credited: its payment intent and customer. */
  async function paid(amount: number) {
    const started = await checkout(amount);
    const sessionId = started.session.checkout_session_id as string;
    expect((await postEvent(stripe.signedEvent('checkout.session.completed', stripe.paidSession(sessionId)))).body.applied).toBe('credited');
    return { ...started, paymentIntent: stripe.paymentIntentOf(sessionId) };
  }
  const auditActions = async (api: ApiClient) =>
    ((await api.get('/audit-log')).body as { action: string; actor: { type: string }; target: { type: string; id: string } }[])
      .filter((entry) => entry.action.startsWith('billing.'))
      .map((entry) => [entry.action, entry.actor.type, entry.target.id])
      .reverse();

  it('takes each refund of a payment back once (a refund entry and an audit entry), listed or not', async () => {
    const { ws, customerId, paymentIntent } = await paid(25);
    const charge = (amountRefunded: number, refunds?: { id: string; amount: number; status: string }[]) => ({
      id: 'ch_refunded_1',
      object: 'charge',
      amount: 2500,
      amount_refunded: amountRefunded,
      customer: customerId,
      payment_intent: paymentIntent,
      refunded: amountRefunded === 2500,
      ...(refunds ? { refunds: { object: 'list', data: refunds } } : {}),
    });
    const first = stripe.signedEvent('charge.refunded', charge(1000, [{ id: 're_1', amount: 1000, status: 'succeeded' }]));
    expect((await postEvent(first)).body).toEqual({ received: true, duplicate: false, applied: 'refunded: 1' });
    expect(await balance(ws.api)).toBe(15);
    expect((await postEvent(first)).body.duplicate).toBe(true);
    // A second refund: the event lists both; only the new one is written.
    const second = await postEvent(stripe.signedEvent('charge.refunded', charge(1500, [{ id: 're_2', amount: 500, status: 'succeeded' }, { id: 're_1', amount: 1000, status: 'succeeded' }])));
    expect(second.body.applied).toBe('refunded: 1');
    expect(await balance(ws.api)).toBe(10);
    // Without the list (newer API versions): what amount_refunded says beyond what is recorded, once.
    expect((await postEvent(stripe.signedEvent('charge.refunded', charge(2000)))).body.applied).toBe('refunded: 1');
    expect((await postEvent(stripe.signedEvent('charge.refunded', charge(2000)))).body.applied).toBe('ignored: already refunded');
    const overview = (await ws.api.get('/billing')).body;
    expect(overview.balance_usd).toBe(5);
    // Refunds are money moving back, not usage: no month charges, no usage lines.
    expect(overview.month_charges_usd).toBe(0);
    expect(overview.entries.filter((entry: { kind: string }) => entry.kind === 'refund').map((entry: { amount_usd: number }) => entry.amount_usd)).toEqual([-5, -5, -10]);
    expect((await ws.api.get('/billing/usage')).body.total_usd).toBe(0);
    expect(await auditActions(ws.api)).toEqual([
      ['billing.refund', 'system', 'ch_refunded_1'],
      ['billing.refund', 'system', 'ch_refunded_1'],
      ['billing.refund', 'system', 'ch_refunded_1'],
    ]);
  });

  it('never refunds from a workspace whose payment it is not', async () => {
    const victim = await paid(10);
    const attacker = await paid(10);
    // The victim's payment intent with the attacker's customer, and a payment intent nobody credited.
    const cases = [
      { id: 'ch_forged_1', amount: 1000, amount_refunded: 1000, customer: attacker.customerId, payment_intent: victim.paymentIntent },
      { id: 'ch_forged_2', amount: 1000, amount_refunded: 1000, customer: attacker.customerId, payment_intent: 'pi_never_credited' },
    ];
    for (const charge of cases) {
      expect((await postEvent(stripe.signedEvent('charge.refunded', { object: 'charge', ...charge }))).body.applied).toBe('ignored: not a payment of a workspace');
    }
    expect(await balance(victim.ws.api)).toBe(10);
    expect(await balance(attacker.ws.api)).toBe(10);
  });

  it('holds a disputed amount (402 while held), releases it when won, keeps it when lost', async () => {
    const { ws, paymentIntent } = await paid(20);
    const dispute = (id: string, status: string) => ({ id, object: 'dispute', amount: 2000, charge: 'ch_disputed', payment_intent: paymentIntent, status, reason: 'fraudulent' });
    const created = await postEvent(stripe.signedEvent('charge.dispute.created', dispute('dp_1', 'needs_response')));
    expect(created.body).toEqual({ received: true, duplicate: false, applied: 'dispute_hold' });
    expect(await balance(ws.api)).toBe(0);
    const { agent } = await newAgent(ws.api);
    const refused = await ws.api.post('/v2/create-web-call', { body: { agent_id: agent.agent_id } });
    expect(refused.status).toBe(402);
    expect(refused.body).toEqual({ status: 402, error_code: 'credit_exhausted', message: 'Credit balance is $0.00; add credits to continue' });
    // The same dispute announced again (another event ID) holds nothing more.
    expect((await postEvent(stripe.signedEvent('charge.dispute.created', dispute('dp_1', 'needs_response')))).body.applied).toBe('ignored: already held');

    expect((await postEvent(stripe.signedEvent('charge.dispute.closed', dispute('dp_1', 'won')))).body.applied).toBe('dispute_release');
    expect((await postEvent(stripe.signedEvent('charge.dispute.closed', dispute('dp_1', 'won')))).body.applied).toBe('ignored: already released');
    expect(await balance(ws.api)).toBe(20);

    expect((await postEvent(stripe.signedEvent('charge.dispute.created', dispute('dp_2', 'needs_response')))).body.applied).toBe('dispute_hold');
    expect((await postEvent(stripe.signedEvent('charge.dispute.closed', dispute('dp_2', 'lost')))).body.applied).toBe('dispute_lost');
    expect(await balance(ws.api)).toBe(0);
    // Won without a hold (its creation never arrived): nothing to release.
    expect((await postEvent(stripe.signedEvent('charge.dispute.closed', dispute('dp_3', 'won')))).body.applied).toBe('ignored: nothing held');

    const entries = (await ws.api.get('/billing')).body.entries.map((entry: { kind: string; amount_usd: number; reference: string }) => [entry.kind, entry.amount_usd, entry.reference]);
    expect(entries.slice(0, 3)).toEqual([
      ['dispute_hold', -20, 'dp_2'],
      ['dispute_release', 20, 'dp_1'],
      ['dispute_hold', -20, 'dp_1'],
    ]);
    expect(await auditActions(ws.api)).toEqual([
      ['billing.dispute_hold', 'system', 'dp_1'],
      ['billing.dispute_release', 'system', 'dp_1'],
      ['billing.dispute_hold', 'system', 'dp_2'],
      ['billing.dispute_lost', 'system', 'dp_2'],
    ]);
  });
});

describe('paying an open invoice', () => {
  it('checks out the amount due; the signed event credits it and marks that invoice paid', async () => {
    const { ws, session, customerId } = await checkout(5);
    await postEvent(stripe.signedEvent('checkout.session.completed', stripe.paidSession(session.checkout_session_id)));
    await recordCallCharge({ workspaceId: ws.workspace_id, callId: 'call_0000000000000000000invpay', callCost: { product_costs: [{ product: 'voice_engine', cost: 700 }] } });
    expect(await balance(ws.api)).toBe(-2);
    const nextMonthStart = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 1, 1);
    setBillingClockOffset(nextMonthStart + 24 * 60 * 60 * 1000 - Date.now());
    try {
      const invoice = (await ws.api.post('/billing/invoices/usage', { body: {} })).body.invoice;
      expect(invoice).toMatchObject({ status: 'open', total_usd: 7, amount_due_usd: 2 });
      const other = await app.newWorkspace();
      expect((await other.api.post(`/billing/invoices/${invoice.invoice_id}/pay`, { body: {} })).body).toEqual({ status: 404, message: `Invoice ${invoice.invoice_id} not found` });

      const pay = await ws.api.post(`/billing/invoices/${invoice.invoice_id}/pay`, { body: { success_url: 'https://app.example.com/paid' } });
      expect(pay.status).toBe(200);
      expect(pay.body).toMatchObject({ provider: 'stripe', amount_usd: 2, url: expect.stringMatching(/^https:\/\/checkout\.stripe\.test\//) });
      const created = stripe.requests.findLast((request) => request.path === '/v1/checkout/sessions')!;
      expect(created.form).toMatchObject({
        customer: customerId,
        'line_items[0][price_data][unit_amount]': '200',
        'metadata[purpose]': 'invoice',
        'metadata[invoice_id]': invoice.invoice_id,
        'payment_intent_data[metadata][invoice_id]': invoice.invoice_id,
      });
      // Nothing changes until Stripe confirms it.
      expect((await ws.api.get('/billing/invoices')).body[0].status).toBe('open');
      const paid = await postEvent(stripe.signedEvent('checkout.session.completed', stripe.paidSession(pay.body.checkout_session_id)));
      expect(paid.body).toEqual({ received: true, duplicate: false, applied: 'credited; invoice_paid' });
      const after = (await ws.api.get('/billing')).body;
      expect(after.balance_usd).toBe(0);
      expect(after.open_invoice_ids).toEqual([]);
      expect(after.entries[0]).toMatchObject({ kind: 'invoice_payment', amount_usd: 2, reference: invoice.invoice_id });
      expect((await ws.api.get('/billing/invoices')).body[0]).toMatchObject({ status: 'paid', amount_due_usd: 0 });
      expect((await ws.api.post(`/billing/invoices/${invoice.invoice_id}/pay`, { body: {} })).body).toEqual({ status: 409, message: `Invoice ${invoice.invoice_id} is already paid` });
    } finally {
      setBillingClockOffset(0);
    }
  });
});

describe('register-phone-call (SIP routing on)', () => {
  it('is a spend route: 402 credit_exhausted on both paths at a zero balance', async () => {
    const ws = await app.newWorkspace();
    const { agent } = await newAgent(ws.api);
    for (const path of ['/v2/register-phone-call', '/register-phone-call']) {
      const res = await ws.api.post(path, { body: { agent_id: agent.agent_id, from_number: '+14155550100', to_number: '+14155550101' } });
      expect(res.status, path).toBe(402);
      expect(res.body).toEqual({ status: 402, error_code: 'credit_exhausted', message: 'Credit balance is $0.00; add credits to continue' });
    }
    await ws.api.post('/billing/add-credits', { body: { amount_usd: 1 } });
    expect((await ws.api.post('/v2/register-phone-call', { body: { agent_id: agent.agent_id } })).status).toBe(201);
  });
});
