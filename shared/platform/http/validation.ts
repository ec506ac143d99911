import type * as z from 'zod';
import { badRequest } from '../errors.ts';

/**
 * Validation failures as the spec's Errors section writes them: each failing field as
 * `path: issue`, nested paths with dots and array indexes, joined by `; `.
 */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, root: string): z.output<S> {
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return result.data;
  throw badRequest(formatIssues(result.error.issues, root));
}

export function formatIssues(issues: readonly z.core.$ZodIssue[], root: string): string {
  // One issue per field: zod also reports its implicit safe-integer bound next to ours.
  const byPath = new Map<string, z.core.$ZodIssue>();
  for (const issue of issues) {
    const path = issue.path.length ? issue.path.map(String).join('.') : root;
    const kept = byPath.get(path);
    if (!kept || (isSafeIntegerBound(kept) && !isSafeIntegerBound(issue))) byPath.set(path, issue);
  }
  return [...byPath].map(([path, issue]) => `${path}: ${describeIssue(issue)}`).join('; ');
}

function isSafeIntegerBound(issue: z.core.$ZodIssue): boolean {
  return (
    (issue.code === 'too_big' && Number(issue.maximum) === Number.MAX_SAFE_INTEGER) ||
    (issue.code === 'too_small' && Number(issue.minimum) === Number.MIN_SAFE_INTEGER)
  );
}

/** zod's own messages start like this; anything else was written with the schema and is kept. */
const ZOD_DEFAULT_MESSAGE = /^(Invalid|Too (small|big)|Unrecognized)/;

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.message && !ZOD_DEFAULT_MESSAGE.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'invalid_type': {
      const received = typeName(issue.input);
      if (received === 'undefined') return 'Required';
      if (typeof issue.input === 'number' && !Number.isFinite(issue.input)) return 'Must be a finite number';
      if (issue.expected === 'int' && received === 'number') return 'Must be a whole number';
      return `Expected ${issue.expected}, received ${received}`;
    }
    case 'too_small':
      return bound('at least', issue.origin, issue.minimum, issue.inclusive);
    case 'too_big':
      return bound('at most', issue.origin, issue.maximum, issue.inclusive);
    case 'invalid_value':
      return `Expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'unrecognized_keys':
      return `Unrecognized keys ${issue.keys.join(', ')}`;
    case 'invalid_union':
      return issue.message && !issue.message.startsWith('Invalid input') ? issue.message : 'Invalid value';
    default:
      return issue.message;
  }
}

function bound(word: string, origin: string, limit: number | bigint, inclusive?: boolean): string {
  const n = Number(limit);
  switch (origin) {
    case 'string':
      return `Must be ${word} ${inclusive === false ? n + (word === 'at least' ? 1 : -1) : n} characters`;
    case 'array':
    case 'set':
      return `Must have ${word} ${n} items`;
    default:
      return inclusive === false
        ? `Must be ${word === 'at least' ? 'greater than' : 'less than'} ${n}`
        : `Must be ${word} ${n}`;
  }
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number' && Number.isNaN(value)) return 'NaN';
  return typeof value;
}
