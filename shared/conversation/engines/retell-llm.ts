import { DEFAULT_LLM_MODEL, getLlm, type Llm } from '../../agents/index.ts';
import { modelTurn, runtimeTools, type RetellTool, type RuntimeTool, type TurnOutput } from './model-turn.ts';
import { fillTemplate, variablesOf } from '../variables.ts';
import { knowledgeFor, withKnowledge } from './knowledge.ts';
import type { ConversationState, TurnEvent } from '../types.ts';

/*
 * A Retell LLM engine (single or multi-state prompt). The system prompt is the general
 * prompt, plus the current state's prompt; the tools are the general tools, plus the
 * state's tools and one transition tool per state edge (`transition_to_<state>`, described
 * by the edge), as the compatible API offers them.
 */

type State = { name: string; state_prompt?: string; edges?: { destination_state_name: string; description?: string }[]; tools?: RetellTool[] };

async function loadLlm(state: ConversationState): Promise<Llm> {
  const engine = state.engine;
  if (engine.type !== 'retell-llm') throw new Error('not a Retell LLM conversation');
  const llm = await getLlm(state.workspace_id, engine.llm_id, engine.version);
  // A call's agent_override.retell_llm lies over the version for this conversation only.
  return state.overrides?.llm ? ({ ...llm, ...state.overrides.llm } as Llm) : llm;
}

export async function retellLlmTurn(out: TurnOutput, event: TurnEvent): Promise<void> {
  const state = out.state;
  const llm = await loadLlm(state);
  if (event.type === 'call_started') {
    if (llm.start_speaker === 'user') return;
    // A begin message is spoken as written; an empty one means the agent waits; none at all
    // means the model opens the conversation.
    if (typeof llm.begin_message === 'string') {
      out.say(fillTemplate(llm.begin_message, variablesOf(state)));
      return;
    }
  }
  let knowledge = '';
  if (event.type === 'user_said') {
    out.user(event.text);
    knowledge = await knowledgeFor(state, llm, event.text, out.io.retrieve);
    out.signal?.throwIfAborted();
  }
  // A state transition hands the turn to the new state, which answers (bounded, in case of a loop).
  for (let hop = 0; hop < 5 && !out.done; hop++) {
    const current = currentState(llm, state);
    const { transitionTo } = await modelTurn(out, {
      model: llm.model ?? DEFAULT_LLM_MODEL,
      temperature: llm.model_temperature,
      system: withKnowledge(systemPrompt(llm, current, state), knowledge),
      tools: toolsFor(llm, current),
    });
    if (!transitionTo) return;
    state.llm_state = transitionTo;
  }
}

function currentState(llm: Llm, state: ConversationState): State | undefined {
  const states = (llm.states ?? []) as State[];
  if (states.length === 0) return undefined;
  const name = state.llm_state ?? llm.starting_state ?? states[0]!.name;
  return states.find((candidate) => candidate.name === name) ?? states[0];
}

function systemPrompt(llm: Llm, current: State | undefined, state: ConversationState): string {
  const parts = [llm.general_prompt ?? '', current?.state_prompt ?? ''].filter((part) => part.trim() !== '');
  return fillTemplate(parts.join('\n\n'), variablesOf(state));
}

function toolsFor(llm: Llm, current: State | undefined): RuntimeTool[] {
  const tools = runtimeTools([...((llm.general_tools ?? []) as RetellTool[]), ...(current?.tools ?? [])]);
  for (const edge of current?.edges ?? []) {
    tools.push({
      kind: 'transition',
      target: edge.destination_state_name,
      definition: {
        name: `transition_to_${edge.destination_state_name}`.slice(0, 64),
        description: edge.description || `Move the conversation to the ${edge.destination_state_name} state.`,
        parameters: { type: 'object', properties: {} },
      },
    });
  }
  return tools;
}
