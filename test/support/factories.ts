import { randomBytes } from 'node:crypto';

/** Object factories: valid request bodies with overridable fields. */
export const apiKeyBody = (overrides: Record<string, unknown> = {}) => ({
  name: `key ${randomBytes(3).toString('hex')}`,
  ...overrides,
});

export const publicKeyBody = (overrides: Record<string, unknown> = {}) => ({
  name: `browser ${randomBytes(3).toString('hex')}`,
  ...overrides,
});
