import { createHash, X509Certificate } from 'node:crypto';
import type * as NodeSaml from '@node-saml/node-saml';
import type { CacheProvider, SAML } from '@node-saml/node-saml';
import { clearedFlowCookie, flowCookie, FLOW_COOKIE_MAX_AGE_SECONDS, startedInThisBrowser, type BrowserFlow } from '../platform/auth/flow-binding.ts';
import { sessionCookie } from '../platform/auth/sessions.ts';
import { sha256 } from '../platform/crypto/hash.ts';
import { MediaResponse } from '../platform/http/handler.ts';
import type { Principal } from '../platform/auth/gate.ts';
import type { Role } from '../platform/auth/roles.ts';
import { badRequest, conflict, Unauthorized } from '../platform/errors.ts';
import { keys } from '../platform/store/keys.ts';
import { table, TransactionCancelled } from '../platform/store/table.ts';
import { auditOp } from './members.ts';
import { withCookie } from './sessions.ts';
import { confirmationFlow, confirmationPage, hostOf, newConfirmation } from './sign-in-confirmation.ts';
import { assertAllowedDomain, dashboardUrl, DEFAULT_RETURN_TO, publicBase, signInByEmail, type StartedSignIn } from './sso.ts';
import {
  recordSamlAssertion,
  recordSamlConfirmation,
  recordSamlRequest,
  samlConfigs,
  takeSamlConfirmation,
  takeSamlRequest,
  type SamlConfigItem,
  type SamlRequestItem,
} from './store.ts';
import { loadOnce } from '../platform/lazy.ts';

/*
 * SAML 2.0 sign-in (HTTP-POST binding) with @node-saml/node-saml: the
 * assertion must be signed by the configured IdP certificate (wantAssertionsSigned), its
 * audience must be our SP entity ID, its recipient our ACS URL, its times within 2 minutes'
 * skew; each assertion ID is accepted once (a conditional Put kept until it expires). An
 * answer to our own AuthnRequest (SP-initiated) must come back to the browser that sent
 * it (a cookie holding the request ID's hash: shared/platform/auth/flow-binding.ts). An
 * IdP-initiated assertion answers no request and cannot be bound to a browser: a browser
 * that posts one is asked to confirm before it is signed in (shared/members/sign-in-confirmation.ts),
 * and a workspace can turn it off (`allow_idp_initiated`).
 * The package (about 650 KiB minified with its XML and crypto dependencies) is loaded on
 * the first sign-in or AuthnRequest, not at import: a literal `import()` is its own chunk
 * when the bundle is split, so the members function's cold start does not load it.
 */

const loadNodeSaml = loadOnce((): Promise<typeof NodeSaml> => import('@node-saml/node-saml'));

const CLOCK_SKEW_MS = 2 * 60 * 1000;
const samlSpEntityId = (workspaceId: string) => `${publicBase()}/auth/saml/${workspaceId}`;
const samlAcsUrl = (workspaceId: string) => `${publicBase()}/auth/saml/${workspaceId}/acs`;

/**
 * The SP-initiated sign-in's binding cookie. The IdP's page reaches the ACS with a
 * cross-site POST, which carries no Lax cookie: SameSite=None, limited to the ACS's path.
 */
const samlFlow = (workspaceId: string): BrowserFlow => ({ name: 'parley_saml_flow', path: new URL(samlAcsUrl(workspaceId)).pathname, sameSite: 'None' });

class SamlRefused extends Unauthorized {
  constructor(reason: string) {
    super();
    Object.defineProperty(this, 'message', { value: `SAML sign-in refused: ${reason}` });
  }
}

function toSamlConfig(workspaceId: string, item: SamlConfigItem | undefined) {
  return {
    enabled: item !== undefined,
    idp_entity_id: item?.idp_entity_id ?? null,
    sso_url: item?.sso_url ?? null,
    certificate_fingerprint: item?.certificate_fingerprint ?? null,
    allowed_domains: item?.allowed_domains ?? [],
    default_role: item?.default_role ?? ('member' as const),
    sp_entity_id: samlSpEntityId(workspaceId),
    acs_url: samlAcsUrl(workspaceId),
    allow_idp_initiated: item?.allow_idp_initiated !== false,
    updated_timestamp: item?.updated_timestamp ?? null,
  };
}

export async function getSaml(workspaceId: string) {
  return toSamlConfig(workspaceId, await samlConfigs.get(workspaceId));
}

/** The PEM of a certificate given as PEM or bare base64 DER; 400 when it is not one. */
function certificatePem(text: string): { pem: string; fingerprint: string } {
  const body = text.replace(/-----(?:BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  try {
    const der = Buffer.from(body, 'base64');
    const certificate = new X509Certificate(der);
    const lines = certificate.raw.toString('base64').match(/.{1,64}/g) ?? [];
    return {
      pem: `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`,
      fingerprint: createHash('sha256').update(certificate.raw).digest('hex'),
    };
  } catch {
    throw badRequest('certificate: Must be an X.509 certificate (PEM or base64 DER)');
  }
}

/** What IdP metadata names: entity ID, HTTP-Redirect/POST SSO URL, signing certificate. */
function readMetadata(xml: string): { entityId?: string; ssoUrl?: string; certificate?: string } {
  const attribute = (tag: string, name: string) => {
    const start = xml.search(new RegExp(`<(?:\\w+:)?${tag}\\b`));
    if (start < 0) return undefined;
    const end = xml.indexOf('>', start);
    const element = xml.slice(start, end);
    const match = new RegExp(`\\b${name}="([^"]*)"`).exec(element);
    return match?.[1];
  };
  const certStart = xml.search(/<(?:\w+:)?X509Certificate>/);
  let certificate: string | undefined;
  if (certStart >= 0) {
    const open = xml.indexOf('>', certStart) + 1;
    const close = xml.indexOf('<', open);
    certificate = xml.slice(open, close).trim();
  }
  return { entityId: attribute('EntityDescriptor', 'entityID'), ssoUrl: attribute('SingleSignOnService', 'Location'), certificate };
}

export async function putSaml(
  principal: Principal,
  input: { idp_entity_id?: string; sso_url?: string; certificate?: string; metadata_xml?: string; allowed_domains: string[]; default_role: Role; allow_idp_initiated: boolean },
) {
  const workspaceId = principal.workspaceId;
  const metadata = input.metadata_xml ? readMetadata(input.metadata_xml) : {};
  const entityId = input.idp_entity_id ?? metadata.entityId;
  const ssoUrl = input.sso_url ?? metadata.ssoUrl;
  const certificate = input.certificate ?? metadata.certificate;
  const missing = [!entityId && 'idp_entity_id', !ssoUrl && 'sso_url', !certificate && 'certificate'].filter(Boolean);
  if (missing.length) throw badRequest(missing.map((field) => `${field}: Required (or in metadata_xml)`).join('; '));
  const { pem, fingerprint } = certificatePem(certificate!);
  const item: SamlConfigItem = {
    ...keys.samlConfig(workspaceId),
    idp_entity_id: entityId!,
    sso_url: ssoUrl!,
    certificate: pem,
    certificate_fingerprint: fingerprint,
    allowed_domains: [...new Set(input.allowed_domains)],
    default_role: input.default_role,
    allow_idp_initiated: input.allow_idp_initiated,
    updated_timestamp: Date.now(),
  };
  await table.transact([
    { Put: { Item: item } },
    auditOp(workspaceId, principal, { action: 'saml.update', target: { type: 'saml', id: workspaceId }, changes: ['idp_entity_id', 'sso_url', 'certificate', 'allowed_domains', 'default_role', 'allow_idp_initiated'] }),
  ]);
  return toSamlConfig(workspaceId, item);
}

export async function deleteSaml(principal: Principal): Promise<void> {
  await table.transact([
    samlConfigs.removeOp(principal.workspaceId),
    auditOp(principal.workspaceId, principal, { action: 'saml.delete', target: { type: 'saml', id: principal.workspaceId }, changes: [] }),
  ]).catch((error: unknown) => {
    // The config's removal is conditional on it existing: only that condition failing is "not
    // configured"; a lost race is the caller's to retry; a store that did not answer stays a 503.
    if (!(error instanceof TransactionCancelled)) throw error;
    throw error.failedAt.includes(0) ? badRequest('SAML is not configured') : conflict('The SAML settings are being changed by another request; retry');
  });
}

type Parsed = { Assertion?: { $?: { ID?: string }; Subject?: { SubjectConfirmation?: { SubjectConfirmationData?: { $?: { Recipient?: string; NotOnOrAfter?: string } }[] }[] }[]; Conditions?: { $?: { NotOnOrAfter?: string } }[] } };

const REQUEST_TTL_MS = 10 * 60 * 1000;

/**
 * node-saml's request cache, on the table: `saveAsync` records the AuthnRequest ID we send
 * (its hash, 10 minutes); `getAsync` takes it (a conditional delete: once), remembering
 * what it took for the rest of this validation (node-saml asks for the Response's and the
 * SubjectConfirmation's InResponseTo in turn).
 */
function requestCache(workspaceId: string, pending?: { respond: 'json' | 'redirect'; returnTo: string }) {
  const taken = new Map<string, SamlRequestItem | undefined>();
  const saved: string[] = [];
  const cache: CacheProvider = {
    async saveAsync(key, value) {
      const nowMs = Date.now();
      saved.push(key);
      await recordSamlRequest(workspaceId, sha256(key), {
        respond: pending?.respond ?? 'json',
        return_to: pending?.returnTo ?? DEFAULT_RETURN_TO,
        issue_instant: value,
        expires_timestamp: nowMs + REQUEST_TTL_MS,
        expires_at: Math.floor((nowMs + REQUEST_TTL_MS) / 1000),
      });
      return { value, createdAt: nowMs };
    },
    async getAsync(key) {
      if (!taken.has(key)) taken.set(key, await takeSamlRequest(workspaceId, sha256(key), Date.now()));
      return taken.get(key)?.issue_instant ?? null;
    },
    async removeAsync() {
      return null;
    },
  };
  return { cache, taken, saved };
}

async function samlClient(workspaceId: string, item: SamlConfigItem, cacheProvider: CacheProvider): Promise<SAML> {
  const { SAML, ValidateInResponseTo } = await loadNodeSaml();
  return new SAML({
    idpCert: item.certificate,
    issuer: samlSpEntityId(workspaceId),
    audience: samlSpEntityId(workspaceId),
    callbackUrl: samlAcsUrl(workspaceId),
    entryPoint: item.sso_url,
    idpIssuer: item.idp_entity_id,
    wantAssertionsSigned: true,
    wantAuthnResponseSigned: false,
    acceptedClockSkewMs: CLOCK_SKEW_MS,
    maxAssertionAgeMs: 10 * 60 * 1000,
    // A response naming a request must name one we sent and have not seen answered; one
    // naming none is IdP-initiated, accepted only where the workspace allows it (below).
    validateInResponseTo: ValidateInResponseTo.ifPresent,
    requestIdExpirationPeriodMs: REQUEST_TTL_MS,
    cacheProvider,
  });
}

/**
 * SP-initiated sign-in: an AuthnRequest (HTTP-Redirect binding, unsigned) to the IdP's SSO
 * URL, its ID recorded for the ACS to take once.
 */
export async function startSaml(workspaceId: string, options: { respond: 'json' | 'redirect'; returnTo?: string }): Promise<StartedSignIn> {
  const item = await samlConfigs.get(workspaceId);
  if (!item) throw badRequest('SAML is not configured for this workspace');
  const { cache, saved } = requestCache(workspaceId, { respond: options.respond, returnTo: options.returnTo ?? DEFAULT_RETURN_TO });
  const url = await (await samlClient(workspaceId, item, cache)).getAuthorizeUrlAsync('', undefined, {});
  if (saved.length !== 1) throw new Error(`node-saml recorded ${saved.length} AuthnRequest IDs for one request`);
  return { authorization_url: url, binding_cookie: flowCookie(samlFlow(workspaceId), saved[0]!) };
}

/** An assertion that passed every check: the email it signs in, and the request it answers. */
interface VerifiedAssertion {
  config: SamlConfigItem;
  email: string;
  /** The AuthnRequest answered (SP-initiated), or undefined (IdP-initiated). */
  request?: SamlRequestItem;
}

/**
 * The IdP's POST to the ACS: verifies the signed assertion and the email it names. An
 * answer to an AuthnRequest must come with the cookie of the browser that started it.
 */
async function verifySamlResponse(workspaceId: string, samlResponse: string, cookieHeader: string | undefined, nowMs = Date.now()): Promise<VerifiedAssertion> {
  const item = await samlConfigs.get(workspaceId);
  if (!item) throw badRequest('SAML is not configured for this workspace');
  const { cache, taken } = requestCache(workspaceId);
  const saml = await samlClient(workspaceId, item, cache);
  let profile;
  try {
    ({ profile } = await saml.validatePostResponseAsync({ SAMLResponse: samlResponse }));
  } catch (error) {
    throw new SamlRefused((error as Error).message);
  }
  if (!profile) throw new SamlRefused('no assertion');
  const answered = [...taken.entries()].find(([, value]) => value !== undefined);
  const request = answered?.[1];
  if (!request && item.allow_idp_initiated === false) throw new SamlRefused(IDP_INITIATED_OFF);
  if (answered && !startedInThisBrowser(samlFlow(workspaceId), cookieHeader, answered[0])) {
    throw new SamlRefused('the sign-in was not started in this browser (its cookie is missing or belongs to another sign-in); start again here');
  }
  if (profile.issuer !== item.idp_entity_id) throw new SamlRefused('the issuer is not the configured IdP');
  const parsed = profile.getAssertion?.() as Parsed | undefined;
  const assertion = parsed?.Assertion;
  const assertionId = assertion?.$?.ID;
  if (!assertionId) throw new SamlRefused('the assertion has no ID');
  const confirmation = assertion?.Subject?.[0]?.SubjectConfirmation?.[0]?.SubjectConfirmationData?.[0]?.$;
  if (confirmation?.Recipient !== samlAcsUrl(workspaceId)) throw new SamlRefused('the recipient is not this ACS URL');
  const notOnOrAfter = Date.parse(confirmation?.NotOnOrAfter ?? assertion?.Conditions?.[0]?.$?.NotOnOrAfter ?? '');
  const keepUntil = Math.floor((Number.isFinite(notOnOrAfter) ? notOnOrAfter : nowMs + 3600_000) / 1000) + CLOCK_SKEW_MS / 1000;
  if (!(await recordSamlAssertion(workspaceId, assertionId, keepUntil))) throw new SamlRefused('this assertion was already used');
  const attributes = profile as unknown as Record<string, unknown>;
  const emailAttribute = [attributes.email, attributes.mail, attributes['http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress']].find((v) => typeof v === 'string') as string | undefined;
  const email = (emailAttribute ?? profile.nameID ?? '').toLowerCase();
  if (!/^[^@\s]+@[^@\s]+$/.test(email)) throw new SamlRefused('the assertion names no email');
  return { config: item, email, request };
}

const signIn = (workspaceId: string, config: SamlConfigItem, email: string) =>
  signInByEmail(workspaceId, email, config.allowed_domains, config.default_role, 'saml');

/** A browser's sign-in: the session cookie and a 302 to the dashboard's return path. */
const toDashboard = (returnTo: string, sessionToken: string, more: readonly string[]) =>
  new MediaResponse('text/plain; charset=utf-8', '', { location: dashboardUrl(returnTo), 'cache-control': 'no-store' }, 302, [sessionCookie(sessionToken), ...more]);

/**
 * The ACS's answer: a browser that started with a redirect goes back to the dashboard with
 * the cookie; otherwise the session JSON. An answered request's binding cookie is cleared.
 * An IdP-initiated assertion posted by a browser's form (the HTTP-POST binding) signs no
 * one in yet: it answers the confirmation page, since any site can make a browser post it.
 * One posted as JSON answers the session: a page of another site can send JSON only
 * without cookies (the route's CORS is `*`), so neither the session cookie nor the answer
 * reaches the victim's browser's dashboard.
 */
export async function samlAcs(workspaceId: string, samlResponse: string, cookieHeader: string | undefined, postedByForm: boolean): Promise<MediaResponse> {
  const { config, email, request } = await verifySamlResponse(workspaceId, samlResponse, cookieHeader);
  if (!request && postedByForm) return askBeforeIdpInitiated(workspaceId, config, email);
  const session = await signIn(workspaceId, config, email);
  const cleared = request ? [clearedFlowCookie(samlFlow(workspaceId))] : [];
  if (request?.respond !== 'redirect') return withCookie(session, cleared);
  return toDashboard(request.return_to, session.session_token, cleared);
}

const IDP_INITIATED_OFF = 'this workspace accepts only answers to its own sign-in requests (IdP-initiated sign-in is off)';
const CONFIRM_COOKIE = 'parley_saml_confirm';
const samlConfirmUrl = (workspaceId: string) => `${publicBase()}/auth/saml/${workspaceId}/confirm`;
/** The cookie of an IdP-initiated sign-in's confirmation, sent to the confirm route only. */
const idpInitiatedConfirmation = (workspaceId: string) => confirmationFlow(CONFIRM_COOKIE, new URL(samlConfirmUrl(workspaceId)).pathname);

/**
 * Keeps the verified sign-in (its email; the assertion itself is spent) under a fresh
 * token's hash for 10 minutes, and asks: "Sign in to workspace <name> as <email>?". The
 * email's domain is checked now, so a sign-in that would be refused is refused before
 * anyone is asked; who it signs in as (or creates) is settled at Continue.
 */
async function askBeforeIdpInitiated(workspaceId: string, config: SamlConfigItem, email: string, nowMs = Date.now()): Promise<MediaResponse> {
  assertAllowedDomain(email, config.allowed_domains);
  const flow = idpInitiatedConfirmation(workspaceId);
  const { token, cookie } = newConfirmation(flow);
  const expires = nowMs + FLOW_COOKIE_MAX_AGE_SECONDS * 1000;
  await recordSamlConfirmation(workspaceId, sha256(token), { workspace_id: workspaceId, email, expires_timestamp: expires, expires_at: Math.ceil(expires / 1000) });
  return confirmationPage({
    workspaceId,
    how: `as ${email}`,
    why: `Your identity provider (${hostOf(config.idp_entity_id)}) sent this sign-in without one started here, and any site can send one.`,
    // Relative to the ACS that answers this page: the confirm route beside it.
    next: { post: 'confirm', token, redirectsTo: dashboardUrl(DEFAULT_RETURN_TO) },
    cookie,
  });
}

/**
 * `POST /auth/saml/{ws}/confirm`, the confirmation page's Continue: in the browser that was
 * shown the page (its cookie), takes the waiting sign-in once and signs its email in, as
 * the workspace's SAML settings now say, then 302s to the dashboard with the session.
 */
export async function confirmIdpInitiated(workspaceId: string, token: string, cookieHeader: string | undefined, nowMs = Date.now()): Promise<MediaResponse> {
  const flow = idpInitiatedConfirmation(workspaceId);
  if (!startedInThisBrowser(flow, cookieHeader, token)) {
    throw new SamlRefused('the sign-in was not confirmed in the browser it was shown to (its cookie is missing or belongs to another sign-in); sign in again');
  }
  const waiting = await takeSamlConfirmation(workspaceId, sha256(token), nowMs);
  if (!waiting) throw new SamlRefused('the confirmation is invalid, expired or already used; sign in again');
  const config = await samlConfigs.get(workspaceId);
  if (!config) throw badRequest('SAML is not configured for this workspace');
  if (config.allow_idp_initiated === false) throw new SamlRefused(IDP_INITIATED_OFF);
  const session = await signIn(workspaceId, config, waiting.email);
  return toDashboard(DEFAULT_RETURN_TO, session.session_token, [clearedFlowCookie(flow)]);
}
