import { describe, expect, it } from 'vitest';
import type { ConversationState } from '../../shared/conversation/types.ts';
import { fillTemplate, variablesOf } from '../../shared/conversation/variables.ts';

const state = (overrides: Partial<ConversationState>): ConversationState =>
  ({ call_id: 'call_real', channel: 'voice', dynamic_variables: {}, collected_dynamic_variables: {}, ...overrides }) as ConversationState;

describe('dynamic variables', () => {
  it("keeps the platform's identity values over what a request passed or the conversation collected", () => {
    const values = variablesOf(
      state({
        from_number: '+14155550100',
        to_number: '+14155550199',
        dynamic_variables: { call_id: 'call_forged', from_number: '+19999999999', session_type: 'chat', name: 'Ada' },
        collected_dynamic_variables: { to_number: '+18888888888' },
      }),
      Date.UTC(2026, 0, 2, 3, 4, 5),
    );
    expect(values).toEqual({
      current_time: '2026-01-02T03:04:05.000Z',
      call_id: 'call_real',
      session_type: 'voice',
      from_number: '+14155550100',
      to_number: '+14155550199',
      name: 'Ada',
    });
    expect(fillTemplate('Caller {{from_number}} on {{call_id}}', values)).toBe('Caller +14155550100 on call_real');
  });

  it('lets a request fill a number the call has none of, and pass the time as it wants it written', () => {
    const values = variablesOf(state({ dynamic_variables: { from_number: '+14155550100', current_time: 'Friday noon' } }));
    expect(values.from_number).toBe('+14155550100');
    expect(values.current_time).toBe('Friday noon');
  });
});
