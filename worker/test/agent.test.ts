import { describe, expect, it } from 'vitest';
import { newAgent } from '../../test/support/factories.ts';
import { clearRecordedWorkerMetrics, recordedWorkerMetrics } from '../src/metrics.ts';
import { liveWebCall, readCall, startParley } from './support/parley-call.ts';

/*
 * The job entry (worker/src/agent.ts) before it joins a room: what it does with a dispatch
 * it cannot use. A real local Parley answers the reports.
 */

const parley = await startParley();
const { default: agent } = await import('../src/agent.ts');

function jobContext(metadata: string) {
  const shutdowns: string[] = [];
  const ctx = {
    job: { id: 'AJ_test', metadata, room: { name: 'room_test' } },
    shutdown: (reason = '') => shutdowns.push(reason),
    connect: async () => {
      throw new Error('the job must not join a room');
    },
  };
  return { ctx: ctx as unknown as Parameters<typeof agent.entry>[0], shutdowns };
}

describe('a call\'s job', () => {
  it('refuses a dispatch whose metadata is not a call\'s, and ends the job', async () => {
    const { ctx, shutdowns } = jobContext('{"call_id": 7}');
    await agent.entry(ctx);
    expect(shutdowns).toEqual(['bad dispatch metadata']);
  });

  it('reports the call ended (error_unknown) when it cannot start it, so Parley releases the call', async () => {
    clearRecordedWorkerMetrics();
    const ws = await parley.app.newWorkspace();
    const { agent: created } = await newAgent(ws.api);
    const metadata = await liveWebCall(parley, ws.api_key, { agent_id: created.agent_id });
    // A version the agent does not have: the job cannot read its configuration.
    const { ctx, shutdowns } = jobContext(JSON.stringify({ ...metadata, agent_version: 99 }));
    await agent.entry(ctx);
    expect(shutdowns).toEqual(['the call could not start']);
    // The job's metrics: started, then failed with the reason the alarm counts.
    expect(recordedWorkerMetrics().map((document) => [document.JobStarted !== undefined ? 'JobStarted' : 'JobFailed', document.reason])).toEqual([
      ['JobStarted', undefined],
      ['JobFailed', 'error_unknown'],
    ]);
    expect(await readCall(parley, ws.api_key, metadata.call_id)).toMatchObject({ call_status: 'ended', disconnection_reason: 'error_unknown' });
  });
});
