import { logger } from '../../platform/logger.ts';
import { closeConversation, openTransferAgent, transferAgentTurn, type TransferOptions } from '../engine/agent-runtime.ts';
import { mediatorDecision, mediatorGreeting } from '../../conversation/index.ts';
import { artifactSettings } from '../artifacts/recordings.ts';
import type { CallItem, TransferState } from '../store.ts';

/*
 * The agentic warm transfer's consultation in the sandbox (docs/calls.md, Agentic warm
 * transfer): the destination answered and the caller is on hold; a mediator speaks to the
 * destination first and decides whether the caller is bridged.
 *
 * - With `agentic_transfer_config.transfer_agent`, that agent (its Retell LLM or flow)
 *   runs as a conversation whose "user" is the destination: its opening is the private
 *   handoff (a begin message as written, or what its model says from its prompt), and it
 *   decides with its `bridge_transfer` / `cancel_transfer` tools (flow: nodes). It is told
 *   who is waiting: the caller's conversation so far is a note before its first turn
 *   (shared/conversation/transfers/transfer-agent.ts, which the voice worker's consultation runs too).
 * - Without one, Parley's built-in mediator (shared/conversation/transfers/transfer-mediator.ts,
 *   which the voice worker's consultation uses too) says a fixed summary (the caller's last
 *   line) and reads the destination's answer by its words (accept: yes, sure, accept, okay,
 *   connect; decline: decline, cannot, busy, unavailable, refuse; a decline word wins).
 *
 * The destination's lines are the call's `metadata.sandbox_transfer_says` (default: one
 * line that accepts). Lines running out without a decision is the sandbox's timeout:
 * `action_on_timeout` decides. Every line of the consultation goes to
 * `transcript_with_tool_calls` only (the mediator `agent`, the destination
 * `transfer_target`), never to the caller's transcript: the caller did not hear it.
 */

/** What a sandbox destination says when the call's metadata gives nothing. */
const DEFAULT_DESTINATION_LINES = ['Yes, I can take the call.'];


export interface Consultation {
  decision: 'bridge' | 'cancel';
  /** No decision came: `action_on_timeout` decided. */
  timedOut: boolean;
  /** The consultation's transcript_with_tool_calls entries, in order. */
  events: Record<string, unknown>[];
}

/** The consultation with the answered destination, start to decision. */
export async function consultInSandbox(call: CallItem, state: TransferState): Promise<Consultation> {
  const config = state.options?.agentic;
  const lines = call.engine.sandbox?.transfer_lines ?? DEFAULT_DESTINATION_LINES;
  const onTimeout = (events: Record<string, unknown>[]): Consultation => ({
    decision: config?.action_on_timeout === 'bridge_transfer' ? 'bridge' : 'cancel',
    timedOut: true,
    events,
  });
  if (!config?.transfer_agent) return builtInMediator(call, state, lines, onTimeout);

  const events: Record<string, unknown>[] = [];
  let conversation: unknown;
  try {
    conversation = await openTransferAgent({
      workspaceId: call.workspace_id,
      callId: call.call_id,
      transferAgent: config.transfer_agent,
      destination: state.destination,
      dynamicVariables: call.retell_llm_dynamic_variables ?? {},
      ...(call.from_number ? { fromNumber: call.from_number } : {}),
      metadata: call.metadata,
      conversation: (call.transcript_object ?? []).map((entry) => ({ role: entry.role === 'agent' ? 'agent' : 'user', content: entry.content })),
      dataStorageSetting: (await artifactSettings(call)).dataStorage,
    });
    let turn = await transferAgentTurn(conversation, { type: 'call_started' });
    for (let index = 0; ; index++) {
      conversation = turn.state;
      events.push(...turn.entries);
      if (turn.decision) return { decision: turn.decision, timedOut: false, events };
      const line = lines[index];
      if (line === undefined) return onTimeout(events);
      turn = await transferAgentTurn(conversation, { type: 'user_said', text: line });
    }
  } catch (error) {
    // The transfer agent could not run (deleted, a model or socket failure): the transfer cannot be decided.
    logger.warn('the transfer agent failed; cancelling the agentic transfer', { call_id: call.call_id, error: (error as Error).message });
    return { decision: 'cancel', timedOut: false, events };
  } finally {
    if (conversation) closeConversation(conversation);
  }
}

function builtInMediator(
  call: CallItem,
  state: TransferState,
  lines: readonly string[],
  onTimeout: (events: Record<string, unknown>[]) => Consultation,
): Consultation {
  const lastCallerLine = [...(call.transcript_object ?? [])].reverse().find((entry) => entry.role === 'user')?.content;
  const events: Record<string, unknown>[] = [
    {
      role: 'agent',
      content: mediatorGreeting(lastCallerLine),
      words: [],
    },
  ];
  for (const line of lines) {
    events.push({ role: 'transfer_target', content: line, words: [] });
    const decision = mediatorDecision(line);
    if (!decision) continue;
    const id = `transfer_${state.started_seq ?? 0}_decision`;
    const name = decision === 'bridge' ? 'bridge_transfer' : 'cancel_transfer';
    events.push(
      { role: 'tool_call_invocation', tool_call_id: id, name, arguments: '{}' },
      { role: 'tool_call_result', tool_call_id: id, content: decision === 'bridge' ? 'Bridging the caller to you.' : 'The transfer was cancelled; the caller goes back to the agent.', successful: true },
    );
    return { decision, timedOut: false, events };
  }
  return onTimeout(events);
}

/** The message said to both parties once bridged: the static one as written (placeholders were filled when the transfer was asked). */
export function staticHandoff(options: TransferOptions | undefined): string | undefined {
  return options?.public_handoff?.type === 'static_message' ? options.public_handoff.message : undefined;
}
