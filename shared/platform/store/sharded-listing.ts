import { table } from './table.ts';

/*
 * A workspace's listing (calls, chats) is a query of the listing index gsi1, never a scan
 * (the webhook delivery log, whose shards are table partitions, merges the same way).
 * Its entries are spread over a few index partitions (shards, so one busy workspace does not
 * make one hot partition); every shard is read from the page's starting point (an ID, which
 * sorts by creation time) with a FilterExpression on the projected attributes, and the shards
 * are merged by ID. What a domain adds is its own filter vocabulary and how it reads the full
 * items of a page.
 */

/** A FilterExpression on the listing index's projected attributes. */
export interface ListingFilter {
  expression: string;
  names: Record<string, string>;
  values: Record<string, unknown>;
}

/** One condition on one value (retell-sdk's filter ops; `in` for a list of values). */
export type ListingCondition =
  | { op: 'in'; value: readonly (string | number | boolean)[] }
  | { op: 'eq' | 'ne'; value: string | number | boolean }
  | { op: 'sw' | 'ew' | 'co'; value: string }
  | { op: 'gt' | 'ge' | 'lt' | 'le'; value: number }
  | { op: 'bt'; value: readonly [number, number] }
  | { op: 'pr' | 'np' };

/** Builds a FilterExpression from conditions (AND of its parts), with its placeholders. */
export class ListingExpression {
  readonly names: Record<string, string> = {};
  readonly values: Record<string, unknown> = {};
  readonly parts: string[] = [];
  private n = 0;

  name(attribute: string): string {
    const existing = Object.entries(this.names).find(([, name]) => name === attribute);
    if (existing) return existing[0];
    const placeholder = `#f${Object.keys(this.names).length}`;
    this.names[placeholder] = attribute;
    return placeholder;
  }

  value(value: unknown): string {
    const placeholder = `:v${this.n++}`;
    this.values[placeholder] = value;
    return placeholder;
  }

  /**
   * The condition as DynamoDB syntax, or undefined when an expression cannot say it (`ew`,
   * `pr`, `np`: checked on the entry instead). `absentMeans` is the value an item without
   * the attribute stands for (its default), so `eq`/`in` of the default match it too. An
   * item without the attribute is "not equal" to anything but its default.
   */
  condition(attribute: string, condition: ListingCondition, absentMeans?: string): string | undefined {
    if (condition.op === 'ew' || condition.op === 'pr' || condition.op === 'np') return undefined;
    const a = this.name(attribute);
    const orAbsent = (expression: string, matchesAbsent: boolean) => (matchesAbsent ? `(attribute_not_exists(${a}) OR ${expression})` : expression);
    switch (condition.op) {
      case 'in':
        return orAbsent(`${a} IN (${condition.value.map((v) => this.value(v)).join(', ')})`, absentMeans !== undefined && condition.value.includes(absentMeans));
      case 'eq':
        return orAbsent(`${a} = ${this.value(condition.value)}`, absentMeans !== undefined && condition.value === absentMeans);
      case 'ne':
        return absentMeans !== undefined && condition.value === absentMeans
          ? `(attribute_exists(${a}) AND ${a} <> ${this.value(condition.value)})`
          : `(attribute_not_exists(${a}) OR ${a} <> ${this.value(condition.value)})`;
      case 'gt':
        return `${a} > ${this.value(condition.value)}`;
      case 'ge':
        return `${a} >= ${this.value(condition.value)}`;
      case 'lt':
        return `${a} < ${this.value(condition.value)}`;
      case 'le':
        return `${a} <= ${this.value(condition.value)}`;
      case 'bt':
        return `${a} BETWEEN ${this.value(condition.value[0])} AND ${this.value(condition.value[1])}`;
      case 'sw':
        return `begins_with(${a}, ${this.value(condition.value)})`;
      case 'co':
        return `contains(${a}, ${this.value(condition.value)})`;
    }
  }

  /** Adds a condition the expression can say; answers whether it did. */
  add(attribute: string, condition: ListingCondition, absentMeans?: string): boolean {
    const syntax = this.condition(attribute, condition, absentMeans);
    if (syntax) this.parts.push(syntax);
    return syntax !== undefined;
  }

  build(): ListingFilter | undefined {
    return this.parts.length ? { expression: this.parts.join(' AND '), names: this.names, values: this.values } : undefined;
  }
}

/** One shard's entries strictly after (or before, descending) an ID, as gsi1 projects them (or the table holds them). */
async function queryListingShard<E>(input: {
  gsi1pk: string;
  /** The shards are table partitions (`pk`, `sk`) rather than gsi1's. */
  onTable?: boolean;
  ascending: boolean;
  /** Exclusive bound: entries strictly after this ID in the sort order. */
  after?: string;
  /** Ascending only: entries strictly before this bound (no entry's ID equals it). */
  until?: string;
  filter?: ListingFilter;
  limit: number;
  exclusiveStartKey?: Record<string, unknown>;
}): Promise<{ items: E[]; lastKey?: Record<string, unknown> }> {
  const names: Record<string, string> = { ...(input.filter?.names ?? {}) };
  const values: Record<string, unknown> = { ...(input.filter?.values ?? {}), ':gpk': input.gsi1pk };
  const [pk, sk] = input.onTable ? ['pk', 'sk'] : ['gsi1pk', 'gsi1sk'];
  let keyCondition = `${pk} = :gpk`;
  if (input.ascending && input.until !== undefined) {
    if (input.after !== undefined && input.after >= input.until) return { items: [] };
    // One condition on the sort key: BETWEEN is inclusive, so `after` itself is dropped below.
    values[':until'] = input.until;
    if (input.after) values[':after'] = input.after;
    keyCondition += input.after ? ` AND ${sk} BETWEEN :after AND :until` : ` AND ${sk} < :until`;
  } else if (input.after) {
    values[':after'] = input.after;
    keyCondition += input.ascending ? ` AND ${sk} > :after` : ` AND ${sk} < :after`;
  }
  const page = await table.queryPage<E>({
    IndexName: input.onTable ? undefined : 'gsi1',
    KeyConditionExpression: keyCondition,
    FilterExpression: input.filter?.expression,
    ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
    ExpressionAttributeValues: values,
    ScanIndexForward: input.ascending,
    Limit: input.limit,
    ExclusiveStartKey: input.exclusiveStartKey,
  });
  const items = input.until !== undefined && input.after ? page.items.filter((item) => (item as { gsi1sk?: string }).gsi1sk !== input.after) : page.items;
  return { items, lastKey: page.lastKey };
}

/**
 * How many of one shard's entries match the filter (Select: COUNT, newest first, pages
 * followed), stopping once `cap` have matched or `examineCap` have been examined.
 */
async function countListingShard(input: {
  gsi1pk: string;
  filter?: ListingFilter;
  cap: number;
  examineCap: number;
}): Promise<{ count: number; complete: boolean }> {
  let count = 0;
  let scanned = 0;
  let startKey: Record<string, unknown> | undefined;
  do {
    const page = await table.queryPage({
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :gpk',
      FilterExpression: input.filter?.expression,
      ExpressionAttributeNames: input.filter && Object.keys(input.filter.names).length ? input.filter.names : undefined,
      ExpressionAttributeValues: { ...(input.filter?.values ?? {}), ':gpk': input.gsi1pk },
      Select: 'COUNT',
      ScanIndexForward: false,
      Limit: input.examineCap - scanned,
      ExclusiveStartKey: startKey,
    });
    count += page.count;
    scanned += page.scanned;
    startKey = page.lastKey;
  } while (startKey && count < input.cap && scanned < input.examineCap);
  return { count, complete: !startKey };
}

/** Matching entries across the shards, up to `cap` matches and `examineCap` entries examined in all. */
export async function countListing(input: { gsi1pks: readonly string[]; filter?: ListingFilter; cap: number; examineCap: number }): Promise<number> {
  const counts = await Promise.all(
    input.gsi1pks.map((gsi1pk) => countListingShard({ gsi1pk, filter: input.filter, cap: input.cap, examineCap: input.examineCap / input.gsi1pks.length })),
  );
  return Math.min(input.cap, counts.reduce((sum, { count }) => sum + count, 0));
}

export type EntryTest = (entry: Record<string, unknown>) => boolean;

/**
 * One shard's entries in index order, a page at a time: the first page is about this
 * shard's share of what the listing needs, later ones as large as needed.
 */
class ShardCursor<E> {
  private buffer: E[] = [];
  private position = 0;
  private lastKey: Record<string, unknown> | undefined;
  private done = false;
  private pending: Promise<void> | undefined;

  constructor(
    private readonly query: (limit: number, startKey: Record<string, unknown> | undefined) => Promise<{ items: E[]; lastKey?: Record<string, unknown> }>,
    private readonly tests: readonly EntryTest[],
    private pageSize: number,
    private readonly laterPageSize: number,
    /** Entries this shard may still examine (DynamoDB's Limit counts examined entries). */
    private examineLeft: number,
  ) {}

  /** Reads ahead (used to start every shard's first read at once). */
  fill(): Promise<void> {
    if (this.position < this.buffer.length || this.done) return Promise.resolve();
    this.pending ??= this.read().finally(() => (this.pending = undefined));
    return this.pending;
  }

  private async read() {
    while (this.position >= this.buffer.length && !this.done) {
      const limit = Math.min(this.pageSize, this.examineLeft);
      const page = await this.query(limit, this.lastKey);
      this.examineLeft -= limit;
      this.pageSize = this.laterPageSize;
      this.buffer = this.tests.length ? page.items.filter((entry) => this.tests.every((test) => test(entry as Record<string, unknown>))) : page.items;
      this.position = 0;
      this.lastKey = page.lastKey;
      this.done = !page.lastKey || this.examineLeft <= 0;
    }
  }

  /** Whether the next entry is known without a read (it is buffered, or the shard is done). */
  get ready(): boolean {
    return this.position < this.buffer.length || this.done;
  }

  /** The next entry once `ready`; undefined at the end of the shard. */
  head(): E | undefined {
    return this.buffer[this.position];
  }

  advance() {
    this.position++;
  }
}

export interface ShardedListing<E> {
  /** The shards' partition keys: gsi1's, or the table's with `onTable`. */
  gsi1pks: readonly string[];
  onTable?: boolean;
  ascending: boolean;
  /** The page's starting point: entries strictly after this ID. */
  after?: string;
  /** Ascending only: where the listing stops (entries strictly before this bound: a cutoff). */
  until?: string;
  filter?: ListingFilter;
  /** Tests an expression cannot say, run on each entry as it is read. */
  entryTests?: readonly EntryTest[];
  /** The ID an entry sorts by (the index's sort key). */
  idOf: (entry: E) => string;
  /** The first read of each shard, and every later one. */
  firstPage: number;
  laterPage: number;
  /** At most this many entries examined over all shards (a count's bound); unbounded without. */
  examineCap?: number;
}

/** The shards' entries merged in the listing's order, read as they are needed. */
export async function* mergedEntries<E>(listing: ShardedListing<E>): AsyncGenerator<E> {
  const { ascending, idOf } = listing;
  const cursors = listing.gsi1pks.map(
    (gsi1pk) =>
      new ShardCursor<E>(
        (limit, exclusiveStartKey) =>
          queryListingShard<E>({ gsi1pk, onTable: listing.onTable, ascending, after: listing.after, until: listing.until, filter: listing.filter, limit, exclusiveStartKey }),
        listing.entryTests ?? [],
        listing.firstPage,
        listing.laterPage,
        listing.examineCap === undefined ? Infinity : Math.ceil(listing.examineCap / listing.gsi1pks.length),
      ),
  );
  for (;;) {
    // Every shard must show its next entry before the next in order is known.
    const waiting = cursors.filter((cursor) => !cursor.ready);
    if (waiting.length) await Promise.all(waiting.map((cursor) => cursor.fill()));
    let best: { cursor: ShardCursor<E>; entry: E } | undefined;
    for (const cursor of cursors) {
      const entry = cursor.head();
      if (entry === undefined) continue;
      if (!best || (ascending ? idOf(entry) < idOf(best.entry) : idOf(entry) > idOf(best.entry))) best = { cursor, entry };
    }
    if (!best) return;
    best.cursor.advance();
    yield best.entry;
  }
}

/**
 * How much each shard's first read and later reads ask for, to find `want` entries: each
 * shard holds about its share of the page, so its first read asks for a little more than
 * that, and a shard that runs out reads on. A filtered read asks for more, since DynamoDB's
 * Limit counts the entries it examined, not those that matched.
 */
export function shardReadSizes(want: number, shards: number, filtered: boolean): { firstPage: number; laterPage: number } {
  const share = Math.ceil((want / shards) * 1.25) + 8;
  return {
    firstPage: Math.min(want, filtered ? Math.max(100, share) : share),
    laterPage: filtered ? Math.max(100, want) : want,
  };
}

/** The first `want` entries of a merged listing, in order (fewer at its end). */
export async function firstEntries<E>(entries: AsyncIterable<E>, want: number): Promise<E[]> {
  const page: E[] = [];
  if (want <= 0) return page;
  for await (const entry of entries) {
    page.push(entry);
    if (page.length >= want) break;
  }
  return page;
}

/** BatchGetItem reads at most 100 keys; the reads of one listing run in parallel. */
const BATCH_GET_MAX = 100;

/** The items the entries point at, in the entries' order; an item deleted since the index read drops out. */
export async function readListedItems<T>(entries: readonly { pk: string; sk: string }[]): Promise<T[]> {
  const keyOf = ({ pk, sk }: { pk: string; sk: string }) => `${pk}\u0000${sk}`;
  // BatchGetItem refuses a request that names a key twice.
  const unique = [...new Map(entries.map(({ pk, sk }) => [keyOf({ pk, sk }), { pk, sk }])).values()];
  const batches: { pk: string; sk: string }[][] = [];
  for (let i = 0; i < unique.length; i += BATCH_GET_MAX) batches.push(unique.slice(i, i + BATCH_GET_MAX));
  const items = (await Promise.all(batches.map((batch) => table.batchGet<T & { pk: string; sk: string }>(batch)))).flat();
  const byKey = new Map(items.map((item) => [keyOf(item), item as T]));
  return entries.flatMap((entry) => byKey.get(keyOf(entry)) ?? []);
}
