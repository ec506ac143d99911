import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { NOT_PURGED, PURGE_SOURCES, purgeItemsStep, type KeyBuilder, type PurgeCursor, type PurgeSource } from '../../shared/members/purge-sources.ts';
import { keys } from '../../shared/platform/store/keys.ts';
import { table } from '../../shared/platform/store/table.ts';

/*
 * The workspace purge reaches a workspace's items from the workspace, never by a scan, so an
 * item type it does not know would outlive its workspace. Every item key builder in
 * shared/platform/store/keys.ts must be covered by one purge source, or be named in
 * NOT_PURGED with why: adding an item type fails here until one of them says how it goes.
 * test/members/workspace-purge.test.ts checks the sources against a real workspace.
 */

/** The builders that make an item's key (`pk` and `sk`), as opposed to partitions, index entries and bounds. */
function itemKeyBuilders(): string[] {
  return Object.entries(keys)
    .filter(([, build]) => {
      const built = (build as (...args: string[]) => unknown)(...Array.from({ length: build.length }, () => '1'));
      return typeof built === 'object' && built !== null && 'pk' in built && 'sk' in built;
    })
    .map(([name]) => name)
    .sort();
}

describe('the workspace purge sources', () => {
  it('cover every item key builder, or say why it is not purged', () => {
    const builders = itemKeyBuilders();
    expect(builders.length).toBeGreaterThan(100);
    const covered = [...PURGE_SOURCES.flatMap((source) => source.covers), ...(Object.keys(NOT_PURGED) as KeyBuilder[])];
    expect(builders.filter((name) => !covered.includes(name as KeyBuilder))).toEqual([]);
  });

  it('name each builder once, and only item key builders', () => {
    const builders = new Set(itemKeyBuilders());
    const covered = [...PURGE_SOURCES.flatMap((source) => source.covers), ...Object.keys(NOT_PURGED)];
    expect(covered.filter((name, index) => covered.indexOf(name) !== index)).toEqual([]);
    expect(covered.filter((name) => !builders.has(name))).toEqual([]);
    for (const [name, why] of Object.entries(NOT_PURGED)) expect(why!.length, name).toBeGreaterThan(20);
  });

  it('keep the items that head partitions or listing entries until their children are gone', () => {
    for (const source of PURGE_SOURCES) {
      if (source.children) expect(source.keep, source.name).toBe(true);
    }
    // The workspace partition holds the heads the others walk: it goes last.
    expect(PURGE_SOURCES.at(-1)!.places('w')).toEqual([{ pk: keys.workspace('w').pk }]);
  });
});

describe('purgeItemsStep', () => {
  /**
   * Two synthetic sources: heads in one partition, each heading an `OWN` partition (its
   * anchor: listed by the heads) and a `SIDE` partition, each of 7 items; then the heads'
   * partition itself. Pages of 3 and 2 partitions at once make every path run: partitions
   * over several pages, the cursor inside one, and waves.
   */
  async function seeded() {
    const prefix = `PURGETEST#${randomBytes(6).toString('hex')}`;
    const heads = Array.from({ length: 5 }, (_, n) => ({ pk: `${prefix}#HEADS`, sk: `H#${n}`, id: String(n) }));
    const headed = heads.flatMap(({ id }) =>
      ['OWN', 'SIDE'].flatMap((kind) => Array.from({ length: 7 }, (_, i) => ({ pk: `${prefix}#${kind}#${id}`, sk: `I#${i}`, other: `${prefix}#OTHER#${id}#${i}` }))),
    );
    const others = headed.filter((item) => item.pk.includes('#SIDE#')).map((item) => ({ pk: item.other, sk: 'OTHER' }));
    await table.batchPut([...heads, ...headed, ...others]);
    const order: string[] = [];
    const sources: PurgeSource[] = [
      {
        name: 'heads',
        covers: [],
        places: () => [{ pk: `${prefix}#HEADS` }],
        read: ['id'],
        keep: true,
        children: (item) => [`${prefix}#SIDE#${item.id as string}`, `${prefix}#OWN#${item.id as string}`],
        childRead: ['other'],
        childRelated: (items) => {
          order.push(...items.map((item) => item.pk));
          return items.flatMap((item) => (item.pk.includes('#SIDE#') ? [{ pk: item.other as string, sk: 'OTHER' }] : []));
        },
      },
      { name: 'the heads partition', covers: [], places: () => [{ pk: `${prefix}#HEADS` }] },
    ];
    const left = async () =>
      (
        await Promise.all(
          [`${prefix}#HEADS`, ...heads.flatMap(({ id }) => [`${prefix}#OWN#${id}`, `${prefix}#SIDE#${id}`, ...Array.from({ length: 7 }, (_, i) => `${prefix}#OTHER#${id}#${i}`)])].map(
            async (pk) => (await table.queryPage({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } })).items.length,
          ),
        )
      ).reduce((sum, n) => sum + n, 0);
    return { sources, order, left, total: heads.length + headed.length + others.length };
  }

  const limits = { pageSize: 3, headsPerPage: 2, pages: 2, rounds: 2, until: Number.MAX_SAFE_INTEGER, parallel: 2 };

  it('walks every source to the end in bounded steps: each headed partition emptied before its heads go, side partitions before their anchors', async () => {
    const { sources, order, left, total } = await seeded();
    expect(await left()).toBe(total);
    let cursor: PurgeCursor | undefined;
    let steps = 0;
    let read = 0;
    do {
      const step = await purgeItemsStep('ws_unused', cursor, limits, sources);
      cursor = step.cursor;
      read += step.read;
      steps++;
      expect(JSON.parse(JSON.stringify(cursor ?? null))).toEqual(cursor ?? null);
    } while (cursor && steps < 200);
    expect(cursor).toBeUndefined();
    expect(steps).toBeGreaterThan(5);
    expect(await left()).toBe(0);
    // Every item read about once: the heads twice (walked, then deleted), a partition's last page again when it filled a page.
    expect(read).toBeLessThan(total * 2);
    // No head's anchor partition was read before every side partition of its page.
    for (const id of ['0', '1', '2', '3', '4']) {
      const lastSide = order.findLastIndex((pk) => pk.endsWith(`#SIDE#${id}`));
      const firstOwn = order.findIndex((pk) => pk.endsWith(`#OWN#${id}`));
      expect(firstOwn, id).toBeGreaterThan(lastSide);
    }
  });

  it('ends with the same items gone when a step is redone from the cursor before it (a crash before its progress was saved)', async () => {
    const { sources, left } = await seeded();
    let cursor: PurgeCursor | undefined;
    let done = false;
    for (let steps = 0; !done && steps < 300; steps++) {
      const step = await purgeItemsStep('ws_unused', cursor, limits, sources);
      // Every third step's progress is lost: the next runs from where that one started.
      if (steps % 3 === 2) continue;
      cursor = step.cursor;
      done = !cursor;
    }
    expect(done).toBe(true);
    expect(await left()).toBe(0);
  });
});
