import {
  branchDraft,
  orderedHeads,
  prepareDraftEdit,
  publishDraft,
  SHARED_AGENT_DEFAULTS,
  storedMetadata,
  versionView,
  type ListOptions,
} from '../versions/agent-versions.ts';
import { badRequest, conflict, invalidPaginationKey, notFound, VersionNotFound } from '../../platform/errors.ts';
import { findAgentTag, readReferenced, toTag, type VersionReference } from '../versions/version-references.ts';
import { newId } from '../../platform/ids.ts';
import { assertAgentUnreferenced } from '../bindings/references.ts';
import { toChatAgent } from '../chat-agents/chat-agents.ts';
import { pinnedEngine } from '../versions/response-engines.ts';
import { kindOfAgentId } from '../versions/runnable.ts';
import { definedFields } from '../../platform/objects.ts';
import { DEFAULT_AGENT_WEBHOOK_EVENTS, type Agent, type AgentTag, type AgentVersionSummary, type CreateAgentInput, type UpdateAgentInput } from './agent-schemas.ts';
import { queryAll } from '../../platform/store/query.ts';
import { ConditionFailed, table } from '../../platform/store/table.ts';
import {
  commit,
  createItems,
  deleteResource,
  deleteVersionItems,
  describeItems,
  getHead,
  getVersion,
  listHeads,
  listVersions,
  type VersionRecord,
} from '../../platform/store/versions.ts';
import { assertVoiceUsable, DEFAULT_VOICE_ID } from '../../voices/index.ts';
import { agentTags, agentTagsOf, type AgentKind, type TagItem } from '../store.ts';

const KIND = 'agent' as const;

/** The spec's Agent defaults, applied when a create leaves the field out. */
const AGENT_DEFAULTS = {
  ...SHARED_AGENT_DEFAULTS,
  responsiveness: 1,
  interruption_sensitivity: 0.9,
  stt_mode: 'fast',
  denoising_mode: 'noise-cancellation',
  end_call_after_silence_ms: 600_000,
  max_call_duration_ms: 3_600_000,
  webhook_events: [...DEFAULT_AGENT_WEBHOOK_EVENTS],
} satisfies Partial<CreateAgentInput>;

/** Fields of a version record that describe the version rather than configure the agent. */
const VERSION_METADATA = ['version_title', 'version_description'] as const;

function toAgent(agentId: string, record: VersionRecord): Agent {
  return { agent_id: agentId, ...versionView<CreateAgentInput>(record) };
}

/** Engine deletes check this; it covers chat agents too, so it lives with the shared version code. */
export { agentsUsingEngine } from '../versions/agent-versions.ts';

// ---------------------------------------------------------------------------------------
// Agents

export async function createAgent(workspaceId: string, input: CreateAgentInput, nowMs = Date.now()): Promise<Agent> {
  const fields = definedFields(input);
  const { version_title, version_description, ...config } = fields;
  const data: Record<string, unknown> = { ...AGENT_DEFAULTS, voice_id: DEFAULT_VOICE_ID, ...config };
  data.response_engine = await pinnedEngine(workspaceId, input.response_engine);
  await assertVoiceUsable(workspaceId, data.voice_id as string);
  const agentId = newId('agent');
  const { items, record } = createItems(workspaceId, KIND, agentId, data, nowMs, storedMetadata({ version_title, version_description }));
  await commit(items);
  return toAgent(agentId, record);
}

/** The version a reference names (a number, `latest`, `latest_published` or a tag), or the latest. */
export async function getAgent(workspaceId: string, agentId: string, version?: VersionReference): Promise<Agent> {
  return toAgent(agentId, await readReferenced(workspaceId, KIND, agentId, version));
}

/** `GET /v2/list-agents`: the latest version of each agent. */
export async function listAgents(workspaceId: string, options: ListOptions): Promise<Agent[]> {
  return (await orderedHeads(workspaceId, KIND, options)).page.map((head) => toAgent(head.id, head.latest));
}

;
const CHANNEL: Record<AgentKind, 'voice' | 'chat'> = { agent: 'voice', chat_agent: 'chat' };

/**
 * `POST /v2/list-agents` (the compatible client): voice and chat agents together, a page
 * of summaries with a continuation key, filterable by channel and by a name/ID query.
 */
export async function listAgentsPage(
  workspaceId: string,
  options: ListOptions,
  filter: { query?: string; channel?: { op: string; value: 'voice' | 'chat' } } = {},
) {
  const kinds = (['agent', 'chat_agent'] as const).filter(
    (kind) => !filter.channel || matchesString(CHANNEL[kind], filter.channel.op, filter.channel.value),
  );
  const { page, hasMore } = kinds.length
    ? await orderedHeads(workspaceId, kinds, options, filter.query)
    : { page: [], hasMore: false };
  const items = await Promise.all(
    page.map(async (head) => ({
      agent_id: head.id,
      agent_name: (head.latest.data.agent_name as string | null | undefined) ?? '',
      channel: CHANNEL[head.kind as AgentKind],
      version: head.latest.version,
      is_published: head.latest.is_published,
      last_modification_timestamp: head.last_modification_timestamp,
      user_modified_timestamp: head.last_modification_timestamp,
      // The client's type: a map by tag name. Environment tags exist on voice agents only.
      tags: Object.fromEntries(
        (head.kind === 'agent' ? await tagsOf(workspaceId, head.id) : []).map((tag) => [
          tag.name,
          { version: tag.version, dynamic_variables: tag.variables },
        ]),
      ),
    })),
  );
  const last = page.at(-1);
  return { has_more: hasMore, items, ...(hasMore && last ? { pagination_key: last.id } : {}) };
}

function matchesString(actual: string, op: string, value: string): boolean {
  switch (op) {
    case 'eq':
      return actual === value;
    case 'ne':
      return actual !== value;
    case 'sw':
      return actual.startsWith(value);
    case 'ew':
      return actual.endsWith(value);
    default:
      return actual.includes(value);
  }
}

/**
 * Edits the draft: the version a reference names, the latest draft, or a new draft
 * branched from a published latest version (with a new draft of its engine).
 */
export async function updateAgent(
  workspaceId: string,
  agentId: string,
  version: VersionReference | undefined,
  input: UpdateAgentInput,
  nowMs = Date.now(),
): Promise<Agent> {
  const { version_title, version_description, ...config } = definedFields(input);
  const { record, items } = await prepareDraftEdit(workspaceId, KIND, agentId, version, config, { version_title, version_description }, nowMs);
  if (config.voice_id) await assertVoiceUsable(workspaceId, config.voice_id);
  await commit(items);
  return toAgent(agentId, record);
}

/** Removes the agent, its versions and its tags, unless a phone number or batch call still uses it (409). */
export async function deleteAgent(workspaceId: string, agentId: string): Promise<void> {
  await assertAgentUnreferenced(workspaceId, KIND, agentId);
  await deleteResource(workspaceId, KIND, agentId);
}

// ---------------------------------------------------------------------------------------
// Versions

/** The view of a version of either kind of agent, as its own endpoints answer it. */
function agentView(agentId: string, record: VersionRecord) {
  return kindOfAgentId(agentId) === 'chat_agent' ? toChatAgent(agentId, record) : toAgent(agentId, record);
}

/** Voice or chat agent (the compatible client publishes both through this path). */
export async function publishAgentVersion(
  workspaceId: string,
  agentId: string,
  input: { version?: number; version_title?: string; version_description?: string },
  nowMs = Date.now(),
) {
  return agentView(agentId, await publishDraft(workspaceId, kindOfAgentId(agentId), agentId, input, nowMs));
}

/** Voice or chat agent (the compatible client branches both through this path). */
export async function createAgentVersion(
  workspaceId: string,
  agentId: string,
  baseVersion: number | undefined,
  nowMs = Date.now(),
) {
  return agentView(agentId, await branchDraft(workspaceId, kindOfAgentId(agentId), agentId, baseVersion, nowMs));
}

export async function agentVersionsPage(
  workspaceId: string,
  agentId: string,
  options: { limit: number; pagination_key?: number; sort_order: 'ascending' | 'descending' },
) {
  const versions = await listVersions(workspaceId, KIND, agentId);
  if (options.sort_order === 'descending') versions.reverse();
  let start = 0;
  if (options.pagination_key !== undefined) {
    const index = versions.findIndex((record) => record.version === options.pagination_key);
    if (index === -1) throw invalidPaginationKey();
    start = index + 1;
  }
  const page = versions.slice(start, start + options.limit);
  const hasMore = start + options.limit < versions.length;
  const items: AgentVersionSummary[] = page.map((record) => ({
    version: record.version,
    is_published: record.is_published,
    last_modification_timestamp: record.last_modification_timestamp,
    ...definedFields({
      base_version: record.base_version,
      version_title: record.version_title,
      version_description: record.version_description,
    }),
  }));
  return { has_more: hasMore, items, ...(hasMore ? { pagination_key: String(page.at(-1)!.version) } : {}) };
}

export async function allAgentVersions(workspaceId: string, agentId: string): Promise<Agent[]> {
  return (await listVersions(workspaceId, KIND, agentId)).map((record) => toAgent(agentId, record));
}

export async function describeAgentVersion(
  workspaceId: string,
  agentId: string,
  version: number,
  input: { version_title?: string | null; version_description?: string | null },
  nowMs = Date.now(),
): Promise<Agent> {
  const head = await getHead(workspaceId, KIND, agentId);
  const record = await getVersion(workspaceId, KIND, agentId, version);
  const described: VersionRecord = { ...record };
  for (const field of VERSION_METADATA) {
    if (input[field] === null) delete described[field];
    else if (input[field] !== undefined) described[field] = input[field];
  }
  await commit(describeItems(workspaceId, KIND, agentId, head, described, nowMs));
  return toAgent(agentId, { ...described, last_modification_timestamp: nowMs });
}

/**
 * Only drafts that are not the latest version and that no tag names may be deleted. Voice
 * or chat agent (the compatible client deletes both through the same path).
 */
export async function deleteAgentVersion(workspaceId: string, agentId: string, version: number): Promise<void> {
  const kind = kindOfAgentId(agentId);
  const label = kind === 'chat_agent' ? 'chat agent' : 'agent';
  const head = await getHead(workspaceId, kind, agentId);
  const record = await getVersion(workspaceId, kind, agentId, version);
  if (record.is_published) throw badRequest(`Version ${version} of ${label} ${agentId} is published and cannot be deleted`);
  if (version === head.latest_version) {
    throw badRequest(`Version ${version} is the latest version of ${label} ${agentId} and cannot be deleted`);
  }
  const tag = kind === 'agent' ? (await tagsOf(workspaceId, agentId)).find((t) => t.version === version) : undefined;
  if (tag) throw conflict(`Version ${version} of agent ${agentId} is named by tag "${tag.name}"; move or delete the tag first`);
  await commit(deleteVersionItems(workspaceId, kind, agentId, head, version));
}

/** Field-level differences between two versions, nested fields with dots and array indexes. */
export async function compareAgentVersions(workspaceId: string, agentId: string, versionA: number, versionB: number) {
  const [a, b] = await Promise.all([
    getVersion(workspaceId, KIND, agentId, versionA),
    getVersion(workspaceId, KIND, agentId, versionB),
  ]);
  const flatA = flatten(comparable(a));
  const flatB = flatten(comparable(b));
  const fields = [...new Set([...flatA.keys(), ...flatB.keys()])].sort();
  const differences = fields
    .filter((field) => JSON.stringify(flatA.get(field)) !== JSON.stringify(flatB.get(field)))
    .map((field) => ({ field, version_a: flatA.get(field) ?? null, version_b: flatB.get(field) ?? null }));
  return { agent_id: agentId, version_a: versionA, version_b: versionB, differences };
}

function comparable(record: VersionRecord): Record<string, unknown> {
  return { ...record.data, is_published: record.is_published, ...definedFields({ version_title: record.version_title, version_description: record.version_description }) };
}

function flatten(value: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (value !== null && typeof value === 'object' && (Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0)) {
    for (const [key, child] of Object.entries(value)) flatten(child, prefix ? `${prefix}.${key}` : key, out);
  } else if (prefix) {
    out.set(prefix, value);
  }
  return out;
}

export { resolveAgentVersion } from '../versions/version-references.ts';

// ---------------------------------------------------------------------------------------
// Environment tags: a name for a version, with variables for calls that choose it.

export async function listAgentTags(workspaceId: string, agentId: string): Promise<AgentTag[]> {
  await getHead(workspaceId, KIND, agentId);
  return tagsOf(workspaceId, agentId);
}

/**
 * The (agent, version) pairs the workspace's voice agents' tags of these names point to
 * now: what list-calls' `agent_tag` filter matches. One query of the heads, then one of
 * each agent's tags (configuration-sized).
 */
export async function taggedAgentVersions(workspaceId: string, names: readonly string[]): Promise<{ agent_id: string; version: number }[]> {
  const wanted = new Set(names);
  const heads = await listHeads(workspaceId, KIND);
  const tags = await Promise.all(heads.map(async (head) => ({ agentId: head.id, tags: await tagsOf(workspaceId, head.id) })));
  return tags.flatMap(({ agentId, tags: list }) => list.filter((tag) => wanted.has(tag.name)).map((tag) => ({ agent_id: agentId, version: tag.version })));
}

/** Tags of an agent the caller already knows exists. */
async function tagsOf(workspaceId: string, agentId: string): Promise<AgentTag[]> {
  return (await queryAll<TagItem>(agentTagsOf(workspaceId, agentId))).map(toTag);
}

async function assertVersionExists(workspaceId: string, agentId: string, version: number): Promise<void> {
  await getVersion(workspaceId, KIND, agentId, version).catch((error: unknown) => {
    throw error instanceof VersionNotFound
      ? badRequest(`version: Agent ${agentId} has no version ${version}`)
      : error;
  });
}

export async function createAgentTag(
  workspaceId: string,
  agentId: string,
  input: { name: string; version: number; variables: Record<string, string> },
  nowMs = Date.now(),
): Promise<AgentTag> {
  await assertVersionExists(workspaceId, agentId, input.version);
  const tag: AgentTag = { ...input, created_timestamp: nowMs, last_modification_timestamp: nowMs };
  await agentTags.create(tag, workspaceId, agentId, input.name);
  return tag;
}

export async function updateAgentTag(
  workspaceId: string,
  agentId: string,
  name: string,
  input: { version?: number; variables?: Record<string, string> },
  nowMs = Date.now(),
): Promise<AgentTag> {
  await getHead(workspaceId, KIND, agentId);
  const current = await findAgentTag(workspaceId, agentId, name);
  if (!current) throw notFound(`Agent ${agentId} has no tag "${name}"`);
  if (input.version !== undefined) await assertVersionExists(workspaceId, agentId, input.version);
  const tag: AgentTag = { ...current, ...definedFields(input), last_modification_timestamp: nowMs };
  try {
    await table.put({ Item: { ...agentTags.key(workspaceId, agentId, name), ...tag }, ConditionExpression: 'attribute_exists(pk)' });
  } catch (error) {
    if (error instanceof ConditionFailed) throw notFound(`Agent ${agentId} has no tag "${name}"`);
    throw error;
  }
  return tag;
}

export async function deleteAgentTag(workspaceId: string, agentId: string, name: string): Promise<void> {
  await getHead(workspaceId, KIND, agentId);
  await agentTags.remove(workspaceId, agentId, name);
}

