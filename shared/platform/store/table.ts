import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  TransactWriteCommand,
  UpdateCommand,
  type DeleteCommandInput,
  type PutCommandInput,
  type QueryCommandInput,
  type ScanCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import type { AttributeValue } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { db, isConditionFailure, isTransactionConflict, tableName } from './db.ts';
import type { ItemKey } from './keys.ts';
import { setAndRemove } from './update-expression.ts';

/*
 * The one way to the table. Domain code builds keys with the keys module and calls these;
 * no `db.send` or `TableName` appears outside shared/platform/store/. The operations take
 * DynamoDB's own inputs without `TableName` (expressions stay as DynamoDB documents
 * them), and add what every caller needs: strongly consistent reads by default, every page
 * of a query, unprocessed keys retried, and condition failures as typed errors.
 */

type Item = Record<string, unknown>;
type WithoutTable<T> = Omit<T, 'TableName'>;

/** A write's condition did not hold. `item` is the item as it was, when asked for. */
export class ConditionFailed extends Error {
  constructor(readonly item?: Item) {
    super('The condition of the write did not hold');
    this.name = 'ConditionFailed';
  }
}

/**
 * A transaction was cancelled. `failedAt` lists the indexes of the operations whose
 * condition failed (empty when it lost a race with another transaction instead).
 */
export class TransactionCancelled extends Error {
  constructor(
    readonly failedAt: number[],
    readonly conflicted: boolean,
  ) {
    super(conflicted ? 'The transaction conflicted with another write' : `Conditions failed at ${failedAt.join(', ')}`);
    this.name = 'TransactionCancelled';
  }
}

const rethrowCondition = (error: unknown): never => {
  if (isConditionFailure(error)) {
    // The SDK leaves the item of ReturnValuesOnConditionCheckFailure in DynamoDB's JSON.
    const raw = (error as { Item?: Record<string, AttributeValue> }).Item;
    throw new ConditionFailed(raw ? unmarshall(raw) : undefined);
  }
  throw error;
};

/** An item may be any object type (interfaces have no index signature). */
export type PutInput = Omit<WithoutTable<PutCommandInput>, 'Item'> & { Item: object };
export type UpdateInput = WithoutTable<UpdateCommandInput>;
export type DeleteInput = WithoutTable<DeleteCommandInput>;
export type QueryInput = WithoutTable<QueryCommandInput>;
export type ScanInput = WithoutTable<ScanCommandInput>;

/** One operation of a transaction: DynamoDB's TransactItem without `TableName`. */
export type TransactOp =
  | { Put: PutInput }
  | { Update: UpdateInput & { Key: ItemKey } }
  | { Delete: DeleteInput & { Key: ItemKey } }
  | {
      ConditionCheck: {
        Key: ItemKey;
        ConditionExpression: string;
        ExpressionAttributeNames?: Record<string, string>;
        ExpressionAttributeValues?: Record<string, unknown>;
      };
    };

/**
 * The wait before asking again for what a batch read or write left unprocessed (DynamoDB
 * leaves items when a partition is throttled): exponential from 50 ms, capped at 2 s, with
 * full jitter, as AWS advises, so a throttled partition is not hammered by immediate retries.
 */
const unprocessedBackoff = (round: number) =>
  new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2000, 50 * 2 ** round)));

const withTable = (op: TransactOp) => {
  const [kind, input] = Object.entries(op)[0]! as [string, Item];
  return { [kind]: { ...input, TableName: tableName } };
};

export const table = {
  /** One item, strongly consistent unless `consistent: false`. */
  async get<T = Item>(key: ItemKey, options: { consistent?: boolean; projection?: string } = {}): Promise<T | undefined> {
    const out = await db.send(
      new GetCommand({ TableName: tableName, Key: key, ConsistentRead: options.consistent ?? true, ProjectionExpression: options.projection }),
    );
    return out.Item as T | undefined;
  },

  /** Writes an item; a failed `ConditionExpression` throws ConditionFailed. */
  async put(input: PutInput): Promise<void> {
    await db.send(new PutCommand({ ...input, Item: input.Item as Item, TableName: tableName })).catch(rethrowCondition);
  },

  /** Updates an item and answers `Attributes` (per `ReturnValues`); ConditionFailed as put. */
  async update<T = Item>(input: UpdateInput): Promise<T | undefined> {
    const out = await db.send(new UpdateCommand({ ...input, TableName: tableName })).catch(rethrowCondition);
    return out.Attributes as T | undefined;
  },

  /** Deletes an item and answers `Attributes` (per `ReturnValues`); ConditionFailed as put. */
  async delete<T = Item>(input: DeleteInput): Promise<T | undefined> {
    const out = await db.send(new DeleteCommand({ ...input, TableName: tableName })).catch(rethrowCondition);
    return out.Attributes as T | undefined;
  },

  /**
   * One page of a query, as DynamoDB answers it (`count`: the items that matched, also with
   * `Select: 'COUNT'`; `scanned`: those examined before the filter).
   */
  async queryPage<T = Item>(input: QueryInput): Promise<{ items: T[]; lastKey?: Item; count: number; scanned: number }> {
    const out = await db.send(new QueryCommand({ ConsistentRead: input.IndexName ? undefined : true, ...input, TableName: tableName }));
    return { items: (out.Items ?? []) as T[], lastKey: out.LastEvaluatedKey, count: out.Count ?? 0, scanned: out.ScannedCount ?? 0 };
  },

  /**
   * One page of a scan of the whole table (strongly consistent), for tests that check what
   * no partition-keyed read can (test/members/workspace-purge.test.ts: nothing of a purged
   * workspace is left). No function scans, and none is allowed `dynamodb:Scan`.
   */
  async scanPage<T = Item>(input: ScanInput): Promise<{ items: T[]; lastKey?: Item; scanned: number }> {
    const out = await db.send(new ScanCommand({ ConsistentRead: true, ...input, TableName: tableName }));
    return { items: (out.Items ?? []) as T[], lastKey: out.LastEvaluatedKey, scanned: out.ScannedCount ?? 0 };
  },

  /**
   * One page of a due-time index (gsi1 partitions whose sort key starts with a zero-padded
   * time, e.g. `keys.crmSyncsDue`): the entries due before the bound, soonest first. The
   * schedulers (OAuth refresh, CRM syncs, knowledge-base refreshes, the concurrency sweep) read
   * their work this way, never by a scan.
   */
  async dueBefore<T extends { gsi1sk?: string } = { gsi1sk: string }>(
    bound: { gsi1pk: string; gsi1skBefore: string },
    limit: number,
    startKey?: Item,
  ): Promise<{ items: T[]; lastKey?: Item }> {
    const page = await table.queryPage<T>({
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk AND gsi1sk < :before',
      ExpressionAttributeValues: { ':pk': bound.gsi1pk, ':before': bound.gsi1skBefore },
      Limit: limit,
      ...(startKey ? { ExclusiveStartKey: startKey } : {}),
    });
    return { items: page.items, lastKey: page.lastKey };
  },

  /** Every page of a query. */
  async queryAll<T = Item>(input: QueryInput): Promise<T[]> {
    const items: T[] = [];
    let startKey: Item | undefined = input.ExclusiveStartKey;
    do {
      const page = await table.queryPage<T>({ ...input, ExclusiveStartKey: startKey });
      items.push(...page.items);
      startKey = page.lastKey;
    } while (startKey);
    return items;
  },

  /** Many items by key, strongly consistent, in request order of DynamoDB's answer; absent ones are left out. */
  async batchGet<T = Item>(keys: readonly ItemKey[]): Promise<T[]> {
    const items: T[] = [];
    for (let i = 0; i < keys.length; i += 100) {
      let request: Record<string, { Keys: Item[]; ConsistentRead: boolean }> | undefined = {
        [tableName]: { Keys: keys.slice(i, i + 100) as unknown as Item[], ConsistentRead: true },
      };
      for (let round = 0; request && Object.keys(request).length > 0; round++) {
        if (round > 0) await unprocessedBackoff(round);
        const out = await db.send(new BatchGetCommand({ RequestItems: request }));
        items.push(...((out.Responses?.[tableName] ?? []) as T[]));
        request = out.UnprocessedKeys as typeof request;
      }
    }
    return items;
  },

  /**
   * Writes many items (no conditions: each replaces whatever has its key), 25 at a time,
   * retrying what DynamoDB leaves unprocessed. For items the caller already holds whole
   * (seeding tests, restores); a create that must not overwrite uses `put` with a condition.
   */
  async batchPut(items: readonly Item[]): Promise<void> {
    for (let i = 0; i < items.length; i += 25) {
      let request: Record<string, { PutRequest: { Item: Item } }[]> | undefined = {
        [tableName]: items.slice(i, i + 25).map((item) => ({ PutRequest: { Item: item } })),
      };
      for (let round = 0; request && Object.keys(request).length > 0; round++) {
        if (round > 0) await unprocessedBackoff(round);
        const out = await db.send(new BatchWriteCommand({ RequestItems: request }));
        request = out.UnprocessedItems as typeof request;
      }
    }
  },

  /** Deletes many items (no conditions), 25 at a time, retrying what DynamoDB leaves unprocessed. */
  async batchDelete(keys: readonly ItemKey[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 25) {
      let request: Record<string, { DeleteRequest: { Key: Item } }[]> | undefined = {
        [tableName]: keys.slice(i, i + 25).map((key) => ({ DeleteRequest: { Key: key as unknown as Item } })),
      };
      for (let round = 0; request && Object.keys(request).length > 0; round++) {
        if (round > 0) await unprocessedBackoff(round);
        const out = await db.send(new BatchWriteCommand({ RequestItems: request }));
        request = out.UnprocessedItems as typeof request;
      }
    }
  },

  /**
   * All or nothing (at most 100 operations). A cancellation throws TransactionCancelled
   * with the indexes whose conditions failed, so callers map them to their own errors.
   */
  async transact(ops: readonly TransactOp[]): Promise<void> {
    try {
      await db.send(new TransactWriteCommand({ TransactItems: ops.map(withTable) as never }));
    } catch (error) {
      if (!isTransactionConflict(error)) throw error;
      const reasons = (error as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      const failedAt = reasons.flatMap((reason, index) => (reason.Code === 'ConditionalCheckFailed' ? [index] : []));
      const conflicted = reasons.some((reason) => reason.Code === 'TransactionConflict');
      throw new TransactionCancelled(failedAt, conflicted || failedAt.length === 0);
    }
  },
};

/**
 * An item type declared once with its key (ElectroDB's Entity, at the size Parley needs):
 * `get`, `mustGet` (its own NotFound), `create` (only if absent: its own Conflict),
 * `remove`, conditional `update`/`setFields` and `take` (delete answering the item), each
 * catching its failed condition once, and the transaction operations that create or remove it.
 */
export function defineEntity<T extends object, A extends unknown[]>(spec: {
  key: (...args: A) => ItemKey;
  /** The error a missing item answers with, e.g. `notFound(\`SIP trunk ${id} not found\`)`. */
  notFound: (...args: A) => Error;
  /** The error a create of an existing item answers with. */
  exists?: (...args: A) => Error;
}) {
  const entity = {
    key: spec.key,
    get: (...args: A): Promise<T | undefined> => table.get<T>(spec.key(...args)),
    async mustGet(...args: A): Promise<T> {
      const item = await table.get<T>(spec.key(...args));
      if (!item) throw spec.notFound(...args);
      return item;
    },
    /** Writes `item` (keyed by `args`) only if no item has that key. */
    async create(item: Omit<T, 'pk' | 'sk'>, ...args: A): Promise<T> {
      const full = { ...item, ...spec.key(...args) } as unknown as T;
      try {
        await table.put({ Item: full, ConditionExpression: 'attribute_not_exists(pk)' });
      } catch (error) {
        if (error instanceof ConditionFailed && spec.exists) throw spec.exists(...args);
        throw error;
      }
      return full;
    },
    /**
     * Writes `item` (keyed by `args`) under `condition` (by default: that no item has the
     * key; null: unconditionally) and answers whether it was written.
     */
    async putIf(
      item: Omit<T, 'pk' | 'sk'>,
      args: A,
      condition: { expression: string; names?: Record<string, string>; values?: Record<string, unknown> } | null = { expression: 'attribute_not_exists(pk)' },
    ): Promise<boolean> {
      try {
        await table.put({
          Item: { ...item, ...spec.key(...args) },
          ...(condition
            ? { ConditionExpression: condition.expression, ExpressionAttributeNames: condition.names, ExpressionAttributeValues: condition.values }
            : {}),
        });
        return true;
      } catch (error) {
        if (error instanceof ConditionFailed) return false;
        throw error;
      }
    },
    /** Deletes the item; a missing one answers `notFound`. */
    async remove(...args: A): Promise<void> {
      try {
        await table.delete({ Key: spec.key(...args), ConditionExpression: 'attribute_exists(pk)' });
      } catch (error) {
        if (error instanceof ConditionFailed) throw spec.notFound(...args);
        throw error;
      }
    },
    /**
     * An update of the item, answered as written (ALL_NEW). When its condition fails,
     * `refused` decides from the item as it was (undefined when absent): it throws the
     * domain's error, or answers for the update; without it the answer is undefined ("not
     * applied"). The one place a failed condition of an entity's update is caught.
     */
    async update(args: A, input: Omit<UpdateInput, 'Key' | 'ReturnValues' | 'ReturnValuesOnConditionCheckFailure'>, refused?: (current: T | undefined) => T | undefined): Promise<T | undefined> {
      try {
        return await table.update<T>({ ...input, Key: spec.key(...args), ReturnValues: 'ALL_NEW', ReturnValuesOnConditionCheckFailure: 'ALL_OLD' });
      } catch (error) {
        if (!(error instanceof ConditionFailed)) throw error;
        return refused?.(error.item as T | undefined);
      }
    },
    /**
     * SETs `set` (values as given, null included) and REMOVEs `remove` under `condition`
     * (its own names and values; these use `#s…`, `#r…`, `:s…`), as `update` answers. With
     * nothing to change, answers the item as it is (`refused` when absent).
     */
    async setFields(
      args: A,
      change: { set?: Record<string, unknown>; remove?: readonly string[]; condition?: string; names?: Record<string, string>; values?: Record<string, unknown> },
      refused?: (current: T | undefined) => T | undefined,
    ): Promise<T | undefined> {
      const update = setAndRemove(change.set ?? {}, change.remove ?? []);
      if (!update.expression) {
        const item = await table.get<T>(spec.key(...args));
        return item ? item : refused?.(undefined);
      }
      const names = { ...update.names, ...change.names };
      const values = { ...update.values, ...change.values };
      return entity.update(
        args,
        {
          UpdateExpression: update.expression,
          ConditionExpression: change.condition ?? 'attribute_exists(pk)',
          ExpressionAttributeNames: Object.keys(names).length ? names : undefined,
          ExpressionAttributeValues: Object.keys(values).length ? values : undefined,
        },
        refused,
      );
    },
    /**
     * Deletes the item under `condition` (by default: that it exists) and answers it as it
     * was; `refused` as for `update` when the condition fails.
     */
    async take(
      args: A,
      condition: { expression?: string; names?: Record<string, string>; values?: Record<string, unknown> } = {},
      refused?: (current: T | undefined) => T | undefined,
    ): Promise<T | undefined> {
      try {
        return await table.delete<T>({
          Key: spec.key(...args),
          ConditionExpression: condition.expression ?? 'attribute_exists(pk)',
          ExpressionAttributeNames: condition.names,
          ExpressionAttributeValues: condition.values,
          ReturnValues: 'ALL_OLD',
          ReturnValuesOnConditionCheckFailure: 'ALL_OLD',
        });
      } catch (error) {
        if (!(error instanceof ConditionFailed)) throw error;
        return refused?.(error.item as T | undefined);
      }
    },
    createOp: (item: Omit<T, 'pk' | 'sk'>, ...args: A): TransactOp => ({
      Put: { Item: { ...item, ...spec.key(...args) }, ConditionExpression: 'attribute_not_exists(pk)' },
    }),
    removeOp: (...args: A): TransactOp => ({ Delete: { Key: spec.key(...args), ConditionExpression: 'attribute_exists(pk)' } }),
  };
  return entity;
}
