import { describe, expect, it } from 'vitest';
import { canonicalCidr, canonicalIp } from '../../shared/platform/auth/ip.ts';
import { assertGrantable, holdsScope, type Scope } from '../../shared/platform/auth/scopes.ts';
import type { ApiError } from '../../shared/platform/errors.ts';

const secretKey = (scopes: Scope[]) => ({ kind: 'secret' as const, scopes });

describe('scopes', () => {
  it('treats no scopes and admin as full access', () => {
    expect(holdsScope([], 'numbers')).toBe(true);
    expect(holdsScope(['admin'], 'kb')).toBe(true);
    expect(holdsScope(['agents'], 'agents')).toBe(true);
    expect(holdsScope(['agents', 'calls'], 'kb')).toBe(false);
  });

  it('never lets a key grant more than it holds', () => {
    expect(() => assertGrantable(secretKey([]), ['admin'])).not.toThrow();
    expect(() => assertGrantable(secretKey(['admin']), [])).not.toThrow();
    expect(() => assertGrantable(secretKey(['agents', 'calls']), ['calls'])).not.toThrow();
    const escalation = (() => {
      try {
        assertGrantable(secretKey(['agents']), ['agents', 'numbers']);
      } catch (error) {
        return error as ApiError;
      }
    })();
    expect(escalation?.status).toBe(403);
    expect(escalation?.message).toBe('This API key cannot grant the "numbers" scope it lacks');
    expect(() => assertGrantable(secretKey(['agents']), [])).toThrow('cannot grant full access');
  });

  it('lets a role other than admin grant only named scopes, never admin or full access', () => {
    for (const creator of [{ kind: 'session' as const, scopes: [], role: 'developer' as const }, { kind: 'secret' as const, scopes: [], role: 'developer' as const }]) {
      expect(() => assertGrantable(creator, ['agents', 'calls'])).not.toThrow();
      expect(() => assertGrantable(creator, [])).toThrow('The developer role cannot grant full access (an empty scope list): name the key\'s scopes, without "admin"');
      expect(() => assertGrantable(creator, ['calls', 'admin'])).toThrow('The developer role cannot grant the "admin" scope');
    }
    expect(() => assertGrantable({ kind: 'session', scopes: [], role: 'admin' }, [])).not.toThrow();
    // A key acting as an admin still grants only what it holds.
    expect(() => assertGrantable({ kind: 'secret', scopes: ['agents'], role: 'admin' }, ['calls'])).toThrow('This API key cannot grant the "calls" scope it lacks');
  });

  it('never lets a public key grant anything, though its scope list is empty', () => {
    expect(() => assertGrantable({ kind: 'public', scopes: [] }, ['calls'])).toThrow('A public key cannot grant access');
    expect(() => assertGrantable({ kind: 'public', scopes: [] }, [])).toThrow('A public key cannot grant access');
  });
});

describe('canonicalIp', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1'],
    ['2001:db8::0:1', '2001:db8::1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::1', '::1'],
  ])('%s → %s', (input, expected) => {
    expect(canonicalIp(input)).toBe(expected);
  });

  it.each(['10.0.0.0/8', '01.2.3.4', '1.2.3', '256.1.1.1', 'fe80::1%eth0', ' 1.2.3.4', '1.2.3.4\n', 'localhost', '１.2.3.4', ''])(
    'rejects %j',
    (input) => {
      expect(canonicalIp(input)).toBeUndefined();
    },
  );
});

describe('canonicalCidr', () => {
  it.each([
    ['198.51.100.77/24', '198.51.100.0/24'],
    ['203.0.113.7', '203.0.113.7/32'],
    ['2001:DB8:0:0:1::/32', '2001:db8::/32'],
    ['::1', '::1/128'],
  ])('%s → %s', (input, expected) => {
    expect(canonicalCidr(input)).toBe(expected);
  });

  it.each(['10.0.0.0/33', '10.0.0.0/', '10.0.0.0/8/8', '10.0.0.0/x', '2001:db8::/129', ' 10.0.0.0/8', 'nope/8'])('rejects %j', (input) => {
    expect(canonicalCidr(input)).toBeUndefined();
  });
});
