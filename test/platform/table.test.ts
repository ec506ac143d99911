import { describe, expect, it } from 'vitest';
import { conflict, notFound } from '../../shared/platform/errors.ts';
import { ConditionFailed, defineEntity, table, TransactionCancelled } from '../../shared/platform/store/table.ts';

let counter = 0;
const key = (prefix = 'T') => ({ pk: `${prefix}#${Date.now()}#${counter++}`, sk: 'ITEM' });

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

describe('table', () => {
  it('reads what it wrote, and turns a failed condition into ConditionFailed with the item', async () => {
    const k = key();
    await table.put({ Item: { ...k, n: 1 }, ConditionExpression: 'attribute_not_exists(pk)' });
    expect(await table.get(k)).toEqual({ ...k, n: 1 });
    expect(await failure(table.put({ Item: { ...k, n: 2 }, ConditionExpression: 'attribute_not_exists(pk)' }))).toBeInstanceOf(ConditionFailed);

    const updated = await table.update({ Key: k, UpdateExpression: 'ADD n :one', ExpressionAttributeValues: { ':one': 1 }, ReturnValues: 'ALL_NEW' });
    expect(updated).toEqual({ ...k, n: 2 });
    const refused = await failure(
      table.update({
        Key: k,
        UpdateExpression: 'ADD n :one',
        ConditionExpression: 'n > :big',
        ExpressionAttributeValues: { ':one': 1, ':big': 5 },
        ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
      }),
    );
    expect(refused).toBeInstanceOf(ConditionFailed);
    expect((refused as ConditionFailed).item).toBeDefined();

    expect(await table.delete({ Key: k, ReturnValues: 'ALL_OLD' })).toEqual({ ...k, n: 2 });
    expect(await table.get(k)).toBeUndefined();
  });

  it('queries every page and reads and deletes in batches past the per-call limits', async () => {
    const pk = `Q#${Date.now()}`;
    const keys = Array.from({ length: 130 }, (_, i) => ({ pk, sk: `ITEM#${String(i).padStart(3, '0')}` }));
    await Promise.all(keys.map((k) => table.put({ Item: { ...k, pad: 'x'.repeat(9000) } })));
    const all = await table.queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } });
    expect(all).toHaveLength(130);
    expect((await table.batchGet(keys)).map((item) => item.sk).sort()).toEqual(keys.map((k) => k.sk));
    await table.batchDelete(keys);
    expect(await table.queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } })).toEqual([]);
  });

  it('writes items in batches past the per-call limit, replacing what had their keys', async () => {
    const pk = `P#${Date.now()}`;
    const items = Array.from({ length: 60 }, (_, i) => ({ pk, sk: `ITEM#${String(i).padStart(3, '0')}`, n: i }));
    await table.put({ Item: { ...items[0]!, n: -1, stale: true } });
    await table.batchPut(items);
    const all = await table.queryAll({ KeyConditionExpression: 'pk = :pk', ExpressionAttributeValues: { ':pk': pk } });
    expect(all).toEqual(items);
  });

  it('writes a transaction all or nothing and names the operations whose conditions failed', async () => {
    const [a, b] = [key(), key()];
    await table.put({ Item: { ...b } });
    const cancelled = await failure(
      table.transact([
        { Put: { Item: { ...a }, ConditionExpression: 'attribute_not_exists(pk)' } },
        { Put: { Item: { ...b }, ConditionExpression: 'attribute_not_exists(pk)' } },
      ]),
    );
    expect(cancelled).toBeInstanceOf(TransactionCancelled);
    expect((cancelled as TransactionCancelled).failedAt).toEqual([1]);
    expect(await table.get(a)).toBeUndefined();
    await table.transact([{ Put: { Item: { ...a } } }, { ConditionCheck: { Key: b, ConditionExpression: 'attribute_exists(pk)' } }]);
    expect(await table.get(a)).toEqual(a);
  });
});

describe('defineEntity', () => {
  const widgets = defineEntity<{ pk: string; sk: string; name: string; size?: number; colour?: string }, [id: string]>({
    key: (id) => ({ pk: `WIDGET#${id}`, sk: 'WIDGET' }),
    notFound: (id) => notFound(`Widget ${id} not found`),
    exists: (id) => conflict(`Widget ${id} already exists`),
  });

  it('creates once, reads, refuses a second create and removes, each with its own errors', async () => {
    const id = `w${Date.now()}`;
    expect(await widgets.create({ name: 'first' }, id)).toEqual({ pk: `WIDGET#${id}`, sk: 'WIDGET', name: 'first' });
    expect((await widgets.mustGet(id)).name).toBe('first');
    expect(((await failure(widgets.create({ name: 'again' }, id))) as Error).message).toBe(`Widget ${id} already exists`);
    await widgets.remove(id);
    expect(await widgets.get(id)).toBeUndefined();
    expect(((await failure(widgets.mustGet(id))) as Error).message).toBe(`Widget ${id} not found`);
    expect(((await failure(widgets.remove(id))) as Error).message).toBe(`Widget ${id} not found`);
  });

  it('builds the transaction operations that create and remove it', async () => {
    const id = `t${Date.now()}`;
    await table.transact([widgets.createOp({ name: 'in a transaction' }, id)]);
    expect((await widgets.mustGet(id)).name).toBe('in a transaction');
    const twice = await failure(table.transact([widgets.createOp({ name: 'again' }, id)]));
    expect((twice as TransactionCancelled).failedAt).toEqual([0]);
    await table.transact([widgets.removeOp(id)]);
    expect(await widgets.get(id)).toBeUndefined();
  });
  it('updates under a condition, answering the item as written, or what `refused` makes of the item as it was', async () => {
    const id = `u${Date.now()}`;
    await widgets.create({ name: 'small', size: 1 }, id);
    const grow = (to: number, refused?: (current: { size?: number } | undefined) => undefined) =>
      widgets.update(
        [id],
        { UpdateExpression: 'SET size = :to', ConditionExpression: 'attribute_exists(pk) AND size < :to', ExpressionAttributeValues: { ':to': to } },
        refused,
      );
    expect(await grow(3)).toEqual({ pk: `WIDGET#${id}`, sk: 'WIDGET', name: 'small', size: 3 });
    expect(await grow(2)).toBeUndefined();
    const seen: unknown[] = [];
    expect(await grow(2, (current) => (seen.push(current), undefined))).toBeUndefined();
    expect(seen).toEqual([{ pk: `WIDGET#${id}`, sk: 'WIDGET', name: 'small', size: 3 }]);
    const refusal = await failure(
      widgets.update([`${id}-absent`], { UpdateExpression: 'SET size = :one', ConditionExpression: 'attribute_exists(pk)', ExpressionAttributeValues: { ':one': 1 } }, (current) => {
        throw notFound(`absent: ${current === undefined}`);
      }),
    );
    expect((refusal as Error).message).toBe('absent: true');
  });

  it('sets and removes fields beside its own condition names, and answers the item unchanged when there is nothing to set', async () => {
    const id = `s${Date.now()}`;
    await widgets.create({ name: 'plain', size: 1 }, id);
    const painted = await widgets.setFields([id], { set: { colour: 'red', name: 'painted' }, remove: ['size'], condition: '#n = :n', names: { '#n': 'name' }, values: { ':n': 'plain' } });
    expect(painted).toEqual({ pk: `WIDGET#${id}`, sk: 'WIDGET', name: 'painted', colour: 'red' });
    expect(await widgets.setFields([id], { set: { colour: 'blue' }, condition: '#n = :n', names: { '#n': 'name' }, values: { ':n': 'plain' } })).toBeUndefined();
    expect(await widgets.setFields([id], {})).toEqual(painted);
    // The default condition: only an item that exists is updated (never created by the update).
    expect(await widgets.setFields([`${id}-absent`], { set: { colour: 'red' } })).toBeUndefined();
    expect(await widgets.get(`${id}-absent`)).toBeUndefined();
  });

  it('puts under a condition, answering whether it wrote, and takes (deletes) answering the item it was', async () => {
    const id = `p${Date.now()}`;
    expect(await widgets.putIf({ name: 'first' }, [id])).toBe(true);
    expect(await widgets.putIf({ name: 'second' }, [id])).toBe(false);
    expect(await widgets.putIf({ name: 'third' }, [id], { expression: '#n = :n', names: { '#n': 'name' }, values: { ':n': 'first' } })).toBe(true);
    expect(await widgets.putIf({ name: 'fourth' }, [id], null)).toBe(true);
    expect(await widgets.take([id], { expression: '#n = :n', names: { '#n': 'name' }, values: { ':n': 'third' } })).toBeUndefined();
    expect(await widgets.take([id])).toEqual({ pk: `WIDGET#${id}`, sk: 'WIDGET', name: 'fourth' });
    expect(await widgets.take([id])).toBeUndefined();
  });
});
