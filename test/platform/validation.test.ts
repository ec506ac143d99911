import * as z from 'zod';
import { describe, expect, it } from 'vitest';
import type { ApiError } from '../../shared/platform/errors.ts';
import { queryInt } from '../../shared/platform/http/schemas.ts';
import { parseOrThrow } from '../../shared/platform/http/validation.ts';

function message(schema: z.ZodType, input: unknown, root = 'body'): string {
  try {
    parseOrThrow(schema, input, root);
  } catch (error) {
    expect((error as ApiError).status).toBe(400);
    return (error as ApiError).message;
  }
  throw new Error('expected a validation failure');
}

describe('validation messages', () => {
  const Task = z.object({ to_number: z.string(), tags: z.array(z.string().max(3)).max(2) });
  const Body = z.object({ name: z.string(), limit: z.number().int().min(1).max(10), tasks: z.array(Task) });

  it('names each failing field as path: issue, nested with dots and array indexes, joined by "; "', () => {
    expect(
      message(Body, { limit: 0, tasks: [{ to_number: '+61', tags: ['a'] }, { to_number: 5, tags: ['toolong'] }] }),
    ).toBe(
      'name: Required; limit: Must be at least 1; tasks.1.to_number: Expected string, received number; tasks.1.tags.0: Must be at most 3 characters',
    );
  });

  it('names the root when the body itself has the wrong type', () => {
    expect(message(Body, [])).toBe('body: Expected object, received array');
  });

  it('drops unknown fields instead of rejecting them', () => {
    expect(parseOrThrow(z.object({ a: z.string() }), { a: 'x', api_key_id: 'key_x', extra: 1 }, 'body')).toEqual({ a: 'x' });
  });

  it('lists enum choices', () => {
    expect(message(z.object({ s: z.enum(['a', 'b']) }), { s: 'c' })).toBe('s: Expected one of "a", "b"');
  });

  describe('integer query parameters', () => {
    const Query = z.object({ limit: queryInt({ min: 1, max: 1000, default: 50 }) });
    it.each([
      ['-1', 'limit: Must be at least 1'],
      ['1001', 'limit: Must be at most 1000'],
      ['99999999999999999999', 'limit: Must be at most 1000'],
      ['1e3', 'limit: Must be a whole number'],
      ['0x10', 'limit: Must be a whole number'],
      ['１０', 'limit: Must be a whole number'],
      ['1.5', 'limit: Must be a whole number'],
      ['10,20', 'limit: Must be a whole number'],
    ])('rejects %s', (value, expected) => {
      expect(message(Query, { limit: value }, 'query')).toBe(expected);
    });

    it('defaults when absent and parses plain digits', () => {
      expect(parseOrThrow(Query, {}, 'query')).toEqual({ limit: 50 });
      expect(parseOrThrow(Query, { limit: '7' }, 'query')).toEqual({ limit: 7 });
    });
  });
});

describe('one message per field', () => {
  it('reports our bound, not zod’s implicit safe-integer bound', () => {
    expect(message(z.object({ n: z.number().int().min(1).max(100) }), { n: 1e20 })).toBe('n: Must be at most 100');
  });
});
