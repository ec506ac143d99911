import type { ConversationState, TranscriptObject } from './types.ts';

/*
 * What a caller of the runtime reads or changes on a conversation's state without running a
 * turn: plain functions of the JSON, apart from conversation.ts so that they do not load the
 * runtime (index.ts).
 */

/**
 * Tells the agent something between turns (the call engine: a transfer that did not go
 * through): the next state, whose model turns see `content` as a system message after
 * what has been said so far. Not part of the transcript. A custom LLM gets it as a
 * `{role: 'system'}` turn in the next `response_required` transcript (the compatible
 * WebSocket protocol has no event for it).
 */
export function noteToAgent(state: ConversationState, content: string): ConversationState {
  return { ...state, agent_notes: [...(state.agent_notes ?? []), { after: state.history.length, content }] };
}

/** The conversation's `transcript_object`: its utterances, in order. */
export function transcriptObject(state: ConversationState): TranscriptObject[] {
  return state.history.flatMap((entry) => (entry.role === 'agent' || entry.role === 'user' ? [{ role: entry.role, content: entry.content, words: [] }] : []));
}
