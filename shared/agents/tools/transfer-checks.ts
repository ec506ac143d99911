import { audioAssetProblem } from '../../account-data/asset-refs/index.ts';
import { badRequest, NotFound } from '../../platform/errors.ts';
import { resolveAgentVersion } from '../versions/version-references.ts';

/*
 * The references a transfer_call tool or node makes, checked against the workspace when a
 * Retell LLM, a flow or a shared component is saved (docs/calls.md, Transfers): a custom
 * hold music's `custom_on_hold_music_asset_id` must be an audio asset of the workspace
 * (through account-data's narrow entry, asset-refs/), and an agentic warm transfer's
 * `transfer_agent` an agent of the workspace with that version. Another workspace's asset
 * or agent is not found, as everywhere. The shapes themselves are checked by the schemas
 * (transfer-destination.ts).
 */

export interface TransferRef {
  /** Where the tool or node is: `general_tools.0`, `states.1.tools.0`, `nodes.2`, `components.0.tools.1`. */
  path: string;
  asset_id?: string;
  transfer_agent?: { agent_id: string; agent_version: string | number };
}

type Item = { type?: unknown; transfer_option?: unknown };
const asItems = (value: unknown): Item[] => (Array.isArray(value) ? (value as Item[]) : []);

function refsIn(items: unknown, path: string): TransferRef[] {
  return asItems(items).flatMap((item, i) => {
    if (item?.type !== 'transfer_call' || !item.transfer_option || typeof item.transfer_option !== 'object') return [];
    const option = item.transfer_option as Record<string, unknown>;
    const ref: TransferRef = { path: `${path}.${i}` };
    if (option.type !== 'warm_transfer' && option.type !== 'agentic_warm_transfer') return [];
    if (option.on_hold_music === 'custom' && typeof option.custom_on_hold_music_asset_id === 'string') ref.asset_id = option.custom_on_hold_music_asset_id;
    const agent = (option.agentic_transfer_config as { transfer_agent?: { agent_id?: unknown; agent_version?: unknown } } | undefined)?.transfer_agent;
    if (option.type === 'agentic_warm_transfer' && agent && typeof agent.agent_id === 'string') {
      const version = agent.agent_version;
      ref.transfer_agent = { agent_id: agent.agent_id, agent_version: typeof version === 'number' || typeof version === 'string' ? version : 'latest' };
    }
    return ref.asset_id !== undefined || ref.transfer_agent ? [ref] : [];
  });
}

/** The transfer references of Retell LLM fields: `general_tools` and each state's `tools`. */
export function llmTransferRefs(data: Record<string, unknown>): TransferRef[] {
  const states = Array.isArray(data.states) ? (data.states as { tools?: unknown }[]) : [];
  return [...refsIn(data.general_tools, 'general_tools'), ...states.flatMap((state, i) => refsIn(state?.tools, `states.${i}.tools`))];
}

/** The transfer references of flow (or shared component) fields: `tools`, `nodes`, and each inline component's. */
export function flowTransferRefs(data: Record<string, unknown>): TransferRef[] {
  const components = Array.isArray(data.components) ? (data.components as { tools?: unknown; nodes?: unknown }[]) : [];
  return [
    ...refsIn(data.tools, 'tools'),
    ...refsIn(data.nodes, 'nodes'),
    ...components.flatMap((component, i) => [...refsIn(component?.tools, `components.${i}.tools`), ...refsIn(component?.nodes, `components.${i}.nodes`)]),
  ];
}

/**
 * 400 naming each hold-music asset or transfer agent that is not in this workspace (all
 * problems, joined by `; `). Each distinct asset and agent version is read once.
 */
export async function assertTransferRefs(workspaceId: string, refs: readonly TransferRef[]): Promise<void> {
  if (!refs.length) return;
  const checks = new Map<string, Promise<string | undefined>>();
  const once = (key: string, check: () => Promise<string | undefined>) => {
    if (!checks.has(key)) checks.set(key, check());
    return checks.get(key)!;
  };
  const problems = await Promise.all(
    refs.map(async (ref) => {
      const found: string[] = [];
      if (ref.asset_id !== undefined) {
        const assetId = ref.asset_id;
        const problem = await once(`asset ${assetId}`, () => audioAssetProblem(workspaceId, assetId));
        if (problem) found.push(`${ref.path}.transfer_option.custom_on_hold_music_asset_id: ${problem}`);
      }
      if (ref.transfer_agent) {
        const agent = ref.transfer_agent;
        const problem = await once(`agent ${agent.agent_id} ${agent.agent_version}`, () => transferAgentProblem(workspaceId, agent));
        if (problem) found.push(`${ref.path}.transfer_option.agentic_transfer_config.transfer_agent: ${problem}`);
      }
      return found;
    }),
  );
  const all = problems.flat();
  if (all.length) throw badRequest(all.join('; '));
}

async function transferAgentProblem(workspaceId: string, agent: { agent_id: string; agent_version: string | number }): Promise<string | undefined> {
  try {
    await resolveAgentVersion(workspaceId, agent.agent_id, agent.agent_version);
    return undefined;
  } catch (error) {
    if (error instanceof NotFound) return error.message;
    throw error;
  }
}
