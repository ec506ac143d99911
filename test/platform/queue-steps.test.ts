import type { SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { runQueueSteps } from '../../shared/platform/aws/queue-steps.ts';

const record = (messageId: string, body: string, receives = 1) =>
  ({ messageId, body, attributes: { ApproximateReceiveCount: String(receives) } }) as unknown as SQSEvent['Records'][number];
const event = (...records: SQSEvent['Records']) => ({ Records: records }) as SQSEvent;
const Step = z.object({ n: z.number() });

describe('runQueueSteps (the queue jobs\' consumer)', () => {
  it('drops malformed messages, reports only the steps that threw, and tells the job their receive count', async () => {
    const ran: number[] = [];
    const failed: [number, string, number][] = [];
    const result = await runQueueSteps(event(record('a', '{"n":1}'), record('b', 'not json'), record('c', '{"x":1}'), record('d', '{"n":4}', 5)), {
      job: 'test-jobs',
      schema: Step,
      run: async ({ n }) => {
        ran.push(n);
        if (n === 4) throw new Error('boom');
      },
      failed: async ({ n }, error, receives) => {
        failed.push([n, (error as Error).message, receives]);
      },
    });
    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'd' }] });
    expect(ran.sort()).toEqual([1, 4]);
    expect(failed).toEqual([[4, 'boom', 5]]);
  });

  it('a failure hook that throws still reports the step, and sequential runs one message after another', async () => {
    const order: string[] = [];
    const result = await runQueueSteps(event(record('a', '{"n":1}'), record('b', '{"n":2}')), {
      job: 'test-jobs',
      schema: Step,
      sequential: true,
      run: async ({ n }) => {
        order.push(`start ${n}`);
        await new Promise((resolve) => setTimeout(resolve, n === 1 ? 30 : 0));
        order.push(`end ${n}`);
        throw new Error(`step ${n}`);
      },
      failed: async () => {
        throw new Error('the table is down');
      },
    });
    expect(result.batchItemFailures.map((failure) => failure.itemIdentifier)).toEqual(['a', 'b']);
    expect(order).toEqual(['start 1', 'end 1', 'start 2', 'end 2']);
  });
});
