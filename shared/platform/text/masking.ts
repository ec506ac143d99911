import { badRequest } from '../errors.ts';

/**
 * How a stored secret (a SIP password, and any secret field that comes later) is answered:
 * its presence, never a character of it.
 */
export const MASKED_SECRET = '********';

/**
 * A secret field of an update. A client that reads an object, changes another field and
 * writes the object back sends the mask it was shown: that means "keep the stored secret",
 * never "store eight asterisks". Undefined (unchanged) for the mask, the value otherwise.
 */
export function unlessMasked<T>(value: T): T | undefined {
  return value === MASKED_SECRET ? undefined : value;
}

/** A secret field of a create has nothing to keep: the mask there is a copy of another object's answer. */
export function assertNotMasked(field: string, value: unknown): void {
  if (value === MASKED_SECRET) {
    throw badRequest(`${field}: Send the secret itself; ${MASKED_SECRET} is how a stored one is shown`);
  }
}
