/*
 * IDs inside moved objects. Every ID the compatible API hands out carries its kind's prefix
 * and a random part (`agent_…`, `llm_…`, `knowledge_base_…`), so a string equal to an ID of
 * the source account is a reference to that object wherever it sits (an engine, a flow
 * node's agent, a knowledge base list, a tool's transfer agent): rewriting by value reaches
 * references in shapes this importer does not know yet.
 */

/** Every string in `value` that is one of `ids`. */
export function referencedIds(value: unknown, ids: ReadonlySet<string>, found = new Set<string>()): Set<string> {
  if (typeof value === 'string') {
    if (ids.has(value)) found.add(value);
  } else if (Array.isArray(value)) {
    for (const item of value) referencedIds(item, ids, found);
  } else if (value && typeof value === 'object') {
    for (const item of Object.values(value)) referencedIds(item, ids, found);
  }
  return found;
}

/** `value` with every string that is a key of `map` replaced by its value. */
export function remapped<T>(value: T, map: ReadonlyMap<string, string>): T {
  if (typeof value === 'string') return (map.get(value) ?? value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => remapped(item, map)) as T;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, remapped(item, map)])) as T;
  }
  return value;
}

/** `value` without the named top-level fields (and without undefined ones). */
export function without(value: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(Object.entries(value).filter(([key, item]) => !fields.includes(key) && item !== undefined));
}

/**
 * Whether `target` already holds `wanted`: every field `wanted` sets is equal in `target`,
 * objects compared the same way field by field (the target may add defaults the source
 * left out), arrays item by item and of the same length.
 */
export function covers(target: unknown, wanted: unknown): boolean {
  if (wanted === null || typeof wanted !== 'object') return target === wanted || (wanted === null && target === undefined);
  if (Array.isArray(wanted)) {
    return Array.isArray(target) && target.length === wanted.length && wanted.every((item, i) => covers(target[i], item));
  }
  if (!target || typeof target !== 'object' || Array.isArray(target)) return false;
  return Object.entries(wanted).every(([key, item]) => item === undefined || covers((target as Record<string, unknown>)[key], item));
}
