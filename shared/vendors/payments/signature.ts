import { createHmac, timingSafeEqual } from 'node:crypto';

/*
 * Stripe's webhook signature (the `Stripe-Signature` header): `t=<unix seconds>,v1=<hex>`
 * with one or more v1 values, each HMAC-SHA256 over `<t>.<raw body>` keyed by the endpoint's
 * signing secret (`whsec_…`). What `stripe.webhooks.constructEvent` checks, without the
 * package: the scheme is a few lines and the package would sit in every bundle that charges.
 */

/** How old a signed event may be (Stripe's default tolerance). */
export const STRIPE_SIGNATURE_TOLERANCE_SECONDS = 300;

export function stripeSignatureHeader(payload: string, secret: string, timestampSeconds: number): string {
  const signature = createHmac('sha256', secret).update(`${timestampSeconds}.${payload}`, 'utf8').digest('hex');
  return `t=${timestampSeconds},v1=${signature}`;
}

export type SignatureProblem = 'missing' | 'malformed' | 'mismatch' | 'too_old';

/** Undefined when the header signs `payload` with `secret` within the tolerance, else what is wrong. */
export function stripeSignatureProblem(
  payload: string,
  header: string | undefined,
  secret: string,
  nowSeconds: number,
  toleranceSeconds = STRIPE_SIGNATURE_TOLERANCE_SECONDS,
): SignatureProblem | undefined {
  if (!header) return 'missing';
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [name, value] = part.split('=', 2).map((piece) => piece.trim());
    if (name === 't' && value && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    if (name === 'v1' && value && /^[0-9a-f]{64}$/i.test(value)) signatures.push(value.toLowerCase());
  }
  if (timestamp === undefined || signatures.length === 0) return 'malformed';
  const expected = Buffer.from(createHmac('sha256', secret).update(`${timestamp}.${payload}`, 'utf8').digest('hex'));
  const matches = signatures.some((signature) => timingSafeEqual(Buffer.from(signature), expected));
  if (!matches) return 'mismatch';
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return 'too_old';
  return undefined;
}
