import { describe, expect, it, vi } from 'vitest';
import { allTasks, writeTasks, type NewTask } from '../../shared/batches/store.ts';
import { table, TransactionCancelled } from '../../shared/platform/store/table.ts';

const tasks: NewTask[] = Array.from({ length: 30 }, (_, task_index) => ({
  task_index,
  to_number: `+1415555${String(1000 + task_index)}`,
  retell_llm_dynamic_variables: { row: String(task_index) },
  metadata: null,
}));

describe("a batch's task writes", () => {
  it('write a chunk again when DynamoDB cancelled it for a conflicting write, and every task once', async () => {
    const transact = table.transact.bind(table);
    const spy = vi.spyOn(table, 'transact').mockImplementationOnce(async () => {
      throw new TransactionCancelled([], true);
    });
    spy.mockImplementation(transact);
    try {
      await writeTasks('ws_conflict', 'batch_conflict', tasks, tasks.map(() => 100));
      // One chunk (30 tasks, two items each) cancelled once, then written.
      expect(spy).toHaveBeenCalledTimes(2);
      const stored = await allTasks('ws_conflict', 'batch_conflict');
      expect(stored.map((task) => task.task_index)).toEqual(tasks.map((task) => task.task_index));
    } finally {
      spy.mockRestore();
    }
  });

  it('give up on a condition that failed: it is not a conflict', async () => {
    const spy = vi.spyOn(table, 'transact').mockRejectedValue(new TransactionCancelled([0], false));
    try {
      await expect(writeTasks('ws_conflict', 'batch_refused', tasks, tasks.map(() => 100))).rejects.toThrow('Conditions failed at 0');
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });
});
