import ipaddr from 'ipaddr.js';

/**
 * One canonical text per address, so allowlist entries and API Gateway's source IP
 * compare exactly: IPv4 in dotted decimal, IPv4-mapped IPv6 as its IPv4 address, other
 * IPv6 in RFC 5952 form (lower case, longest zero run compressed).
 */
export function canonicalIp(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed !== text || trimmed.includes('%') || trimmed.includes('/')) return undefined;
  if (ipaddr.IPv4.isValidFourPartDecimal(trimmed)) {
    return ipaddr.IPv4.parse(trimmed).toString();
  }
  if (!trimmed.includes(':') || !ipaddr.IPv6.isValid(trimmed)) return undefined;
  const address = ipaddr.IPv6.parse(trimmed);
  return address.isIPv4MappedAddress() ? address.toIPv4Address().toString() : address.toRFC5952String();
}

/** The request's source address as the allowlist and IP limiter see it. */
export function sourceAddress(raw: string | undefined): string {
  return (raw && canonicalIp(raw)) || raw || 'unknown';
}
