import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { SignedXml } from 'xml-crypto';
import { afterAll } from 'vitest';

/*
 * Identity providers for the sign-in tests, on 127.0.0.1 only: an OIDC provider (discovery,
 * JWKS, a token endpoint checking the client and the PKCE verifier, ID tokens signed with
 * its key; `/authorize` approves at once as `approveAs`, as an attacker's own provider
 * would) and a SAML IdP's signed responses, with certificates made here by openssl.
 */

export const OIDC_CLIENT_ID = 'parley-client';
export const OIDC_CLIENT_SECRET = 'shh';

/** What the provider's ID token says of the email: `email_verified` true, false, or left out. */
export type Verified = boolean | 'absent';

export interface FakeOidc {
  issuer: string;
  /**
   * The provider "signs the user in": a code bound to the authorization request's PKCE
   * challenge and nonce, for the ID token to name `email`.
   */
  grant(authorizationUrl: URL, email: string, verified?: Verified): { code: string; state: string };
  /** Whom `/authorize` signs in at once, with no question (undefined: it answers 404). */
  approveAs: string | undefined;
  /** How many times a browser reached `/authorize`. */
  authorizeRequests: number;
  /** Signs ID tokens with another key from now on (none: its own again). */
  useSigningKey(key?: CryptoKey): void;
}

export async function startFakeOidc(): Promise<FakeOidc> {
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const codes = new Map<string, { challenge: string; nonce: string; email: string; verified: Verified }>();
  let signingKey: CryptoKey = privateKey;
  let issuer = '';
  const grant = (url: URL, email: string, verified: Verified = true) => {
    const code = randomBytes(8).toString('hex');
    codes.set(code, { challenge: url.searchParams.get('code_challenge')!, nonce: url.searchParams.get('nonce')!, email, verified });
    return { code, state: url.searchParams.get('state')! };
  };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url!, issuer);
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(200, {
        issuer, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks`,
        response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256'],
        code_challenge_methods_supported: ['S256'], token_endpoint_auth_methods_supported: ['client_secret_post'],
      });
    }
    if (url.pathname === '/jwks') return json(200, { keys: [jwk] });
    if (url.pathname === '/authorize' && fake.approveAs !== undefined) {
      fake.authorizeRequests++;
      const { code, state } = grant(url, fake.approveAs);
      const back = new URL(url.searchParams.get('redirect_uri')!);
      back.searchParams.set('code', code);
      back.searchParams.set('state', state);
      res.writeHead(302, { location: back.toString() });
      res.end();
      return;
    }
    if (url.pathname === '/token') {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', async () => {
        const form = new URLSearchParams(body);
        const granted = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        if (!granted || form.get('client_secret') !== OIDC_CLIENT_SECRET || createHash('sha256').update(verifier).digest('base64url') !== granted.challenge) {
          return json(400, { error: 'invalid_grant' });
        }
        const verified = granted.verified === 'absent' ? {} : { email_verified: granted.verified };
        const idToken = await new SignJWT({ email: granted.email, ...verified, nonce: granted.nonce, name: 'Sso User' })
          .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
          .setIssuer(issuer).setAudience(OIDC_CLIENT_ID).setSubject(granted.email).setIssuedAt().setExpirationTime('5m')
          .sign(signingKey);
        json(200, { access_token: 'at', token_type: 'Bearer', expires_in: 300, id_token: idToken });
      });
      return;
    }
    json(404, {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  afterAll(() => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  }));
  const fake: FakeOidc = {
    issuer,
    grant,
    approveAs: undefined,
    authorizeRequests: 0,
    useSigningKey: (key) => void (signingKey = key ?? privateKey),
  };
  return fake;
}

// ── SAML ──────────────────────────────────────────────────────────────────────────────

export const SAML_IDP_ENTITY = 'https://idp.example.com/metadata';

const keyDir = mkdtempSync(join(tmpdir(), 'saml-'));

/** A self-signed key pair made by openssl: the IdP's (or an attacker's) signing key and certificate. */
export function samlKeyPair(name: string) {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-days', '2', '-keyout', join(keyDir, `${name}.key`), '-out', join(keyDir, `${name}.crt`)], { stdio: 'ignore' });
  return { key: readFileSync(join(keyDir, `${name}.key`), 'utf8'), cert: readFileSync(join(keyDir, `${name}.crt`), 'utf8') };
}

/** A SAML Response from SAML_IDP_ENTITY whose assertion is signed with `key`, base64 as the HTTP-POST binding sends it. */
export function samlResponse(options: { key: string; acs: string; audience: string; email: string; id?: string; inResponseTo?: string }) {
  const now = new Date();
  const later = new Date(now.getTime() + 5 * 60_000).toISOString();
  const id = options.id ?? `_a${randomBytes(8).toString('hex')}`;
  const assertion =
    `<saml:Assertion xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion" ID="${id}" Version="2.0" IssueInstant="${now.toISOString()}">` +
    `<saml:Issuer>${SAML_IDP_ENTITY}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress">${options.email}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer"><saml:SubjectConfirmationData NotOnOrAfter="${later}" Recipient="${options.acs}"${options.inResponseTo ? ` InResponseTo="${options.inResponseTo}"` : ''}/></saml:SubjectConfirmation></saml:Subject>` +
    `<saml:Conditions NotBefore="${new Date(now.getTime() - 60_000).toISOString()}" NotOnOrAfter="${later}"><saml:AudienceRestriction><saml:Audience>${options.audience}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${now.toISOString()}" SessionIndex="${id}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>` +
    `</saml:Assertion>`;
  const signer = new SignedXml({ privateKey: options.key, signatureAlgorithm: 'http://www.w3.org/2001/04/xmldsig-more#rsa-sha256', canonicalizationAlgorithm: 'http://www.w3.org/2001/10/xml-exc-c14n#' });
  signer.addReference({ xpath: "//*[local-name(.)='Assertion']", transforms: ['http://www.w3.org/2000/09/xmldsig#enveloped-signature', 'http://www.w3.org/2001/10/xml-exc-c14n#'], digestAlgorithm: 'http://www.w3.org/2001/04/xmlenc#sha256' });
  signer.computeSignature(assertion, { location: { reference: "//*[local-name(.)='Issuer']", action: 'after' } });
  const response =
    `<samlp:Response xmlns:samlp="urn:oasis:names:tc:SAML:2.0:protocol" ID="_r${randomBytes(8).toString('hex')}" Version="2.0" IssueInstant="${now.toISOString()}" Destination="${options.acs}"${options.inResponseTo ? ` InResponseTo="${options.inResponseTo}"` : ''}>` +
    `<saml:Issuer xmlns:saml="urn:oasis:names:tc:SAML:2.0:assertion">${SAML_IDP_ENTITY}</saml:Issuer>` +
    `<samlp:Status><samlp:StatusCode Value="urn:oasis:names:tc:SAML:2.0:status:Success"/></samlp:Status>` +
    signer.getSignedXml() +
    `</samlp:Response>`;
  return Buffer.from(response).toString('base64');
}
