import { describe, expect, it } from 'vitest';
import { routeTable } from '../../shared/route-table.ts';
import { requiredRole } from '../../shared/platform/auth/roles.ts';
import { routeKeys, type RouteDefinition } from '../../shared/platform/http/route.ts';
import { startTestApp } from '../support/app.ts';
import { call } from '../support/http.ts';

const app = await startTestApp();
const { api } = app;
await api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } });

async function session(email: string, role: string) {
  const invite = await api.post('/workspace/invites', { body: { email, role } });
  const accepted = await call(app.url, 'POST', '/auth/invites/accept', { body: { token: invite.body.token } });
  expect(accepted.status).toBe(200);
  return accepted.body as { session_token: string; member: { member_id: string } };
}

const routes = Object.entries(routeTable as Record<string, RouteDefinition>).filter(([, route]) => route.access !== 'public');
/** A concrete path for a route key: each {param} gets a well-formed value that names nothing. */
const concrete = (path: string) => path.replace(/\{(\w+)\}/g, 'none');

describe('the role table', () => {
  it('maps every route to one role: reads to member, writes to developer, admin where named', () => {
    const table = Object.fromEntries(routes.map(([id, route]) => [id, requiredRole(route)]));
    for (const id of ['addMember', 'updateMember', 'removeMember', 'createInvite', 'deleteWorkspace', 'transferWorkspace', 'putSso', 'getSso', 'putSaml', 'createScimToken', 'putReliability', 'getCallUnscrubbed', 'getBilling']) {
      expect(table[id], id).toBe('admin');
    }
    for (const id of ['listApiKeys', 'listPublicKeys', 'createApiKey', 'deleteApiKey', 'updateWorkspace']) expect(table[id], id).toBe('developer');
    for (const id of ['getWorkspace', 'listMembers', 'signOut', 'leaveWorkspace']) expect(table[id], id).toBe('member');
  });

  it('answers a member 403 read-only on every write route, and a developer and a developer\'s key 403 on every admin route', async () => {
    const member = await session('member@example.com', 'member');
    const developer = await session('developer@example.com', 'developer');
    // The developer's key, widened to full access by an admin: its scopes pass everywhere, its role does not.
    const made = await call(app.url, 'POST', '/api-keys', { headers: { authorization: `Bearer ${developer.session_token}` }, body: { name: 'developer key', scopes: ['calls'] } });
    expect(made.status).toBe(201);
    expect((await api.patch(`/api-keys/${made.body.api_key_id}`, { body: { scopes: [] } })).status).toBe(200);
    const developerKey = made.body.api_key as string;
    const checked: string[] = [];
    const adminRoutes: string[] = [];
    for (const [id, route] of routes) {
      const needed = requiredRole(route);
      for (const key of routeKeys(route)) {
        const [method, path] = key.split(' ') as [string, string];
        if (needed !== 'member') {
          const res = await call(app.url, method, concrete(path), { headers: { authorization: `Bearer ${member.session_token}` }, body: method === 'GET' ? undefined : {} });
          const writes = !(method === 'GET' || (method === 'POST' && /^\/(?:v\d\/)?(?:list|search)-/.test(path)));
          expect({ id, key, status: res.status, message: res.body?.message }).toEqual({
            id, key, status: 403, message: writes ? 'The member role is read-only' : `Requires role: ${needed}`,
          });
          checked.push(key);
        }
        if (needed === 'admin') {
          for (const credential of [developer.session_token, developerKey]) {
            const res = await call(app.url, method, concrete(path), { headers: { authorization: `Bearer ${credential}` }, body: method === 'GET' ? undefined : {} });
            expect({ id, key, status: res.status, message: res.body?.message }).toEqual({ id, key, status: 403, message: 'Requires role: admin' });
          }
          adminRoutes.push(key);
        }
      }
    }
    expect(checked.length).toBeGreaterThan(100);
    expect(adminRoutes.length).toBeGreaterThan(35);
  }, 120_000);

  it('lets a member read and a developer write outside the admin routes; API keys keep their scopes', async () => {
    const member = await session('reader@example.com', 'member');
    const developer = await session('writer@example.com', 'developer');
    expect((await call(app.url, 'GET', '/workspace', { headers: { authorization: `Bearer ${member.session_token}` } })).status).toBe(200);
    expect((await call(app.url, 'POST', '/v2/list-calls', { headers: { authorization: `Bearer ${member.session_token}` }, body: {} })).status).toBe(200);
    const keys = await call(app.url, 'GET', '/api-keys', { headers: { authorization: `Bearer ${member.session_token}` } });
    expect(keys.status).toBe(403);
    expect(keys.body.message).toBe('Requires role: developer');
    expect((await call(app.url, 'PATCH', '/workspace', { headers: { authorization: `Bearer ${developer.session_token}` }, body: { name: 'Renamed' } })).status).toBe(200);
    const scoped = await api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } });
    const refused = await api.withKey(scoped.body.api_key).get('/workspace/members');
    expect(refused.status).toBe(403);
    expect(refused.body.message).toBe('This API key lacks the "admin" scope');
    expect((await api.get('/workspace/members')).status).toBe(200);
  });

  it('lets a developer delete the keys they created, and no other', async () => {
    const developer = await session('keys@example.com', 'developer');
    const asDeveloper = { authorization: `Bearer ${developer.session_token}` };
    const own = await call(app.url, 'POST', '/api-keys', { headers: asDeveloper, body: { name: 'mine', scopes: ['calls'] } });
    expect(own.status).toBe(201);
    const others = await api.post('/api-keys', { body: { name: 'the admin key', scopes: ['calls'] } });

    const refused = await call(app.url, 'DELETE', `/api-keys/${others.body.api_key_id}`, { headers: asDeveloper });
    expect({ status: refused.status, message: refused.body.message }).toEqual({ status: 403, message: 'Requires role: admin' });
    expect((await call(app.url, 'DELETE', `/api-keys/${own.body.api_key_id}`, { headers: asDeveloper })).status).toBe(204);
    expect((await api.withKey(own.body.api_key).post('/v2/list-calls', { body: {} })).status).toBe(401);
    expect((await api.delete(`/api-keys/${others.body.api_key_id}`)).status).toBe(204);
  });
});

describe('SCIM 2.0', () => {
  const scimHeaders = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' });

  it('provisions, filters, pages, patches and deprovisions a user', async () => {
    const created = await api.post('/workspace/scim-token');
    expect(created.status).toBe(201);
    const token = created.body.token as string;
    expect(token).toMatch(/^scim_[0-9a-f]{48}$/);
    expect((await api.get('/workspace/scim')).body).toMatchObject({ enabled: true, masked_token: `${token.slice(0, 8)}********${token.slice(-4)}` });
    const h = scimHeaders(token);

    const unauth = await call(app.url, 'GET', '/scim/v2/Users', { headers: { authorization: 'Bearer scim_' + '0'.repeat(48) } });
    expect(unauth.status).toBe(401);
    expect(unauth.headers['content-type']).toBe('application/scim+json');
    expect(unauth.body).toEqual({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '401', detail: 'Missing or invalid API key / session' });

    const user = await call(app.url, 'POST', '/scim/v2/Users', {
      headers: h,
      body: { schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'], userName: 'Jane@Example.com', name: { givenName: 'Jane', familyName: 'Doe' }, emails: [{ value: 'jane@example.com', primary: true }], active: true, roles: [{ value: 'developer' }], externalId: 'ext-1' },
    });
    expect(user.status).toBe(201);
    expect(user.headers['content-type']).toBe('application/scim+json');
    expect(user.body).toMatchObject({ userName: 'jane@example.com', active: true, roles: [{ value: 'developer', primary: true }], externalId: 'ext-1', name: { givenName: 'Jane', familyName: 'Doe', formatted: 'Jane Doe' } });
    const dup = await call(app.url, 'POST', '/scim/v2/Users', { headers: h, body: { userName: 'jane@example.com' } });
    expect(dup.status).toBe(409);
    expect(dup.body).toMatchObject({ status: '409', scimType: 'uniqueness', detail: 'jane@example.com is already a member' });
    for (const email of ['a1@example.com', 'a2@example.com']) {
      expect((await call(app.url, 'POST', '/scim/v2/Users', { headers: h, body: { userName: email } })).status).toBe(201);
    }

    const filtered = await call(app.url, 'GET', `/scim/v2/Users?filter=${encodeURIComponent('userName eq "JANE@example.com"')}`, { headers: h });
    expect(filtered.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'], totalResults: 1, startIndex: 1, itemsPerPage: 1 });
    expect(filtered.body.Resources[0].id).toBe(user.body.id);
    const byEmail = await call(app.url, 'GET', `/scim/v2/Users?filter=${encodeURIComponent('emails.value eq "a1@example.com"')}`, { headers: h });
    expect(byEmail.body.totalResults).toBe(1);
    const all = await call(app.url, 'GET', '/scim/v2/Users', { headers: h });
    const total = all.body.totalResults as number;
    const page = await call(app.url, 'GET', '/scim/v2/Users?startIndex=2&count=2', { headers: h });
    expect(page.body).toMatchObject({ totalResults: total, startIndex: 2, itemsPerPage: 2 });
    expect(page.body.Resources.map((r: { id: string }) => r.id)).toEqual(all.body.Resources.slice(1, 3).map((r: { id: string }) => r.id));
    const badFilter = await call(app.url, 'GET', `/scim/v2/Users?filter=${encodeURIComponent('userName co "j"')}`, { headers: h });
    expect(badFilter.status).toBe(400);
    expect(badFilter.body.scimType).toBe('invalidFilter');

    // The provisioned member signs in (an invite stands in for the IdP here) and then is deprovisioned.
    const login = await call(app.url, 'POST', '/scim/v2/Users', { headers: h, body: { userName: 'temp@example.com' } });
    const invited = await api.post('/workspace/invites', { body: { email: 'temp2@example.com', role: 'developer' } });
    const signedIn = (await call(app.url, 'POST', '/auth/invites/accept', { body: { token: invited.body.token } })).body;
    const temp2 = (await call(app.url, 'GET', `/scim/v2/Users?filter=${encodeURIComponent('userName eq "temp2@example.com"')}`, { headers: h })).body.Resources[0];
    expect((await call(app.url, 'GET', '/workspace', { headers: { authorization: `Bearer ${signedIn.session_token}` } })).status).toBe(200);

    const patched = await call(app.url, 'PATCH', `/scim/v2/Users/${temp2.id}`, {
      headers: h,
      body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'name.givenName', value: 'Tem' }, { op: 'add', path: 'roles', value: [{ value: 'member' }] }, { op: 'replace', value: { active: false } }] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ active: false, roles: [{ value: 'member', primary: true }], name: { givenName: 'Tem' } });
    const after = await call(app.url, 'GET', '/workspace', { headers: { authorization: `Bearer ${signedIn.session_token}` } });
    expect(after.status).toBe(401);
    const inactive = await call(app.url, 'GET', `/scim/v2/Users?filter=${encodeURIComponent('active eq false')}`, { headers: h });
    expect(inactive.body.Resources.map((r: { id: string }) => r.id)).toEqual([temp2.id]);

    const removed = await call(app.url, 'PATCH', `/scim/v2/Users/${login.body.id}`, { headers: h, body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'remove', path: 'userName' }] } });
    expect(removed.status).toBe(400);
    expect(removed.body.scimType).toBe('mutability');
    const put = await call(app.url, 'PUT', `/scim/v2/Users/${login.body.id}`, { headers: h, body: { userName: 'temp@example.com', displayName: 'Temp', roles: [{ value: 'admin' }] } });
    expect(put.body).toMatchObject({ displayName: 'Temp', roles: [{ value: 'admin', primary: true }], active: true });
    expect((await call(app.url, 'DELETE', `/scim/v2/Users/${login.body.id}`, { headers: h })).status).toBe(204);
    const gone = await call(app.url, 'GET', `/scim/v2/Users/${login.body.id}`, { headers: h });
    expect(gone.status).toBe(404);
    expect(gone.body).toMatchObject({ status: '404', detail: `User ${login.body.id} not found` });

    // Discovery says exactly what is supported.
    const config = await call(app.url, 'GET', '/scim/v2/ServiceProviderConfig', { headers: h });
    expect(config.body).toMatchObject({ patch: { supported: true }, bulk: { supported: false }, filter: { supported: true }, sort: { supported: false }, etag: { supported: false } });
    expect((await call(app.url, 'GET', '/scim/v2/ResourceTypes', { headers: h })).body.Resources[0]).toMatchObject({ id: 'User', endpoint: '/Users' });
    expect((await call(app.url, 'GET', '/scim/v2/Schemas', { headers: h })).body.Resources[0].id).toBe('urn:ietf:params:scim:schemas:core:2.0:User');

    // Revoked: the token stops at once; a new one replaces the old.
    const replaced = (await api.post('/workspace/scim-token')).body.token;
    expect((await call(app.url, 'GET', '/scim/v2/Users', { headers: h })).status).toBe(401);
    expect((await api.delete('/workspace/scim-token')).status).toBe(204);
    expect((await call(app.url, 'GET', '/scim/v2/Users', { headers: scimHeaders(replaced) })).status).toBe(401);
    const log = (await api.get('/audit-log')).body.map((e: { action: string }) => e.action);
    expect(log).toEqual(expect.arrayContaining(['scim.token_create', 'scim.token_delete', 'member.update', 'member.remove']));
  });
});

describe('SCIM bodies', () => {
  const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
  const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
  const scimError = (scimType: string, detail: string) => ({ schemas: [ERROR], status: '400', scimType, detail });

  async function provisioned() {
    const token = (await api.post('/workspace/scim-token')).body.token as string;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' };
    const scimCall = (method: string, path: string, options: { body?: unknown; rawBody?: string } = {}) => call(app.url, method, `/scim/v2${path}`, { headers, ...options });
    const email = `bodies-${Date.now()}-${Math.random().toString(16).slice(2)}@example.com`;
    const created = await scimCall('POST', '/Users', { body: { userName: email, name: { givenName: 'Ada', familyName: 'Lovelace' }, roles: [{ value: 'developer' }] } });
    expect(created.status).toBe(201);
    const user = created.body as { id: string };
    const members = async () => (await api.get('/workspace/members')).body as { member_id: string; name: string | null; email: string }[];
    return { token, scimCall, user, email, members };
  }

  /** Asserts a refusal: 400 in SCIM's format, exactly `expected`. */
  const refused = (res: { status: number; headers: Record<string, string>; body: unknown }, expected: unknown) => {
    expect({ status: res.status, type: res.headers['content-type'], body: res.body }).toEqual({ status: 400, type: 'application/scim+json', body: expected });
  };

  it('answers the reproductions 400 invalidValue in SCIM\'s format and writes nothing', async () => {
    const { scimCall, user, members } = await provisioned();
    const before = await members();
    const asRead = (await scimCall('GET', `/Users/${user.id}`)).body;

    refused(
      await scimCall('PATCH', `/Users/${user.id}`, { body: { schemas: [PATCH_OP], Operations: [{ op: 'add', path: 'emails', value: [null] }] } }),
      scimError('invalidValue', 'Operations.0.value.0: Expected object, received null'),
    );
    refused(
      await scimCall('POST', '/Users', { body: { userName: 'nope@example.com', emails: 'nope' } }),
      scimError('invalidValue', 'emails: Expected array, received string'),
    );
    refused(
      await scimCall('POST', '/Users', { body: { userName: 'object-name@example.com', displayName: { x: 1 } } }),
      scimError('invalidValue', 'displayName: Expected string, received object'),
    );
    refused(
      await scimCall('PUT', `/Users/${user.id}`, { body: { userName: 'object-name@example.com', displayName: { x: 1 } } }),
      scimError('invalidValue', 'displayName: Expected string, received object'),
    );
    refused(
      await scimCall('PATCH', `/Users/${user.id}`, { body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'displayName', value: { x: 1 } }] } }),
      scimError('invalidValue', 'Operations.0.value: Expected string, received object'),
    );
    // A good operation before a bad one is not applied either.
    refused(
      await scimCall('PATCH', `/Users/${user.id}`, {
        body: { schemas: [PATCH_OP], Operations: [{ op: 'replace', path: 'name.givenName', value: 'Changed' }, { op: 'replace', value: { displayName: { x: 1 } } }] },
      }),
      scimError('invalidValue', 'Operations.1.value.displayName: Expected string, received object'),
    );

    expect(await members()).toEqual(before);
    expect((await scimCall('GET', `/Users/${user.id}`)).body).toEqual(asRead);
    expect(asRead).toMatchObject({ name: { givenName: 'Ada', familyName: 'Lovelace', formatted: 'Ada Lovelace' }, roles: [{ value: 'developer', primary: true }] });
  });

  it('answers malformed bodies 400 with the scimType that names the fault, never 500, and leaves the member as it was', async () => {
    const { token, scimCall, user, members } = await provisioned();
    const before = await members();
    const patch = (...Operations: unknown[]) => ({ body: { schemas: [PATCH_OP], Operations } });
    const cases: [string, string, { body?: unknown; rawBody?: string }, unknown][] = [
      // Not a User or a PatchOp at all.
      ['POST', '/Users', { rawBody: '[]' }, scimError('invalidSyntax', 'body: Expected object, received array')],
      ['POST', '/Users', { rawBody: 'null' }, scimError('invalidSyntax', 'body: Expected object, received null')],
      ['PUT', `/Users/${user.id}`, { rawBody: '"x"' }, scimError('invalidSyntax', 'body: Expected object, received string')],
      ['PATCH', `/Users/${user.id}`, { rawBody: '42' }, scimError('invalidSyntax', 'body: Expected object, received number')],
      ['POST', '/Users', { rawBody: '{"userName":' }, scimError('invalidSyntax', expect.stringMatching(/^Invalid JSON body/))],
      ['POST', '/Users', { body: { userName: 'x@example.com', favourite: 1 } }, scimError('invalidSyntax', 'body: Unknown attribute favourite')],
      ['POST', '/Users', { body: { userName: 'x@example.com', username: 'y@example.com' } }, scimError('invalidSyntax', 'username: Attribute userName given twice')],
      ['PATCH', `/Users/${user.id}`, { body: { Operations: [{ op: 'replace', path: 'active', value: false }] } }, scimError('invalidSyntax', 'schemas: Required')],
      ['PATCH', `/Users/${user.id}`, { body: { schemas: [PATCH_OP] } }, scimError('invalidSyntax', 'Operations: Required')],
      ['PATCH', `/Users/${user.id}`, { body: { schemas: [PATCH_OP], Operations: 'replace' } }, scimError('invalidSyntax', 'Operations: Expected array, received string')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'move', path: 'active', value: false }), scimError('invalidSyntax', 'Operations.0.op: Must be add, replace or remove')],
      ['PATCH', `/Users/${user.id}`, patch(null), scimError('invalidSyntax', 'Operations.0: Expected object, received null')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'replace', path: 7, value: 'x' }), scimError('invalidSyntax', 'Operations.0.path: Expected string, received number')],
      // Paths to attributes Users do not set.
      ['PATCH', `/Users/${user.id}`, patch({ op: 'replace', path: 'favoriteColor', value: 'x' }), scimError('invalidPath', 'Unsupported path: favoriteColor')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'replace', value: { 'name.middle': 'x' } }), scimError('invalidPath', 'Unsupported path: name.middle')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'remove' }), scimError('noTarget', 'Operations.0.path: A remove takes a path')],
      // Values of the wrong type.
      ['PATCH', `/Users/${user.id}`, patch({ op: 'replace', path: 'active', value: 'maybe' }), scimError('invalidValue', 'Operations.0.value: Expected boolean, received string')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'replace', path: 'active' }), scimError('invalidValue', 'Operations.0.value: Required')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'add', path: 'roles', value: [{ value: 'owner' }] }), scimError('invalidValue', 'Operations.0.value.0.value: Expected one of "admin", "developer", "member"')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'replace', path: 'name', value: 'Ada' }), scimError('invalidValue', 'Operations.0.value: Expected object, received string')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'replace', path: 'userName', value: ['a@example.com'] }), scimError('invalidValue', 'Operations.0.value: Expected string, received array')],
      ['PATCH', `/Users/${user.id}`, patch({ op: 'replace', value: 'active' }), scimError('invalidValue', 'Operations.0.value: An operation without a path takes an object of attributes')],
      ['PUT', `/Users/${user.id}`, { body: { userName: 'x@example.com', active: 'yes' } }, scimError('invalidValue', 'active: Expected boolean, received string')],
      ['PUT', `/Users/${user.id}`, { body: { userName: 'x@example.com', emails: [{ value: 'x@example.com', primary: 'true' }] } }, scimError('invalidValue', 'emails.0.primary: Expected boolean, received string')],
      ['POST', '/Users', { body: { userName: 42 } }, scimError('invalidValue', 'userName: Expected string, received number')],
      ['POST', '/Users', { body: { userName: 'x@example.com', name: { givenName: ['A'] } } }, scimError('invalidValue', 'name.givenName: Expected string, received array')],
      ['POST', '/Users', { body: { userName: 'x@example.com', externalId: 5 } }, scimError('invalidValue', 'externalId: Expected string, received number')],
      ['POST', '/Users', { body: {} }, scimError('invalidValue', 'userName: Required')],
    ];
    for (const [method, path, options, expected] of cases) {
      const res = await scimCall(method, path, options);
      expect({ case: `${method} ${JSON.stringify(options)}`, status: res.status, type: res.headers['content-type'], body: res.body }).toEqual({
        case: `${method} ${JSON.stringify(options)}`,
        status: 400,
        type: 'application/scim+json',
        body: expected,
      });
    }
    expect(await members()).toEqual(before);

    // The token is checked before the body: a bad token is 401 whatever the body.
    const unauthenticated = await call(app.url, 'POST', '/scim/v2/Users', { headers: { authorization: `Bearer ${token.slice(0, -1)}0` }, rawBody: '[]' });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.body).toEqual({ schemas: [ERROR], status: '401', detail: 'Missing or invalid API key / session' });
  });

  it('takes what identity providers send: names in any case, ignored core attributes, extensions and Entra ID\'s strings', async () => {
    const { scimCall, user } = await provisioned();
    const email = `okta-${Date.now()}@example.com`;
    const created = await scimCall('POST', '/Users', {
      body: {
        schemas: ['urn:ietf:params:scim:schemas:core:2.0:User', 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'],
        USERNAME: email,
        Name: { GivenName: 'Grace', familyName: 'Hopper', middleName: 'B' },
        Emails: [{ primary: true, value: email, type: 'work' }],
        displayName: 'Grace Hopper',
        locale: 'en-US',
        password: 'ignored',
        phoneNumbers: [{ value: '+14155550100', type: 'work' }],
        groups: [],
        'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User': { department: 'Navy' },
      },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ userName: email, displayName: 'Grace Hopper', name: { givenName: 'Grace', familyName: 'Hopper' } });

    const patched = await scimCall('PATCH', `/Users/${user.id}`, {
      body: { schemas: [PATCH_OP], Operations: [{ op: 'Replace', path: 'active', value: 'False' }, { op: 'Add', path: 'roles', value: 'admin' }] },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ active: false, roles: [{ value: 'admin', primary: true }] });

    // Entra ID's default attribute mappings PATCH these paths; they set nothing kept here and are not refused.
    const entra = await scimCall('PATCH', `/Users/${user.id}`, {
      body: {
        schemas: [PATCH_OP],
        Operations: [
          { op: 'Add', path: 'title', value: 'Rear Admiral' },
          { op: 'Add', path: 'phoneNumbers[type eq "work"].value', value: '+14155550100' },
          { op: 'Add', path: 'addresses[type eq "work"].formatted', value: '1 Navy Way' },
          { op: 'Add', path: 'name.middleName', value: 'B' },
          { op: 'Add', path: 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department', value: 'Navy' },
          { op: 'Replace', path: 'displayName', value: 'Amazing Grace' },
        ],
      },
    });
    expect(entra.status).toBe(200);
    expect(entra.body).toMatchObject({ displayName: 'Amazing Grace', active: false });
  });
});
