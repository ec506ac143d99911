import { forbidden } from '../errors.ts';

/**
 * Dashboard roles (spec Authentication 11): `admin` everything; `developer` everything but
 * members, billing, SSO/SAML/SCIM, key deletion and workspace delete/transfer; `member`
 * read-only. The one place routes are mapped to roles: `requiredRole` derives each route's
 * role from the route table (its method, path and optional `role`), and the gate applies
 * it to every session request. API keys are governed by their scopes instead.
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

export function isReadRoute(route: Pick<RoleRoute, 'method' | 'path'>): boolean {
  return route.method === 'GET' || (route.method === 'POST' && READ_POST.test(route.path));
}

/** The least role a route needs. */
export function requiredRole(route: RoleRoute): Role {
  if (route.role) return route.role;
  return isReadRoute(route) ? 'member' : 'developer';
}

export const holdsRole = (granted: Role, needed: Role) => RANK[granted] >= RANK[needed];

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
