import { dynamo } from '../../shared/platform/store/db.ts';

/**
 * DynamoDB's per-item limits, emulated on DynamoDB Local (which has none): every table call
 * of the code goes through the one client of shared/platform/store/db.ts, so a middleware
 * on it sees each write. While enabled, an item takes at most `writesPerSecond` writes in a
 * second of the given clock (a write whose condition fails counts too, as it consumes
 * capacity in DynamoDB; a transaction's write counts twice, as it does there); past that
 * the call fails as DynamoDB's does, with ProvisionedThroughputExceededException. A
 * transaction that writes an item another transaction in flight also writes is cancelled
 * with TransactionConflict. The error is thrown before the SDK's retry step: the caller
 * sees what it would see once the retries are spent under a sustained overload.
 */
export interface ItemLimits {
  /** Calls refused as throttled, and the items they named. */
  throttled: number;
  throttledItems: Set<string>;
  /** Transactions cancelled for a conflict. */
  cancelled: number;
  /** The most writes one item took in one second. */
  busiest: { item: string; second: number; writes: number };
  stop(): void;
}

type Key = Record<string, unknown>;
type Middleware = (next: (args: { input: Record<string, unknown> }) => Promise<unknown>, context: { commandName?: string }) => (args: { input: Record<string, unknown> }) => Promise<unknown>;

const NAME = 'parleyItemLimitsEmulation';

/** A key as the document client or the low-level client carries it. */
function itemId(key: Key | undefined): string {
  const part = (value: unknown) => (typeof value === 'object' && value !== null && 'S' in value ? (value as { S: string }).S : String(value));
  return key ? `${part(key.pk)}|${part(key.sk)}` : '?';
}

/** The items a call writes, each with its capacity units (1, or 2 in a transaction). */
function writesOf(command: string, input: Record<string, unknown>): { item: string; units: number }[] {
  if (/^(Put|Update|Delete)(Item)?Command$/.test(command)) {
    const key = (input.Key ?? input.Item) as Key | undefined;
    return [{ item: itemId(key), units: 1 }];
  }
  if (/^TransactWrite(Items)?Command$/.test(command)) {
    return ((input.TransactItems ?? []) as Record<string, { Key?: Key; Item?: Key }>[])
      .map((op) => Object.values(op)[0]!)
      .map((op) => ({ item: itemId(op.Key ?? op.Item), units: 2 }));
  }
  if (/^BatchWrite(Item)?Command$/.test(command)) {
    return Object.values((input.RequestItems ?? {}) as Record<string, { PutRequest?: { Item: Key }; DeleteRequest?: { Key: Key } }[]>)
      .flat()
      .map((request) => ({ item: itemId(request.PutRequest?.Item ?? request.DeleteRequest?.Key), units: 1 }));
  }
  return [];
}

const failure = (name: string, message: string, extra: Record<string, unknown> = {}) =>
  Object.assign(new Error(message), { name, $fault: 'client', $metadata: { httpStatusCode: 400 }, ...extra });

export function emulateItemLimits(options: { writesPerSecond: number; nowMs: () => number }): ItemLimits {
  const used = new Map<string, number>();
  const inTransaction = new Set<string>();
  const limits: ItemLimits = {
    throttled: 0,
    throttledItems: new Set(),
    cancelled: 0,
    busiest: { item: '', second: 0, writes: 0 },
    stop: () => dynamo.middlewareStack.remove(NAME),
  };
  const middleware: Middleware = (next, context) => async (args) => {
    const command = context.commandName ?? '';
    const writes = writesOf(command, args.input);
    if (writes.length === 0) return next(args);
    const second = Math.floor(options.nowMs() / 1000);
    const over = writes.filter(({ item, units }) => (used.get(`${second}|${item}`) ?? 0) + units > options.writesPerSecond);
    for (const { item, units } of writes) {
      const count = (used.get(`${second}|${item}`) ?? 0) + units;
      used.set(`${second}|${item}`, count);
      if (count > limits.busiest.writes) limits.busiest = { item, second, writes: count };
    }
    if (over.length > 0) {
      limits.throttled += 1;
      for (const { item } of over) limits.throttledItems.add(item);
      throw failure('ProvisionedThroughputExceededException', `Throughput exceeds the item's limit (${over[0]!.item})`);
    }
    if (!/^TransactWrite/.test(command)) return next(args);
    const items = writes.map(({ item }) => item);
    if (items.some((item) => inTransaction.has(item))) {
      limits.cancelled += 1;
      throw failure('TransactionCanceledException', 'Transaction cancelled: a conflicting transaction is in progress', {
        CancellationReasons: items.map((item) => ({ Code: inTransaction.has(item) ? 'TransactionConflict' : 'None' })),
      });
    }
    for (const item of items) inTransaction.add(item);
    try {
      return await next(args);
    } finally {
      for (const item of items) inTransaction.delete(item);
    }
  };
  dynamo.middlewareStack.add(middleware as never, { step: 'initialize', name: NAME });
  return limits;
}
