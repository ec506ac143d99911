import { streamAgentTurn, type ConversationState, type StreamingTurn, type StreamTurnOptions, type TurnEvent } from '../../shared/conversation/index.ts';

/*
 * The worker's one link to Parley's response engine (shared/conversation): the streaming
 * turn (docs/conversation.md, Streaming turns). The session takes a `StreamTurn`, so tests
 * pass scripted ones; calls use the runtime's `streamAgentTurn`, whose runtime loads on the
 * first turn.
 */

export type { StreamingTurn, StreamTurnOptions, TurnStreamEvent } from '../../shared/conversation/index.ts';

export type StreamTurn = (state: ConversationState, event: TurnEvent, options?: StreamTurnOptions) => StreamingTurn;

/** The runtime's streaming turn. */
export const parleyStreamTurn: StreamTurn = streamAgentTurn;
