import { describe, expect, it } from 'vitest';
import {
  countListing,
  firstEntries,
  ListingExpression,
  mergedEntries,
  readListedItems,
  shardReadSizes,
} from '../../shared/platform/store/sharded-listing.ts';
import { table } from '../../shared/platform/store/table.ts';

/**
 * 60 entries over 4 shards of one listing, IDs in creation order (`id_000`…), spread unevenly
 * (shard = n % 4, but shard 3 holds every n ≥ 40) so a merged page must read on in some
 * shards and not others. Entries carry projected attributes: the ID as `chat_id`, `n` as
 * `duration_ms`, and odd ones `end_timestamp`.
 */
async function seed(prefix: string) {
  const gsi1pks = [0, 1, 2, 3].map((shard) => `${prefix}#LIST#${shard}`);
  const items = Array.from({ length: 60 }, (_, n) => {
    const id = `id_${String(n).padStart(3, '0')}`;
    const shard = n >= 40 ? 3 : n % 4;
    return { pk: `${prefix}#ITEM#${id}`, sk: 'ITEM', gsi1pk: gsi1pks[shard]!, gsi1sk: id, chat_id: id, duration_ms: n, ...(n % 2 ? { end_timestamp: n } : {}) };
  });
  await table.batchPut(items);
  return { gsi1pks, ids: items.map((item) => item.chat_id) };
}

type Entry = { pk: string; sk: string; chat_id: string; duration_ms: number; end_timestamp?: number };

const listing = (gsi1pks: string[], options: { ascending: boolean; after?: string; want: number; filtered?: boolean }) =>
  mergedEntries<Entry>({ gsi1pks, ascending: options.ascending, after: options.after, idOf: (entry) => entry.chat_id, ...shardReadSizes(options.want, 4, options.filtered ?? false) });

describe('a sharded listing', () => {
  it('merges the shards in ID order either way, from an exclusive starting point, reading on where a shard runs out', async () => {
    const { gsi1pks, ids } = await seed('merge');
    const newest = await firstEntries(listing(gsi1pks, { ascending: false, want: 25 }), 25);
    expect(newest.map((entry) => entry.chat_id)).toEqual([...ids].reverse().slice(0, 25));
    const oldest = await firstEntries(listing(gsi1pks, { ascending: true, after: 'id_009', want: 12 }), 12);
    expect(oldest.map((entry) => entry.chat_id)).toEqual(ids.slice(10, 22));
    const all = await firstEntries(listing(gsi1pks, { ascending: true, want: 1000 }), 1000);
    expect(all.map((entry) => entry.chat_id)).toEqual(ids);
  });

  it('filters with the expression and with entry tests, and counts what matches across shards', async () => {
    const { gsi1pks, ids } = await seed('filter');
    const x = new ListingExpression();
    x.add('duration_ms', { op: 'bt', value: [10, 49] });
    // `pr` has no expression: the caller tests it on the entry.
    expect(x.add('end_timestamp', { op: 'pr' })).toBe(false);
    const filter = x.build();
    const matched = await firstEntries(
      mergedEntries<Entry>({ gsi1pks, ascending: true, filter, entryTests: [(entry) => entry.end_timestamp !== undefined], idOf: (entry) => entry.chat_id, ...shardReadSizes(7, 4, true) }),
      7,
    );
    expect(matched.map((entry) => entry.duration_ms)).toEqual([11, 13, 15, 17, 19, 21, 23]);
    expect(await countListing({ gsi1pks, filter, cap: 10_000, examineCap: 100_000 })).toBe(40);
    expect(await countListing({ gsi1pks, filter, cap: 30, examineCap: 100_000 })).toBe(30);

    const notDone = new ListingExpression();
    notDone.add('end_timestamp', { op: 'ne', value: 3 });
    // An entry without the attribute is "not equal" to it.
    expect(await countListing({ gsi1pks, filter: notDone.build(), cap: 10_000, examineCap: 100_000 })).toBe(59);
    expect(ids).toHaveLength(60);
  });

  it("reads the listed items in the entries' order, leaving out one deleted since", async () => {
    const { gsi1pks } = await seed('items');
    const entries = await firstEntries(listing(gsi1pks, { ascending: false, want: 150 }), 150);
    await table.delete({ Key: { pk: entries[5]!.pk, sk: 'ITEM' } });
    const items = await readListedItems<Entry>([...entries, ...entries, ...entries]);
    const expected = entries.filter((_, i) => i !== 5).map((entry) => entry.chat_id);
    expect(items.map((item) => item.chat_id)).toEqual([...expected, ...expected, ...expected]);
  });
});
