import ipaddr from 'ipaddr.js';
import { isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import * as z from 'zod';
import { canonicalIp } from '../auth/ip.ts';
import { wire } from '../naming.ts';

/*
 * Strict checks for what numbers carry: E.164 numbers, ISO 3166 alpha-2 countries, inbound
 * addresses (IPs or CIDR blocks, canonicalised) and SIP URIs. Factories, so nothing is
 * built at module load.
 */

/** `+`, a non-zero digit, at most 15 digits in all, ASCII only, nothing before or after. */
const E164_SHAPE = /^\+[1-9][0-9]{1,14}$/;

/** The number in E.164 when it is a valid, dialable number exactly as written; otherwise undefined. */
export function canonicalE164(text: string): string | undefined {
  if (!E164_SHAPE.test(text)) return undefined;
  const parsed = parsePhoneNumberFromString(text);
  if (!parsed || !parsed.isValid() || parsed.number !== text) return undefined;
  return parsed.number;
}

export function prettyNumber(e164: string): string {
  return parsePhoneNumberFromString(e164)?.formatInternational() ?? e164;
}

export function countryOfNumber(e164: string): string | undefined {
  return parsePhoneNumberFromString(e164)?.country;
}

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
  const slash = text.indexOf('/');
  if (slash === -1) return canonicalIp(text);
  const ip = canonicalIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!ip || !/^[0-9]{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const address = ipaddr.parse(ip);
  const max = address.kind() === 'ipv4' ? 32 : 128;
  if (prefix > max) return undefined;
  const bytes = address.toByteArray();
  for (let bit = prefix; bit < max; bit++) bytes[bit >> 3] = (bytes[bit >> 3] ?? 0) & ~(0x80 >> (bit & 7));
  const network = ipaddr.fromByteArray(bytes);
  const networkText = network.kind() === 'ipv6' ? (network as ipaddr.IPv6).toRFC5952String() : network.toString();
  return `${networkText}/${prefix}`;
}

export const MAX_INBOUND_ADDRESSES = 50;

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

const HOST_LABEL = /^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$/;

function validHost(host: string): boolean {
  if (host.startsWith('[') && host.endsWith(']')) return ipaddr.IPv6.isValid(host.slice(1, -1));
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) return true;
  if (host.length > 253) return false;
  const labels = host.split('.');
  return labels.every((label) => HOST_LABEL.test(label)) && !/^[0-9]+$/.test(labels.at(-1) ?? '');
}

/**
 * The host of a termination URI: `sip:`/`sips:` URIs (`sip:[user@]host[:port][;params]`) or
 * a bare `host[:port]`, the form the compatible client's own example uses
 * (`someuri.pstn.twilio.com`). Undefined when it is neither.
 */
export function sipUriHost(text: string): string | undefined {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\s\u0000-\u001f\u007f]/.test(text) || text.length === 0) return undefined;
  let rest = text;
  const scheme = /^(sips?):/i.exec(rest);
  if (scheme) rest = rest.slice(scheme[0].length);
  else if (rest.includes(':') && /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(rest)) return undefined;
  if (!scheme && /[@;?]/.test(rest)) return undefined;
  const at = rest.lastIndexOf('@');
  if (at !== -1) {
    if (at === 0 || /[\s/]/.test(rest.slice(0, at))) return undefined;
    rest = rest.slice(at + 1);
  }
  const end = rest.search(/[;?]/);
  const hostPort = end === -1 ? rest : rest.slice(0, end);
  const match = /^(\[[^\]]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/.exec(hostPort);
  if (!match?.[1]) return undefined;
  if (match[2] !== undefined && (Number(match[2]) < 1 || Number(match[2]) > 65535)) return undefined;
  return validHost(match[1]) ? match[1].toLowerCase() : undefined;
}

export const sipUri = () =>
  z
    .string()
    .max(512)
    .refine((value) => sipUriHost(value) !== undefined, 'Must be a SIP URI (sip:host[:port] or host[:port], e.g. example.pstn.twilio.com)');

/** Telephony rule 1: a termination URI on a `*.pstn.twilio.com` host is a Twilio trunk. */
export function isTwilioTerminationHost(host: string): boolean {
  const suffix = `.pstn.${wire.carrierA}.com`;
  return host.endsWith(suffix) && host.length > suffix.length;
}
