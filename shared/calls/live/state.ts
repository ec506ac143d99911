import type { AgentOverride } from '../agent-override.ts';
import { readEntries } from '../line-store.ts';
import type { CallItem } from '../store.ts';

/*
 * How the sandbox agent takes in live controls (live/control.ts) at its next turn, inside
 * the engine's own guarded write, so a control never races a turn: update-live-call's
 * variables and agent_override (`live_patch`) are laid over the conversation, and
 * supervisor-say's texts (its controls' items, counted by `say_count`) are said first.
 */

/** One override over another, part by part (a later update-live-call wins field by field). */
export function mergeOverride(base: AgentOverride | undefined, over: AgentOverride | undefined): AgentOverride | undefined {
  if (!over) return base;
  const merged: AgentOverride = { ...(base ?? {}) };
  for (const part of ['agent', 'llm', 'flow'] as const) {
    if (over[part]) merged[part] = { ...(base?.[part] ?? {}), ...over[part] };
  }
  return merged;
}

/** The conversation state with the call's live patch laid over it, and what the turn's write records. */
export function liveConversation(call: CallItem): { state: unknown; engine: Partial<CallItem['engine']> } {
  const patch = call.live_patch;
  if (!patch || patch.seq <= (call.engine.live_patch_seq ?? 0)) return { state: call.engine.conversation, engine: {} };
  const state = (call.engine.conversation ?? {}) as { dynamic_variables?: Record<string, string>; overrides?: AgentOverride };
  const overrides = mergeOverride(call.engine.agent_override, patch.agent_override);
  return {
    state: {
      ...state,
      dynamic_variables: { ...(state.dynamic_variables ?? {}), ...(patch.dynamic_variables ?? {}) },
      ...(overrides ? { overrides } : {}),
    },
    engine: { live_patch_seq: patch.seq, ...(overrides ? { agent_override: overrides } : {}) },
  };
}

/**
 * supervisor-say texts the agent has not said yet, and the count to record once it has: the
 * call's controls are read only when some are pending (`say_count` past `live_said`).
 */
export async function pendingSays(call: CallItem): Promise<{ texts: string[]; said: number }> {
  const stored = call.live_say ?? [];
  const said = call.engine.live_said ?? 0;
  if (stored.length + (call.say_count ?? 0) <= said) return { texts: [], said };
  const items = call.say_count ? (await readEntries(call.call_id)).controls.map((control) => control.entry).filter((entry) => entry.type === 'supervisor_say') : [];
  const all = [...stored, ...items.map((entry) => entry.text ?? '')];
  return { texts: all.slice(said), said: all.length };
}
