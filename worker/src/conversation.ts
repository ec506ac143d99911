import type { ConversationState, TranscriptEvent, TurnEvent, TurnResult } from '../../shared/conversation/index.ts';

/*
 * The worker's one link to Parley's response engine (shared/conversation): the streaming
 * turn. The session takes a `StreamTurn` (tests pass scripted ones); the default is the
 * runtime's `streamAgentTurn`, looked up when the first call needs it.
 *
 * The shapes below are the streaming turn API of shared/conversation as the worker uses
 * it (docs/conversation.md).
 */

export interface StreamTurnOptions {
  /** Abort: stop the model, run no further tool. */
  signal?: AbortSignal;
  /** Awaited before the turn runs its first tool: false discards the turn (preemptive generation). */
  toolGate?: () => Promise<boolean>;
  /** Knowledge for the turn (`POST /internal/calls/{id}/kb-retrieve`); absent: the runtime's own retrieval. */
  retrieve?: (query: string) => Promise<{ prompt: string }>;
}

export type TurnStreamEvent =
  /** Words to speak, in order, as the model writes them. */
  | { type: 'text'; text: string }
  /** tool_call_invocation / tool_call_result / node_transition, as they happen. */
  | { type: 'event'; event: TranscriptEvent };

export interface StreamingTurn {
  events: AsyncIterable<TurnStreamEvent>;
  /** After playout, with what the caller actually heard: the TurnResult whose state records only that. */
  commit(spoken: { text: string; interrupted: boolean }): TurnResult;
}

export type StreamTurn = (state: ConversationState, event: TurnEvent, options?: StreamTurnOptions) => StreamingTurn;

/** What the conversation runtime's public entry offers the worker. */
interface ConversationEntry {
  streamAgentTurn?: StreamTurn;
}

/**
 * shared/conversation's `streamAgentTurn`, loaded once (the runtime loads its own modules
 * on first use). Throws when the runtime offers no streaming turn.
 */
export async function loadStreamTurn(): Promise<StreamTurn> {
  const entry = (await import('../../shared/conversation/index.ts')) as ConversationEntry;
  if (typeof entry.streamAgentTurn !== 'function') {
    throw new Error('shared/conversation has no streamAgentTurn: the worker cannot answer calls with this version of Parley');
  }
  return entry.streamAgentTurn;
}
