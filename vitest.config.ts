import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    // worker/test: the voice worker's own package, run here so one command runs every test. Its
    // files load @livekit/rtc-node's native FFI library, which needs nothing special in a fork.
    include: ['test/**/*.test.ts', 'worker/test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    setupFiles: ['test/support/setup.ts'],
    pool: 'forks',
    // Vitest's default is one fork per CPU less one: a single fork on CI's 2 CPUs, which left
    // the second CPU idle while tests wait on DynamoDB Local, timers and sandbox calls. Two
    // forks ran the suite in about 0.6 of the time; three overloaded DynamoDB Local (its 1 s
    // connection timeouts) on 2 CPUs.
    maxWorkers: 2,
    minWorkers: 1,
    testTimeout: 60_000,
    hookTimeout: 90_000,
    // Each file gets its own table and its own module graph (settings are read at load).
    isolate: true,
  },
});
