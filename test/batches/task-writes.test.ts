import { describe, expect, it } from 'vitest';
import { allTasks, pendingTaskIndexes, writeTasks, type NewTask } from '../../shared/batches/store.ts';
import { dynamo } from '../../shared/platform/store/db.ts';

const tasks: NewTask[] = Array.from({ length: 130 }, (_, task_index) => ({
  task_index,
  to_number: `+1415555${String(1000 + task_index)}`,
  retell_llm_dynamic_variables: { row: String(task_index) },
  metadata: null,
}));

describe("a batch's task writes", () => {
  it('write every task and its pending marker once, asking again for what DynamoDB left unprocessed', async () => {
    let writes = 0;
    let leftOnce = 0;
    // Below the document client's (un)marshalling: DynamoDB's own wire shapes.
    dynamo.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName !== 'BatchWriteItemCommand') return next(args);
        writes++;
        // The first write of each slice comes back whole as unprocessed, as under throttling.
        if (leftOnce++ < 4) return { output: { UnprocessedItems: (args.input as { RequestItems: unknown }).RequestItems, $metadata: {} }, response: {} } as never;
        return next(args);
      },
      { step: 'initialize', name: 'leaveUnprocessed' },
    );
    try {
      await writeTasks('ws_writes', 'batch_writes', tasks);
    } finally {
      dynamo.middlewareStack.remove('leaveUnprocessed');
    }
    // 260 items: 4 slices of up to 75 (3 writes of 25) written in parallel, 11 writes; 4 asked twice.
    expect(writes).toBe(15);
    const stored = await allTasks('ws_writes', 'batch_writes');
    expect(stored.map((task) => task.task_index)).toEqual(tasks.map((task) => task.task_index));
    expect(stored.every((task) => task.status === 'pending')).toBe(true);
    expect(await pendingTaskIndexes('ws_writes', 'batch_writes', 200)).toEqual(tasks.map((task) => task.task_index));
  });
});
