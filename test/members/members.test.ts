import { describe, expect, it } from 'vitest';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { startTestApp } from '../support/app.ts';
import { apiKeyBody } from '../support/factories.ts';
import { call } from '../support/http.ts';

const app = await startTestApp();
const UNAUTHORIZED = { status: 401, message: 'Missing or invalid API key / session' };

interface Session {
  session_token: string;
  refresh_token: string;
  csrf_token: string;
  member: { member_id: string; role: string; email: string };
}

/** A workspace whose first admin is signed in through an accepted invite path (admin added by key). */
async function workspaceWithAdmin() {
  const ws = await app.newWorkspace();
  const admin = await ws.api.post('/workspace/members', { body: { email: 'Owner@Example.com', role: 'admin' } });
  expect(admin.status).toBe(201);
  return { ws, admin: admin.body };
}

async function invite(api: ReturnType<typeof app.api.withKey>, email: string, role: string): Promise<Session> {
  const created = await api.post('/workspace/invites', { body: { email, role } });
  expect(created.status).toBe(201);
  const accepted = await call(app.url, 'POST', '/auth/invites/accept', { body: { token: created.body.token } });
  expect(accepted.status).toBe(200);
  return accepted.body as Session;
}

const as = (session: Pick<Session, 'session_token'>) => ({ authorization: `Bearer ${session.session_token}` });

describe('members and invites', () => {
  it('adds the first admin by key, lists members, refuses a duplicate email with the spec message', async () => {
    const { ws, admin } = await workspaceWithAdmin();
    expect(admin).toMatchObject({ email: 'owner@example.com', role: 'admin', is_owner: true, active: true, source: 'api' });
    const again = await ws.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'member' } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ status: 409, message: 'owner@example.com is already a member' });
    const invited = await ws.api.post('/workspace/invites', { body: { email: 'OWNER@example.com' } });
    expect(invited.body).toEqual({ status: 409, message: 'owner@example.com is already a member' });
    const listed = await ws.api.get('/workspace/members');
    expect(listed.status).toBe(200);
    expect(listed.body).toHaveLength(1);
  });

  it("refuses a non-admin as a workspace's first member", async () => {
    const ws = await app.newWorkspace();
    const res = await ws.api.post('/workspace/members', { body: { email: 'a@example.com', role: 'member' } });
    expect(res.status).toBe(409);
    expect(res.body.message).toBe("A workspace's first member must be an admin");
  });

  it('accepts an invite once; a replayed token is refused and expiry is 7 days', async () => {
    const { ws } = await workspaceWithAdmin();
    const created = await ws.api.post('/workspace/invites', { body: { email: 'dev@example.com', role: 'developer' } });
    expect(created.body.expires_timestamp - created.body.created_timestamp).toBe(7 * 24 * 3600 * 1000);
    expect((await ws.api.get('/workspace/invites')).body).toHaveLength(1);
    const first = await call(app.url, 'POST', '/auth/invites/accept', { body: { token: created.body.token } });
    expect(first.status).toBe(200);
    expect(first.body.member).toMatchObject({ email: 'dev@example.com', role: 'developer', source: 'invite' });
    expect(first.headers['set-cookie']).toMatch(/^parley_session=[^;]+; Path=\/; Max-Age=900; HttpOnly; Secure; SameSite=Strict$/);
    const replay = await call(app.url, 'POST', '/auth/invites/accept', { body: { token: created.body.token } });
    expect(replay.status).toBe(400);
    expect(replay.body.message).toBe('This invite is invalid, expired or already used');
    const forged = await call(app.url, 'POST', '/auth/invites/accept', { body: { token: created.body.token.replace(/.$/, (c: string) => (c === '0' ? '1' : '0')) } });
    expect(forged.status).toBe(400);
    expect((await ws.api.get('/workspace/invites')).body).toHaveLength(0);
  });

  it('revokes an invite', async () => {
    const { ws } = await workspaceWithAdmin();
    const created = await ws.api.post('/workspace/invites', { body: { email: 'x@example.com' } });
    expect((await ws.api.delete(`/workspace/invites/${created.body.invite_id}`)).status).toBe(204);
    const accepted = await call(app.url, 'POST', '/auth/invites/accept', { body: { token: created.body.token } });
    expect(accepted.status).toBe(400);
    expect((await ws.api.delete(`/workspace/invites/${created.body.invite_id}`)).status).toBe(404);
  });

  it('keeps one admin under concurrent demotions', async () => {
    const { ws, admin } = await workspaceWithAdmin();
    const second = await ws.api.post('/workspace/members', { body: { email: 'second@example.com', role: 'admin' } });
    const third = await ws.api.post('/workspace/members', { body: { email: 'third@example.com', role: 'admin' } });
    // The owner cannot be demoted; of the two others racing to be demoted with the owner
    // deactivated... here: demote both non-owners and the owner at once: the owner refuses, one other passes.
    const results = await Promise.all([
      ws.api.patch(`/workspace/members/${admin.member_id}`, { body: { role: 'member' } }),
      ws.api.patch(`/workspace/members/${second.body.member_id}`, { body: { role: 'member' } }),
      ws.api.patch(`/workspace/members/${third.body.member_id}`, { body: { role: 'member' } }),
    ]);
    expect(results[0]!.status).toBe(409);
    expect(results[0]!.body.message).toMatch(/^The owner cannot be demoted/);
    expect([results[1]!.status, results[2]!.status].sort()).toEqual([200, 200]);
    const admins = (await ws.api.get('/workspace/members')).body.filter((m: { role: string }) => m.role === 'admin');
    expect(admins).toHaveLength(1);
  });

  it('never lets concurrent demotions remove the last admin', async () => {
    const ws = await app.newWorkspace();
    await ws.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } });
    const a = (await ws.api.post('/workspace/members', { body: { email: 'a@example.com', role: 'admin' } })).body;
    // Move ownership to a, so the first admin is demotable, then race a's demotion with the first's.
    const owner = (await ws.api.get('/workspace/members')).body.find((m: { email: string }) => m.email === 'owner@example.com');
    const ownerSession = await createSessionFor(ws.workspace_id, 'owner@example.com');
    expect((await call(app.url, 'POST', '/workspace/transfer', { headers: as(ownerSession), body: { member_id: a.member_id } })).status).toBe(200);
    const results = await Promise.all([
      ws.api.patch(`/workspace/members/${owner.member_id}`, { body: { role: 'developer' } }),
      ws.api.delete(`/workspace/members/${a.member_id}`),
    ]);
    expect(results[1]!.status).toBe(409);
    expect(results[0]!.status).toBe(200);
    // Now a is the only admin and the owner: neither demotable nor removable.
    const last = await ws.api.patch(`/workspace/members/${a.member_id}`, { body: { role: 'member' } });
    expect(last.status).toBe(409);
  });

  it('lets a signed-in member leave (its session ends); a key cannot leave', async () => {
    const { ws } = await workspaceWithAdmin();
    const owner = await call(app.url, 'POST', '/auth/invites/accept', { body: { token: (await ws.api.post('/workspace/invites', { body: { email: 'dev2@example.com', role: 'member' } })).body.token } });
    const leave = await call(app.url, 'POST', '/workspace/leave', { headers: as(owner.body) });
    expect(leave.status).toBe(204);
    const after = await call(app.url, 'GET', '/workspace/members', { headers: as(owner.body) });
    expect(after.status).toBe(401);
    expect(after.body).toEqual(UNAUTHORIZED);
    const byKey = await ws.api.post('/workspace/leave');
    expect(byKey.status).toBe(400);
  });

  it('records changes in the audit log', async () => {
    const { ws, admin } = await workspaceWithAdmin();
    const session = await invite(ws.api, 'audited@example.com', 'admin');
    await call(app.url, 'PATCH', `/workspace/members/${session.member.member_id}`, { headers: as(session), body: { name: 'Audited' } });
    const log = (await ws.api.get('/audit-log')).body as { action: string; actor: { type: string; id: string | null } }[];
    const actions = log.map((entry) => entry.action);
    expect(actions).toEqual(expect.arrayContaining(['member.create', 'member.invite', 'member.join', 'member.update']));
    expect(log.find((entry) => entry.action === 'member.update')!.actor).toEqual({ type: 'member', id: session.member.member_id });
    expect(admin.member_id).toMatch(/^member_[0-9a-f]{24}$/);
  });
});

describe('sessions', () => {
  it('authenticates by bearer and by cookie; a cookie write needs the CSRF token', async () => {
    const { ws } = await workspaceWithAdmin();
    const dev = await invite(ws.api, 'dev@example.com', 'developer');
    expect((await call(app.url, 'GET', '/workspace', { headers: as(dev) })).status).toBe(200);
    const cookie = { cookie: `parley_session=${dev.session_token}` };
    expect((await call(app.url, 'GET', '/workspace', { headers: cookie })).status).toBe(200);
    const noCsrf = await call(app.url, 'POST', '/api-keys', { headers: cookie, body: apiKeyBody({ scopes: ['calls'] }) });
    expect(noCsrf.status).toBe(403);
    expect(noCsrf.body.message).toBe("Missing or invalid CSRF token: send the session's csrf_token in x-csrf-token");
    const wrong = await call(app.url, 'POST', '/api-keys', { headers: { ...cookie, 'x-csrf-token': 'f'.repeat(32) }, body: apiKeyBody({ scopes: ['calls'] }) });
    expect(wrong.status).toBe(403);
    const ok = await call(app.url, 'POST', '/api-keys', { headers: { ...cookie, 'x-csrf-token': dev.csrf_token }, body: apiKeyBody({ scopes: ['calls'] }) });
    expect(ok.status).toBe(201);
    // A bearer write needs no CSRF token (no browser sends it on its own).
    expect((await call(app.url, 'POST', '/api-keys', { headers: as(dev), body: apiKeyBody({ scopes: ['calls'] }) })).status).toBe(201);
  });

  it('refuses forged and tampered tokens', async () => {
    const { ws } = await workspaceWithAdmin();
    const dev = await invite(ws.api, 'dev@example.com', 'developer');
    const [header, payload, signature] = dev.session_token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const escalated = Buffer.from(JSON.stringify({ ...claims, sub: 'member_' + '0'.repeat(24) })).toString('base64url');
    // A flipped bit in the signature's first byte (changing its last base64url characters can leave the decoded bytes as they were).
    const tampered = Buffer.from(signature, 'base64url');
    tampered[0]! ^= 1;
    for (const token of [`${header}.${escalated}.${signature}`, `${header}.${payload}.${tampered.toString('base64url')}`, `eyJhbGciOiJub25lIn0.${payload}.`]) {
      const res = await call(app.url, 'GET', '/workspace', { headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
  });

  it('rotates refresh tokens and signs the session out when one is reused', async () => {
    const { ws } = await workspaceWithAdmin();
    const dev = await invite(ws.api, 'dev@example.com', 'developer');
    const next = await call(app.url, 'POST', '/auth/session/refresh', { body: { refresh_token: dev.refresh_token } });
    expect(next.status).toBe(200);
    expect(next.body.refresh_token).not.toBe(dev.refresh_token);
    expect((await call(app.url, 'GET', '/workspace', { headers: as(next.body) })).status).toBe(200);
    const reused = await call(app.url, 'POST', '/auth/session/refresh', { body: { refresh_token: dev.refresh_token } });
    expect(reused.status).toBe(401);
    expect(reused.body.message).toBe('Refresh token reuse detected: the session is signed out');
    // The whole session is gone: the newest tokens stop too.
    expect((await call(app.url, 'GET', '/workspace', { headers: as(next.body) })).status).toBe(401);
    expect((await call(app.url, 'POST', '/auth/session/refresh', { body: { refresh_token: next.body.refresh_token } })).status).toBe(401);
  });

  it('signs out, and a removed or demoted member loses access at the next request', async () => {
    const { ws } = await workspaceWithAdmin();
    const dev = await invite(ws.api, 'dev@example.com', 'developer');
    const other = await invite(ws.api, 'other@example.com', 'developer');
    expect((await call(app.url, 'POST', '/api-keys', { headers: as(dev), body: apiKeyBody({ scopes: ['calls'] }) })).status).toBe(201);
    expect((await ws.api.patch(`/workspace/members/${dev.member.member_id}`, { body: { role: 'member' } })).status).toBe(200);
    const demoted = await call(app.url, 'POST', '/api-keys', { headers: as(dev), body: apiKeyBody({ scopes: ['calls'] }) });
    expect(demoted.status).toBe(403);
    expect(demoted.body.message).toBe('The member role is read-only');
    expect((await ws.api.delete(`/workspace/members/${dev.member.member_id}`)).status).toBe(204);
    expect((await call(app.url, 'GET', '/workspace', { headers: as(dev) })).status).toBe(401);
    const out = await call(app.url, 'POST', '/auth/session/logout', { headers: as(other) });
    expect(out.status).toBe(200);
    expect(out.headers['set-cookie']).toMatch(/^parley_session=; Path=\/; Max-Age=0/);
    expect((await call(app.url, 'GET', '/workspace', { headers: as(other) })).status).toBe(401);
  });

  it('keeps workspaces apart: a session reads only its own workspace', async () => {
    const first = await workspaceWithAdmin();
    const second = await workspaceWithAdmin();
    const dev = await invite(first.ws.api, 'dev@example.com', 'admin');
    const members = await call(app.url, 'GET', '/workspace/members', { headers: as(dev) });
    expect(members.body.map((m: { email: string }) => m.email).sort()).toEqual(['dev@example.com', 'owner@example.com']);
    const otherMember = (await second.ws.api.get('/workspace/members')).body[0];
    const cross = await call(app.url, 'PATCH', `/workspace/members/${otherMember.member_id}`, { headers: as(dev), body: { role: 'member' } });
    expect(cross.status).toBe(404);
  });
});

describe('workspace delete and transfer', () => {
  it('transfers ownership only to an admin, then deletes the workspace revoking keys and sessions', async () => {
    const { ws } = await workspaceWithAdmin();
    const dev = await invite(ws.api, 'dev@example.com', 'developer');
    const owner = await createSessionFor(ws.workspace_id, 'owner@example.com');
    const toDev = await call(app.url, 'POST', '/workspace/transfer', { headers: as(owner), body: { member_id: dev.member.member_id } });
    expect(toDev.status).toBe(409);
    const admin = await invite(ws.api, 'admin2@example.com', 'admin');
    const devDelete = await call(app.url, 'POST', '/workspace/delete', { headers: as(dev), body: { confirm: 'x' } });
    expect(devDelete.status).toBe(403);
    expect(devDelete.body.message).toBe('Requires role: admin');
    const name = (await ws.api.get('/workspace')).body.name;
    const wrongName = await call(app.url, 'POST', '/workspace/delete', { headers: as(admin), body: { confirm: 'not it' } });
    expect(wrongName.status).toBe(400);
    const deleted = await call(app.url, 'POST', '/workspace/delete', { headers: as(admin), body: { confirm: name } });
    expect(deleted.status).toBe(202);
    expect((await ws.api.get('/workspace')).status).toBe(401);
    expect((await call(app.url, 'GET', '/workspace', { headers: as(admin) })).status).toBe(401);
    expect((await call(app.url, 'GET', '/workspace', { headers: as(dev) })).status).toBe(401);
  });
});
