import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { canonicalIp } from '../platform/auth/ip.ts';
import { decryptSecret } from '../platform/crypto/envelope.ts';
import { inboundAddressesFor } from './inbound-addresses.ts';
import { passwordContext } from './phone-numbers/index.ts';
import { ConditionFailed, table } from '../platform/store/table.ts';
import { digestNonces, phoneNumberClaims, phoneNumbers, type DigestNonceItem, type NumberItem } from './store.ts';
import { sipUriHost } from './validation.ts';

/*
 * Who may send a call to a number (number squatting). Any workspace can
 * import any E.164 number it claims to hold, so the claim alone must not route calls: an
 * INVITE for an imported number is admitted only
 *   - from the number's inbound addresses: its `allowed_inbound_addresses`; else, for a
 *     carrier (Twilio) number, the carrier's signalling blocks (telephony rule 2); else the
 *     addresses its termination URI resolves to, i.e. the trunk the owner pointed it at; or
 *   - with its trunk credentials: a SIP digest answer (RFC 3261 §22, RFC 7616/8760) for
 *     its `auth_username` and password, to a nonce this module issued (single use, 5 min).
 * A squatter who imports someone else's number can therefore only receive calls from a
 * trunk the squatter controls, never the calls the real owner's carrier sends.
 *
 * The SIP edge (the voice worker) calls `admitInboundInvite` for each INVITE and turns the
 * decision into its answer: 404, 403, or 407 with the challenge.
 */

export const DIGEST_NONCE_TTL_SECONDS = 300;
const DIGEST_REALM = 'parley';

export type Resolver = (host: string) => Promise<string[]>;
const systemResolver: Resolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address);

export interface InboundInvite {
  /** The E.164 number called (the Request-URI or To user part). */
  calledNumber: string;
  /** The address the INVITE came from, as the SIP edge saw it on the socket. */
  sourceIp: string;
  method?: string;
  /** The `Proxy-Authorization` (or `Authorization`) header, when the sender answered a challenge. */
  authorization?: string;
}

export type InboundDecision =
  | { admitted: true; workspaceId: string; number: NumberItem; by: 'address' | 'credentials' }
  | { admitted: false; status: 404 | 403; reason: string }
  | { admitted: false; status: 407; reason: string; challenge: string };

/** Where a number accepts INVITEs from, resolved now: CIDR blocks. */
async function inboundSources(number: NumberItem, resolve: Resolver = systemResolver): Promise<string[]> {
  const configured = inboundAddressesFor(number);
  if (configured) return configured;
  const host = number.termination_uri ? sipUriHost(number.termination_uri) : undefined;
  if (!host) return [];
  const literal = canonicalIp(host);
  const addresses = literal ? [literal] : await resolve(host).catch(() => [] as string[]);
  return addresses.flatMap((address) => {
    const ip = canonicalIp(address);
    return ip ? [`${ip}/${ip.includes(':') ? 128 : 32}`] : [];
  });
}

function addressInBlocks(address: string, blocks: readonly string[]): boolean {
  const ip = canonicalIp(address);
  if (!ip) return false;
  const parsed = ipaddr.parse(ip);
  return blocks.some((block) => {
    try {
      const [network, prefix] = ipaddr.parseCIDR(block);
      return network.kind() === parsed.kind() && parsed.match(network, prefix);
    } catch {
      return false;
    }
  });
}

export async function admitInboundInvite(invite: InboundInvite, options: { resolve?: Resolver; nowMs?: number } = {}): Promise<InboundDecision> {
  const nowMs = options.nowMs ?? Date.now();
  const claim = await phoneNumberClaims.get(invite.calledNumber);
  const workspaceId = claim?.workspace_id;
  const number = workspaceId ? await phoneNumbers.get(workspaceId, invite.calledNumber) : undefined;
  if (!workspaceId || !number) return { admitted: false, status: 404, reason: `${invite.calledNumber} is not a number here` };

  // Numbers bought through the platform arrive over the platform's own carrier trunk.
  const sources = await inboundSources(number, options.resolve);
  if (addressInBlocks(invite.sourceIp, sources)) return { admitted: true, workspaceId, number, by: 'address' };

  const hasCredentials = number.auth_username !== undefined && number.auth_password_encrypted !== undefined;
  if (!hasCredentials) {
    return { admitted: false, status: 403, reason: `${invite.sourceIp} is not an inbound address of ${invite.calledNumber}` };
  }
  const answer = invite.authorization ? parseDigest(invite.authorization) : undefined;
  if (answer && (await digestValid(answer, number, workspaceId, invite.method ?? 'INVITE', nowMs))) {
    return { admitted: true, workspaceId, number, by: 'credentials' };
  }
  return {
    admitted: false,
    status: 407,
    reason: answer ? 'The credentials or the nonce were not valid' : 'Credentials required',
    challenge: await issueChallenge(invite.calledNumber, nowMs),
  };
}

/** A fresh single-use nonce bound to the called number, as a `Proxy-Authenticate` value. */
async function issueChallenge(calledNumber: string, nowMs: number): Promise<string> {
  const nonce = randomBytes(24).toString('base64url');
  const item: DigestNonceItem = {
    ...digestNonces.key(nonce),
    called_number: calledNumber,
    issued_at: nowMs,
    expires_at: Math.ceil(nowMs / 1000) + DIGEST_NONCE_TTL_SECONDS,
  };
  await table.put({ Item: item });
  return `Digest realm="${DIGEST_REALM}", nonce="${nonce}", algorithm=SHA-256, qop="auth"`;
}

export interface DigestAnswer {
  username?: string;
  realm?: string;
  nonce?: string;
  uri?: string;
  response?: string;
  algorithm?: string;
  qop?: string;
  nc?: string;
  cnonce?: string;
}

/**
 * `Digest k=v, k="v", …` → its fields. A hand-written scanner, not a pattern: the header
 * comes from the network, and a single pass over it is linear by construction.
 */
export function parseDigest(header: string): DigestAnswer | undefined {
  if (header.length > 4096 || !/^digest\s/i.test(header)) return undefined;
  const fields: Record<string, string> = {};
  let i = header.indexOf(' ') + 1;
  while (i < header.length) {
    while (i < header.length && (header[i] === ' ' || header[i] === ',' || header[i] === '\t')) i++;
    const eq = header.indexOf('=', i);
    if (eq === -1) break;
    const name = header.slice(i, eq).trim().toLowerCase();
    i = eq + 1;
    let value: string;
    if (header[i] === '"') {
      const close = header.indexOf('"', i + 1);
      if (close === -1) return undefined;
      value = header.slice(i + 1, close);
      i = close + 1;
    } else {
      const comma = header.indexOf(',', i);
      const end = comma === -1 ? header.length : comma;
      value = header.slice(i, end).trim();
      i = end;
    }
    if (name in fields) return undefined;
    fields[name] = value;
  }
  return fields;
}

const hashFor = (algorithm: string | undefined) => {
  const name = (algorithm ?? 'MD5').toUpperCase();
  if (name === 'MD5') return 'md5';
  if (name === 'SHA-256') return 'sha256';
  return undefined;
};

/** The expected digest `response` (RFC 7616 §3.4.1, qop=auth or none). */
function digestResponse(answer: DigestAnswer, password: string, method: string): string | undefined {
  const algorithm = hashFor(answer.algorithm);
  if (!algorithm) return undefined;
  const h = (text: string) => createHash(algorithm).update(text).digest('hex');
  const ha1 = h(`${answer.username}:${answer.realm}:${password}`);
  const ha2 = h(`${method}:${answer.uri}`);
  if (answer.qop === 'auth') return h(`${ha1}:${answer.nonce}:${answer.nc}:${answer.cnonce}:auth:${ha2}`);
  if (answer.qop === undefined) return h(`${ha1}:${answer.nonce}:${ha2}`);
  return undefined;
}

async function digestValid(answer: DigestAnswer, number: NumberItem, workspaceId: string, method: string, nowMs: number): Promise<boolean> {
  if (!answer.nonce || !answer.response || answer.realm !== DIGEST_REALM || answer.username !== number.auth_username) return false;
  const password = await decryptSecret(number.auth_password_encrypted!, passwordContext(workspaceId, number.phone_number));
  const expected = digestResponse(answer, password, method);
  if (!expected || expected.length !== answer.response.length) return false;
  if (!timingSafeEqual(Buffer.from(expected), Buffer.from(answer.response.toLowerCase()))) return false;
  // The nonce is spent by this answer: a replayed INVITE finds it gone.
  try {
    await table.delete({
      Key: digestNonces.key(answer.nonce),
      ConditionExpression: 'called_number = :number AND expires_at >= :now',
      ExpressionAttributeValues: { ':number': number.phone_number, ':now': Math.floor(nowMs / 1000) },
    });
    return true;
  } catch (error) {
    if (error instanceof ConditionFailed) return false;
    throw error;
  }
}
