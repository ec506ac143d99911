import { resolveAgentVersion } from '../../agents/index.ts';
import { agentTurn, openConversation, streamAgentTurn } from '../conversation.ts';
import { noteToAgent } from '../state.ts';
import type { ConversationState, DataStorageSetting, StreamTurnOptions, TranscriptEvent, TurnEvent, TurnResult } from '../types.ts';

/*
 * An agentic warm transfer's transfer agent (`agentic_transfer_config.transfer_agent`;
 * docs/calls.md, Agentic warm transfer): its own conversation whose "user" is the answered
 * destination. Its opening is the private handoff (a begin message as written, or what its
 * model says from its prompt), each of the destination's lines is answered by its engine,
 * and its `bridge_transfer` / `cancel_transfer` tools (flow: nodes) decide. It is told who is
 * waiting: the caller's conversation so far is a note before its first turn. The sandbox's
 * consultation (shared/calls/transfers/agentic.ts) and the voice worker's both run it, so a
 * destination is consulted the same way whichever media runs the call.
 */

export interface OpenTransferAgentInput {
  workspaceId: string;
  /** The call being transferred: the transfer agent's conversation is named after it and records under it. */
  callId: string;
  transferAgent: { agent_id: string; agent_version: string | number };
  destination: string;
  /** The call's dynamic variables (the destination is added as `transfer_destination`). */
  dynamicVariables: Record<string, string>;
  fromNumber?: string;
  metadata?: unknown;
  /** What the caller and the agent said so far, in order: the transfer agent is told. */
  conversation: readonly { role: 'agent' | 'user'; content: string }[];
  llmTokenLimit?: number;
  fallbackLlmModel?: string;
  /** The call's data storage setting: what the transfer agent retrieves is the call's record. */
  dataStorageSetting?: DataStorageSetting;
}

/** One turn of the transfer agent, as the call records and speaks it. */
export interface TransferAgentTurn {
  state: ConversationState;
  /** What the transfer agent says to the destination, in order. */
  utterances: string[];
  /** The turn's transcript_with_tool_calls entries: the destination's line as `transfer_target`, the agent's lines, its tool calls. */
  entries: Record<string, unknown>[];
  /** Its bridge_transfer / cancel_transfer decided. */
  decision?: 'bridge' | 'cancel';
}

/** The transfer agent's conversation, opened (its version resolved: a number, a tag or a reference) and told who is waiting. */
export async function openTransferAgent(input: OpenTransferAgentInput): Promise<ConversationState> {
  const version = await resolveAgentVersion(input.workspaceId, input.transferAgent.agent_id, input.transferAgent.agent_version);
  const state = await openConversation({
    workspaceId: input.workspaceId,
    agentId: input.transferAgent.agent_id,
    agentVersion: version.version,
    // Its own conversation (a custom LLM transfer agent gets its own socket), named after the call.
    callId: `${input.callId}_transfer`,
    channel: 'voice',
    dynamicVariables: { ...input.dynamicVariables, transfer_destination: input.destination },
    ...(input.fromNumber ? { fromNumber: input.fromNumber } : {}),
    toNumber: input.destination,
    ...(input.metadata !== undefined ? { metadata: input.metadata } : {}),
    canTransfer: false,
    // What it retrieves is the call's record: answered and deleted with the call, kept as the call keeps its data.
    recordsUnder: input.callId,
    ...(input.llmTokenLimit !== undefined ? { llmTokenLimit: input.llmTokenLimit } : {}),
    ...(input.fallbackLlmModel ? { fallbackLlmModel: input.fallbackLlmModel } : {}),
    ...(input.dataStorageSetting ? { dataStorageSetting: input.dataStorageSetting } : {}),
  });
  return noteToAgent(state, waitingCallerNote(input.destination, input.conversation));
}

/**
 * The transfer agent's turn: its opening on `call_started`, its answer to the destination's
 * line on `user_said`. With `options` (the voice worker: retrieval through Parley) the
 * streaming turn is run to its end; without, the complete turn.
 */
export async function transferAgentTurn(state: ConversationState, event: TurnEvent, options?: StreamTurnOptions): Promise<TransferAgentTurn> {
  const turn = options ? await streamedToEnd(state, event, options) : await agentTurn(state, event);
  return {
    state: turn.state,
    utterances: turn.utterances,
    entries: turn.events.map(consultEntry),
    ...(turn.transfer_decision ? { decision: turn.transfer_decision } : {}),
  };
}

async function streamedToEnd(state: ConversationState, event: TurnEvent, options: StreamTurnOptions): Promise<TurnResult> {
  const turn = streamAgentTurn(state, event, options);
  for await (const _ of turn.events) {
    // The result carries everything: the words are said once the turn has decided what it says.
  }
  return turn.commit({ text: '', interrupted: false });
}

/** The note that tells a transfer agent who is waiting. */
function waitingCallerNote(destination: string, conversation: OpenTransferAgentInput['conversation']): string {
  const said = conversation.map((entry) => `${entry.role === 'agent' ? 'Agent' : 'Caller'}: ${entry.content}`).join('\n');
  return `You are speaking with ${destination}, who is being asked to take a call that is on hold. Tell them who is waiting and why, then bridge the transfer if they accept or cancel it if they decline.${said ? `\nThe caller's conversation so far:\n${said}` : ''}`;
}

/** A transfer agent's entry as the call records it: the destination is the `transfer_target`. */
function consultEntry(event: TranscriptEvent): Record<string, unknown> {
  return event.role === 'user' ? { ...event, role: 'transfer_target' } : { ...event };
}
