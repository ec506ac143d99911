import { describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';
import type { ApiClient } from '../support/http.ts';

// The built-in payments mock (no STRIPE_SECRET_KEY): its checkout page is served by Parley.
const app = await startTestApp({ FREE_CREDIT_USD: '0' });

const balance = async (ws: { api: ApiClient }) => (await ws.api.get('/billing')).body.balance_usd;

/** The page's path (with its token) from a checkout's URL. */
const pathOf = (url: string) => new URL(url).pathname;

const form = (path: string, action: string, headers: Record<string, string> = {}) =>
  call(app.url, 'POST', path, { rawBody: `action=${action}`, headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } });

async function startCheckout(amount: number, urls: { success_url?: string; cancel_url?: string } = {}) {
  const ws = await app.newWorkspace();
  const checkout = await ws.api.post('/billing/checkout', { body: { amount_usd: amount, ...urls } });
  expect(checkout.status).toBe(200);
  return { ws, checkout: checkout.body, path: pathOf(checkout.body.url) };
}

describe('the mock checkout page', () => {
  it('shows the amount with Pay and Cancel under a strict policy, and adds nothing until Pay', async () => {
    const { ws, checkout, path } = await startCheckout(20, { success_url: 'https://app.example.com/paid?x=1', cancel_url: 'https://shop.example.org/back' });
    expect(checkout).toMatchObject({ provider: 'mock', amount_usd: 20 });
    expect(checkout.checkout_session_id).toMatch(/^cs_mock_[0-9a-f]{24}$/);
    expect(checkout.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/billing\/mock-checkout\/[\w-]{43}$/);
    expect(await balance(ws)).toBe(0);

    const page = await call(app.url, 'GET', path);
    expect(page.status).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.text).toContain('<p class="amount">$20.00</p>');
    expect(page.text).toContain('<form method="post"><button type="submit" name="action" value="pay">Pay $20.00</button><button type="submit" name="action" value="cancel">Cancel</button></form>');
    expect(page.text).toContain('<p>Parley credit</p>');
    // Nothing loaded from anywhere, no script at all.
    expect(page.text).not.toMatch(/<script|<link|src=|https?:\/\//);
    expect(page.headers['content-security-policy']).toMatch(
      /^default-src 'none'; style-src 'sha256-[\w+/]{43}='; form-action 'self' https:\/\/app\.example\.com https:\/\/shop\.example\.org; frame-ancestors 'none'; base-uri 'none'$/,
    );
    expect(page.headers).toMatchObject({ 'cache-control': 'no-store', 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer', 'x-content-type-options': 'nosniff' });
    expect(page.headers['access-control-allow-origin']).toBeUndefined();
    // The style's hash in the policy is the hash of the page's one style element.
    const style = /<style>(.*?)<\/style>/s.exec(page.text)![1]!;
    const { createHash } = await import('node:crypto');
    expect(page.headers['content-security-policy']).toContain(`'sha256-${createHash('sha256').update(style).digest('base64')}'`);
    expect(await balance(ws)).toBe(0);
  });

  it('Pay credits once, however often the form is submitted, and redirects to the success URL', async () => {
    const { ws, checkout, path } = await startCheckout(12.5, { success_url: 'https://app.example.com/paid?x=1' });
    const success = `https://app.example.com/paid?x=1&session_id=${checkout.checkout_session_id}&mock=true`;
    // A double submit: both at once, then a third after.
    const [first, second] = await Promise.all([form(path, 'pay'), form(path, 'pay')]);
    const third = await form(path, 'pay');
    for (const res of [first, second, third]) {
      expect(res.status).toBe(303);
      expect(res.headers.location).toBe(success);
      expect(res.headers['cache-control']).toBe('no-store');
    }
    const overview = (await ws.api.get('/billing')).body;
    expect(overview.balance_usd).toBe(12.5);
    expect(overview.entries.filter((entry: any) => entry.kind === 'credit_purchase')).toEqual([
      expect.objectContaining({ kind: 'credit_purchase', amount_usd: 12.5, reference: checkout.checkout_session_id }),
    ]);
    // The page now says it is paid; Cancel is refused.
    const page = await call(app.url, 'GET', path);
    expect(page.text).toContain(`<p id="status">Paid. <a href="${success.replaceAll('&', '&amp;')}">Continue</a></p>`);
    expect(page.text).not.toContain('<form');
    const cancel = await form(path, 'cancel');
    expect(cancel.status).toBe(409);
    expect(cancel.body).toEqual({ status: 409, message: 'Checkout session is already paid' });
    expect(await balance(ws)).toBe(12.5);
  });

  it('Cancel adds nothing, redirects to the cancel URL, and a later Pay is refused', async () => {
    const { ws, path } = await startCheckout(30);
    const cancel = await form(path, 'cancel');
    expect(cancel.status).toBe(303);
    expect(cancel.headers.location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/billing\?checkout=cancelled$/);
    expect((await form(path, 'cancel')).status).toBe(303);
    const pay = await form(path, 'pay');
    expect(pay.status).toBe(409);
    expect(pay.body).toEqual({ status: 409, message: 'Checkout session was cancelled' });
    expect((await call(app.url, 'GET', path)).text).toContain('<p id="status">This checkout was cancelled.');
    const overview = (await ws.api.get('/billing')).body;
    expect(overview.balance_usd).toBe(0);
    expect(overview.entries).toEqual([]);
  });

  it('pays an open invoice through the page', async () => {
    const ws = await app.newWorkspace();
    const { setBillingClockOffset } = await import('../../shared/billing/clock.ts');
    const { recordCallCharge } = await import('../../shared/billing/index.ts');
    await recordCallCharge({ workspaceId: ws.workspace_id, callId: 'call_00000000000000000mockpay1', callCost: { product_costs: [{ product: 'voice_engine', cost: 700 }] } });
    setBillingClockOffset(32 * 24 * 60 * 60 * 1000);
    try {
      const issued = await ws.api.post('/billing/invoices/usage', { body: { month: new Date().toISOString().slice(0, 7) } });
      expect(issued.status).toBe(200);
      const invoice = issued.body.invoice;
      expect(invoice).toMatchObject({ status: 'open', amount_due_usd: 7 });
      const started = await ws.api.post(`/billing/invoices/${invoice.invoice_id}/pay`, { body: { success_url: 'https://app.example.com/inv' } });
      expect(started.status).toBe(200);
      expect(started.body).toMatchObject({ provider: 'mock', amount_usd: 7 });
      const path = pathOf(started.body.url);
      expect((await call(app.url, 'GET', path)).text).toContain(`<p>Parley invoice ${invoice.period}</p>`);
      expect((await ws.api.get('/billing/invoices')).body[0].status).not.toBe('paid');
      expect((await form(path, 'pay')).status).toBe(303);
      expect((await ws.api.get('/billing/invoices')).body[0]).toMatchObject({ invoice_id: invoice.invoice_id, status: 'paid' });
    } finally {
      setBillingClockOffset(0);
    }
  });

  it('answers a wrong token, a bad action and a JSON body clearly, and changes nothing', async () => {
    const { ws, path } = await startCheckout(5);
    const unknown = `/billing/mock-checkout/${'A'.repeat(43)}`;
    for (const res of [await call(app.url, 'GET', unknown), await form(unknown, 'pay')]) {
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ status: 404, message: 'Checkout session not found' });
    }
    const malformed = await call(app.url, 'GET', '/billing/mock-checkout/short');
    expect(malformed.status).toBe(400);
    expect(malformed.body).toEqual({ status: 400, message: 'token: Must be a checkout token' });
    const bad = await form(path, 'refund');
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/^action: /);
    const text = await call(app.url, 'POST', path, { rawBody: 'action=pay', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(await balance(ws)).toBe(0);
    // Still open: JSON works as well as a form.
    const json = await call(app.url, 'POST', path, { body: { action: 'pay' } });
    expect(json.status).toBe(303);
    expect(await balance(ws)).toBe(5);
  });
});
