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
import { badRequest } from '../../platform/errors.ts';
import { formatIssues } from '../../platform/http/validation.ts';
import { newId } from '../../platform/ids.ts';
import { definedFields } from '../../platform/objects.ts';
import { branchEngine, pinnedEngine } from '../versions/response-engines.ts';
import type { ResponseEngine } from '../versions/agent-fields.ts';
import { DEFAULT_CHAT_AGENT_WEBHOOK_EVENTS, UpdateChatAgentBody, type ChatAgent, type ChatAgentListItem, type CreateChatAgentInput, type UpdateChatAgentInput } from './chat-agent-schemas.ts';
import { pageBody, commit, createItems, deleteResource, listVersions, type VersionRecord } from '../../platform/store/versions.ts';
import { readReferenced, type VersionReference } from '../versions/version-references.ts';

/*
 * Chat agents: versioned like voice agents (shared/platform/store/versions.ts, shared/agents/versions/agent-versions.ts),
 * running the same response engines (Retell LLMs, conversation flows, custom LLMs) with
 * the same engine-version coupling. Their IDs are `chat_agent_…`; the response names the
 * ID `agent_id`, as the compatible client reads it.
 */
const KIND = 'chat_agent' as const;

/** Applied when a create leaves the field out: the spec's agent language and timezone, its chat webhook defaults, and the compatible API's 1-hour silence limit. */
const CHAT_AGENT_DEFAULTS = {
  ...SHARED_AGENT_DEFAULTS,
  end_chat_after_silence_ms: 3_600_000,
  webhook_events: [...DEFAULT_CHAT_AGENT_WEBHOOK_EVENTS],
} satisfies Partial<CreateChatAgentInput>;

export function toChatAgent(chatAgentId: string, record: VersionRecord): ChatAgent {
  return { agent_id: chatAgentId, ...versionView<CreateChatAgentInput>(record) };
}

export async function createChatAgent(
  workspaceId: string,
  input: CreateChatAgentInput,
  nowMs = Date.now(),
): Promise<ChatAgent> {
  const { version_title, ...config } = definedFields(input);
  const data: Record<string, unknown> = { ...CHAT_AGENT_DEFAULTS, ...config };
  data.response_engine = await pinnedEngine(workspaceId, input.response_engine);
  const chatAgentId = newId('chatAgent');
  const { items, record } = createItems(workspaceId, KIND, chatAgentId, data, nowMs, storedMetadata({ version_title }));
  await commit(items);
  return toChatAgent(chatAgentId, record);
}

/** The version a reference names (a number, `latest` or `latest_published`; chat agents have no tags), or the latest. */
export async function getChatAgent(workspaceId: string, chatAgentId: string, version?: VersionReference): Promise<ChatAgent> {
  return toChatAgent(chatAgentId, await readReferenced(workspaceId, KIND, chatAgentId, version));
}

/** `GET /list-chat-agents`: the compatible client's page of agent summaries (channel `chat`). */
export async function listChatAgents(workspaceId: string, options: ListOptions) {
  return pageBody(await orderedHeads(workspaceId, KIND, options), (head): ChatAgentListItem => ({
    agent_id: head.id,
    agent_name: (head.latest.data.agent_name as string | null | undefined) ?? '',
    channel: 'chat',
    version: head.latest.version,
    is_published: head.latest.is_published,
    last_modification_timestamp: head.last_modification_timestamp,
    user_modified_timestamp: head.last_modification_timestamp,
    // Environment tags are a voice agent feature; the client's type is a map by tag name.
    tags: {},
  }));
}

/**
 * Edits the draft: the given version, the latest draft, or a new draft branched from a
 * published latest version (with a new draft of its engine).
 */
export async function updateChatAgent(
  workspaceId: string,
  chatAgentId: string,
  version: VersionReference | undefined,
  input: UpdateChatAgentInput,
  nowMs = Date.now(),
): Promise<ChatAgent> {
  const { version_title, ...config } = definedFields(input);
  const { record, items } = await prepareDraftEdit(workspaceId, KIND, chatAgentId, version, config, { version_title }, nowMs);
  await commit(items);
  return toChatAgent(chatAgentId, record);
}

export async function deleteChatAgent(workspaceId: string, chatAgentId: string): Promise<void> {
  await deleteResource(workspaceId, KIND, chatAgentId);
}

export async function publishChatAgent(
  workspaceId: string,
  chatAgentId: string,
  input: { version?: number; version_title?: string; version_description?: string },
  nowMs = Date.now(),
): Promise<ChatAgent> {
  return toChatAgent(chatAgentId, await publishDraft(workspaceId, KIND, chatAgentId, input, nowMs));
}

export async function allChatAgentVersions(workspaceId: string, chatAgentId: string): Promise<ChatAgent[]> {
  return (await listVersions(workspaceId, KIND, chatAgentId)).map((record) => toChatAgent(chatAgentId, record));
}

export async function getChatAgentVersion(workspaceId: string, chatAgentId: string, version: VersionReference): Promise<ChatAgent> {
  return getChatAgent(workspaceId, chatAgentId, version);
}

/** A new latest draft with an earlier version's configuration (and a new engine draft when that version's engine is published). */
export async function restoreChatAgentVersion(
  workspaceId: string,
  chatAgentId: string,
  version: number,
  nowMs = Date.now(),
): Promise<ChatAgent> {
  return toChatAgent(chatAgentId, await branchDraft(workspaceId, KIND, chatAgentId, version, nowMs));
}

// ---------------------------------------------------------------------------------------
// Converting a voice agent

/** Voice fields a chat agent carries as they are. */
const CARRIED_FIELDS = [
  'agent_name',
  'language',
  'timezone',
  'webhook_url',
  'data_storage_setting',
  'data_storage_retention_days',
  'opt_in_signed_url',
  'signed_url_expiration_ms',
  'pii_config',
  'guardrail_config',
  'handbook_config',
] as const;

/** Call lifecycle events and analysis presets have chat counterparts; the rest are voice-only. */
const CHAT_EVENT_OF: Record<string, string> = {
  call_started: 'chat_started',
  call_ended: 'chat_ended',
  call_analyzed: 'chat_analyzed',
};
const CHAT_PRESET_OF: Record<string, string> = {
  call_summary: 'chat_summary',
  call_successful: 'chat_successful',
  user_sentiment: 'user_sentiment',
};

/** A voice agent version's configuration as chat agent fields (before validation). */
function chatFieldsOf(voice: Record<string, unknown>): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const name of CARRIED_FIELDS) if (voice[name] !== undefined) fields[name] = voice[name];
  if (voice.post_call_analysis_model !== undefined) fields.post_chat_analysis_model = voice.post_call_analysis_model;
  if (Array.isArray(voice.post_call_analysis_data)) {
    fields.post_chat_analysis_data = voice.post_call_analysis_data.flatMap((item: Record<string, unknown>) => {
      if (item.type !== 'system-presets') return [item];
      const name = CHAT_PRESET_OF[String(item.name)];
      return name ? [{ ...item, name }] : [];
    });
  } else if (voice.post_call_analysis_data === null) {
    fields.post_chat_analysis_data = null;
  }
  if (Array.isArray(voice.webhook_events)) {
    fields.webhook_events = voice.webhook_events.flatMap((event: string) => CHAT_EVENT_OF[event] ?? []);
  } else if (voice.webhook_events === null) {
    fields.webhook_events = null;
  }
  return fields;
}

/**
 * A new chat agent from a voice agent's version (default: the latest): the fields chat
 * agents share are carried over (call lifecycle events and analysis presets become their
 * chat counterparts; voice-only fields, presets and events are dropped), and it runs the
 * same engine version, or a new draft of it when that version is published.
 */
export async function convertAgentToChat(
  workspaceId: string,
  agentId: string,
  version: VersionReference | undefined,
  nowMs = Date.now(),
): Promise<ChatAgent> {
  const source = await readReferenced(workspaceId, 'agent', agentId, version);
  const parsed = UpdateChatAgentBody.safeParse(chatFieldsOf(source.data));
  if (!parsed.success) {
    throw badRequest(`Agent ${agentId} version ${source.version} cannot be converted: ${formatIssues(parsed.error.issues, 'agent')}`);
  }
  const pinned = await pinnedEngine(workspaceId, source.data.response_engine as ResponseEngine);
  const branched = await branchEngine(workspaceId, pinned, nowMs);
  const data: Record<string, unknown> = { ...CHAT_AGENT_DEFAULTS, ...definedFields(parsed.data), response_engine: branched.engine };
  const chatAgentId = newId('chatAgent');
  const { items, record } = createItems(workspaceId, KIND, chatAgentId, data, nowMs);
  await commit([...items, ...branched.items]);
  return toChatAgent(chatAgentId, record);
}
