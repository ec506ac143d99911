import { badGateway, paymentRequired } from '../../platform/errors.ts';
import { logger } from '../../platform/logger.ts';
import type { OffSessionChargeInput } from './types.ts';

/*
 * The off-session PaymentIntent auto-recharge creates, as one form POST with fetch rather than
 * through the `stripe` package: auto-recharge starts right after a charge, and charges are
 * written by calls, chats and batches, whose bundles must not carry the package (about 240
 * KiB minified; docs/billing.md). Everything else at Stripe goes through the package
 * (stripe.ts). Same rules: the secret key as a bearer token, our Idempotency-Key, 10 s, a
 * decline (HTTP 402 or `card_error`) → 402 `Payment failed: …`, anything else → 502
 * `Payment provider stripe failed: <status> <code>` (Stripe's message to the log only).
 */

const TIMEOUT_MS = 10_000;

export async function chargeOffSessionOverRest(
  stripe: { baseUrl: string; secretKey: string },
  input: OffSessionChargeInput,
): Promise<{ id: string; status: string }> {
  const form = new URLSearchParams({
    amount: String(input.amountCents),
    currency: 'usd',
    customer: input.customerId,
    payment_method: input.paymentMethodId,
    off_session: 'true',
    confirm: 'true',
    'metadata[workspace_id]': input.workspaceId,
    'metadata[purpose]': input.purpose,
  });
  let response: Response;
  try {
    response = await fetch(`${stripe.baseUrl.replace(/\/$/, '')}/v1/payment_intents`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stripe.secretKey}`,
        'content-type': 'application/x-www-form-urlencoded',
        'idempotency-key': input.idempotencyKey,
      },
      body: form.toString(),
      redirect: 'error',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    logger.warn('Stripe unreachable', { error, operation: 'paymentIntents.create' });
    throw badGateway('Payment provider stripe failed: unreachable');
  }
  let json: { id?: unknown; status?: unknown; error?: { type?: string; code?: string; message?: string } };
  try {
    json = (await response.json()) as typeof json;
  } catch {
    throw badGateway(`Payment provider stripe failed: ${response.status} unreadable answer`);
  }
  if (response.ok && typeof json.id === 'string') return { id: json.id, status: String(json.status) };
  const error = json.error ?? {};
  if (response.status === 402 || error.type === 'card_error') throw paymentRequired(`Payment failed: ${error.message ?? 'the card was declined'}`);
  logger.warn('Stripe refused a request', { operation: 'paymentIntents.create', status: response.status, code: error.code, message: error.message });
  throw badGateway(`Payment provider stripe failed: ${response.status}${error.code ? ` ${error.code}` : ''}`);
}
