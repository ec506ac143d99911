import { DEFAULT_LLM_MODEL, getFlow, type ConversationFlow } from '../../agents/index.ts';
import { lineWords } from '../../vendors/llm/index.ts';
import { modelTurn, runtimeTools, transferOf, type RetellTool, type RuntimeTool, type TurnOutput } from './model-turn.ts';
import { knowledgeFor, withKnowledge } from './knowledge.ts';
import { fillTemplate, variablesOf } from '../variables.ts';
import type { ConversationState, TurnEvent } from '../types.ts';

/*
 * A conversation flow, walked node by node. The current node's ID is kept in the state.
 *
 * - Entering a node acts on it: a conversation node speaks its instruction (static text
 *   as written, a prompt through the model); an end node speaks its instruction, if any,
 *   and ends the call; a transfer_call node transfers; a function node runs its tool
 *   (the model writes the arguments) and follows its edges; a branch node follows the
 *   first edge whose equation holds, else its else edge.
 * - On the user's line at a conversation node, equation edges are checked first; then the
 *   model is offered one tool per prompt edge (described by its condition) beside the
 *   node's reply: calling one moves to that edge's node, answering in text stays. The
 *   offline model takes the first edge whose condition shares a word (4+ letters, not a
 *   stop word) with the user's line.
 * - Every move is a `node_transition` event.
 *
 * Not walked yet: component nodes, global nodes, and the node types that need other
 * issues (SMS, MCP, agent swap, press digit, code): they follow their always/else edge
 * when they have one, and otherwise hold the conversation where it is.
 */

type Edge = {
  id: string;
  destination_node_id?: string;
  transition_condition: { type: 'prompt' | 'equation'; prompt?: string; equations?: Equation[]; operator?: '&&' | '||' };
};
type Equation = { left?: string; operator?: string; right?: string };
type FlowNode = {
  id: string;
  type: string;
  name?: string;
  instruction?: { type: 'prompt' | 'static_text' | 'template'; text?: string };
  model_choice?: { model: string };
  edges?: Edge[];
  always_edge?: Edge;
  else_edge?: Edge;
  skip_response_edge?: Edge;
  edge?: Edge;
  tool_id?: string;
  tool_type?: string;
  transfer_destination?: unknown;
  transfer_option?: unknown;
  speak_during_execution?: boolean;
};

/** Words of a condition that do not say what the user wants. */
const CONDITION_STOP_WORDS = new Set([
  'user', 'users', 'caller', 'customer', 'wants', 'want', 'says', 'said', 'asks', 'asked', 'would', 'like', 'their',
  'they', 'them', 'that', 'this', 'with', 'from', 'about', 'have', 'has', 'when', 'what', 'which', 'there', 'into',
  'some', 'something', 'does', 'will', 'should', 'could', 'been', 'being', 'intent', 'indicates', 'mentions', 'talk',
]);
/** Most node moves in one turn: a flow whose edges loop cannot spin forever. */
const MAX_HOPS = 20;

async function loadFlow(state: ConversationState): Promise<ConversationFlow> {
  const engine = state.engine;
  if (engine.type !== 'conversation-flow') throw new Error('not a conversation flow conversation');
  const flow = await getFlow(state.workspace_id, engine.conversation_flow_id, engine.version);
  // A call's agent_override.conversation_flow lies over the version (never its graph) for this conversation only.
  return state.overrides?.flow ? ({ ...flow, ...state.overrides.flow } as ConversationFlow) : flow;
}

export async function flowTurn(out: TurnOutput, event: TurnEvent): Promise<void> {
  const flow = await loadFlow(state(out));
  const walker = new FlowWalker(out, flow);
  const start = walker.startNode();
  if (event.type === 'call_started') {
    if (!start) return;
    out.state.node_id = start.id;
    if (flow.start_speaker === 'user') return;
    await walker.enter(start);
    return;
  }
  out.user(event.text);
  const current = walker.node(out.state.node_id) ?? start;
  if (!current) return;
  out.state.node_id = current.id;
  walker.knowledge = await knowledgeFor(out.state, flow, event.text, out.io.retrieve);
  out.signal?.throwIfAborted();
  await walker.respond(current);
}

const state = (out: TurnOutput) => out.state;

class FlowWalker {
  private hops = 0;
  private readonly nodes: FlowNode[];
  /** This turn's knowledge-base section (knowledge.ts), added to every node's system prompt. */
  knowledge = '';

  constructor(
    private readonly out: TurnOutput,
    private readonly flow: ConversationFlow,
  ) {
    this.nodes = (flow.nodes ?? []) as FlowNode[];
  }

  startNode(): FlowNode | undefined {
    return this.node(this.flow.start_node_id ?? undefined) ?? this.nodes[0];
  }

  node(id: string | undefined): FlowNode | undefined {
    return id === undefined ? undefined : this.nodes.find((node) => node.id === id);
  }

  private get variables() {
    return variablesOf(this.out.state);
  }

  private modelOf(node: FlowNode): string {
    return node.model_choice?.model ?? this.flow.model_choice?.model ?? DEFAULT_LLM_MODEL;
  }

  private system(node: FlowNode): string {
    const parts = [this.flow.global_prompt ?? '', node.instruction?.text ?? ''].filter((part) => part.trim() !== '');
    return withKnowledge(fillTemplate(parts.join('\n\n'), this.variables), this.knowledge);
  }

  /** The user spoke at `node`: an equation edge, else the model (which may pick a prompt edge or answer). */
  async respond(node: FlowNode): Promise<void> {
    const byEquation = (node.edges ?? []).find((edge) => edge.transition_condition.type === 'equation' && this.holds(edge));
    if (byEquation) return this.follow(node, byEquation);
    // A node without a reply of its own that held the conversation: try its edges again.
    if (node.type !== 'conversation' && node.type !== 'subagent') return this.afterAction(node);
    const edgeTools = this.edgeTools(node);
    const { transitionTo } = await modelTurn(this.out, {
      model: this.modelOf(node),
      temperature: this.flow.model_temperature ?? undefined,
      system: this.system(node),
      tools: edgeTools,
    });
    if (transitionTo) await this.moveTo(node, transitionTo);
  }

  private edgeTools(node: FlowNode): RuntimeTool[] {
    return (node.edges ?? []).flatMap((edge, i) => {
      const target = edge.destination_node_id;
      if (edge.transition_condition.type !== 'prompt' || !target) return [];
      const condition = edge.transition_condition.prompt ?? '';
      return [
        {
          kind: 'transition' as const,
          target,
          definition: {
            name: `edge_${i}_to_${target.replace(/[^\w-]/g, '_')}`.slice(0, 64),
            description: `Move on when: ${condition}`,
            parameters: { type: 'object', properties: {} },
            offlineKeywords: lineWords(condition).filter((word) => word.length >= 4 && !CONDITION_STOP_WORDS.has(word)),
          },
        },
      ];
    });
  }

  private async follow(from: FlowNode, edge: Edge | undefined): Promise<void> {
    if (edge?.destination_node_id) await this.moveTo(from, edge.destination_node_id);
  }

  private async moveTo(from: FlowNode, targetId: string): Promise<void> {
    const target = this.node(targetId);
    if (!target || ++this.hops > MAX_HOPS) return;
    this.out.record({
      role: 'node_transition',
      former_node_id: from.id,
      former_node_name: from.name ?? from.id,
      new_node_id: target.id,
      new_node_name: target.name ?? target.id,
      transition_type: 'normal',
    });
    this.out.state.node_id = target.id;
    await this.enter(target);
  }

  /** Acts on arriving at a node (see the module comment). */
  async enter(node: FlowNode): Promise<void> {
    switch (node.type) {
      case 'conversation':
      case 'subagent':
        await this.speak(node);
        if (node.skip_response_edge) await this.follow(node, node.skip_response_edge);
        else if (node.always_edge) await this.follow(node, node.always_edge);
        return;
      case 'end':
        if (node.instruction?.text) await this.speak(node);
        this.out.end = { reason: 'agent_hangup' };
        this.out.state.ended = true;
        return;
      case 'transfer_call': {
        if (this.out.state.can_transfer === false) {
          // A web call (or a chat) has no phone line to hand over: the node's transfer-failed
          // edge is taken as if the transfer had failed, and the node does not announce it.
          await this.follow(node, node.edge);
          return;
        }
        if (node.instruction?.text) await this.speak(node);
        const transfer = transferOf(node as unknown as RetellTool, {}, this.variables);
        if (transfer) this.out.transfer = transfer;
        return;
      }
      case 'bridge_transfer':
      case 'cancel_transfer':
        // A transfer agent's decision (agentic warm transfer): said, then the turn ends on it.
        if (node.instruction?.text && node.speak_during_execution !== false) await this.speak(node);
        this.out.decision = node.type === 'bridge_transfer' ? 'bridge' : 'cancel';
        return;
      case 'function':
        await this.runFunction(node);
        return this.afterAction(node);
      case 'branch':
      default:
        return this.afterAction(node);
    }
  }

  /** A node without a reply of its own: the first edge whose equation holds, else its else/always edge. */
  private async afterAction(node: FlowNode): Promise<void> {
    const byEquation = (node.edges ?? []).find((edge) => edge.transition_condition.type === 'equation' && this.holds(edge));
    const next = byEquation ?? node.else_edge ?? node.always_edge ?? node.edge ?? (node.edges?.length === 1 ? node.edges[0] : undefined);
    await this.follow(node, next);
  }

  private async speak(node: FlowNode): Promise<void> {
    const instruction = node.instruction;
    if (!instruction?.text) return;
    if (instruction.type === 'static_text' || instruction.type === 'template') {
      this.out.say(fillTemplate(instruction.text, this.variables));
      return;
    }
    await modelTurn(this.out, { model: this.modelOf(node), temperature: this.flow.model_temperature ?? undefined, system: this.system(node), tools: [] });
  }

  /** The function node's tool, from the flow's tools; the model is made to call it, so it writes the arguments. */
  private async runFunction(node: FlowNode): Promise<void> {
    const tool = ((this.flow.tools ?? []) as RetellTool[]).find((candidate) => candidate.tool_id === node.tool_id);
    const runtime = runtimeTools(tool ? [tool] : []);
    if (!tool || runtime.length === 0) {
      const id = `call_node_${node.id}`.slice(0, 64);
      this.out.record({ role: 'tool_call_invocation', tool_call_id: id, name: node.tool_id ?? 'function', arguments: '{}' });
      this.out.record({ role: 'tool_call_result', tool_call_id: id, content: `Error: the flow has no runnable tool ${node.tool_id}`, successful: false });
      return;
    }
    await modelTurn(this.out, {
      model: this.modelOf(node),
      temperature: this.flow.model_temperature ?? undefined,
      system: this.system(node),
      tools: runtime,
      forceTool: runtime[0]!.definition.name,
      // The call, then (when the node waits for the result) nothing more: the edges decide what follows.
      maxRounds: 1,
    });
  }

  private holds(edge: Edge): boolean {
    const condition = edge.transition_condition;
    const results = (condition.equations ?? []).map((equation) => this.equation(equation));
    if (results.length === 0) return false;
    return condition.operator === '||' ? results.some(Boolean) : results.every(Boolean);
  }

  private equation({ left = '', operator = '==', right = '' }: Equation): boolean {
    const variables = this.variables;
    const a = fillTemplate(left, variables);
    const b = fillTemplate(right, variables);
    // A placeholder left as it is had no value.
    const known = !a.includes('{{') && a !== '';
    const na = Number(a);
    const nb = Number(b);
    const numeric = a.trim() !== '' && b.trim() !== '' && Number.isFinite(na) && Number.isFinite(nb);
    switch (operator) {
      case '==':
        return a === b;
      case '!=':
        return a !== b;
      case '>':
        return numeric && na > nb;
      case '>=':
        return numeric && na >= nb;
      case '<':
        return numeric && na < nb;
      case '<=':
        return numeric && na <= nb;
      case 'contains':
        return a.includes(b);
      case 'not_contains':
        return !a.includes(b);
      case 'exists':
        return known;
      case 'not_exist':
        return !known;
      default:
        return false;
    }
  }
}
