import { forbidden, missingScope } from '../errors.ts';
import type { Role } from './roles.ts';

/** Scopes from the spec's Authentication section. An empty scope list is full access. */
export const SCOPES = ['agents', 'calls', 'numbers', 'kb', 'analytics', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/**
 * What a public (browser) key can do, the same for every public key: start web calls and
 * chats (spec Authentication 10). A public key holds no scope: the gate admits it only to
 * routes that name one of these capabilities, and nothing it calls can treat it as a key
 * with full access (which an empty scope list would otherwise mean).
 */
export const PUBLIC_KEY_CAPABILITIES = ['start_web_call', 'start_chat'] as const;
export type PublicCapability = (typeof PUBLIC_KEY_CAPABILITIES)[number];

/** Who may call a route: a scope, any authenticated key, or anyone (public routes). */
export type Access = Scope | 'any-key' | 'public';

export function holdsScope(granted: readonly Scope[], needed: Scope): boolean {
  return granted.length === 0 || granted.includes('admin') || granted.includes(needed);
}

export function assertScope(granted: readonly Scope[], needed: Scope): void {
  if (!holdsScope(granted, needed)) throw missingScope(needed);
}

/**
 * What a creator may hand out. A role other than `admin` (a developer's session, or a key
 * acting with a developer's role) grants only named scopes, never `admin` and never full
 * access (no scopes): a role may hand out only what it may do, and `admin` (full access)
 * is the scope of the routes only admins may call. A key, besides, can never hand out more
 * than it holds: full access (no scopes, or admin) may grant anything, otherwise every
 * requested scope must be held, and a scoped key cannot mint a full-access key by asking
 * for no scopes. A session's own scopes are empty and mean nothing: its role rules.
 */
export function assertGrantable(
  creator: { kind: 'secret' | 'public' | 'session'; scopes: readonly Scope[]; role?: Role },
  requested: readonly Scope[],
): void {
  if (creator.kind === 'public') throw forbidden('A public key cannot grant access');
  if (creator.role !== undefined && creator.role !== 'admin') {
    if (requested.length === 0) {
      throw forbidden(`The ${creator.role} role cannot grant full access (an empty scope list): name the key's scopes, without "admin"`);
    }
    if (requested.includes('admin')) throw forbidden(`The ${creator.role} role cannot grant the "admin" scope`);
  }
  if (creator.kind === 'session') return;
  if (creator.scopes.length === 0 || creator.scopes.includes('admin')) return;
  if (requested.length === 0) {
    throw forbidden('This API key cannot grant full access: it lacks the "admin" scope');
  }
  const missing = requested.find((scope) => !creator.scopes.includes(scope));
  if (missing) throw forbidden(`This API key cannot grant the "${missing}" scope it lacks`);
}
