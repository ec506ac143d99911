// PLACEHOLDER until the conversation runtime lands (branch convo): a scripted agent.
export interface TranscriptEvent {
  role: string;
  content?: string;
  [field: string]: unknown;
}

export interface TurnResult {
  state: unknown;
  utterances: string[];
  events: TranscriptEvent[];
  end?: { reason: 'agent_hangup' };
  transfer?: { number: string; kind: 'cold' | 'warm' };
}

export async function openConversation(_input: {
  workspaceId: string;
  agentId: string;
  agentVersion: number;
  callId: string;
  channel: 'voice' | 'chat';
  dynamicVariables: Record<string, string>;
}): Promise<unknown> {
  return { turns: 0 };
}

export async function agentTurn(state: unknown, event: { type: 'call_started' } | { type: 'user_said'; text: string }): Promise<TurnResult> {
  if (event.type === 'call_started') {
    return { state, utterances: ['Hello, how can I help you today?'], events: [{ role: 'agent', content: 'Hello, how can I help you today?' }] };
  }
  const reply = /\b(bye|goodbye)\b/i.test(event.text) ? 'Goodbye!' : `I heard: ${event.text}`;
  return {
    state,
    utterances: [reply],
    events: [{ role: 'agent', content: reply }],
    ...(reply === 'Goodbye!' ? { end: { reason: 'agent_hangup' as const } } : {}),
  };
}

export async function analyzeCall(_input: {
  workspaceId: string;
  agentId: string;
  agentVersion: number;
  transcript: { role: string; content: string }[];
  inVoicemail: boolean;
}): Promise<Record<string, unknown>> {
  return { call_summary: 'A sandbox call.', user_sentiment: 'Neutral', call_successful: true, in_voicemail: _input.inVoicemail, custom_analysis_data: {} };
}
