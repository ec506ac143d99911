import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LONGEST_CALL_MINUTES, RENEW_MINUTES, TaskProtection, type ProtectionOutcome } from '../src/task-protection.ts';
import { startFakeEcsAgent, type FakeEcsAgent } from './fake-ecs-agent.ts';

const MINUTE = 60_000;
const START = Date.parse('2026-03-02T10:00:00.000Z');

let agent: FakeEcsAgent;
let clock = START;
const now = () => clock;

beforeAll(async () => {
  agent = await startFakeEcsAgent(now);
});
afterAll(() => agent.close());
beforeEach(() => {
  clock = START;
  agent.requests.length = 0;
  agent.state.protectionEnabled = false;
  agent.state.expiresAt = null;
});

const protection = (outcomes: ProtectionOutcome[] = []) =>
  new TaskProtection({ agentUri: agent.agentUri, now, onOutcome: (outcome) => outcomes.push(outcome) });

describe('task scale-in protection', () => {
  it('protects the task when its first call starts, for the longest call plus the renewal margin', async () => {
    const task = protection();
    const outcome = await task.setActiveJobs(1);
    expect(agent.requests).toEqual([{ ProtectionEnabled: true, ExpiresInMinutes: LONGEST_CALL_MINUTES + RENEW_MINUTES }]);
    expect(outcome).toEqual({ ok: true, protectionEnabled: true, expiresAt: START + 130 * MINUTE });
    expect(task.protectedUntil).toBe(START + 130 * MINUTE);
    expect(agent.state).toEqual({ protectionEnabled: true, expiresAt: START + 130 * MINUTE });
  });

  it('sends nothing more while calls run and the protection still covers a whole call', async () => {
    const task = protection();
    await task.setActiveJobs(1);
    clock = START + 9 * MINUTE;
    expect(await task.setActiveJobs(3)).toBeUndefined();
    expect(await task.setActiveJobs(2)).toBeUndefined();
    expect(agent.requests).toHaveLength(1);
  });

  it('renews once less than a whole call is left, so a call starting now stays covered', async () => {
    const task = protection();
    await task.setActiveJobs(1);
    clock = START + 10 * MINUTE + 1;
    const outcome = await task.setActiveJobs(2);
    expect(outcome).toEqual({ ok: true, protectionEnabled: true, expiresAt: clock + 130 * MINUTE });
    expect(agent.requests).toEqual([
      { ProtectionEnabled: true, ExpiresInMinutes: 130 },
      { ProtectionEnabled: true, ExpiresInMinutes: 130 },
    ]);
  });

  it('removes the protection when the last call ends, and only once', async () => {
    const task = protection();
    await task.setActiveJobs(2);
    const outcome = await task.setActiveJobs(0);
    expect(outcome).toEqual({ ok: true, protectionEnabled: false, expiresAt: null });
    expect(task.protectedUntil).toBeUndefined();
    expect(await task.setActiveJobs(0)).toBeUndefined();
    expect(agent.requests).toEqual([{ ProtectionEnabled: true, ExpiresInMinutes: 130 }, { ProtectionEnabled: false }]);
    expect(agent.state).toEqual({ protectionEnabled: false, expiresAt: null });
  });

  it('sends nothing for an idle task that was never protected', async () => {
    expect(await protection().setActiveJobs(0)).toBeUndefined();
    expect(agent.requests).toEqual([]);
  });

  it('applies updates in order, each from the state the previous left', async () => {
    const task = protection();
    const outcomes = await Promise.all([task.setActiveJobs(1), task.setActiveJobs(2), task.setActiveJobs(0), task.setActiveJobs(1)]);
    expect(outcomes.map((outcome) => outcome && (outcome.ok ? outcome.protectionEnabled : outcome.reason))).toEqual([true, undefined, false, true]);
    expect(agent.requests.map((request) => request.ProtectionEnabled)).toEqual([true, false, true]);
    expect(agent.state.protectionEnabled).toBe(true);
  });

  it('reports ECS refusing (a blocked deployment) and tries again at the next update', async () => {
    const outcomes: ProtectionOutcome[] = [];
    const task = protection(outcomes);
    agent.failNext('DEPLOYMENT_BLOCKED');
    expect(await task.setActiveJobs(1)).toEqual({ ok: false, status: 409, reason: 'DEPLOYMENT_BLOCKED', message: 'The task is part of a deployment that is blocked' });
    expect(task.protectedUntil).toBeUndefined();
    expect(await task.setActiveJobs(1)).toEqual({ ok: true, protectionEnabled: true, expiresAt: START + 130 * MINUTE });
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([false, true]);
    expect(agent.requests).toHaveLength(2);
  });

  it('names a task role without the grant', async () => {
    agent.denyNext();
    expect(await protection().setActiveJobs(1)).toEqual({
      ok: false,
      status: 400,
      reason: 'AccessDeniedException',
      message: 'User is not authorized to perform: ecs:UpdateTaskProtection',
    });
  });

  it('keeps a protection it could not remove, and removes it at the next update', async () => {
    const task = protection();
    await task.setActiveJobs(1);
    agent.failNext('TASK_STOPPING_OR_STOPPED');
    expect(await task.setActiveJobs(0)).toEqual({ ok: false, status: 409, reason: 'TASK_STOPPING_OR_STOPPED', message: 'ECS refused: TASK_STOPPING_OR_STOPPED' });
    expect(task.protectedUntil).toBe(START + 130 * MINUTE);
    expect(await task.setActiveJobs(0)).toEqual({ ok: true, protectionEnabled: false, expiresAt: null });
  });

  it('says what an answer it cannot read was', async () => {
    agent.answerNext(502, '<html>Bad Gateway</html>');
    expect(await protection().setActiveJobs(1)).toEqual({ ok: false, status: 502, reason: 'unexpected_response', message: 'The ECS agent answered HTTP 502: <html>Bad Gateway</html>' });
  });

  it('reports an agent that does not answer, within its timeout', async () => {
    const closed = await startFakeEcsAgent(now);
    await closed.close();
    const outcome = await new TaskProtection({ agentUri: closed.agentUri, now, timeoutMs: 1000 }).setActiveJobs(1);
    expect(outcome).toMatchObject({ ok: false, status: null, reason: 'unreachable' });
    expect((outcome as { message: string }).message).toMatch(/^The ECS agent did not answer: /);
  });

  it('does nothing outside ECS (no ECS_AGENT_URI)', async () => {
    const saved = process.env.ECS_AGENT_URI;
    delete process.env.ECS_AGENT_URI;
    try {
      const task = new TaskProtection();
      expect(task.available).toBe(false);
      expect(await task.setActiveJobs(4)).toBeUndefined();
      expect(await task.setActiveJobs(0)).toBeUndefined();
    } finally {
      if (saved !== undefined) process.env.ECS_AGENT_URI = saved;
    }
    expect(agent.requests).toEqual([]);
  });

  it('reads ECS_AGENT_URI by default', async () => {
    process.env.ECS_AGENT_URI = `${agent.agentUri}/`;
    try {
      expect(new TaskProtection({ now }).available).toBe(true);
      await new TaskProtection({ now }).setActiveJobs(1);
    } finally {
      delete process.env.ECS_AGENT_URI;
    }
    expect(agent.requests).toEqual([{ ProtectionEnabled: true, ExpiresInMinutes: 130 }]);
  });

  it('refuses a count that is not a whole number, and windows ECS would refuse', async () => {
    await expect(protection().setActiveJobs(-1)).rejects.toThrow('The number of running calls must be a whole number, not -1');
    await expect(protection().setActiveJobs(1.5)).rejects.toThrow('not 1.5');
    expect(() => new TaskProtection({ agentUri: agent.agentUri, longestCallMinutes: 2880 })).toThrow("at most 2880 (ECS's limit)");
    expect(() => new TaskProtection({ agentUri: agent.agentUri, renewMinutes: 0 })).toThrow('whole minutes');
    // A refused update does not block the ones after it.
    const task = protection();
    await expect(task.setActiveJobs(-2)).rejects.toThrow();
    expect(await task.setActiveJobs(1)).toMatchObject({ ok: true, protectionEnabled: true });
  });
});
