import * as z from 'zod';
import { idPattern, idPrefix, type IdKind } from '../ids.ts';

/**
 * Schema building blocks shared by every route, as factories: they are called inside
 * lazily built schemas, so nothing is constructed at module load. Query strings arrive as text (API
 * Gateway joins repeated parameters with commas), so numbers are parsed strictly: ASCII
 * digits only, no hex, no exponent, no unicode digits.
 */
function strictInt(min: number, max: number) {
  return z
    .string()
    .regex(/^-?[0-9]{1,20}$/, 'Must be a whole number')
    .transform(Number)
    .pipe(z.number().min(min).max(max));
}

export function queryInt(options: { min: number; max: number; default: number }) {
  return strictInt(options.min, options.max).default(options.default);
}

export function requiredQueryInt(options: { min: number; max: number }) {
  return strictInt(options.min, options.max);
}

export function optionalQueryInt(options: { min: number; max: number }) {
  return strictInt(options.min, options.max).optional();
}

/** `?version=` of a versioned resource (versions are 9-digit numbers in the store's keys). */
export const versionQuery = () => z.object({ version: optionalQueryInt({ min: 0, max: 999_999_999 }) });

export function idOf(kind: IdKind, label: string) {
  return z.string().regex(idPattern(kind), `Must be ${label} (${idPrefix[kind]} followed by 24 hex characters)`);
}

export const epochMs = () => z.number().int().nonnegative().describe('Unix epoch milliseconds');

export const displayName = () => z.string().trim().min(1).max(200);

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

export const httpUrl = () => z.string().max(2048).refine(isHttpUrl, 'Must be an http:// or https:// URL');
