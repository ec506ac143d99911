import { describe, expect, it } from 'vitest';
import { workerEventSchema } from '../../../shared/vendors/media/index.ts';

describe('the agent worker’s report events', () => {
  it('parses each event of the contract (docs/calls-media.md)', () => {
    const events = [
      {
        event: 'transcript_updated',
        sequence: 1,
        timestamp: 1_700_000_001_000,
        utterances: [
          { role: 'agent', content: 'Hello, this is the front desk.', words: [{ word: 'Hello,', start: 0.1, end: 0.4 }] },
          { role: 'user', content: 'Hi, I need to move my appointment.' },
        ],
      },
      {
        event: 'tool_call_invoked',
        sequence: 2,
        timestamp: 1_700_000_002_000,
        tool_call_id: 'tc_1',
        name: 'reschedule',
        arguments: '{"day":"friday"}',
      },
      { event: 'tool_call_result', sequence: 3, timestamp: 1_700_000_003_000, tool_call_id: 'tc_1', content: 'moved', successful: true },
      { event: 'call_ended', sequence: 4, timestamp: 1_700_000_004_000, disconnection_reason: 'user_hangup' },
    ];
    expect(events.map((event) => workerEventSchema.parse(event))).toEqual([
      {
        ...events[0],
        utterances: [
          { role: 'agent', content: 'Hello, this is the front desk.', words: [{ word: 'Hello,', start: 0.1, end: 0.4 }] },
          { role: 'user', content: 'Hi, I need to move my appointment.', words: [] },
        ],
      },
      events[1],
      events[2],
      events[3],
    ]);
  });

  it.each([
    ['an unknown event', { event: 'call_started', sequence: 1, timestamp: 1 }],
    ['a sequence of 0', { event: 'call_ended', sequence: 0, timestamp: 1, disconnection_reason: 'user_hangup' }],
    ['a reason the worker cannot know', { event: 'call_ended', sequence: 1, timestamp: 1, disconnection_reason: 'manual_stopped' }],
    ['an empty transcript update', { event: 'transcript_updated', sequence: 1, timestamp: 1, utterances: [] }],
    ['an unknown role', { event: 'transcript_updated', sequence: 1, timestamp: 1, utterances: [{ role: 'system', content: 'x' }] }],
    ['an extra field', { event: 'call_ended', sequence: 1, timestamp: 1, disconnection_reason: 'user_hangup', call_id: 'call_x' }],
  ])('refuses %s', (_what, event) => {
    expect(workerEventSchema.safeParse(event).success).toBe(false);
  });
});
