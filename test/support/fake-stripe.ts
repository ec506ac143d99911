import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { afterAll } from 'vitest';

/*
 * A fake Stripe API on 127.0.0.1: the few REST endpoints billing calls (customers, checkout
 * sessions, setup intents, payment methods, the portal, payment intents), with in-memory
 * objects, form bodies parsed the way Stripe reads them, and every request recorded (Parley
 * calls it through the `stripe` package, and the off-session charge with fetch). Events are
 * built here and signed with the package's own `webhooks.generateTestHeaderString`
 * (`signedEvent`), then posted to Parley's webhook by the test, as Stripe would after a payment.
 */

export interface StripeRequest {
  method: string;
  path: string;
  form: Record<string, string>;
  idempotencyKey?: string;
  authorization?: string;
}

const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

export async function startFakeStripe(options: { secretKey?: string; webhookSecret?: string } = {}) {
  const secretKey = options.secretKey ?? `sk_test_${randomBytes(8).toString('hex')}`;
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(16).toString('hex')}`;
  const requests: StripeRequest[] = [];
  const customers = new Map<string, { id: string; metadata: Record<string, string>; default_payment_method: string | null }>();
  const byIdempotency = new Map<string, unknown>();
  const sessions = new Map<string, Record<string, unknown>>();
  const methods = new Map<string, { id: string; customer: string | null; declines: boolean; last4: string }>();

  const pmObject = (pm: { id: string; customer: string | null; last4: string }) => ({
    id: pm.id,
    object: 'payment_method',
    type: 'card',
    customer: pm.customer,
    card: { brand: 'visa', last4: pm.last4, exp_month: 12, exp_year: 2030 },
  });
  const metadataOf = (form: Record<string, string>, prefix = 'metadata') =>
    Object.fromEntries(Object.entries(form).filter(([key]) => key.startsWith(`${prefix}[`)).map(([key, value]) => [key.slice(prefix.length + 1, -1), value]));

  function handle(req: StripeRequest): { status: number; body: unknown } {
    if (req.authorization !== `Bearer ${secretKey}`) return { status: 401, body: { error: { type: 'invalid_request_error', message: 'Invalid API Key provided' } } };
    const { method, path, form } = req;
    let match: RegExpMatchArray | null;
    if (method === 'POST' && path === '/v1/customers') {
      const customer = { id: id('cus'), metadata: metadataOf(form), default_payment_method: null };
      customers.set(customer.id, customer);
      return { status: 200, body: { ...customer, object: 'customer' } };
    }
    if (method === 'POST' && path === '/v1/checkout/sessions') {
      const session = {
        id: id('cs_test'),
        object: 'checkout.session',
        mode: form.mode,
        customer: form.customer,
        url: `https://checkout.stripe.test/c/pay/${randomBytes(6).toString('hex')}`,
        amount_total: Number(form['line_items[0][price_data][unit_amount]']),
        currency: form['line_items[0][price_data][currency]'],
        success_url: form.success_url,
        metadata: metadataOf(form),
        payment_status: 'unpaid',
        status: 'open',
        payment_intent: id('pi'),
      };
      sessions.set(session.id, session);
      return { status: 200, body: session };
    }
    if (method === 'POST' && path === '/v1/setup_intents') {
      const intent = { id: id('seti'), object: 'setup_intent', customer: form.customer, client_secret: `${id('seti')}_secret`, status: 'requires_payment_method', metadata: metadataOf(form) };
      return { status: 200, body: intent };
    }
    if (method === 'GET' && (match = path.match(/^\/v1\/customers\/([^/?]+)\/payment_methods/))) {
      const data = [...methods.values()].filter((pm) => pm.customer === match![1]).map(pmObject);
      return { status: 200, body: { object: 'list', data, has_more: false } };
    }
    if (method === 'GET' && (match = path.match(/^\/v1\/payment_methods\/([^/?]+)$/))) {
      const pm = methods.get(match[1]!);
      return pm ? { status: 200, body: pmObject(pm) } : { status: 404, body: { error: { type: 'invalid_request_error', code: 'resource_missing', message: 'No such PaymentMethod' } } };
    }
    if (method === 'POST' && (match = path.match(/^\/v1\/payment_methods\/([^/?]+)\/detach$/))) {
      const pm = methods.get(match[1]!);
      if (!pm) return { status: 404, body: { error: { type: 'invalid_request_error', code: 'resource_missing' } } };
      pm.customer = null;
      return { status: 200, body: pmObject(pm) };
    }
    if ((match = path.match(/^\/v1\/customers\/([^/?]+)$/))) {
      const customer = customers.get(match[1]!);
      if (!customer) return { status: 404, body: { error: { type: 'invalid_request_error', code: 'resource_missing' } } };
      if (method === 'POST' && form['invoice_settings[default_payment_method]']) customer.default_payment_method = form['invoice_settings[default_payment_method]'];
      return { status: 200, body: { id: customer.id, object: 'customer', invoice_settings: { default_payment_method: customer.default_payment_method } } };
    }
    if (method === 'POST' && path === '/v1/billing_portal/sessions') {
      return { status: 200, body: { id: id('bps'), object: 'billing_portal.session', url: `https://billing.stripe.test/p/session/${randomBytes(6).toString('hex')}`, return_url: form.return_url } };
    }
    if (method === 'POST' && path === '/v1/payment_intents') {
      const pm = methods.get(form.payment_method ?? '');
      if (!pm || pm.declines) {
        return { status: 402, body: { error: { type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' } } };
      }
      return {
        status: 200,
        body: { id: id('pi'), object: 'payment_intent', status: 'succeeded', amount: Number(form.amount), customer: form.customer, payment_method: pm.id, metadata: metadataOf(form) },
      };
    }
    return { status: 404, body: { error: { type: 'invalid_request_error', message: `Unrecognized request URL (${method}: ${path})` } } };
  }

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const form = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      const request: StripeRequest = {
        method: req.method ?? 'GET',
        path: req.url ?? '/',
        form,
        idempotencyKey: req.headers['idempotency-key'] as string | undefined,
        authorization: req.headers.authorization,
      };
      requests.push(request);
      const cacheKey = request.idempotencyKey ? `${request.path}:${request.idempotencyKey}` : undefined;
      const cached = cacheKey ? byIdempotency.get(cacheKey) : undefined;
      const answer = (cached as { status: number; body: unknown } | undefined) ?? handle(request);
      if (cacheKey && !cached && answer.status === 200) byIdempotency.set(cacheKey, answer);
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );

  /** A Stripe event as JSON text and its Stripe-Signature header (`secret` and `timestampSeconds` may be forged). */
  function signedEvent(type: string, object: Record<string, unknown>, sign: { secret?: string; timestampSeconds?: number; eventId?: string } = {}) {
    const payload = JSON.stringify({ id: sign.eventId ?? id('evt'), object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object } });
    const signature = Stripe.webhooks.generateTestHeaderString({ payload, secret: sign.secret ?? webhookSecret, timestamp: sign.timestampSeconds ?? Math.floor(Date.now() / 1000) });
    return { payload, signature };
  }

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    secretKey,
    webhookSecret,
    requests,
    customers,
    /** The session as it is once paid (what checkout.session.completed carries). */
    paidSession: (sessionId: string) => ({ ...sessions.get(sessionId)!, payment_status: 'paid', status: 'complete' }),
    /** The PaymentIntent a paid session made (what its charges' refunds and disputes name). */
    paymentIntentOf: (sessionId: string) => sessions.get(sessionId)!.payment_intent as string,
    /** Saves a card on a customer (as the payment page would after a setup intent). */
    addCard(customerId: string, options: { declines?: boolean } = {}) {
      const pm = { id: id('pm'), customer: customerId, declines: options.declines ?? false, last4: options.declines ? '0002' : '4242' };
      methods.set(pm.id, pm);
      return pm.id;
    },
    signedEvent,
  };
}
