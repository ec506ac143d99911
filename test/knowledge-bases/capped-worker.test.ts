import { describe, expect, it } from 'vitest';
import { runCapped, WorkFailed, WorkLimitExceeded, type WorkerScript } from '../../shared/knowledge-bases/capped-worker.ts';

/*
 * Work in a worker thread under a memory and a time cap (shared/knowledge-bases/capped-worker.ts),
 * with a script that misbehaves on request (test/fixtures/capped-work.worker.ts): past a cap
 * the worker is terminated and the caller gets WorkLimitExceeded, a failure is WorkFailed,
 * and the next piece of work runs in a fresh worker while this process goes on.
 */

const script: WorkerScript = { bundled: undefined, source: new URL('../fixtures/capped-work.worker.ts', import.meta.url) };
const limits = { memoryMb: 96, timeoutMs: 10_000 };

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('the work succeeded');
    },
    (error: unknown) => error as Error,
  );

describe('capped work', () => {
  it('answers, and runs one piece of work at a time', async () => {
    expect(await runCapped(script, { do: 'echo', value: 'hello' }, limits)).toBe('hello');
    const [first, second] = await Promise.all([
      runCapped<{ started: number; ended: number }>(script, { do: 'wait', ms: 200 }, limits),
      runCapped<{ started: number; ended: number }>(script, { do: 'wait', ms: 200 }, limits),
    ]);
    expect(second.started).toBeGreaterThanOrEqual(first.ended);
  });

  it('terminates work past its time and goes on with the next', async () => {
    const started = Date.now();
    const error = await failure(runCapped(script, { do: 'spin' }, { ...limits, timeoutMs: 300 }));
    expect(error).toBeInstanceOf(WorkLimitExceeded);
    expect(error.message).toBe('takes longer than 300 ms');
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await runCapped(script, { do: 'echo', value: 'after the spin' }, limits)).toBe('after the spin');
  });

  it('terminates work that fills its heap', async () => {
    const error = await failure(runCapped(script, { do: 'heap' }, limits));
    expect(error).toBeInstanceOf(WorkLimitExceeded);
    expect(error.message).toBe('needs more than 96 MB of memory');
    expect(await runCapped(script, { do: 'echo', value: 'after the heap' }, limits)).toBe('after the heap');
  });

  it('terminates work that fills memory outside its heap, which no heap limit sees', async () => {
    const started = Date.now();
    const error = await failure(runCapped(script, { do: 'buffers' }, limits));
    expect(error).toBeInstanceOf(WorkLimitExceeded);
    expect(error.message).toBe('needs more than 96 MB of memory');
    // Stopped by the memory cap, long before the time cap.
    expect(Date.now() - started).toBeLessThan(limits.timeoutMs);
    expect(await runCapped(script, { do: 'echo', value: 'after the buffers' }, limits)).toBe('after the buffers');
  });

  it('reports what the work threw, and a worker that exits, as the work\'s failure', async () => {
    const thrown = await failure(runCapped(script, { do: 'throw' }, limits));
    expect(thrown).toBeInstanceOf(WorkFailed);
    expect(thrown.message).toBe('the input is broken');
    const exited = await failure(runCapped(script, { do: 'exit' }, limits));
    expect(exited).toBeInstanceOf(WorkFailed);
    expect(exited.message).toBe('the worker stopped (exit code 3)');
    expect(await runCapped(script, { do: 'echo', value: 'still here' }, limits)).toBe('still here');
  });
});
