import { workspaceReliability } from '../../account/index.ts';
import {
  agentTurn as runtimeTurn,
  analyzeConversation,
  closeConversation as runtimeClose,
  composeMessage as runtimeCompose,
  transferOptions,
  noteToAgent as runtimeNote,
  openConversation as runtimeOpen,
  openTransferAgent as runtimeOpenTransferAgent,
  transferAgentTurn as runtimeTransferAgentTurn,
  type ConfigOverrides,
  type ConversationState,
  type DataStorageSetting,
  type OpenTransferAgentInput,
  type TransferAgentTurn,
  type TransferAsk,
  type TransferOptions,
  type TranscriptEvent,
  type TurnEvent,
  type TurnResult,
} from '../../conversation/index.ts';

/*
 * The call engine's side of the conversation runtime (shared/conversation): the agent's
 * turns come from its real response engine (a Retell LLM through the LLM adapter — the
 * offline model when LLM_BASE_URL is unset —, a conversation flow, a custom LLM over its
 * WebSocket). The state is plain JSON kept on the call item between steps.
 */

export type { TransferAsk, TransferOptions, TranscriptEvent, TurnResult };
export { transferOptions };

export async function openConversation(input: {
  workspaceId: string;
  agentId: string;
  agentVersion: number;
  callId: string;
  channel: 'voice' | 'chat';
  dynamicVariables: Record<string, string>;
  fromNumber?: string;
  toNumber?: string;
  metadata?: unknown;
  /** The call's agent_override (agent-override.ts): the versions' configuration with it laid over, for this call only. */
  overrides?: ConfigOverrides;
  /** False for web calls: there is no phone line to transfer, so transfer_call tells the agent so. */
  canTransfer?: boolean;
  /** Another call whose records (knowledge-base retrievals) the conversation's are (a transfer agent's consultation: its call). */
  recordsUnder?: string;
  /** The data storage setting the conversation's records keep to, over its agent version's. */
  dataStorageSetting?: DataStorageSetting;
}): Promise<ConversationState> {
  // The workspace LLM token limit and fallback model (reliability settings), as chats use them.
  const reliability = await workspaceReliability(input.workspaceId);
  return runtimeOpen({
    ...input,
    ...(reliability.llmTokenLimit !== undefined ? { llmTokenLimit: reliability.llmTokenLimit } : {}),
    ...(reliability.fallbackLlmModel ? { fallbackLlmModel: reliability.fallbackLlmModel } : {}),
  });
}

/** An agentic transfer's transfer agent (shared/conversation/transfers/transfer-agent.ts), under the workspace's reliability settings as the call's agent. */
export async function openTransferAgent(input: Omit<OpenTransferAgentInput, 'llmTokenLimit' | 'fallbackLlmModel'>): Promise<ConversationState> {
  const reliability = await workspaceReliability(input.workspaceId);
  return runtimeOpenTransferAgent({
    ...input,
    ...(reliability.llmTokenLimit !== undefined ? { llmTokenLimit: reliability.llmTokenLimit } : {}),
    ...(reliability.fallbackLlmModel ? { fallbackLlmModel: reliability.fallbackLlmModel } : {}),
  });
}

export async function transferAgentTurn(state: unknown, event: TurnEvent): Promise<TransferAgentTurn> {
  return runtimeTransferAgentTurn(state as ConversationState, event);
}

export async function agentTurn(state: unknown, event: TurnEvent): Promise<TurnResult> {
  return runtimeTurn(state as ConversationState, event);
}

/** The conversation state with a note the agent's next turns see (a system message); the state unchanged when there is none. */
export function noteToAgent(state: unknown, content: string): unknown {
  return state ? runtimeNote(state as ConversationState, content) : state;
}

/** A message the agent's model composes from `instruction` and the conversation so far (a prompt-type handoff). */
export async function composeMessage(state: unknown, instruction: string): Promise<string> {
  return runtimeCompose(state as ConversationState, instruction);
}

export function closeConversation(state: unknown): void {
  if (state) runtimeClose(state as ConversationState);
}

export async function analyzeCall(input: {
  workspaceId: string;
  agentId: string;
  agentVersion: number;
  transcript: { role: string; content: string }[];
  inVoicemail: boolean;
  agentOverride?: Record<string, unknown>;
}) {
  return analyzeConversation({
    workspaceId: input.workspaceId,
    agentId: input.agentId,
    agentVersion: input.agentVersion,
    transcript: input.transcript as never,
    channel: 'voice',
    inVoicemail: input.inVoicemail,
    ...(input.agentOverride ? { agentOverride: input.agentOverride } : {}),
  });
}
