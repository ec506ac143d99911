import { timingSafeEqual } from 'node:crypto';
import { sha256 } from '../crypto/hash.ts';
import { cookieValue } from './sessions.ts';

/*
 * Browser-bound flows: OIDC and SAML sign-in, OAuth connections. A flow's state goes out
 * through the identity provider or vendor and comes back to a public callback, so whoever
 * holds a started flow's URL could finish it in any browser: an attacker starts a flow in
 * their own workspace and sends the victim its URL, and the victim is signed into the
 * attacker's workspace (login CSRF), or the victim's consent lands in the attacker's
 * workspace. So the start's answer sets a cookie holding the state's SHA-256 and the
 * callback refuses a state whose hash is not that cookie: the attacker knows the hash of
 * their own state, but cannot set a cookie in the victim's browser.
 *
 * The cookie is HttpOnly and Secure, sent to the callback's path only, and lives as long
 * as the state. SameSite=Lax where the callback is a top-level GET navigation (OIDC,
 * OAuth): a Lax cookie goes with the provider's cross-site redirect, a Strict one would
 * not. SameSite=None for the SAML ACS, which the IdP's page reaches with a cross-site POST
 * that carries no Lax cookie; the cookie grants nothing by itself, it only has to match.
 * One browser holds one flow of a kind at a time: a second start replaces the first's cookie.
 *
 * The binding does not stop a whole flow run in the victim's browser: a page of another
 * site can navigate it to a sign-in start of the attacker's workspace, whose identity
 * provider approves at once, and the cookie is then the victim's own. So a start (and an
 * IdP-initiated SAML sign-in) that another site sent the browser to asks the user first
 * (shared/members/sign-in-start.ts): a confirmation page on Parley's origin whose Continue
 * carries a random token, bound to that browser by the same kind of cookie (SameSite=Strict:
 * Continue is a request from Parley's own page).
 */

export interface BrowserFlow {
  /** The cookie's name. */
  name: string;
  /** The callback's path: the only one the cookie is sent to. */
  path: string;
  sameSite: 'Strict' | 'Lax' | 'None';
}

/** As long as the flows' states live (OIDC, OAuth and SAML requests: 10 minutes). */
export const FLOW_COOKIE_MAX_AGE_SECONDS = 600;

const attributes = (flow: BrowserFlow, maxAgeSeconds: number) =>
  `Path=${flow.path}; Max-Age=${maxAgeSeconds}; HttpOnly; Secure; SameSite=${flow.sameSite}`;

/** The Set-Cookie that binds the flow whose state is `state` to the browser that receives it. */
export function flowCookie(flow: BrowserFlow, state: string): string {
  return `${flow.name}=${sha256(state)}; ${attributes(flow, FLOW_COOKIE_MAX_AGE_SECONDS)}`;
}

/** The Set-Cookie that removes the binding once the callback has taken its state. */
export function clearedFlowCookie(flow: BrowserFlow): string {
  return `${flow.name}=; ${attributes(flow, 0)}`;
}

/** Whether the request's cookies hold the binding of `state` (the browser that started it). */
export function startedInThisBrowser(flow: BrowserFlow, cookieHeader: string | undefined, state: string): boolean {
  const presented = cookieValue(cookieHeader, flow.name);
  if (!presented) return false;
  const expected = Buffer.from(sha256(state));
  const given = Buffer.from(presented);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/**
 * `Sec-Fetch-Site` values of a request no page of another site made: Parley's own pages
 * (`same-origin`), a sibling host such as the dashboard's (`same-site`), or the user
 * (`none`: the address bar, a bookmark).
 */
const OWN_SITE = new Set(['same-origin', 'same-site', 'none']);

/**
 * Whether a page of another site may have sent this request: `Sec-Fetch-Site: cross-site`,
 * or no such header (a browser too old to send it, which then cannot be told from one sent
 * by an attacker's page). Used for browser navigations only: a client that is no browser
 * sends no such header either.
 */
export function sentByAnotherSite(headers: Record<string, string | undefined>): boolean {
  return !OWN_SITE.has((headers['sec-fetch-site'] ?? '').trim().toLowerCase());
}
