import { badRequest, NotFound } from '../../platform/errors.ts';
import { KIND_LABEL } from '../../platform/store/versions.ts';
import type { ResponseEngine } from './agent-fields.ts';
import type { AgentKind } from '../store.ts';
import { flowProblems } from '../flows/flow-components.ts';
import { engineOf } from './response-engines.ts';
import { readReferenced, resolveReference, type VersionReference } from './version-references.ts';

/*
 * Whether an agent version can run. A draft may be incomplete (a conversation flow being
 * built, a shared component it uses); what runs one checks it whole first, exactly as
 * strictly as a complete graph must be: publishing a version (agent-versions.ts), binding
 * it to a number (shared/numbers), and starting a call or chat with it (`assertRunnable`,
 * for the call and chat engines).
 */

/** Voice agent IDs start `agent_`, chat agent IDs `chat_agent_`: the paths both share dispatch on it. */
export const kindOfAgentId = (id: string): AgentKind => (id.startsWith('chat_agent_') ? 'chat_agent' : 'agent');

/**
 * Why the engine version an agent version runs cannot run, or undefined when it can: the
 * engine or its version is gone (a forced delete), or the conversation flow version (with
 * the shared components it uses) has problems, every one named.
 */
export async function whyEngineCannotRun(workspaceId: string, engine: ResponseEngine | undefined): Promise<string | undefined> {
  if (!engine || engine.type === 'custom-llm') return undefined;
  const ref = engineOf(engine)!;
  let data: Record<string, unknown>;
  let version: number;
  try {
    ({ data, version } = await readReferenced(workspaceId, ref.kind, ref.id, engine.version ?? undefined));
  } catch (error) {
    if (error instanceof NotFound) return error.message;
    throw error;
  }
  if (ref.kind !== 'conversation_flow') return undefined;
  const problems = await flowProblems(workspaceId, data);
  return problems.length ? `conversation flow ${ref.id} version ${version} is incomplete: ${problems.join('; ')}` : undefined;
}

/**
 * The check a call or chat makes before it starts (and a number binding before it binds):
 * the version a reference names (absent: the latest) of a voice or chat agent must run.
 * Answers the version that will; a 400 naming every problem otherwise; 404 for an agent
 * or a reference that names nothing (another workspace's agent is not found).
 */
export async function assertRunnable(
  workspaceId: string,
  agentId: string,
  reference?: VersionReference,
): Promise<{ agent_id: string; version: number }> {
  const kind = kindOfAgentId(agentId);
  const { record } = await resolveReference(workspaceId, kind, agentId, reference);
  const reason = await whyEngineCannotRun(workspaceId, record.data.response_engine as ResponseEngine | undefined);
  if (reason) throw badRequest(`${KIND_LABEL[kind]} ${agentId} version ${record.version} cannot run: ${reason}`);
  return { agent_id: agentId, version: record.version };
}
