/**
 * The voice worker's metrics, in CloudWatch's embedded metric format (EMF): one JSON line on
 * standard output per event, which CloudWatch Logs turns into metrics when the task's log
 * driver (awslogs) ships the line. No API call, no IAM grant, no SDK: the job processes
 * LiveKit forks inherit the container's standard output, so a metric written in a call's
 * process lands in the task's log like one written in the main process (each line is one
 * write, shorter than a pipe's atomic size, so lines from several processes never interleave).
 *
 * Namespace `Parley` and dimensions `service` (`parley`) and `stage` (PARLEY_STAGE) as the
 * functions' business metrics (shared/platform/observability/metrics.ts; a test holds the names together),
 * so the operations dashboard reads both the same way. The stack's alarms read these metrics
 * under exactly the `service` + `stage` dimension set (lib/voice-worker.ts):
 *
 * | Metric | Unit | Written when |
 * |---|---|---|
 * | `JobStarted` | Count | a call's job starts (one per call) |
 * | `JobFailed` | Count | a call's job ends in error (also under a `reason` dimension: the call's disconnection_reason) |
 * | `VoiceToVoiceMs` | Milliseconds | each agent reply: the caller's last voiced frame to the agent's first audio frame |
 * | `WorkerRegistered` | Count | every minute per task: 1 while the worker is registered with LiveKit, 0 when not |
 *
 * Outside ECS (npm start, tests) the lines go to an in-memory list (`recordedWorkerMetrics`)
 * instead of standard output, as the functions' metrics do outside Lambda.
 */
export const WORKER_METRICS_NAMESPACE = 'Parley';
export const WORKER_METRICS_SERVICE = 'parley';

const WORKER_METRIC_UNITS = {
  JobStarted: 'Count',
  JobFailed: 'Count',
  VoiceToVoiceMs: 'Milliseconds',
  WorkerRegistered: 'Count',
} as const;
export type WorkerMetricName = keyof typeof WORKER_METRIC_UNITS;

/** One EMF document as written. */
export interface WorkerEmfDocument {
  _aws: {
    Timestamp: number;
    CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[];
  };
  [key: string]: unknown;
}

export interface WorkerMetricsOptions {
  /** The `stage` dimension; default PARLEY_STAGE, else `local` (the settings' default). */
  stage?: string;
  /** Where each line goes; default standard output in ECS, else the in-memory list. */
  write?: (line: string) => void;
  /** Epoch milliseconds for the document's timestamp. */
  now?: () => number;
}

/** A dimension value: bounded text (a reason code), never an ID; anything else is `other`. */
const REASON = /^[a-z0-9_]{1,64}$/;
export const metricReason = (reason: string | undefined): string => (reason && REASON.test(reason) ? reason : 'other');

const RECORDED_MAX = 10_000;
const recorded: WorkerEmfDocument[] = [];

/** Whether this process runs in an ECS task (the container agent sets the metadata endpoint). */
const inEcs = () => Boolean(process.env.ECS_CONTAINER_METADATA_URI_V4);

function defaultWrite(line: string): void {
  if (inEcs()) {
    process.stdout.write(line);
    return;
  }
  recorded.push(JSON.parse(line) as WorkerEmfDocument);
  if (recorded.length > RECORDED_MAX) recorded.splice(0, recorded.length - RECORDED_MAX);
}

export class WorkerMetrics {
  readonly #stage: string;
  readonly #write: (line: string) => void;
  readonly #now: () => number;

  constructor(options: WorkerMetricsOptions = {}) {
    this.#stage = options.stage ?? process.env.PARLEY_STAGE ?? 'local';
    this.#write = options.write ?? defaultWrite;
    this.#now = options.now ?? Date.now;
  }

  /** A call's job started. */
  jobStarted(): void {
    this.#emit('JobStarted', 1);
  }

  /** A call's job ended in error; `reason` is the call's disconnection_reason (`error_asr`, `error_unknown`, …). */
  jobFailed(reason: string): void {
    this.#emit('JobFailed', 1, { reason: metricReason(reason) });
  }

  /** One reply's voice-to-voice time. A value that is not a finite, non-negative number is dropped, never written. */
  voiceToVoice(milliseconds: number): void {
    if (!Number.isFinite(milliseconds) || milliseconds < 0) return;
    this.#emit('VoiceToVoiceMs', Math.round(milliseconds));
  }

  /** The minute's heartbeat: whether the worker is registered with LiveKit (worker/src/worker-watch.ts). */
  workerRegistered(registered: boolean): void {
    this.#emit('WorkerRegistered', registered ? 1 : 0);
  }

  /**
   * One document per event. With an extra dimension the metric is written under both sets
   * (service + stage, and with the extra one), so the alarm's set always has every event.
   * Never throws: a metric that cannot be written must not fail a call.
   */
  #emit(name: WorkerMetricName, value: number, extra: Record<string, string> = {}): void {
    const base = ['service', 'stage'];
    const dimensions = Object.keys(extra).length ? [base, [...base, ...Object.keys(extra)]] : [base];
    const document: WorkerEmfDocument = {
      _aws: {
        Timestamp: this.#now(),
        CloudWatchMetrics: [{ Namespace: WORKER_METRICS_NAMESPACE, Dimensions: dimensions, Metrics: [{ Name: name, Unit: WORKER_METRIC_UNITS[name] }] }],
      },
      service: WORKER_METRICS_SERVICE,
      stage: this.#stage,
      ...extra,
      [name]: value,
    };
    try {
      this.#write(`${JSON.stringify(document)}\n`);
    } catch {
      // Standard output closed (the process is exiting): the metric is lost, the call is not.
    }
  }
}

/** The documents written outside ECS, oldest first. */
export function recordedWorkerMetrics(): readonly WorkerEmfDocument[] {
  return recorded;
}

/** Forgets the recorded documents (tests). */
export function clearRecordedWorkerMetrics(): void {
  recorded.length = 0;
}
