import { isSupportedCountry } from '../platform/telephony/phone.ts';
import { canonicalE164 } from '../platform/telephony/phone.ts';
import * as z from 'zod';
import { canonicalCidr, canonicalIp } from '../platform/auth/ip.ts';
import { wire } from '../platform/naming.ts';
import { hostRefusal } from '../platform/egress/egress-rules.ts';
import { parseSipUri } from './sip-uri.ts';

/*
 * Strict checks for what numbers carry: E.164 numbers, ISO 3166 alpha-2 countries, inbound
 * addresses (IPs or CIDR blocks, canonicalised) and SIP URIs. Factories, so nothing is
 * built at module load.
 */

export {   prettyNumber } from '../platform/telephony/phone.ts';

export const e164 = () =>
  z
    .string()
    .max(32)
    .refine((value) => canonicalE164(value) !== undefined, 'Must be a valid phone number in E.164 format (+ and up to 15 digits, e.g. +14155550123)');

export const isoCountry = () =>
  z
    .string()
    .regex(/^[A-Z]{2}$/, 'Must be an ISO 3166-1 alpha-2 country code (two capital letters)')
    .refine((code) => isSupportedCountry(code), 'Must be an ISO 3166-1 alpha-2 country code');

export const countryList = () =>
  z
    .array(isoCountry())
    .max(250)
    .transform((codes) => [...new Set(codes)]);

/** An IP address (canonical text) or a CIDR block (its network address and prefix). */
export function canonicalAddress(text: string): string | undefined {
  return text.includes('/') ? canonicalCidr(text) : canonicalIp(text);
}

const MAX_INBOUND_ADDRESSES = 50;

export const addressList = () =>
  z
    .array(
      z
        .string()
        .max(64)
        .transform((value, ctx) => {
          const canonical = canonicalAddress(value);
          if (canonical === undefined) {
            ctx.addIssue({ code: 'custom', message: 'Must be an IPv4 or IPv6 address or a CIDR block (e.g. 203.0.113.0/24)' });
            return z.NEVER;
          }
          return canonical;
        }),
    )
    .max(MAX_INBOUND_ADDRESSES)
    .transform((addresses) => [...new Set(addresses)]);

/**
 * The host of a termination URI: a SIP URI (`sip:[user@]host[:port][;params]`, or `sips:`,
 * parsed by shared/numbers/sip-uri.ts, which the connection tests use too) or a bare
 * `host[:port]`, the form the compatible client's own example uses
 * (`someuri.pstn.twilio.com`). Undefined when it is neither.
 */
export function sipUriHost(text: string): string | undefined {
  if (/^sips?:/i.test(text)) return parseSipUri(text)?.host.toLowerCase();
  if (!/^[^@;?]+$/.test(text)) return undefined;
  return parseSipUri(`sip:${text}`)?.host.toLowerCase();
}

/**
 * A termination URI: where the media server sends this workspace's calls. Its host is held to
 * the egress guard's rules when saved, as a webhook URL is (`hostRefusal`: an internal address
 * in any spelling, `localhost`, a private-network name), since the SIP service dials it from
 * inside the deployment; a name is judged as far as it can be without DNS.
 */
export const sipUri = () =>
  z
    .string()
    .max(512)
    .superRefine((value, context) => {
      const uri = /^sips?:/i.test(value) ? parseSipUri(value) : /^[^@;?]+$/.test(value) ? parseSipUri(`sip:${value}`) : undefined;
      if (!uri) {
        context.addIssue({ code: 'custom', message: 'Must be a SIP URI (sip:host[:port] or host[:port], e.g. example.pstn.twilio.com)' });
        return;
      }
      const refusal = hostRefusal(uri.host, uri.port ?? (uri.scheme === 'sips' || uri.transport === 'tls' ? 5061 : 5060));
      if (refusal) context.addIssue({ code: 'custom', message: `Destination not allowed: ${refusal}` });
    });

/** Telephony rule 1: a termination URI on a `*.pstn.twilio.com` host is a Twilio trunk. */
export function isTwilioTerminationHost(host: string): boolean {
  const suffix = `.pstn.${wire.carrierA}.com`;
  return host.endsWith(suffix) && host.length > suffix.length;
}
