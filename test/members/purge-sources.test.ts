import { describe, expect, it } from 'vitest';
import { NOT_PURGED, PURGE_SOURCES, type KeyBuilder } from '../../shared/members/purge-sources.ts';
import { keys } from '../../shared/platform/store/keys.ts';

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
