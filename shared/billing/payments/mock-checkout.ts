import { createHash, randomBytes } from 'node:crypto';
import { conflict, notFound } from '../../platform/errors.ts';
import { MediaResponse } from '../../platform/http/handler.ts';
import { escapeHtml, htmlPage } from '../../platform/http/html-page.ts';
import { mockPaymentsProvider, type CheckoutInput } from '../../vendors/payments/index.ts';
import { billingStore, type MockCheckoutItem } from '../store.ts';
import { deliverSelfSignedEvents } from './stripe-webhook.ts';

/*
 * The built-in payments mock's checkout page (no STRIPE_SECRET_KEY), a very small Stripe
 * Checkout served by Parley: `GET /billing/mock-checkout/{token}` shows the amount with a Pay
 * and a Cancel button; the form posts back to the same URL, which completes or cancels the
 * session and answers 303 to the session's success or cancel URL. Credit is added only on
 * Pay, by the mock's signed `checkout.session.completed` through the same webhook handler
 * (signature check, replay guard, ledger) as Stripe's. A second Pay (a double submit, a
 * reload) finds the session complete and redirects again: the event's ID and the credit's
 * source are the session's, so it credits once. Pay after Cancel, or Cancel after Pay, is a
 * 409. The token in the URL is the page's only credential (the route is public, as Stripe's
 * page is): 32 random bytes, stored as its SHA-256. A session lives a day.
 * The page loads nothing (no script, no external asset): its one inline style is allowed by
 * its hash in a strict Content-Security-Policy (shared/platform/http/html-page.ts).
 */

const MOCK_CHECKOUT_TTL_MS = 24 * 60 * 60 * 1000;

const hashOf = (token: string) => createHash('sha256').update(token).digest('hex');

export const newMockCheckoutToken = (): string => randomBytes(32).toString('base64url');

/** Keeps a mock session open until its page's Pay or Cancel. */
export async function storeMockCheckout(token: string, input: Omit<CheckoutInput, 'mockPageUrl'>, session: { id: string }): Promise<void> {
  const now = Date.now();
  await billingStore.createMockCheckout(
    {
      session_id: session.id,
      workspace_id: input.workspaceId,
      customer_id: input.customerId,
      amount_cents: input.amountCents,
      product_name: input.productName ?? 'Parley credit',
      purpose: input.purpose ?? 'credits',
      ...(input.invoiceId ? { invoice_id: input.invoiceId } : {}),
      success_url: input.successUrl,
      cancel_url: input.cancelUrl,
      status: 'open',
      created_timestamp: now,
      expires_at: Math.ceil((now + MOCK_CHECKOUT_TTL_MS) / 1000),
    },
    hashOf(token),
  );
}

async function sessionOf(token: string): Promise<MockCheckoutItem> {
  const item = await billingStore.mockCheckout(hashOf(token));
  if (!item) throw notFound('Checkout session not found');
  return item;
}

const expired = (item: MockCheckoutItem) => item.expires_at * 1000 <= Date.now();

const usd = (cents: number) => `$${(cents / 100).toFixed(2)}`;

const STYLE =
  'body{font-family:system-ui,sans-serif;background:#f6f8fa;color:#1f2328;margin:0}' +
  'main{max-width:26rem;margin:4rem auto;background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:2rem}' +
  'h1{font-size:1.25rem;margin:0 0 1rem}.amount{font-size:2rem;font-weight:600;margin:.5rem 0 1.5rem}' +
  '.note{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:.5rem .75rem;font-size:.875rem}' +
  'form{display:flex;gap:.75rem}button{font:inherit;padding:.6rem 1.2rem;border-radius:6px;border:1px solid #d0d7de;background:#f6f8fa;cursor:pointer}' +
  'button[value=pay]{background:#1f883d;border-color:#1a7f37;color:#fff}';

const originOf = (url: string) => new URL(url).origin;

/** The form may go only here and (by its redirect) to the session's own URLs. */
function page(item: MockCheckoutItem, body: string): MediaResponse {
  return htmlPage({
    title: `Test checkout: ${usd(item.amount_cents)}`,
    style: STYLE,
    formAction: ["'self'", ...new Set([originOf(item.success_url), originOf(item.cancel_url)])],
    body: `<main>
<h1>Test checkout</h1>
<p class="note">Parley's built-in payments mock: no card is charged and no money moves.</p>
<p>${escapeHtml(item.product_name)}</p>
<p class="amount">${usd(item.amount_cents)}</p>
${body}
</main>`,
  });
}

/** `GET /billing/mock-checkout/{token}`: the payment page, or where the session ended. */
export async function mockCheckoutPage(token: string): Promise<MediaResponse> {
  const item = await sessionOf(token);
  if (item.status === 'complete') {
    return page(item, `<p id="status">Paid. <a href="${escapeHtml(successUrlOf(item))}">Continue</a></p>`);
  }
  if (item.status === 'cancelled') {
    return page(item, `<p id="status">This checkout was cancelled. <a href="${escapeHtml(item.cancel_url)}">Back</a></p>`);
  }
  if (expired(item)) return page(item, '<p id="status">This checkout has expired.</p>');
  return page(
    item,
    `<form method="post"><button type="submit" name="action" value="pay">Pay ${usd(item.amount_cents)}</button><button type="submit" name="action" value="cancel">Cancel</button></form>`,
  );
}

/** The success URL as Stripe would redirect to it: with the session's ID (and that this was the mock). */
function successUrlOf(item: MockCheckoutItem): string {
  const url = new URL(item.success_url);
  url.searchParams.set('session_id', item.session_id);
  url.searchParams.set('mock', 'true');
  return url.toString();
}

const seeOther = (location: string) => new MediaResponse('text/html; charset=utf-8', '', { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }, 303);

/** `POST /billing/mock-checkout/{token}` (the page's form): Pay completes, Cancel cancels; 303 to where the session says. */
export async function mockCheckoutAction(token: string, action: 'pay' | 'cancel'): Promise<MediaResponse> {
  const hash = hashOf(token);
  const item = await sessionOf(token);
  if (item.status === 'open' && expired(item)) throw conflict('Checkout session has expired');
  const settled = await billingStore.settleMockCheckout(hash, action === 'pay' ? 'complete' : 'cancelled');
  if (!settled.moved) {
    throw conflict(settled.item.status === 'complete' ? 'Checkout session is already paid' : 'Checkout session was cancelled');
  }
  if (action === 'cancel') return seeOther(item.cancel_url);
  // Delivered on every Pay that finds the session open or complete: if crediting failed after
  // the session was marked complete, the next Pay credits it; otherwise it is a replay.
  const mock = mockPaymentsProvider();
  await deliverSelfSignedEvents(mock, [
    mock.checkoutCompleted({
      id: item.session_id,
      customerId: item.customer_id,
      workspaceId: item.workspace_id,
      amountCents: item.amount_cents,
      purpose: item.purpose,
      ...(item.invoice_id ? { invoiceId: item.invoice_id } : {}),
    }),
  ]);
  return seeOther(successUrlOf(item));
}
