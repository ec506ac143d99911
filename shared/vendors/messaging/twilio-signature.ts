import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Twilio's request signature (`X-Twilio-Signature`): Base64 of HMAC-SHA1, keyed with the
 * account's auth token, over the full URL Twilio requested followed by every POST
 * parameter's name and value, the names sorted (bytewise); a repeated name contributes each
 * distinct value, sorted, as Twilio's own libraries compute it.
 * https://www.twilio.com/docs/usage/security#validating-requests
 */
export function twilioSignature(authToken: string, url: string, params: URLSearchParams): string {
  const sorted = (values: Iterable<string>) => [...new Set(values)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let data = url;
  for (const name of sorted(params.keys())) for (const value of sorted(params.getAll(name))) data += name + value;
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** Whether `signature` is Twilio's signature of this request (constant-time comparison). */
export function verifyTwilioSignature(authToken: string, url: string, params: URLSearchParams, signature: string | undefined): boolean {
  if (!signature) return false;
  const expected = Buffer.from(twilioSignature(authToken, url, params));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
