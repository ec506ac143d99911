import { badRequest, conflict } from '../../platform/errors.ts';
import { newId } from '../../platform/ids.ts';
import { definedFields } from '../../platform/objects.ts';
import { DEFAULT_LLM_MODEL } from './models.ts';
import type { Llm, LlmInput } from './llm-schemas.ts';
import {
  commit,
  createItems,
  deleteResource,
  draftFor,
  pageBody,
  pageOfHeads,
  readRecord,
  writeItems,
  type VersionRecord,
} from '../../platform/store/versions.ts';
import { readReferenced, type VersionReference } from '../versions/version-references.ts';
import { llmAppToolRefs } from '../tools/app-tools.ts';
import { assertAppTools } from '../tools/app-usages.ts';
import { assertTransferRefs, llmTransferRefs } from '../tools/transfer-checks.ts';

/** Retell LLM response engines, versioned like agents (shared/platform/store/versions.ts). */
const KIND = 'llm' as const;

const LLM_DEFAULTS = {
  model: DEFAULT_LLM_MODEL,
  model_temperature: 0,
  start_speaker: 'agent',
  general_prompt: null,
  general_tools: null,
  states: null,
  starting_state: null,
  begin_message: null,
  knowledge_base_ids: null,
  default_dynamic_variables: null,
} satisfies Partial<LlmInput>;

function toLlm(llmId: string, record: VersionRecord): Llm {
  return {
    llm_id: llmId,
    version: record.version,
    is_published: record.is_published,
    last_modification_timestamp: record.last_modification_timestamp,
    ...(record.data as Partial<LlmInput>),
  };
}

export async function createLlm(workspaceId: string, input: LlmInput, nowMs = Date.now()): Promise<Llm> {
  const llmId = newId('llm');
  const data = checkedLlm({ ...LLM_DEFAULTS, ...definedFields(input) });
  await assertAppTools(workspaceId, llmAppToolRefs(data));
  await assertTransferRefs(workspaceId, llmTransferRefs(data));
  const { items, record } = createItems(workspaceId, KIND, llmId, data, nowMs);
  await commit(items);
  return toLlm(llmId, record);
}

/** The version a reference names (a number, `latest` or `latest_published`), or the latest. */
export async function getLlm(workspaceId: string, llmId: string, version?: VersionReference): Promise<Llm> {
  return toLlm(llmId, await readReferenced(workspaceId, KIND, llmId, version));
}

export async function listLlms(
  workspaceId: string,
  options: { limit: number; pagination_key?: string; sort_order: 'ascending' | 'descending' },
): Promise<{ has_more: boolean; items: Llm[]; pagination_key?: string }> {
  return pageBody(await pageOfHeads(workspaceId, KIND, options), (head) => toLlm(head.id, head.latest));
}

/** Edits the latest draft, or the draft a ?version= reference names; a published latest version gets a new draft. */
export async function updateLlm(
  workspaceId: string,
  llmId: string,
  version: VersionReference | undefined,
  input: LlmInput,
  nowMs = Date.now(),
): Promise<Llm> {
  const draft = await draftFor(workspaceId, KIND, llmId, version, nowMs);
  const record: VersionRecord = { ...draft.record, data: checkedLlm({ ...draft.record.data, ...definedFields(input) }) };
  // Only the tools sent are checked: an app deleted since (with force_delete) does not block
  // other edits; agent repair removes its tools.
  await assertAppTools(workspaceId, llmAppToolRefs(definedFields(input)));
  await assertTransferRefs(workspaceId, llmTransferRefs(definedFields(input)));
  await commit(writeItems(workspaceId, KIND, llmId, draft.head, record, { isNew: draft.isNew, nowMs }));
  return toLlm(llmId, { ...record, last_modification_timestamp: nowMs });
}

/**
 * Deleting an engine an agent still runs would break the agent's calls, so it is refused
 * (409 naming the agent) unless the caller forces it.
 */
export async function deleteLlm(
  workspaceId: string,
  llmId: string,
  options: { force: boolean; usedBy: (llmId: string) => Promise<string[]> },
): Promise<void> {
  await readRecord(workspaceId, KIND, llmId);
  if (!options.force) {
    const agents = await options.usedBy(llmId);
    if (agents.length > 0) {
      throw conflict(
        `Retell LLM ${llmId} is used by ${agents.length === 1 ? 'agent' : 'agents'} ${agents.join(', ')}; ` +
          'point them at another engine first, or delete with force_delete=true',
      );
    }
  }
  await deleteResource(workspaceId, KIND, llmId);
}

/**
 * States form a graph: the starting state and every edge must name a state of this LLM,
 * and state names are unique.
 */
function checkedLlm(data: Record<string, unknown>): Record<string, unknown> {
  const states = (data.states as { name: string; edges?: { destination_state_name: string }[] }[] | null) ?? [];
  const names = new Set<string>();
  const problems: string[] = [];
  states.forEach((state, i) => {
    if (names.has(state.name)) problems.push(`states.${i}.name: Duplicate state name "${state.name}"`);
    names.add(state.name);
  });
  states.forEach((state, i) =>
    (state.edges ?? []).forEach((edge, j) => {
      if (!names.has(edge.destination_state_name)) {
        problems.push(`states.${i}.edges.${j}.destination_state_name: No state named "${edge.destination_state_name}"`);
      }
    }),
  );
  const starting = data.starting_state as string | null | undefined;
  if (starting && !names.has(starting)) problems.push(`starting_state: No state named "${starting}"`);
  if (!starting && states.length > 0) problems.push('starting_state: Required when states are given');
  if (problems.length) throw badRequest(problems.join('; '));
  return data;
}
