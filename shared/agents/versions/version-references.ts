import type { AgentTag } from '../voice-agents/agent-schemas.ts';
import type { VersionedKind } from '../../platform/store/keys.ts';
import { resolveVersion, type TagLookup, type VersionReference } from '../../platform/store/versions.ts';
import { agentTags, type TagItem } from '../store.ts';

/*
 * Version references (a number, `latest`, `latest_published` or an environment tag name)
 * are resolved by one resolver, `resolveVersion` in shared/platform/store/versions.ts;
 * this module gives it the agents domain's environment tags, which only voice agents
 * have. Every read and edit of agents, chat agents, LLMs and flows that takes a version
 * passes its reference through here.
 */
export type { VersionReference };

export const toTag = ({ pk: _pk, sk: _sk, ...tag }: TagItem): AgentTag => tag;

/** A voice agent's tag by name. */
export async function findAgentTag(workspaceId: string, agentId: string, name: string): Promise<AgentTag | undefined> {
  const item = await agentTags.get(workspaceId, agentId, name);
  return item ? toTag(item) : undefined;
}

/** The tag lookup for a kind: voice agents have tags, the others none. */
export function tagLookup(workspaceId: string, kind: VersionedKind, id: string): TagLookup<AgentTag> | undefined {
  return kind === 'agent' ? (name) => findAgentTag(workspaceId, id, name) : undefined;
}

/** The version a reference names (absent: the latest), with how it was named. */
export function resolveReference(workspaceId: string, kind: VersionedKind, id: string, reference: VersionReference | undefined) {
  return resolveVersion(workspaceId, kind, id, reference, tagLookup(workspaceId, kind, id));
}

/** A voice agent's `latest`, `latest_published`, version number or tag name → one concrete version. */
export async function resolveAgentVersion(workspaceId: string, agentId: string, reference: VersionReference) {
  const { record, resolvedFrom, tag } = await resolveReference(workspaceId, 'agent', agentId, reference);
  return {
    agent_id: agentId,
    version: record.version,
    is_published: record.is_published,
    resolved_from: resolvedFrom,
    ...(tag ? { tag: tag.name, variables: tag.variables } : {}),
  };
}

/** The record of the version a reference names (absent: the latest). */
export async function readReferenced(workspaceId: string, kind: VersionedKind, id: string, reference: VersionReference | undefined) {
  return (await resolveReference(workspaceId, kind, id, reference)).record;
}
