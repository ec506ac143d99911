import { isIP } from 'node:net';

/*
 * SIP URIs as the numbers' schemas check them (a termination URI, the connection tests'
 * body) and the OPTIONS probe (sip-options.ts) dials them. Apart from the probe so that the
 * schemas, which every numbers request loads, do not load the probe and the egress guard:
 * those load on the first connection test (shared/numbers/connection-tests/sip-options.ts).
 */

export type SipTransport = 'tcp' | 'udp' | 'tls';

export interface SipUri {
  scheme: 'sip' | 'sips';
  user?: string;
  /** Host without brackets (an IPv6 literal is bare). */
  host: string;
  port?: number;
  /** The `transport` parameter, lower-cased, if the URI has one. */
  transport?: SipTransport;
  /** The URI without its `?headers` part, as the Request-URI. */
  requestUri: string;
}

const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$/;
const USERINFO = /^[A-Za-z0-9\-_.!~*'()&=+$,;?/%]+(?::[A-Za-z0-9\-_.!~*'()&=+$,%]*)?$/;
const PARAM = /^[A-Za-z0-9\-_.!~*'%]+(?:=[A-Za-z0-9\-_.!~*'%[\]/:&+$]+)?$/;

/**
 * Parses `sip:[user@]host[:port][;params][?headers]` (and `sips:`). Returns undefined for
 * anything else, including a transport other than tcp, udp or tls, and `sips:` over UDP.
 */
export function parseSipUri(input: string): SipUri | undefined {
  if (input.length > 2048 || /\s/.test(input) || [...input].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) {
    return undefined;
  }
  const schemeMatch = /^(sips?):(.+)$/i.exec(input);
  if (!schemeMatch) return undefined;
  const scheme = schemeMatch[1]!.toLowerCase() as 'sip' | 'sips';
  const rest = schemeMatch[2]!.split('?')[0]!;
  const at = rest.lastIndexOf('@');
  const user = at >= 0 ? rest.slice(0, at) : undefined;
  if (user !== undefined && !USERINFO.test(user)) return undefined;
  const hostPart = at >= 0 ? rest.slice(at + 1) : rest;
  const [hostPort = '', ...params] = hostPart.split(';');

  let host: string;
  let portText: string | undefined;
  if (hostPort.startsWith('[')) {
    const close = hostPort.indexOf(']');
    if (close < 0) return undefined;
    host = hostPort.slice(1, close);
    if (isIP(host) !== 6) return undefined;
    const after = hostPort.slice(close + 1);
    if (after !== '' && !after.startsWith(':')) return undefined;
    portText = after ? after.slice(1) : undefined;
  } else {
    const colon = hostPort.indexOf(':');
    host = colon >= 0 ? hostPort.slice(0, colon) : hostPort;
    portText = colon >= 0 ? hostPort.slice(colon + 1) : undefined;
    if (isIP(host) !== 4 && !(HOSTNAME.test(host) && !/^[\d.]+$/.test(host))) return undefined;
  }
  let port: number | undefined;
  if (portText !== undefined) {
    if (!/^\d{1,5}$/.test(portText)) return undefined;
    port = Number(portText);
    if (port < 1 || port > 65535) return undefined;
  }

  let transport: SipTransport | undefined;
  for (const param of params) {
    if (!PARAM.test(param)) return undefined;
    const [name, value] = param.split('=');
    if (name!.toLowerCase() === 'transport') {
      const t = value?.toLowerCase();
      if (t !== 'tcp' && t !== 'udp' && t !== 'tls') return undefined;
      transport = t;
    }
  }
  if (scheme === 'sips' && transport === 'udp') return undefined;
  return { scheme, user, host, port, transport, requestUri: `${scheme}:${rest}` };
}

export const isSipUri = (value: string): boolean => parseSipUri(value) !== undefined;

export const SIP_URI_MESSAGE = 'Must be a SIP URI (sip:host[:port][;transport=tcp|udp|tls], or sips:)';

/** The transport a URI asks for: an explicit override, its `transport` parameter, TLS for `sips:`, else TCP. */
export function transportFor(uri: SipUri, override?: SipTransport): SipTransport {
  return override ?? uri.transport ?? (uri.scheme === 'sips' ? 'tls' : 'tcp');
}
