import { createHash, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll } from 'vitest';

/*
 * A fake OAuth authorization server and vendor API on 127.0.0.1 (the real-provider path of
 * shared/vendors/oauth): /authorize approves at once (302 to the redirect URI with a code),
 * /token checks the client, the redirect URI and the PKCE verifier (S256) and issues
 * access and refresh tokens, rotating the refresh token on every use (a used one is
 * invalid_grant). It records every token request and every token it issued, so a test can
 * count refresh-token uses and look for plaintext tokens in the table. The vendor API part
 * answers like HubSpot (contacts, properties, calls), Zendesk and Cal.com, checking the
 * credentials it issued or was given.
 */

interface TokenRequest {
  grant_type: string;
  form: Record<string, string>;
  authorization?: string;
}

interface ApiRequest {
  method: string;
  path: string;
  authorization?: string;
  body: unknown;
}

export interface FakeOAuth {
  url: string;
  clientId: string;
  clientSecret: string;
  tokenRequests: TokenRequest[];
  apiRequests: ApiRequest[];
  /** Every access and refresh token issued. */
  issued: string[];
  /** Access token lifetime answered as expires_in (seconds). */
  expiresIn: number;
  /** Delay of refresh-token answers (widens a race). */
  refreshDelayMs: number;
  /** Extra fields of every token answer (a vendor's kept values: Zoho's api_domain, HighLevel's locationId). */
  tokenExtras: Record<string, unknown>;
  /** Refuses every refresh token from now on (the user revoked the app). */
  revokeAll(): void;
  refreshUses(): number;
  /** Basic or bearer credentials the pasted-credential endpoints accept. */
  pasted: { basic: string; bearer: string };
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
  });

const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
};

export async function fakeOAuth(): Promise<FakeOAuth> {
  const codes = new Map<string, { redirect_uri: string; challenge?: string; client_id: string }>();
  const refreshTokens = new Map<string, boolean>();
  const accessTokens = new Set<string>();
  let revoked = false;
  let counter = 0;
  const contacts = new Map<string, { id: string; properties: Record<string, string> }>();
  const fake: FakeOAuth = {
    url: '',
    clientId: 'fake-client',
    clientSecret: `fake-secret-${randomBytes(4).toString('hex')}`,
    tokenRequests: [],
    apiRequests: [],
    issued: [],
    expiresIn: 3600,
    refreshDelayMs: 0,
    tokenExtras: {},
    revokeAll: () => {
      revoked = true;
    },
    refreshUses: () => fake.tokenRequests.filter((request) => request.grant_type === 'refresh_token').length,
    pasted: { basic: `Basic ${Buffer.from('agent@example.com/token:zendesk-secret').toString('base64')}`, bearer: 'Bearer cal-secret-key' },
  };
  const issue = () => {
    counter++;
    const access = `fake_at_${counter}_${randomBytes(8).toString('hex')}`;
    const refresh = `fake_rt_${counter}_${randomBytes(8).toString('hex')}`;
    accessTokens.add(access);
    refreshTokens.set(refresh, true);
    fake.issued.push(access, refresh);
    return { access_token: access, refresh_token: refresh, token_type: 'Bearer', expires_in: fake.expiresIn, instance_url: fake.url, scope: 'api refresh_token', ...fake.tokenExtras };
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const text = await read(req);
    if (req.method === 'GET' && url.pathname === '/authorize') {
      const redirect = url.searchParams.get('redirect_uri')!;
      const code = `code_${randomBytes(8).toString('hex')}`;
      codes.set(code, {
        redirect_uri: redirect,
        challenge: url.searchParams.get('code_challenge') ?? undefined,
        client_id: url.searchParams.get('client_id') ?? '',
      });
      const back = new URL(redirect);
      back.searchParams.set('code', code);
      back.searchParams.set('state', url.searchParams.get('state') ?? '');
      res.writeHead(302, { location: back.toString() });
      res.end();
      return;
    }
    if (req.method === 'POST' && url.pathname === '/token') {
      const form = Object.fromEntries(new URLSearchParams(text));
      fake.tokenRequests.push({ grant_type: form.grant_type ?? '', form, authorization: req.headers.authorization });
      // client_secret_post, or client_secret_basic (Notion's): the client in the Authorization header.
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      const [basicId, basicSecret] = basic ? Buffer.from(basic, 'base64').toString('utf8').split(':').map((part) => decodeURIComponent(part)) : [];
      const clientOk = basic ? basicId === fake.clientId && basicSecret === fake.clientSecret : form.client_id === fake.clientId && form.client_secret === fake.clientSecret;
      if (!clientOk) return send(res, 401, { error: 'invalid_client' });
      if (form.grant_type === 'authorization_code') {
        const code = codes.get(form.code ?? '');
        codes.delete(form.code ?? '');
        if (!code) return send(res, 400, { error: 'invalid_grant', error_description: 'unknown code' });
        if (code.redirect_uri !== form.redirect_uri) return send(res, 400, { error: 'invalid_grant', error_description: 'redirect_uri mismatch' });
        if (code.challenge) {
          const computed = createHash('sha256').update(form.code_verifier ?? '').digest('base64url');
          if (computed !== code.challenge) return send(res, 400, { error: 'invalid_grant', error_description: 'PKCE verification failed' });
        } else if (form.code_verifier) return send(res, 400, { error: 'invalid_grant', error_description: 'unexpected code_verifier' });
        return send(res, 200, issue());
      }
      if (form.grant_type === 'refresh_token') {
        if (fake.refreshDelayMs) await new Promise((resolve) => setTimeout(resolve, fake.refreshDelayMs));
        if (revoked || !refreshTokens.get(form.refresh_token ?? '')) return send(res, 400, { error: 'invalid_grant', error_description: 'refresh token revoked or used' });
        refreshTokens.set(form.refresh_token!, false);
        return send(res, 200, issue());
      }
      return send(res, 400, { error: 'unsupported_grant_type' });
    }
    // The vendor API.
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    fake.apiRequests.push({ method: req.method ?? '', path: url.pathname + url.search, authorization: req.headers.authorization, body });
    const auth = req.headers.authorization ?? '';
    if (url.pathname.startsWith('/api/v2/')) {
      if (auth !== fake.pasted.basic) return send(res, 401, { error: 'Couldn\'t authenticate you' });
      if (url.pathname === '/api/v2/users/me.json') return send(res, 200, { user: { id: 1, email: 'agent@example.com' } });
      if (url.pathname === '/api/v2/tickets.json' && req.method === 'POST') return send(res, 201, { ticket: { id: 42, status: 'new', subject: (body as any)?.ticket?.subject } });
      return send(res, 404, { error: 'not found' });
    }
    if (url.pathname === '/me' || url.pathname === '/bookings' || url.pathname === '/slots') {
      if (auth !== fake.pasted.bearer) return send(res, 401, { status: 'error' });
      if (url.pathname === '/bookings') return send(res, 201, { status: 'success', data: { id: 7, start: (body as any)?.start } });
      return send(res, 200, { status: 'success', data: { id: 1 } });
    }
    if (!auth.startsWith('Bearer ') || !accessTokens.has(auth.slice(7))) return send(res, 401, { message: 'invalid token' });
    if (req.method === 'GET' && url.pathname === '/crm/v3/objects/contacts') return send(res, 200, { results: [] });
    if (req.method === 'GET' && url.pathname === '/crm/v3/properties/contacts') {
      return send(res, 200, { results: [{ name: 'firstname', label: 'First Name', type: 'string' }, { name: 'hs_lead_status', label: 'Lead Status', type: 'enumeration', options: [{ value: 'NEW' }] }] });
    }
    if (req.method === 'POST' && url.pathname === '/crm/v3/objects/contacts/search') {
      const phone = (body as any)?.filterGroups?.[0]?.filters?.[0]?.value;
      const found = [...contacts.values()].find((contact) => contact.properties.phone === phone);
      return send(res, 200, { results: found ? [found] : [] });
    }
    if (req.method === 'POST' && url.pathname === '/crm/v3/objects/contacts') {
      const id = String(contacts.size + 1);
      contacts.set(id, { id, properties: (body as any).properties });
      return send(res, 201, { id });
    }
    if (req.method === 'PATCH' && url.pathname.startsWith('/crm/v3/objects/contacts/')) return send(res, 200, { id: url.pathname.split('/').pop() });
    if (req.method === 'POST' && url.pathname === '/crm/v3/objects/calls') return send(res, 201, { id: `call-${fake.apiRequests.length}` });
    if (req.method === 'GET' && url.pathname === '/services/data/v60.0/limits') return send(res, 200, {});
    return send(res, 404, { message: 'not found' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return fake;
}
