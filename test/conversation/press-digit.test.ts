import { beforeEach, describe, expect, it } from 'vitest';
import { startTestApp } from '../support/app.ts';
import { newAgent } from '../support/factories.ts';

/*
 * The press_digit tool (retell-sdk PressDigitTool) on a Retell LLM, through the offline
 * model's deterministic tool rule: its string argument is the user's line, so "press 2"
 * in the line presses 2.
 */
const app = await startTestApp();
const { agentTurn, openConversation } = await import('../../shared/conversation/index.ts');
const { OfflineModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');

async function open() {
  const { agent } = await newAgent(app.api, {
    llm: { general_prompt: 'Reach the billing desk.', begin_message: '', general_tools: [{ type: 'press_digit', name: 'press_keys' }] },
  });
  return openConversation({
    workspaceId: app.workspace.workspace_id,
    agentId: agent.agent_id,
    agentVersion: agent.version,
    callId: 'call_0123456789abcdef01234567',
    channel: 'voice',
    dynamicVariables: {},
  });
}

beforeEach(() => useLanguageModel(new OfflineModel()));

describe('the press_digit tool', () => {
  it('presses the keys the model gives, keeps only keys, and ends the turn for the menu to answer', async () => {
    const state = await open();
    const reply = await agentTurn(state, { type: 'user_said', text: 'For billing, press 2, then #.' });
    expect(reply.digits).toBe('2#');
    expect(reply.end).toBeUndefined();
    expect(reply.transfer).toBeUndefined();
    expect(reply.utterances).toEqual([]);
    expect(reply.events.slice(1)).toEqual([
      { role: 'tool_call_invocation', tool_call_id: 'call_offline_2', name: 'press_keys', arguments: JSON.stringify({ digit: 'For billing, press 2, then #.' }) },
      { role: 'tool_call_result', tool_call_id: 'call_offline_2', content: 'Pressed 2#.', successful: true },
    ]);
  });

  it('tells the model when there is no key to press, and presses nothing', async () => {
    const state = await open();
    const reply = await agentTurn(state, { type: 'user_said', text: 'Please press the button.' });
    expect(reply.digits).toBeUndefined();
    expect(reply.events[2]).toMatchObject({ role: 'tool_call_result', content: 'Error: no keys to press (digits 0-9, * and #)', successful: false });
  });
});
