import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import { config, type Config } from '../config.ts';
import { onFirstUse } from '../lazy.ts';

/*
 * The egress guard's rules (docs/security.md, "Egress guard"): which URLs and addresses a
 * destination a user chose may have. Synchronous and without node:http, so that request
 * schemas can judge a URL when it is saved (`destinationUrlRefusal`, through
 * `destinationUrl` in shared/platform/http/schemas.ts) by the very rules the guard applies
 * when it is called (shared/platform/egress/egress.ts, which resolves host names and connects).
 *
 * In production nothing but public unicast addresses passes. In development and tests
 * loopback is allowed (local webhook receivers, test fakes on 127.0.0.1) except the local
 * runtime's own DynamoDB Local and API ports, on any loopback address or any address of
 * this machine. Private, link-local, CGNAT and the rest stay refused everywhere: a local
 * receiver listens on loopback, and a developer's LAN (router, NAS, other services) is
 * exactly what a hostile workflow would want to reach.
 *
 * Some names are judged without DNS, at write and on every request alike: `localhost` and
 * `*.localhost` stand for loopback whatever a resolver says (RFC 6761), and names only a
 * private network resolves (`.internal`, which holds metadata.google.internal and EC2's
 * own names, `.local`, `.home.arpa`, and EC2's `instance-data`) are refused.
 */

export interface EgressPolicy {
  /** Loopback destinations are allowed (development and tests only). */
  allowLoopback: boolean;
  /** Ports of the local runtime's own services (port → what), refused on this machine's addresses. */
  protectedLocalPorts: ReadonlyMap<number, string>;
}

export const HTTP_SCHEMES = ['http:', 'https:'] as const;
export const WEBSOCKET_SCHEMES = ['ws:', 'wss:'] as const;

/** The Fetch standard's bad ports (https://fetch.spec.whatwg.org/#bad-port): fetch() already refused them. */
const BAD_PORTS = new Set([
  0, 1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103, 104, 109, 110,
  111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513, 514, 515, 526, 530, 531, 532,
  540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061,
  6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
]);

/** The destination is not allowed; the message says why and is safe to show to the user. */
export class EgressRefused extends Error {
  constructor(reason: string) {
    super(`Destination not allowed: ${reason}`);
    this.name = 'EgressRefused';
  }
}

// ---------------------------------------------------------------------------------------
// Address policy

/** The policy for a set of settings: production refuses loopback; elsewhere the runtime's own ports are refused. */
export function egressPolicyFor(settings: Pick<Config, 'PARLEY_ENV' | 'DYNAMODB_ENDPOINT' | 'PORT'>): EgressPolicy {
  if (settings.PARLEY_ENV === 'production') return { allowLoopback: false, protectedLocalPorts: new Map() };
  const ports = new Map<number, string>();
  if (settings.DYNAMODB_ENDPOINT) {
    try {
      const endpoint = new URL(settings.DYNAMODB_ENDPOINT);
      ports.set(Number(endpoint.port || (endpoint.protocol === 'https:' ? 443 : 80)), 'DynamoDB Local');
    } catch {
      // Not a URL: the DynamoDB client would fail on it too.
    }
  }
  if (settings.PORT > 0 && !ports.has(settings.PORT)) ports.set(settings.PORT, 'API');
  return { allowLoopback: true, protectedLocalPorts: ports };
}

/** This process's policy, from its settings (made on first use, when the settings are read). */
export const egressPolicy: EgressPolicy = onFirstUse(() => egressPolicyFor(config));

/**
 * Adds a port the local runtime learns only once it listens (the API on `PORT=0`, as tests
 * and `startLocalServer({port: 0})` use) to this process's refused ports. No effect in
 * production, where no local service listens.
 */
export function protectLocalPort(port: number, name: string): void {
  if (egressPolicy.allowLoopback && port > 0) (egressPolicy.protectedLocalPorts as Map<number, string>).set(port, name);
}

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

/**
 * The special-purpose range an address falls in, by ipaddr.js's `range()` names, or
 * `unicast` for a public address. IPv4 inside IPv6 is judged as the IPv4 address;
 * IPv6 outside 2000::/3 that ipaddr.js calls unicast is `reserved`. Not an IP: `invalid`.
 */
function addressRange(text: string): string {
  const bare = unbracketed(text);
  if (!isIP(bare)) return 'invalid';
  let address: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    address = ipaddr.parse(bare);
  } catch {
    return 'invalid';
  }
  if (address.kind() === 'ipv4') return address.range();
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  const parts = v6.parts;
  const embedded = (high: number, low: number) =>
    new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]).range();
  switch (range) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return embedded(parts[6]!, parts[7]!);
    case 'rfc6052': // NAT64: 64:ff9b::a.b.c.d is translated to a.b.c.d; the RFC 8215 local-use block stays reserved
      return v6.match(NAT64_WELL_KNOWN) ? embedded(parts[6]!, parts[7]!) : 'reserved';
    case '6to4': // 2002:AABB:CCDD::/48 is routed through a.b.c.d
      return embedded(parts[1]!, parts[2]!);
    case 'unicast':
      return v6.match(GLOBAL_UNICAST_V6) ? 'unicast' : 'reserved';
    default:
      return range;
  }
}

const RANGE_WORDS: Record<string, string> = {
  loopback: 'a loopback',
  private: 'a private',
  linkLocal: 'a link-local',
  uniqueLocal: 'a unique-local',
  carrierGradeNat: 'a carrier-grade NAT (shared)',
  multicast: 'a multicast',
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  invalid: 'an invalid',
};

function isOwnAddress(address: string): boolean {
  const canonical = ipaddr.process(address).toString();
  return Object.values(networkInterfaces()).some((list) =>
    (list ?? []).some((entry) => {
      try {
        return ipaddr.process(entry.address).toString() === canonical;
      } catch {
        return false;
      }
    }),
  );
}

/**
 * Why `address:port` may not be reached under `policy` (e.g. `a private address`), or
 * undefined when it may.
 */
export function addressRefusal(address: string, port: number, policy: EgressPolicy = egressPolicy): string | undefined {
  const range = addressRange(address);
  const own = policy.protectedLocalPorts.get(port);
  if (range === 'loopback' && policy.allowLoopback) return own ? `the local runtime's own ${own}` : undefined;
  if (range !== 'unicast') return `${RANGE_WORDS[range] ?? 'a reserved'} address`;
  // A public address of this machine reaches the local runtime's services as loopback does.
  if (own && policy.allowLoopback && isOwnAddress(address)) return `the local runtime's own ${own}`;
  return undefined;
}

// ---------------------------------------------------------------------------------------
// Hosts judged without DNS

const unbracketed = (host: string) => (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host);

/** What `localhost` stands for, whatever a resolver answers (RFC 6761 §6.3). */
const LOOPBACK_NAME_ADDRESSES = ['127.0.0.1', '::1'];
/** Suffixes of names only a private network resolves (ICANN's private-use `.internal`, mDNS `.local`, RFC 8375 `.home.arpa`). */
const PRIVATE_NAME_SUFFIXES = ['.internal', '.local', '.home.arpa'];
/** Single names that stand for the instance metadata service where they resolve (EC2's search domain). */
const PRIVATE_NAMES = new Set(['instance-data']);

const ownRefusal = (refusal: string) => refusal.startsWith('the local runtime');

/**
 * Why `host:port` is refused by what the host itself says, or undefined when only DNS can
 * tell (a public-looking name) or it passes: an IP literal is judged as the address it is,
 * `localhost` as loopback, a private-network name refused. The message is the one the guard
 * gives on a request (`10.0.0.1 is a private address`, `localhost:8000 resolves to the local
 * runtime's own DynamoDB Local`), without `Destination not allowed: `.
 */
export function hostRefusal(host: string, port: number, policy: EgressPolicy = egressPolicy): string | undefined {
  const bare = unbracketed(host);
  if (isIP(bare)) {
    const refusal = addressRefusal(bare, port, policy);
    return refusal && `${bare.includes(':') ? `[${bare}]` : bare}${ownRefusal(refusal) ? `:${port}` : ''} is ${refusal}`;
  }
  // A name's one trailing dot (the root) changes nothing for a resolver.
  const name = bare.toLowerCase().replace(/\.$/, '');
  if (name === 'localhost' || name.endsWith('.localhost')) {
    for (const address of LOOPBACK_NAME_ADDRESSES) {
      const refusal = addressRefusal(address, port, policy);
      if (refusal) return `${bare}${ownRefusal(refusal) ? `:${port}` : ''} resolves to ${refusal}`;
    }
    return undefined;
  }
  if (PRIVATE_NAMES.has(name) || PRIVATE_NAME_SUFFIXES.some((suffix) => name.endsWith(suffix))) {
    return `${bare} is a private-network name`;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------
// URLs

/** Parses and checks a URL's form: scheme, no credentials, not a bad port. */
export function checkUrl(input: string | URL, schemes: readonly string[] = HTTP_SCHEMES): URL {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new EgressRefused('not a valid URL');
  }
  if (!schemes.includes(url.protocol)) {
    throw new EgressRefused(`${url.protocol} URLs are not allowed (${schemes.join(' or ')} only)`);
  }
  if (url.username || url.password) throw new EgressRefused('URLs with credentials are not allowed; send them in a header');
  if (BAD_PORTS.has(portOf(url))) throw new EgressRefused(`port ${portOf(url)} is not allowed`);
  return url;
}

/** The URL's port, or its scheme's default. */
export function portOf(url: URL): number {
  if (url.port) return Number(url.port);
  return url.protocol === 'https:' || url.protocol === 'wss:' ? 443 : 80;
}

/**
 * Why the guard would refuse a request to `input`, judged without DNS (the URL's form, then
 * `hostRefusal`): the full message (`Destination not allowed: …`), or undefined when the
 * URL passes as far as can be told before its host name is resolved. What saves a URL for
 * Parley to call later checks it with this; the guard checks it again, with DNS, on every
 * request (a name can be pointed elsewhere at any time).
 */
export function destinationUrlRefusal(
  input: string,
  schemes: readonly string[] = HTTP_SCHEMES,
  policy: EgressPolicy = egressPolicy,
): string | undefined {
  let url: URL;
  try {
    url = checkUrl(input, schemes);
  } catch (error) {
    if (error instanceof EgressRefused) return error.message;
    throw error;
  }
  const refusal = hostRefusal(url.hostname, portOf(url), policy);
  return refusal && new EgressRefused(refusal).message;
}
