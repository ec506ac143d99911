import { forbidden, missingScope } from '../errors.ts';

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
 * A key can never hand out more than its creator holds: full access (no scopes, or
 * admin) may grant anything, otherwise every requested scope must be held, and a
 * scoped creator cannot mint a full-access key by asking for no scopes.
 */
export function assertGrantable(creator: { kind: 'secret' | 'public' | 'session'; scopes: readonly Scope[] }, requested: readonly Scope[]): void {
  if (creator.kind === 'public') throw forbidden('A public key cannot grant access');
  // A developer's or admin's session (the role check admitted it) manages keys in full.
  if (creator.kind === 'session') return;
  if (creator.scopes.length === 0 || creator.scopes.includes('admin')) return;
  if (requested.length === 0) {
    throw forbidden('This API key cannot grant full access: it lacks the "admin" scope');
  }
  const missing = requested.find((scope) => !creator.scopes.includes(scope));
  if (missing) throw forbidden(`This API key cannot grant the "${missing}" scope it lacks`);
}
