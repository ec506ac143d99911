import { afterEach, describe, expect, it } from 'vitest';
import { METRICS_NAMESPACE, METRICS_SERVICE } from '../../shared/platform/observability/metrics.ts';
import {
  WORKER_METRICS_NAMESPACE,
  WORKER_METRICS_SERVICE,
  WorkerMetrics,
  clearRecordedWorkerMetrics,
  metricReason,
  recordedWorkerMetrics,
} from '../src/metrics.ts';

const AT = Date.parse('2026-03-02T10:00:00.000Z');

function capture(stage = 'prod') {
  const lines: string[] = [];
  const metrics = new WorkerMetrics({ stage, now: () => AT, write: (line) => lines.push(line) });
  return { metrics, lines, documents: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>) };
}

afterEach(() => clearRecordedWorkerMetrics());

describe('the worker metrics (embedded metric format)', () => {
  it('names the namespace and service as the functions\' business metrics do', () => {
    expect(WORKER_METRICS_NAMESPACE).toBe(METRICS_NAMESPACE);
    expect(WORKER_METRICS_SERVICE).toBe(METRICS_SERVICE);
  });

  it('writes one EMF line per event, under service and stage', () => {
    const { metrics, lines, documents } = capture();
    metrics.jobStarted();
    metrics.voiceToVoice(812.4);
    metrics.workerRegistered(true);
    metrics.workerRegistered(false);
    expect(lines.every((line) => line.endsWith('}\n') && line.indexOf('\n') === line.length - 1)).toBe(true);
    expect(documents()).toEqual([
      {
        _aws: { Timestamp: AT, CloudWatchMetrics: [{ Namespace: 'Parley', Dimensions: [['service', 'stage']], Metrics: [{ Name: 'JobStarted', Unit: 'Count' }] }] },
        service: 'parley',
        stage: 'prod',
        JobStarted: 1,
      },
      {
        _aws: { Timestamp: AT, CloudWatchMetrics: [{ Namespace: 'Parley', Dimensions: [['service', 'stage']], Metrics: [{ Name: 'VoiceToVoiceMs', Unit: 'Milliseconds' }] }] },
        service: 'parley',
        stage: 'prod',
        VoiceToVoiceMs: 812,
      },
      {
        _aws: { Timestamp: AT, CloudWatchMetrics: [{ Namespace: 'Parley', Dimensions: [['service', 'stage']], Metrics: [{ Name: 'WorkerRegistered', Unit: 'Count' }] }] },
        service: 'parley',
        stage: 'prod',
        WorkerRegistered: 1,
      },
      {
        _aws: { Timestamp: AT, CloudWatchMetrics: [{ Namespace: 'Parley', Dimensions: [['service', 'stage']], Metrics: [{ Name: 'WorkerRegistered', Unit: 'Count' }] }] },
        service: 'parley',
        stage: 'prod',
        WorkerRegistered: 0,
      },
    ]);
  });

  it('writes a failed job under service and stage, and again with its reason', () => {
    const { metrics, documents } = capture();
    metrics.jobFailed('error_llm_websocket_open');
    expect(documents()).toEqual([
      {
        _aws: {
          Timestamp: AT,
          CloudWatchMetrics: [{ Namespace: 'Parley', Dimensions: [['service', 'stage'], ['service', 'stage', 'reason']], Metrics: [{ Name: 'JobFailed', Unit: 'Count' }] }],
        },
        service: 'parley',
        stage: 'prod',
        reason: 'error_llm_websocket_open',
        JobFailed: 1,
      },
    ]);
  });

  it('keeps dimension values bounded: a reason that is not a code is "other"', () => {
    expect(metricReason('error_asr')).toBe('error_asr');
    expect(metricReason('call_0a1b2c3d4e5f60718293a4b5 failed')).toBe('other');
    expect(metricReason('Error_ASR')).toBe('other');
    expect(metricReason('x'.repeat(65))).toBe('other');
    expect(metricReason(undefined)).toBe('other');
    expect(metricReason('')).toBe('other');
  });

  it('drops a voice-to-voice time that is not a duration', () => {
    const { metrics, lines } = capture();
    for (const value of [Number.NaN, -1, Number.POSITIVE_INFINITY]) metrics.voiceToVoice(value);
    metrics.voiceToVoice(0);
    expect(lines.map((line) => (JSON.parse(line) as { VoiceToVoiceMs: number }).VoiceToVoiceMs)).toEqual([0]);
  });

  it('never throws when the output is gone', () => {
    const metrics = new WorkerMetrics({
      write: () => {
        throw new Error('EPIPE');
      },
    });
    expect(() => metrics.jobFailed('error_unknown')).not.toThrow();
  });

  it('keeps the lines in memory outside ECS, with the stage from PARLEY_STAGE', () => {
    const saved = { stage: process.env.PARLEY_STAGE, ecs: process.env.ECS_CONTAINER_METADATA_URI_V4 };
    process.env.PARLEY_STAGE = 'staging';
    delete process.env.ECS_CONTAINER_METADATA_URI_V4;
    try {
      new WorkerMetrics({ now: () => AT }).jobStarted();
    } finally {
      if (saved.stage === undefined) delete process.env.PARLEY_STAGE;
      else process.env.PARLEY_STAGE = saved.stage;
      if (saved.ecs !== undefined) process.env.ECS_CONTAINER_METADATA_URI_V4 = saved.ecs;
    }
    expect(recordedWorkerMetrics()).toHaveLength(1);
    expect(recordedWorkerMetrics()[0]).toMatchObject({ stage: 'staging', JobStarted: 1 });
  });
});
