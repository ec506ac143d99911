import { describe, expect, it } from 'vitest';
import { loadOnce } from '../../shared/platform/lazy.ts';

describe('loadOnce', () => {
  it('loads once however many callers ask at the same time, and answers them all with the same thing', async () => {
    let loads = 0;
    const load = loadOnce(async () => {
      loads++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { loaded: loads };
    });
    const answers = await Promise.all(Array.from({ length: 20 }, () => load()));
    expect(loads).toBe(1);
    expect(new Set(answers).size).toBe(1);
    expect(await load()).toBe(answers[0]);
    expect(loads).toBe(1);
  });

  it('forgets a failed load, so the next call tries again rather than failing for the life of the process', async () => {
    let loads = 0;
    const load = loadOnce(async () => {
      loads++;
      if (loads === 1) throw new Error('chunk unreadable');
      return 'module';
    });
    const [first, second] = await Promise.allSettled([load(), load()]);
    // Callers of the failed load share its failure.
    expect(first).toMatchObject({ status: 'rejected', reason: { message: 'chunk unreadable' } });
    expect(second).toMatchObject({ status: 'rejected', reason: { message: 'chunk unreadable' } });
    expect(await load()).toBe('module');
    expect(await load()).toBe('module');
    expect(loads).toBe(2);
  });
});
