import { describe, expect, it } from 'vitest';
import { ApiError } from '../../shared/platform/errors.ts';
import { MAX_JSON_DEPTH, MAX_JSON_STRING, parseJsonBody } from '../../shared/platform/http/json.ts';

function failure(text: string): string {
  try {
    parseJsonBody(text);
  } catch (error) {
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).status).toBe(400);
    return (error as ApiError).message;
  }
  throw new Error('expected a failure');
}

const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

describe('parseJsonBody', () => {
  it('parses ordinary JSON', () => {
    expect(parseJsonBody('{"a":[{"b":1},{"b":2}],"c":"x"}')).toEqual({ a: [{ b: 1 }, { b: 2 }], c: 'x' });
  });

  it('rejects text that is not JSON', () => {
    expect(failure('{"a":')).toBe('Invalid JSON body');
    expect(failure("{'a':1}")).toBe('Invalid JSON body');
  });

  it('rejects duplicate keys in one object, including escaped spellings', () => {
    expect(failure('{"name":"a","name":"b"}')).toBe('Invalid JSON body: duplicate key "name"');
    expect(failure('{"a":1,"\\u0061":2}')).toBe('Invalid JSON body: duplicate key "a"');
    expect(failure('{"x":{"k":1,"k":2}}')).toBe('Invalid JSON body: duplicate key "k"');
  });

  it('allows the same key in sibling objects and in values', () => {
    expect(parseJsonBody('{"a":{"k":1},"b":{"k":2},"c":"k"}')).toEqual({ a: { k: 1 }, b: { k: 2 }, c: 'k' });
  });

  it('is not fooled by quotes, braces and backslashes inside strings', () => {
    const text = '{"a":"}{\\"a\\":1,","b":"\\\\","c":"[[[","a2":"\\\\\\""}';
    expect(parseJsonBody(text)).toEqual({ a: '}{"a":1,', b: '\\', c: '[[[', a2: '\\"' });
    expect(failure('{"s":"\\\\","s":1}')).toBe('Invalid JSON body: duplicate key "s"');
  });

  it(`accepts ${MAX_JSON_DEPTH} levels of nesting and rejects one more`, () => {
    expect(() => parseJsonBody(nested(MAX_JSON_DEPTH))).not.toThrow();
    expect(failure(nested(MAX_JSON_DEPTH + 1))).toBe(`Invalid JSON body: nesting deeper than ${MAX_JSON_DEPTH} levels`);
  });

  it(`accepts strings of ${MAX_JSON_STRING} characters anywhere and names where a longer one is`, () => {
    const atCap = 'x'.repeat(MAX_JSON_STRING);
    const over = 'x'.repeat(MAX_JSON_STRING + 1);
    expect(parseJsonBody(JSON.stringify({ a: [{ b: atCap }] }))).toEqual({ a: [{ b: atCap }] });
    expect(failure(JSON.stringify({ a: [1, { b: over }] }))).toBe(
      `Invalid JSON body: a string is longer than ${MAX_JSON_STRING} characters at a[1].b`,
    );
    expect(failure(JSON.stringify({ steps: [{ body: { deep: [[over]] } }] }))).toBe(
      `Invalid JSON body: a string is longer than ${MAX_JSON_STRING} characters at steps[0].body.deep[0][0]`,
    );
    expect(failure(JSON.stringify([over]))).toBe(`Invalid JSON body: a string is longer than ${MAX_JSON_STRING} characters at [0]`);
    expect(failure(JSON.stringify({ [over]: 1 }))).toBe(`Invalid JSON body: a string is longer than ${MAX_JSON_STRING} characters`);
    expect(failure(JSON.stringify(over))).toBe(`Invalid JSON body: a string is longer than ${MAX_JSON_STRING} characters`);
  });

  it('counts a string by its characters, not by its escaped text', () => {
    const escaped = '\n'.repeat(MAX_JSON_STRING);
    expect(JSON.stringify(escaped).length).toBeGreaterThan(MAX_JSON_STRING);
    expect(parseJsonBody(JSON.stringify({ a: escaped }))).toEqual({ a: escaped });
  });
});
