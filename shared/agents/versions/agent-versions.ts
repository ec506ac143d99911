import { badRequest } from '../../platform/errors.ts';
import { definedFields } from '../../platform/objects.ts';
import { branchEngine, engineOf, pinnedEngine, publishEngineItems } from './response-engines.ts';
import type { ResponseEngine } from './agent-fields.ts';
import type { AgentKind } from '../store.ts';
import { tagLookup, type VersionReference } from './version-references.ts';
import { whyEngineCannotRun } from './runnable.ts';
import {
  branch,
  commit,
  draftFor,
  getHead,
  getVersion,
  KIND_LABEL,
  listHeads,
  pageOfHeads,
  writeItems,
  type HeadItem,
  type ListOptions,
  type TransactItem,
  type VersionRecord,
} from '../../platform/store/versions.ts';

/*
 * What voice agents and chat agents do alike with their versions: each version runs one
 * response engine version, so publishing, branching and editing a draft move the engine
 * with it (shared/agents/versions/response-engines.ts); listings order and page the same way. The domain
 * modules (agents.ts, chat-agents.ts) add their own fields and checks around these.
 */

/** Defaults both kinds apply when a create leaves the field out (spec: Agent defaults, webhook fields). */
export const SHARED_AGENT_DEFAULTS = {
  language: 'en-AU',
  timezone: 'Australia/Sydney',
  webhook_url: null,
} as const;

export interface VersionMetadata {
  version_title?: string | null;
  version_description?: string | null;
}

/** Title and description to store; a null is left out (clearing them is describe-agent-version's job). */
export const storedMetadata = (input: VersionMetadata) =>
  definedFields({ version_title: input.version_title ?? undefined, version_description: input.version_description ?? undefined });

/** A version as the API answers it, without the resource's ID field. */
export function versionView<T extends object>(record: VersionRecord) {
  return {
    version: record.version,
    is_published: record.is_published,
    last_modification_timestamp: record.last_modification_timestamp,
    ...(record.base_version !== undefined ? { base_version: record.base_version } : {}),
    ...(record.data as Partial<T>),
    ...(record.version_title !== undefined ? { version_title: record.version_title } : {}),
    ...(record.version_description !== undefined ? { version_description: record.version_description } : {}),
  };
}

/** Voice and chat agents whose latest version runs the given engine (deleting the engine would break them), voice agents first. */
export async function agentsUsingEngine(workspaceId: string, engineId: string): Promise<string[]> {
  const kinds: AgentKind[] = ['agent', 'chat_agent'];
  return (await Promise.all(kinds.map((kind) => listHeads(workspaceId, kind))))
    .flat()
    .filter((head) => {
      const engine = head.latest.data.response_engine as ResponseEngine | undefined;
      return engine && engineOf(engine)?.id === engineId;
    })
    .map((head) => head.id);
}

export type { ListOptions };

/** A page of agents, optionally those whose name or ID contains `query` (any case). */
export async function orderedHeads(
  workspaceId: string,
  kind: AgentKind | readonly AgentKind[],
  options: ListOptions,
  query?: string,
): Promise<{ page: HeadItem[]; hasMore: boolean }> {
  const needle = query?.toLowerCase();
  return pageOfHeads(workspaceId, kind, options, (head) => {
    if (!needle) return true;
    return String(head.latest.data.agent_name ?? '').toLowerCase().includes(needle) || head.id.includes(needle);
  });
}

/**
 * An edit of the draft (the version a reference names, the latest draft, or a new draft branched from
 * a published latest version): the merged record and the items that write it, with a new
 * engine draft when the draft is new and keeps its engine. Nothing is written, so the
 * caller can run its own checks before `commit`.
 */
export async function prepareDraftEdit(
  workspaceId: string,
  kind: AgentKind,
  id: string,
  version: VersionReference | undefined,
  config: Record<string, unknown> & { response_engine?: ResponseEngine },
  metadata: VersionMetadata,
  nowMs: number,
): Promise<{ record: VersionRecord; items: TransactItem[] }> {
  const draft = await draftFor(workspaceId, kind, id, version, nowMs, tagLookup(workspaceId, kind, id));
  const data: Record<string, unknown> = { ...draft.record.data, ...config };
  const items: TransactItem[] = [];
  if (config.response_engine) {
    data.response_engine = await pinnedEngine(workspaceId, config.response_engine);
  } else if (draft.isNew) {
    const branched = await branchEngine(workspaceId, data.response_engine as ResponseEngine, nowMs);
    data.response_engine = branched.engine;
    items.push(...branched.items);
  }
  const record: VersionRecord = { ...draft.record, data, ...storedMetadata(metadata) };
  items.unshift(...writeItems(workspaceId, kind, id, draft.head, record, { isNew: draft.isNew, nowMs }));
  return { record: { ...record, last_modification_timestamp: nowMs }, items };
}

/**
 * Publishes a draft (default: the latest) in place, with the engine version it runs;
 * refused (400 naming every problem) when that engine version cannot run.
 */
export async function publishDraft(
  workspaceId: string,
  kind: AgentKind,
  id: string,
  input: { version?: number; version_title?: string; version_description?: string },
  nowMs: number,
): Promise<VersionRecord> {
  const head = await getHead(workspaceId, kind, id);
  const version = input.version ?? head.latest_version;
  const record = version === head.latest_version ? head.latest : await getVersion(workspaceId, kind, id, version);
  if (record.is_published) throw badRequest(`Version ${version} of ${KIND_LABEL[kind].toLowerCase()} ${id} is already published`);
  // A draft may run an incomplete flow; a published version must run.
  const reason = await whyEngineCannotRun(workspaceId, record.data.response_engine as ResponseEngine | undefined);
  if (reason) throw badRequest(`Version ${version} of ${KIND_LABEL[kind].toLowerCase()} ${id} cannot be published: ${reason}`);
  const published: VersionRecord = {
    ...record,
    is_published: true,
    published_timestamp: nowMs,
    ...definedFields({ version_title: input.version_title, version_description: input.version_description }),
  };
  await commit([
    ...writeItems(workspaceId, kind, id, head, published, { isNew: false, nowMs }),
    ...(await publishEngineItems(workspaceId, record.data.response_engine as ResponseEngine, nowMs)),
  ]);
  return { ...published, last_modification_timestamp: nowMs };
}

/**
 * A new latest draft copied from a base version (default: the latest), with a new engine
 * draft when the engine version it copies is published.
 */
export async function branchDraft(
  workspaceId: string,
  kind: AgentKind,
  id: string,
  baseVersion: number | undefined,
  nowMs: number,
): Promise<VersionRecord> {
  const head = await getHead(workspaceId, kind, id);
  const base =
    baseVersion === undefined || baseVersion === head.latest_version
      ? head.latest
      : await getVersion(workspaceId, kind, id, baseVersion);
  const draft = branch(head, base, nowMs);
  const branched = await branchEngine(workspaceId, draft.data.response_engine as ResponseEngine, nowMs);
  draft.data.response_engine = branched.engine;
  await commit([...writeItems(workspaceId, kind, id, head, draft, { isNew: true, nowMs }), ...branched.items]);
  return { ...draft, last_modification_timestamp: nowMs };
}
