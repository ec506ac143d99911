import type { z } from 'zod';
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
  const seen = new Set<string>();
  const parts: string[] = [];
  for (const issue of issues) {
    const line = `${issue.path.length ? issue.path.map(String).join('.') : root}: ${describeIssue(issue)}`;
    if (!seen.has(line)) {
      seen.add(line);
      parts.push(line);
    }
  }
  return parts.join('; ');
}

function describeIssue(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type': {
      const received = typeName(issue.input);
      if (received === 'undefined') return 'Required';
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
