/** A clock as the code under test takes it: epoch ms, and a wait that an abort cuts short. */
export interface TestClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/**
 * Virtual time for tests whose code takes a clock and also talks to the table: fake timers
 * would stop the AWS SDK's own timers, this leaves them alone. It starts at the wall clock's
 * time (what the code writes stays plausible epoch ms), the table's round trips take none of
 * it, and it moves only once every task under way is asleep, straight to the earliest
 * wake-up. A second's wait costs no real time, and every time a test reads is exact,
 * whatever the machine's load.
 *
 * Only tasks run through `task` hold time back: start each concurrent piece of work with it.
 */
export function virtualTime() {
  let now = Date.now();
  let running = 0;
  const sleepers: { at: number; wake: () => void }[] = [];
  const advance = () => {
    if (running === 0 || sleepers.length < running) return;
    sleepers.sort((a, b) => a.at - b.at);
    now = Math.max(now, sleepers[0]!.at);
    while (sleepers.length > 0 && sleepers[0]!.at <= now) sleepers.shift()!.wake();
  };
  const clock: TestClock = {
    now: () => now,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        if (signal?.aborted) return reject(signal.reason);
        const sleeper = { at: now + Math.max(0, ms), wake: resolve };
        signal?.addEventListener(
          'abort',
          () => {
            const index = sleepers.indexOf(sleeper);
            if (index < 0) return;
            sleepers.splice(index, 1);
            reject(signal.reason);
          },
          { once: true },
        );
        sleepers.push(sleeper);
        advance();
      }),
  };
  /** Runs one task on this time: time waits for it until it finishes or sleeps. */
  async function task<T>(work: () => Promise<T>): Promise<T> {
    running += 1;
    try {
      return await work();
    } finally {
      running -= 1;
      advance();
    }
  }
  return { clock, task };
}
