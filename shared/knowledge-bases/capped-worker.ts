import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, type TransferListItem } from 'node:worker_threads';

/*
 * Work on untrusted input (a parser fed an uploaded file) in a worker thread that may use
 * so much memory and so much time, and no more: past either it is terminated and the caller
 * gets WorkLimitExceeded, while the process and everything else it serves go on. In the
 * calling thread a failing parser would take the whole process with it (a heap out of
 * memory is fatal to Node, and an endless loop blocks every request).
 *
 * - Memory: the worker's JS heap is capped (`resourceLimits.maxOldGenerationSizeMb`), and,
 *   since a parser's decoded bytes live outside the heap (Buffers and typed arrays, which
 *   no heap limit counts: PDF.js inflates streams into them), the process's resident memory
 *   is sampled every 100 ms while a piece of work runs and may not grow by more than the
 *   same number of megabytes over what it was when the work started.
 * - Time: the work is terminated when it runs past its timeout (a parser in a loop never
 *   yields, so only the thread's termination stops it).
 * - One piece of work runs at a time in a process (the others wait their turn): the memory
 *   sampled is the process's, so it must be one worker's, and parsing is CPU work anyway.
 *
 * A worker serves pieces of work one after another (a worker starts in tens of
 * milliseconds, its parser's code loads once); one that hit a limit or failed is thrown
 * away, and an idle one ends after IDLE_MS. In AWS the worker's script is `<name>.mjs`
 * beside the bundle's index.mjs (lib/bundling.ts builds it); from the sources (tsx locally,
 * vitest in the tests) the TypeScript file runs through tsx's loader registered inside the
 * worker, as a worker does not inherit its parent's loader. Nothing here is imported at a
 * cold start: callers load this module with import() when they first need it.
 */

/**
 * Where a worker's script is: built beside the deployed bundle (the caller's
 * `besideBundle('<name>.mjs')`, resolved in its own cold code so that this module, loaded
 * later, shares nothing with a cold start), else its TypeScript source.
 */
export interface WorkerScript {
  bundled: URL | undefined;
  source: URL;
}

export interface WorkLimits {
  /** Megabytes of JS heap, and of growth of the process's resident memory, the work may use. */
  memoryMb: number;
  timeoutMs: number;
}

/** The work went past one of its limits and its worker was terminated. */
export class WorkLimitExceeded extends Error {
  constructor(
    readonly limit: 'memory' | 'time',
    readonly limits: WorkLimits,
  ) {
    super(limit === 'memory' ? `needs more than ${limits.memoryMb} MB of memory` : `takes longer than ${formatMs(limits.timeoutMs)}`);
    this.name = 'WorkLimitExceeded';
  }
}

/** The work's turn came after the time it had to start by (WorkSchedule): it was never started. */
export class WorkNotStarted extends Error {
  constructor() {
    super('the work was not started: its turn came after the time it had to start by');
    this.name = 'WorkNotStarted';
  }
}

/**
 * When work waiting its turn may still start: a caller with a deadline of its own (a queue
 * step within its function's timeout) gives the time by which the work must begin, since
 * the wait behind other work (one at a time) is not its to know.
 */
export interface WorkSchedule {
  startBy: number;
  now: () => number;
}

/** The work threw in the worker (its message, as the worker's code wrote it), or its worker ended while on it. */
export class WorkFailed extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkFailed';
  }
}

/** How long a worker may take to start and load its script (not counted in the work's time). */
const START_TIMEOUT_MS = 30_000;
/** An idle worker ends after this, giving its memory back. */
const IDLE_MS = 30_000;
const SAMPLE_MS = 100;
const MB = 1024 * 1024;

export const formatMs = (ms: number) => (ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`);

type Reply = { ready: true } | { id: number; ok: true; output: unknown } | { id: number; ok: false; message: string };

interface Handlers {
  message?: (reply: Reply) => void;
  error: (error: Error & { code?: string }) => void;
  exit: (code: number) => void;
}

interface Running {
  worker: Worker;
  memoryMb: number;
  idle?: NodeJS.Timeout;
  handlers?: Handlers;
}

/** The running worker of each script, by its source. */
const running = new Map<string, Running>();
/** The turn of the next piece of work: one at a time in a process. */
let turn: Promise<unknown> = Promise.resolve();
let nextId = 0;

/**
 * Runs `input` through the worker script's handler (serveCappedWork) within `limits`.
 * Rejects with WorkLimitExceeded past a limit, WorkFailed when the work failed (the
 * input's fault), WorkNotStarted when its turn came after `schedule.startBy`, or another
 * Error when the worker could not start (the machine's).
 */
export function runCapped<O>(
  script: WorkerScript,
  input: unknown,
  limits: WorkLimits,
  transfer: readonly TransferListItem[] = [],
  schedule?: WorkSchedule,
): Promise<O> {
  const result = turn.then(() => {
    if (schedule && schedule.now() >= schedule.startBy) throw new WorkNotStarted();
    return runNow<O>(script, input, limits, transfer);
  });
  turn = result.catch(() => undefined);
  return result;
}

async function runNow<O>(script: WorkerScript, input: unknown, limits: WorkLimits, transfer: readonly TransferListItem[]): Promise<O> {
  const current = await started(script, limits.memoryMb);
  const { worker } = current;
  clearTimeout(current.idle);
  worker.ref();
  const id = ++nextId;
  const baseline = process.memoryUsage.rss();
  let timeout: NodeJS.Timeout | undefined;
  let sampler: NodeJS.Timeout | undefined;
  try {
    return await new Promise<O>((resolve, reject) => {
      // The first outcome counts: a terminated worker still reports its exit afterwards.
      let settled = false;
      const settle = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timeout);
        clearInterval(sampler);
        outcome();
      };
      const stop = (error: Error) =>
        settle(() => {
          discard(script, current);
          // Rejected once the thread is gone, so the next work's baseline is not this one's memory.
          void worker.terminate().finally(() => reject(error));
        });
      timeout = setTimeout(() => stop(new WorkLimitExceeded('time', limits)), limits.timeoutMs);
      sampler = setInterval(() => {
        if (process.memoryUsage.rss() - baseline > limits.memoryMb * MB) stop(new WorkLimitExceeded('memory', limits));
      }, SAMPLE_MS);
      listen(current, {
        message: (reply) => {
          if (!('id' in reply) || reply.id !== id) return;
          settle(() => (reply.ok ? resolve(reply.output as O) : reject(new WorkFailed(reply.message))));
        },
        // Past its heap limit Node ends the worker with ERR_WORKER_OUT_OF_MEMORY (then its exit);
        // an exception the work left uncaught, or an exit, ends it too: the work's failure either way.
        error: (error) => stop(error.code === 'ERR_WORKER_OUT_OF_MEMORY' ? new WorkLimitExceeded('memory', limits) : new WorkFailed(error.message)),
        exit: (code) => stop(new WorkFailed(`the worker stopped (exit code ${code})`)),
      });
      worker.postMessage({ id, input }, transfer);
    });
  } finally {
    if (running.get(script.source.href) === current) {
      whileIdle(script, current);
      current.idle = setTimeout(() => {
        discard(script, current);
        void worker.terminate();
      }, IDLE_MS).unref();
    }
  }
}

/**
 * The worker's listeners, replacing the previous ones. By reference: Worker keeps listeners
 * of its own (its message port follows the 'message' listeners), which a
 * removeAllListeners() would take away.
 */
function listen(current: Running, handlers: Handlers): void {
  const { worker } = current;
  const previous = current.handlers;
  if (previous?.message) worker.off('message', previous.message);
  if (previous) worker.off('error', previous.error).off('exit', previous.exit);
  current.handlers = handlers;
  if (handlers.message) worker.on('message', handlers.message);
  worker.on('error', handlers.error).on('exit', handlers.exit);
}

/** A waiting worker keeps no process alive, and one that fails or exits meanwhile is forgotten (an unheard 'error' would throw in this thread). */
function whileIdle(script: WorkerScript, current: Running): void {
  listen(current, { error: () => discard(script, current), exit: () => discard(script, current) });
  current.worker.unref();
}

function discard(script: WorkerScript, current: Running): void {
  clearTimeout(current.idle);
  if (running.get(script.source.href) === current) running.delete(script.source.href);
}

/** The script's worker, started (and ready) if it was not; one with another heap limit is replaced. */
async function started(script: WorkerScript, memoryMb: number): Promise<Running> {
  const existing = running.get(script.source.href);
  if (existing && existing.memoryMb === memoryMb) return existing;
  if (existing) {
    discard(script, existing);
    await existing.worker.terminate();
  }
  const options = { resourceLimits: { maxOldGenerationSizeMb: memoryMb } };
  const worker = script.bundled ? new Worker(script.bundled, options) : new Worker(fromSources(script.source), { ...options, eval: true });
  const current: Running = { worker, memoryMb };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`The worker ${scriptName(script)} did not start within ${formatMs(START_TIMEOUT_MS)}`));
    }, START_TIMEOUT_MS);
    const done = (error?: Error) => {
      clearTimeout(timer);
      if (error) reject(error);
      else resolve();
    };
    listen(current, {
      message: (reply) => 'ready' in reply && done(),
      error: done,
      exit: (code) => done(new Error(`The worker ${scriptName(script)} stopped while starting (exit code ${code})`)),
    });
  });
  running.set(script.source.href, current);
  whileIdle(script, current);
  return current;
}

const scriptName = (script: WorkerScript) => (script.bundled ?? script.source).pathname.split('/').pop();

/**
 * A worker's code that runs the TypeScript `source` through tsx: its ESM API (the package's
 * `./esm/api` export for `import`, found from its package.json since vitest has no
 * import.meta.resolve) registers the loader in the worker, then the source is imported.
 */
function fromSources(source: URL): string {
  const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
  const exports = (JSON.parse(readFileSync(manifest, 'utf8')) as { exports: Record<string, { import: { default: string } }> }).exports;
  const api = pathToFileURL(join(dirname(manifest), exports['./esm/api']!.import.default)).href;
  return `import { register } from ${JSON.stringify(api)}; register(); await import(${JSON.stringify(source.href)});`;
}

/**
 * The worker's side: `handle` runs each piece of work; what it returns goes back to the
 * caller, and what it throws comes back as WorkFailed with its message. Call it once from
 * the worker script.
 */
export function serveCappedWork(handle: (input: never) => Promise<unknown>): void {
  if (isMainThread || !parentPort) throw new Error('serveCappedWork runs in a worker thread');
  const port = parentPort;
  port.on('message', ({ id, input }: { id: number; input: never }) => {
    handle(input).then(
      (output) => port.postMessage({ id, ok: true, output }),
      (error: unknown) => port.postMessage({ id, ok: false, message: error instanceof Error ? error.message : String(error) }),
    );
  });
  port.postMessage({ ready: true });
}
