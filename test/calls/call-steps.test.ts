import type { SQSEvent, SQSRecord } from 'aws-lambda';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LocalMessageQueue } from '../../local/local-queue.ts';
import { tableQueueStore } from '../../local/queue-store.ts';
import { localQueue } from '../../local/queues.ts';
import { localLambdaContext } from '../../local/local-context.ts';
import { startBackgroundWork } from '../../local/background.ts';
import { dueTimeBatch, hopDelaySeconds, sendAt, SQS_MAX_DELAY_SECONDS } from '../../shared/platform/aws/due-time.ts';
import { queueNamed, setLocalQueue } from '../../shared/platform/aws/queue.ts';
import { JOBS } from '../../shared/jobs.ts';
import type { CallStepMessage } from '../../shared/calls/index.ts';

/*
 * The call engine's timed steps: sendAt's envelope, the consumer's hops and waits, and the
 * call-steps job as local/background.ts runs it. The call engine itself (shared/calls) is
 * another part's: here its runCallQueueMessage records what it was handed.
 */
const ran = vi.hoisted(() => ({ steps: [] as { at: number; message: unknown }[], failFor: new Set<string>() }));
vi.mock('../../shared/calls/index.ts', async () => ({
  CallQueueMessageSchema: (await import('../../shared/calls/engine/schedule.ts')).CallQueueMessageSchema,
  // The consumer registers the batch counters' listener at load (docs/batch-calls.md).
  onCallLifecycle: () => undefined,
  runCallQueueMessage: async (message: { step: string }) => {
    ran.steps.push({ at: Date.now(), message });
    if (ran.failFor.has(message.step)) {
      ran.failFor.delete(message.step);
      throw new Error(`step ${message.step} failed`);
    }
  },
}));

const step = (name: CallStepMessage['step']): CallStepMessage => ({ call_id: 'call_1', workspace_id: 'ws_1', step: name, seq: 0 });

beforeEach(() => {
  ran.steps.length = 0;
  ran.failFor.clear();
});

describe('hop delays', () => {
  it('round down to whole seconds and stop at the cap', () => {
    const now = 1_000_000;
    expect(hopDelaySeconds(now + 1200, now)).toBe(1);
    expect(hopDelaySeconds(now + 999, now)).toBe(0);
    expect(hopDelaySeconds(now - 5000, now)).toBe(0);
    expect(hopDelaySeconds(now + 3_600_000, now)).toBe(SQS_MAX_DELAY_SECONDS);
    expect(hopDelaySeconds(now + 3_600_000, now, 2)).toBe(2);
  });
});

describe('due-time messages on a local queue', () => {
  let queue: LocalMessageQueue;
  const received: SQSRecord[] = [];
  const handled: { at: number; message: CallStepMessage }[] = [];
  const failOnce = new Set<string>();

  /*
   * A long visibility timeout unless a test needs redelivery: with 1 s, a consumer slowed
   * past a second (the store's writes on a loaded machine) sees its message received again
   * while in flight, and every such receive re-sends another hop, as SQS itself would.
   */
  const useQueue = (visibilityTimeoutSeconds: number) => {
    queue = new LocalMessageQueue({
      name: `due-time-${Math.random().toString(16).slice(2)}`,
      visibilityTimeoutSeconds,
      store: tableQueueStore,
      onConsumerError: () => undefined,
    });
    setLocalQueue('call-steps', queue);
  };

  beforeEach(() => {
    received.length = 0;
    handled.length = 0;
    failOnce.clear();
    useQueue(30);
  });
  afterEach(async () => {
    await queue.stop();
    setLocalQueue('call-steps', localQueue('call-steps'));
  });

  /** The consumer with a one-second cap, so a step due in a few seconds needs several hops. */
  const startConsumer = () =>
    queue.start(async (event: SQSEvent) => {
      received.push(...event.Records);
      return dueTimeBatch('call-steps', event, {
        maxDelaySeconds: 1,
        parse: (message) => message as CallStepMessage,
        handle: async (message) => {
          handled.push({ at: Date.now(), message });
          if (failOnce.delete(message.step)) throw new Error('failed once');
        },
      });
    });

  it('hops a message due beyond the delay cap and hands it over once, never early and within a second of its due time', async () => {
    startConsumer();
    const dueAt = Date.now() + 3500;
    await sendAt('call-steps', step('hangup'), dueAt, { maxDelaySeconds: 1 });
    await queue.whenIdle();

    expect(handled.map((h) => h.message)).toEqual([step('hangup')]);
    expect(handled[0]!.at).toBeGreaterThanOrEqual(dueAt);
    expect(handled[0]!.at - dueAt).toBeLessThan(1000);
    // Sent with 1 s, re-sent at ~1 s and ~2 s with 1 s each, waited out the last half second at ~3 s.
    expect(received).toHaveLength(3);
    for (const record of received) expect(JSON.parse(record.body)).toEqual({ due_at_ms: dueAt, message: step('hangup') });
    expect(new Set(received.map((r) => r.messageId)).size).toBe(3);
  });

  it('waits out a sub-second remainder rather than handing a step over early', async () => {
    startConsumer();
    const dueAt = Date.now() + 1200;
    await sendAt('call-steps', step('user'), dueAt, { maxDelaySeconds: 1 });
    await queue.whenIdle();
    expect(received).toHaveLength(1);
    expect(handled[0]!.at).toBeGreaterThanOrEqual(dueAt);
    expect(handled[0]!.at - dueAt).toBeLessThan(1000);
  });

  it('reports only the failed step of a batch, so only it comes again', async () => {
    await queue.stop();
    useQueue(2);
    for (const name of ['dial', 'user', 'hangup'] as const) await queue.send(step(name));
    failOnce.add('user');
    startConsumer();
    await queue.whenIdle();
    expect(handled.map((h) => h.message.step).sort()).toEqual(['dial', 'hangup', 'user', 'user']);
    expect(received.map((r) => [JSON.parse(r.body).step, r.attributes.ApproximateReceiveCount]).sort()).toEqual([
      ['dial', '1'],
      ['hangup', '1'],
      ['user', '1'],
      ['user', '2'],
    ]);
  });

  it('drops a malformed message instead of redelivering it', async () => {
    queue.start((event) =>
      dueTimeBatch('call-steps', event, {
        parse: (message) => ((message as CallStepMessage | undefined)?.call_id ? (message as CallStepMessage) : undefined),
        handle: async (message) => void handled.push({ at: Date.now(), message }),
      }),
    );
    queue.sendBody('not json');
    await queue.send({ call_id: '' });
    await queue.whenIdle();
    expect(handled).toEqual([]);
    expect(queue.list()).toEqual([]);
  });

  it('refuses a due time that is not a number and a cap SQS would refuse', async () => {
    await expect(sendAt('call-steps', step('dial'), Number.NaN)).rejects.toThrow('dueAtEpochMs must be a finite epoch time, not NaN');
    await expect(sendAt('call-steps', step('dial'), Date.now(), { maxDelaySeconds: 901 })).rejects.toThrow(
      'maxDelaySeconds must be a whole number from 1 to 900, not 901',
    );
    expect(queue.list()).toEqual([]);
  });
});

describe('the call-steps job', () => {
  it('is a live queue job of 120 s on the call-steps queue (an inbound SIP admission takes up to about 82 s)', () => {
    expect(JOBS.find((job) => job.name === 'call-steps')).toMatchObject({
      trigger: { kind: 'queue', queue: 'call-steps' },
      timeoutSeconds: 120,
      live: true,
    });
  });

  it('runs, in the local background work, a step sent through queueNamed and one sent with sendAt', async () => {
    const background = startBackgroundWork();
    try {
      await queueNamed('call-steps').send(step('dial'));
      const dueAt = Date.now() + 1200;
      await sendAt('call-steps', step('user'), dueAt);
      await localQueue('call-steps').whenIdle();
      expect(ran.steps.map((s) => s.message)).toEqual([step('dial'), step('user')]);
      expect(ran.steps[1]!.at).toBeGreaterThanOrEqual(dueAt);
    } finally {
      await background.stop();
    }
  });

  it('passes a malformed step by and reports a failed one, which the queue hands over again', async () => {
    const { handler } = await import('../../functions/call-steps.ts');
    ran.failFor.add('analyze');
    const record = (messageId: string, body: string) => ({ messageId, body }) as SQSRecord;
    const context = localLambdaContext('parley-call-steps', 60_000);
    const event = {
      Records: [
        record('m1', JSON.stringify(step('dial'))),
        record('m2', JSON.stringify({ call_id: 'call_1', step: 'no workspace' })),
        record('m3', JSON.stringify({ due_at_ms: Date.now(), message: step('analyze') })),
      ],
    };
    expect(await handler(event, context)).toEqual({ batchItemFailures: [{ itemIdentifier: 'm3' }] });
    expect(ran.steps.map((s) => (s.message as CallStepMessage).step)).toEqual(['dial', 'analyze']);
  });
});
