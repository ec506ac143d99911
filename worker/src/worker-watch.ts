import * as z from 'zod';
import { WORKER_HTTP_PORT } from './health.ts';
import { WorkerMetrics } from './metrics.ts';
import { TaskProtection, type ProtectionOutcome } from './task-protection.ts';

/**
 * What the deployment needs from the running worker, read from LiveKit Agents' own worker
 * HTTP server (worker/src/health.ts) so it needs no hook inside the framework:
 *
 * - every `pollMs` (2 s), `GET /worker`'s `active_jobs` drives the task's scale-in protection
 *   (worker/src/task-protection.ts): a call is protected within about 2 s of being accepted;
 * - every `heartbeatMs` (a minute), `WorkerRegistered` is written (worker/src/metrics.ts): 1
 *   while `GET /` answers 200 (registered with LiveKit), else 0. The stack alarms when no
 *   task wrote a 1 for three minutes (lib/voice-worker.ts).
 *
 * worker/src/main.ts starts it once the worker runs (`watchWorker().start()`); stop() ends it. A
 * failed read is logged through `onError` and retried at the next tick; nothing here throws.
 */
export interface WorkerWatchOptions {
  /** The worker HTTP server; default http://127.0.0.1:8081. */
  baseUrl?: string;
  pollMs?: number;
  heartbeatMs?: number;
  protection?: TaskProtection;
  metrics?: WorkerMetrics;
  fetch?: typeof fetch;
  /** Timers, injectable for tests. */
  setInterval?: (callback: () => void, ms: number) => unknown;
  clearInterval?: (timer: unknown) => void;
  onError?: (message: string) => void;
  onProtection?: (outcome: ProtectionOutcome) => void;
}

export interface WorkerWatch {
  /** One read of `/worker` and `/`, then the protection update. */
  poll(): Promise<void>;
  /** One heartbeat: the registration seen at the last poll. */
  beat(): void;
  /** The last reading: registered with LiveKit, and the running calls (null before the first good read). */
  readonly registered: boolean;
  readonly activeJobs: number | null;
  stop(): void;
}

const workerInfoSchema = z.object({ active_jobs: z.number().int().min(0) });

export function watchWorker(options: WorkerWatchOptions = {}): WorkerWatch & { start(): WorkerWatch } {
  const base = (options.baseUrl ?? `http://127.0.0.1:${WORKER_HTTP_PORT}`).replace(/\/+$/, '');
  const doFetch = options.fetch ?? fetch;
  const protection = options.protection ?? new TaskProtection({ onOutcome: (outcome) => options.onProtection?.(outcome) });
  const metrics = options.metrics ?? new WorkerMetrics();
  const every = options.setInterval ?? ((callback: () => void, ms: number) => setInterval(callback, ms).unref());
  const cancel = options.clearInterval ?? ((timer: unknown) => clearInterval(timer as NodeJS.Timeout));
  const onError = options.onError ?? ((message: string) => console.error(message));
  const timers: unknown[] = [];
  let registered = false;
  let activeJobs: number | null = null;
  let polling: Promise<void> | undefined;

  const read = async (path: string) => doFetch(`${base}${path}`, { signal: AbortSignal.timeout(1500) });

  async function pollOnce(): Promise<void> {
    try {
      registered = (await read('/')).ok;
    } catch {
      registered = false;
    }
    let jobs: number;
    try {
      const response = await read('/worker');
      const parsed = workerInfoSchema.safeParse(await response.json());
      if (!response.ok || !parsed.success) throw new Error(`GET /worker answered HTTP ${response.status} without active_jobs`);
      jobs = parsed.data.active_jobs;
    } catch (error) {
      onError(`worker watch: ${(error as Error).message}`);
      return;
    }
    activeJobs = jobs;
    const outcome = await protection.setActiveJobs(jobs).catch((error: Error) => {
      onError(`worker watch: task protection: ${error.message}`);
      return undefined;
    });
    if (outcome && !outcome.ok) onError(`worker watch: task protection refused (${outcome.reason}): ${outcome.message}`);
  }

  const watch = {
    // Ticks never overlap: a slow read makes the next tick wait for it rather than pile up.
    poll: () => (polling ??= pollOnce().finally(() => (polling = undefined))),
    beat: () => metrics.workerRegistered(registered),
    get registered() {
      return registered;
    },
    get activeJobs() {
      return activeJobs;
    },
    stop() {
      for (const timer of timers.splice(0)) cancel(timer);
    },
    start() {
      if (timers.length) return watch;
      timers.push(every(() => void watch.poll(), options.pollMs ?? 2000));
      timers.push(every(() => watch.beat(), options.heartbeatMs ?? 60_000));
      return watch;
    },
  };
  return watch;
}
