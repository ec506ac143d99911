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

/**
 * A CIDR block as `<network address>/<prefix>` (the address in canonicalIp's form, host
 * bits cleared); a bare address is its /32 or /128. Undefined when it is neither.
 */
export function canonicalCidr(text: string): string | undefined {
  const slash = text.indexOf('/');
  const ip = canonicalIp(slash === -1 ? text : text.slice(0, slash));
  const prefixText = slash === -1 ? undefined : text.slice(slash + 1);
  if (!ip || (prefixText !== undefined && !/^[0-9]{1,3}$/.test(prefixText))) return undefined;
  const address = ipaddr.parse(ip);
  const max = address.kind() === 'ipv4' ? 32 : 128;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return undefined;
  const bytes = address.toByteArray();
  for (let bit = prefix; bit < max; bit++) bytes[bit >> 3] = (bytes[bit >> 3] ?? 0) & ~(0x80 >> (bit & 7));
  const network = ipaddr.fromByteArray(bytes);
  return `${network.kind() === 'ipv6' ? (network as ipaddr.IPv6).toRFC5952String() : network.toString()}/${prefix}`;
}
