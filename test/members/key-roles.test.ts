import { describe, expect, it } from 'vitest';
import { createApiKey } from '../../shared/account/api-keys.ts';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { admit } from '../../shared/platform/auth/gate.ts';
import { sha256 } from '../../shared/platform/crypto/hash.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody } from '../support/factories.ts';
import { apiClient, call } from '../support/http.ts';
import { refusal } from '../support/refusal.ts';

/*
 * A key acts within the role of the member who made it: a session grants only what its
 * role may, a key records its creator's role and is held to it (and to the creator's
 * current role), and ownership moves only at the owner's hand, whatever the credential.
 */

const app = await startTestApp();

interface Session {
  session_token: string;
  member: { member_id: string; role: string; email: string };
}

const as = (session: { session_token: string }) => ({ authorization: `Bearer ${session.session_token}` });
const answer = (res: { status: number; body: any }) => ({ status: res.status, message: res.body?.message });
const REQUIRES_ADMIN = { status: 403, message: 'Requires role: admin' };
const NOT_OWNER = { status: 403, message: 'Only the owner can transfer ownership' };
const NO_FULL_ACCESS = { status: 403, message: 'The developer role cannot grant full access (an empty scope list): name the key\'s scopes, without "admin"' };
const NO_ADMIN_SCOPE = { status: 403, message: 'The developer role cannot grant the "admin" scope' };
const CREATOR_GONE = { status: 403, message: 'This API key was made by a member who is no longer active in the workspace: it can no longer be used' };

/** A workspace whose owner (its first admin, added by the workspace's first key) is signed in. */
async function workspace() {
  const ws = await app.newWorkspace();
  expect((await ws.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } })).status).toBe(201);
  const owner = await createSessionFor(ws.workspace_id, 'owner@example.com');
  const ownerId = (await ws.api.get('/workspace/members')).body[0].member_id as string;
  const invite = async (email: string, role: string): Promise<Session> => {
    const created = await ws.api.post('/workspace/invites', { body: { email, role } });
    expect(created.status).toBe(201);
    const accepted = await call(app.url, 'POST', '/auth/invites/accept', { body: { token: created.body.token } });
    expect(accepted.status).toBe(200);
    return accepted.body as Session;
  };
  return { ws, owner, ownerId, invite };
}

/** A key made through `POST /api-keys` with the given headers. */
async function keyMadeBy(headers: Record<string, string>, body: Record<string, unknown>) {
  const res = await call(app.url, 'POST', '/api-keys', { headers, body: apiKeyBody(body) });
  expect(res.status).toBe(201);
  return { id: res.body.api_key_id as string, value: res.body.api_key as string, api: apiClient(app.url, res.body.api_key) };
}

const stored = (value: string) => table.get<Record<string, unknown>>(keys.credential(sha256(value)));


describe('what a session may grant', () => {
  it("refuses the developer's escalation chain at its first step: no full-access key", async () => {
    const { ws, ownerId, invite } = await workspace();
    const dev = await invite('dev@example.com', 'developer');
    const before = (await ws.api.get('/api-keys')).body.length;

    const minted = await call(app.url, 'POST', '/api-keys', { headers: as(dev), body: { name: 'x' } });
    expect({ status: minted.status, body: minted.body }).toEqual({ status: 403, body: NO_FULL_ACCESS });

    expect((await ws.api.get('/api-keys')).body).toHaveLength(before);
    const members = (await ws.api.get('/workspace/members')).body as { member_id: string; role: string; is_owner: boolean }[];
    expect(members.find((m) => m.member_id === dev.member.member_id)).toMatchObject({ role: 'developer', is_owner: false });
    expect(members.find((m) => m.member_id === ownerId)).toMatchObject({ role: 'admin', is_owner: true });
  });

  it('lets a developer make a scoped key without admin, which records its maker and cannot manage members', async () => {
    const { ownerId, invite } = await workspace();
    const dev = await invite('dev@example.com', 'developer');
    expect(answer(await call(app.url, 'POST', '/api-keys', { headers: as(dev), body: { name: 'x', scopes: ['calls', 'admin'] } }))).toEqual(NO_ADMIN_SCOPE);

    const key = await keyMadeBy(as(dev), { scopes: ['agents', 'calls'] });
    expect(await stored(key.value)).toMatchObject({ creator_role: 'developer', created_by_member: dev.member.member_id, scopes: ['agents', 'calls'] });
    expect((await key.api.post('/v2/list-calls', { body: {} })).status).toBe(200);
    expect(answer(await key.api.patch(`/workspace/members/${dev.member.member_id}`, { body: { role: 'admin' } }))).toEqual({
      status: 403,
      message: 'This API key lacks the "admin" scope',
    });
    expect(answer(await key.api.delete(`/workspace/members/${ownerId}`))).toEqual({ status: 403, message: 'This API key lacks the "admin" scope' });
  });

  it('holds a key with full scopes to the developer role of its maker, at every step of the chain', async () => {
    const { ws, owner, ownerId, invite } = await workspace();
    const dev = await invite('dev@example.com', 'developer');
    const key = await keyMadeBy(as(dev), { scopes: ['calls'] });
    // An admin may widen a developer's key: it still acts as a developer.
    expect((await call(app.url, 'PATCH', `/api-keys/${key.id}`, { headers: as(owner), body: { scopes: [] } })).status).toBe(200);

    expect(answer(await key.api.patch(`/workspace/members/${dev.member.member_id}`, { body: { role: 'admin' } }))).toEqual(REQUIRES_ADMIN);
    expect(answer(await key.api.post('/workspace/transfer', { body: { member_id: dev.member.member_id } }))).toEqual(REQUIRES_ADMIN);
    expect(answer(await key.api.delete(`/workspace/members/${ownerId}`))).toEqual(REQUIRES_ADMIN);
    expect(answer(await key.api.post('/workspace/scim-token'))).toEqual(REQUIRES_ADMIN);
    expect(answer(await key.api.get('/billing'))).toEqual(REQUIRES_ADMIN);
    expect(answer(await key.api.post('/api-keys', { body: apiKeyBody() }))).toEqual(NO_FULL_ACCESS);
    expect(answer(await key.api.post('/api-keys', { body: apiKeyBody({ scopes: ['admin'] }) }))).toEqual(NO_ADMIN_SCOPE);
    // What a developer may do, it may.
    expect((await key.api.patch('/workspace', { body: { name: 'Renamed by a key' } })).status).toBe(200);
    expect((await key.api.get('/workspace/members')).status).toBe(200);
    expect((await ws.api.get('/workspace/members')).body.find((m: { member_id: string }) => m.member_id === dev.member.member_id).role).toBe('developer');
  });

  it("lets a key acting as a developer delete and change only its maker's keys", async () => {
    const { ws, owner, invite } = await workspace();
    const dev = await invite('dev@example.com', 'developer');
    const key = await keyMadeBy(as(dev), { scopes: ['calls'] });
    expect((await call(app.url, 'PATCH', `/api-keys/${key.id}`, { headers: as(owner), body: { scopes: [] } })).status).toBe(200);
    const ownersKey = await keyMadeBy(as(owner), { scopes: ['calls'] });
    const devsOther = await keyMadeBy(as(dev), { scopes: ['agents'] });

    expect(answer(await key.api.delete(`/api-keys/${ownersKey.id}`))).toEqual(REQUIRES_ADMIN);
    expect(answer(await key.api.patch(`/api-keys/${ownersKey.id}`, { body: { rate_limit_per_minute: 1 } }))).toEqual(REQUIRES_ADMIN);
    expect(answer(await call(app.url, 'PATCH', `/api-keys/${ownersKey.id}`, { headers: as(dev), body: { scopes: ['agents'] } }))).toEqual(REQUIRES_ADMIN);
    expect((await key.api.patch(`/api-keys/${devsOther.id}`, { body: { name: 'renamed' } })).status).toBe(200);
    expect((await key.api.delete(`/api-keys/${devsOther.id}`)).status).toBe(204);
    expect((await ws.api.get('/api-keys')).body.map((k: { api_key_id: string }) => k.api_key_id)).toContain(ownersKey.id);
  });

  it('treats a key that names its maker but no role (an older record) as a developer', async () => {
    const { ws, ownerId, invite } = await workspace();
    const dev = await invite('dev@example.com', 'developer');
    const key = await keyMadeBy(as(dev), { scopes: ['calls'] });
    await table.update({
      Key: keys.credential(sha256(key.value)),
      UpdateExpression: 'SET scopes = :none REMOVE creator_role',
      ExpressionAttributeValues: { ':none': [] },
    });
    expect(answer(await key.api.delete(`/workspace/members/${ownerId}`))).toEqual(REQUIRES_ADMIN);
    // The gate's refusal wrote nothing of the key (the role is part of the gate's write condition).
    expect((await ws.api.get('/api-keys')).body.find((k: { api_key_id: string }) => k.api_key_id === key.id).last_used_timestamp).toBeNull();
    expect(answer(await key.api.post('/api-keys', { body: apiKeyBody() }))).toEqual(NO_FULL_ACCESS);
    expect((await key.api.get('/workspace/members')).status).toBe(200);
  });
});

describe("a key made by an admin", () => {
  it('does admin things, but transfers ownership only when the owner made it', async () => {
    const { ws, owner, ownerId, invite } = await workspace();
    const admin = await invite('admin@example.com', 'admin');
    const dev = await invite('dev@example.com', 'developer');
    const adminKey = await keyMadeBy(as(admin), {});
    expect(await stored(adminKey.value)).toMatchObject({ creator_role: 'admin', created_by_member: admin.member.member_id });

    expect((await adminKey.api.patch(`/workspace/members/${dev.member.member_id}`, { body: { role: 'member' } })).status).toBe(200);
    expect((await adminKey.api.post('/workspace/invites', { body: { email: 'new@example.com', role: 'developer' } })).status).toBe(201);

    // Neither an admin's key, nor the admin's session, nor the workspace's first key (no member made it) is the owner.
    expect(answer(await adminKey.api.post('/workspace/transfer', { body: { member_id: admin.member.member_id } }))).toEqual(NOT_OWNER);
    expect(answer(await call(app.url, 'POST', '/workspace/transfer', { headers: as(admin), body: { member_id: admin.member.member_id } }))).toEqual(NOT_OWNER);
    expect(answer(await ws.api.post('/workspace/transfer', { body: { member_id: admin.member.member_id } }))).toEqual(NOT_OWNER);
    // A key made by a key the owner made is the owner's too.
    const ownersKey = await keyMadeBy(as(owner), {});
    const grandchild = await keyMadeBy({ authorization: `Bearer ${ownersKey.value}` }, {});
    expect(await stored(grandchild.value)).toMatchObject({ creator_role: 'admin', created_by_member: ownerId });
    const moved = await grandchild.api.post('/workspace/transfer', { body: { member_id: admin.member.member_id } });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ member_id: admin.member.member_id, is_owner: true });
    // Ownership moved on: the former owner's keys no longer transfer it.
    expect(answer(await ownersKey.api.post('/workspace/transfer', { body: { member_id: ownerId } }))).toEqual(NOT_OWNER);
  });

  it("acts at most at its maker's current role: lowered with a demotion, refused once the maker is removed", async () => {
    const { ws, invite } = await workspace();
    const admin = await invite('admin@example.com', 'admin');
    const dev = await invite('dev@example.com', 'developer');
    const adminKey = await keyMadeBy(as(admin), {});
    const child = await keyMadeBy({ authorization: `Bearer ${adminKey.value}` }, { scopes: ['calls'] });
    expect(await stored(child.value)).toMatchObject({ creator_role: 'admin', created_by_member: admin.member.member_id });

    expect((await ws.api.patch(`/workspace/members/${admin.member.member_id}`, { body: { role: 'developer' } })).status).toBe(200);
    expect(await stored(adminKey.value)).toMatchObject({ creator_role: 'developer' });
    expect(await stored(child.value)).toMatchObject({ creator_role: 'developer' });
    expect(answer(await adminKey.api.patch(`/workspace/members/${dev.member.member_id}`, { body: { role: 'admin' } }))).toEqual(REQUIRES_ADMIN);
    expect(answer(await adminKey.api.post('/api-keys', { body: apiKeyBody() }))).toEqual(NO_FULL_ACCESS);
    expect((await adminKey.api.get('/workspace/members')).status).toBe(200);

    // Promotion does not raise a key again.
    expect((await ws.api.patch(`/workspace/members/${admin.member.member_id}`, { body: { role: 'admin' } })).status).toBe(200);
    expect(answer(await adminKey.api.patch(`/workspace/members/${dev.member.member_id}`, { body: { role: 'admin' } }))).toEqual(REQUIRES_ADMIN);

    expect((await ws.api.delete(`/workspace/members/${admin.member.member_id}`)).status).toBe(204);
    for (const key of [adminKey, child]) {
      expect(await stored(key.value)).toMatchObject({ creator_role: 'none' });
      expect(answer(await key.api.post('/v2/list-calls', { body: {} }))).toEqual(CREATOR_GONE);
      expect(answer(await key.api.get('/get-api-key-info'))).toEqual(CREATOR_GONE);
    }
  });

  it("counts as the workspace's full access only while it acts as an admin", async () => {
    const { ws, owner, invite } = await workspace();
    const admin = await invite('admin@example.com', 'admin');
    const adminKey = await keyMadeBy(as(admin), {});
    const first = (await ws.api.get('/api-keys')).body.find((k: { name: string }) => k.name === 'Default key');
    expect((await ws.api.delete(`/workspace/members/${admin.member.member_id}`)).status).toBe(204);

    // The removed admin's key has full scopes but no role: the first key is the last with full access.
    expect(answer(await call(app.url, 'DELETE', `/api-keys/${first.api_key_id}`, { headers: as(owner) }))).toEqual({
      status: 409,
      message: 'This is the workspace\'s last API key with full access (no scopes, or "admin"): create another such key before deleting it',
    });
    expect((await call(app.url, 'DELETE', `/api-keys/${adminKey.id}`, { headers: as(owner) })).status).toBe(204);
  });

  it('is refused when its maker is deactivated through SCIM', async () => {
    const { ws, invite } = await workspace();
    const admin = await invite('admin@example.com', 'admin');
    const adminKey = await keyMadeBy(as(admin), { scopes: ['calls'] });
    const scim = (await ws.api.post('/workspace/scim-token')).body.token as string;
    const deactivated = await call(app.url, 'PATCH', `/scim/v2/Users/${admin.member.member_id}`, {
      headers: { authorization: `Bearer ${scim}`, 'content-type': 'application/scim+json' },
      body: { schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'], Operations: [{ op: 'replace', path: 'active', value: false }] },
    });
    expect(deactivated.status).toBe(200);
    expect(answer(await adminKey.api.post('/v2/list-calls', { body: {} }))).toEqual(CREATOR_GONE);
  });

  it("is not made when its maker's role changes while it is being made", async () => {
    const { ws, invite } = await workspace();
    const admin = await invite('admin@example.com', 'admin');
    const bySession = (await admit({ access: 'admin', method: 'POST', path: '/api-keys' }, { sourceIp: '127.0.0.1', authorization: `Bearer ${admin.session_token}` })).principal!;
    // The creating key holds the webhook flag, and the new key takes it: the creating key is in the transaction twice over.
    const adminKey = await keyMadeBy(as(admin), { is_webhook_key: true });
    const byKey = (await admit({ access: 'admin', method: 'POST', path: '/api-keys' }, { sourceIp: '127.0.0.1', authorization: `Bearer ${adminKey.value}` })).principal!;
    const flagMoved = await createApiKey(byKey, { name: 'in time', scopes: ['calls'], is_webhook_key: true, allowed_ips: [] });
    expect(flagMoved.is_webhook_key).toBe(true);
    expect((await call(app.url, 'PATCH', `/api-keys/${adminKey.id}`, { headers: as(admin), body: { is_webhook_key: true } })).status).toBe(200);
    expect((await ws.api.patch(`/workspace/members/${admin.member.member_id}`, { body: { role: 'developer' } })).status).toBe(200);

    const before = (await ws.api.get('/api-keys')).body.length;
    for (const [principal, flag] of [[bySession, false], [byKey, false], [byKey, true]] as const) {
      const refused = await refusal(createApiKey(principal, { name: 'late', scopes: [], is_webhook_key: flag, allowed_ips: [] }));
      expect({ status: refused.status, message: refused.message }).toEqual({ status: 409, message: 'The role this request acts with changed meanwhile; retry' });
    }
    expect((await ws.api.get('/api-keys')).body).toHaveLength(before);
  });
});
