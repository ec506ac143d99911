import { randomBytes, randomInt } from 'node:crypto';

/** Object factories: valid request bodies with overridable fields. */
export const apiKeyBody = (overrides: Record<string, unknown> = {}) => ({
  name: `key ${randomBytes(3).toString('hex')}`,
  ...overrides,
});

export const publicKeyBody = (overrides: Record<string, unknown> = {}) => ({
  name: `browser ${randomBytes(3).toString('hex')}`,
  ...overrides,
});

/** A valid, random San Francisco number (E.164); tables are per test file, so collisions are left to chance. */
export const freshNumber = () => `+1415${randomInt(200, 1000)}${String(randomInt(0, 10_000)).padStart(4, '0')}`;
