import { forbidden } from '../errors.ts';

/**
 * Dashboard roles (spec Authentication 11): `admin` everything; `developer` everything but
 * members, billing, SSO/SAML/SCIM, key deletion and workspace delete/transfer; `member`
 * read-only. The one place routes are mapped to roles: `requiredRole` derives each route's
 * role from the route table (its method, path and optional `role`), and the gate applies
 * it to every session request, and to every secret key made by a member (below), beside
 * the key's scopes.
 */
export const ROLES = ['admin', 'developer', 'member'] as const;
export type Role = (typeof ROLES)[number];

const RANK: Record<Role, number> = { member: 0, developer: 1, admin: 2 };

/** What the role table reads of a route (a subset of RouteDefinition). */
export interface RoleRoute {
  method: string;
  path: string;
  /** An explicit minimum role; without it, reads need `member` and writes `developer`. */
  role?: Role;
}

/**
 * Reads that the compatible API spells as POST (retell-sdk's list and search calls): a
 * `member` may call them. Everything else that is not a GET writes.
 */
const READ_POST = /^\/(?:v\d\/)?(?:list|search)-/;

function isReadRoute(route: Pick<RoleRoute, 'method' | 'path'>): boolean {
  return route.method === 'GET' || (route.method === 'POST' && READ_POST.test(route.path));
}

/** The least role a route needs. */
export function requiredRole(route: RoleRoute): Role {
  if (route.role) return route.role;
  return isReadRoute(route) ? 'member' : 'developer';
}

const holdsRole = (granted: Role, needed: Role) => RANK[granted] >= RANK[needed];

/**
 * 403 unless `role` may call the route: a member's write is `The member role is
 * read-only` (unless the route lets members write, e.g. signing out), any other shortfall
 * `Requires role: <role>`.
 */
export function assertRole(role: Role, route: RoleRoute): void {
  const needed = requiredRole(route);
  if (holdsRole(role, needed)) return;
  if (role === 'member' && !isReadRoute(route)) throw forbidden('The member role is read-only');
  throw forbidden(`Requires role: ${needed}`);
}

/**
 * The role a secret key acts with: its creator's. A key made by a member's session records
 * that member's role (`creator_role`) and the member (`created_by_member`); a key made by
 * another key inherits both. A record naming a member but no role predates the recorded
 * role and acts as `developer`, the least role that could make keys. A key no member stands
 * behind (the workspace's first key, or one such a key made) acts as `admin`. `none`: the
 * creator was removed or deactivated, and the key is refused everywhere. A member's keys
 * follow them down (credentials.ts `lowerMemberKeys`), never up.
 */
export type KeyRole = Role | 'none';

export interface KeyRoleRecord {
  creator_role?: KeyRole;
  created_by_member?: string;
}

export function keyRole(record: KeyRoleRecord): KeyRole {
  return record.creator_role ?? (record.created_by_member ? 'developer' : 'admin');
}

/** Orders key roles; `none` is below every role. */
export const keyRoleRank = (role: KeyRole): number => (role === 'none' ? -1 : RANK[role]);

const creatorGone = () =>
  forbidden('This API key was made by a member who is no longer active in the workspace: it can no longer be used');

/** 403 unless a secret key's role may call the route: `assertRole` for its creator's role. */
export function assertKeyRole(record: KeyRoleRecord, route: RoleRoute): void {
  const role = keyRole(record);
  if (role === 'none') throw creatorGone();
  assertRole(role, route);
}

/**
 * `assertKeyRole` as a condition on the key's record (for the gate's write): the key's
 * recorded role is one that may call the route, or it records none and the role it then
 * has (`admin` without a member, `developer` with one) may.
 */
export function keyRoleCondition(route: RoleRoute): { expression: string; names: Record<string, string>; values: Record<string, unknown> } {
  const needed = requiredRole(route);
  const allowed = ROLES.filter((role) => holdsRole(role, needed));
  const values = Object.fromEntries(allowed.map((role) => [`:keyRole_${role}`, role]));
  const anyUnrecorded = holdsRole('developer', needed);
  const names: Record<string, string> = { '#creatorRole': 'creator_role', ...(anyUnrecorded ? {} : { '#createdBy': 'created_by_member' }) };
  const unrecorded = anyUnrecorded
    ? 'attribute_not_exists(#creatorRole)'
    : '(attribute_not_exists(#creatorRole) AND attribute_not_exists(#createdBy))';
  return { expression: `(${unrecorded} OR #creatorRole IN (${Object.keys(values).join(', ')}))`, names, values };
}
