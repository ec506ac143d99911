import { badRequest } from '../../platform/errors.ts';
import { eachLimited } from '../../platform/parallel.ts';
import { listHeads, queryVersions, type HeadItem, type VersionRecord } from '../../platform/store/versions.ts';
import type { VersionedKind } from '../../platform/store/keys.ts';
import type * as AppRefs from '../../integrations/app-refs/index.ts';
import type { AppToolRef } from '../../integrations/app-refs/index.ts';
import type { ResponseEngine } from '../versions/agent-fields.ts';
import { flowAppToolRefs, llmAppToolRefs } from './app-tools.ts';
import { engineOf } from '../versions/response-engines.ts';
import { loadOnce } from '../../platform/lazy.ts';

/*
 * Agents, Retell LLMs and flows whose tools use an integration app (docs/integrations.md,
 * "App tools"): checked when an engine is saved, and computed on read for
 * GET /list-app-usages and DELETE /delete-app (the integrations function hands
 * `appUsages` to the integrations domain, which does not import agents: agents imports
 * integrations' narrow entry for the check). Nothing is recorded at write time, so nothing
 * goes stale when an engine or an agent changes or is deleted.
 */

/**
 * The integrations' app catalogue and store, loaded by the first save that names an app
 * tool: every function that reaches the agents entry (calls, chats, public...) would
 * otherwise load them at its cold start for a check that most saves skip
 * (docs/performance.md, "Sizes: cold and lazy").
 */
const appRefs = loadOnce((): Promise<typeof AppRefs> => import('../../integrations/app-refs/index.ts'));

/** 400 naming each app tool whose app is not in this workspace or whose provider has no such tool. */
export async function assertAppTools(workspaceId: string, refs: readonly AppToolRef[]): Promise<void> {
  if (!refs.length) return;
  const { appToolProblems } = await appRefs();
  const problems = await appToolProblems(workspaceId, refs);
  if (problems.length) throw badRequest(problems.join('; '));
}

export type AppUsage =
  | { type: 'agent'; agent_id: string; agent_name?: string; agent_versions: number[]; configured_timestamp: number }
  | { type: 'llm'; llm_id: string; configured_timestamp: number }
  | { type: 'conversation_flow'; conversation_flow_id: string; configured_timestamp: number };

/** At most this many version queries at once (one per engine, then one per agent). */
const PARALLEL_QUERIES = 16;

async function mapLimited<T, R>(items: readonly T[], run: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  await eachLimited(items, PARALLEL_QUERIES, async (item, index) => {
    out[index] = await run(item);
  });
  return out;
}

const usesApp = (kind: VersionedKind, data: Record<string, unknown>, appId: string) =>
  (kind === 'llm' ? llmAppToolRefs(data) : flowAppToolRefs(data)).some((ref) => ref.app_id === appId);

/**
 * What uses the app: each voice or chat agent with a version whose engine version (the one
 * the agent version pins) has an `app` tool naming it (`agent_versions` largest first;
 * `configured_timestamp` the latest modification among those agent and engine versions),
 * and each Retell LLM or flow that no agent version runs whose latest version names it.
 * Queries only: the heads of the four kinds, every version of each engine, and, only when
 * an engine version uses the app, every version of each agent.
 */
export async function appUsages(workspaceId: string, appId: string): Promise<AppUsage[]> {
  const engineKinds = ['llm', 'conversation_flow'] as const;
  const engineHeads = (await Promise.all(engineKinds.map((kind) => listHeads(workspaceId, kind)))).flat();
  // Engine ID → version → when that version was last modified, for the versions that use the app.
  const using = new Map<string, Map<number, number>>();
  const versionsOf = await mapLimited(engineHeads, (head) => queryVersions(workspaceId, head.kind, head.id));
  engineHeads.forEach((head, i) => {
    for (const record of versionsOf[i]!) {
      if (!usesApp(head.kind, record.data, appId)) continue;
      if (!using.has(head.id)) using.set(head.id, new Map());
      using.get(head.id)!.set(record.version, record.last_modification_timestamp);
    }
  });
  if (using.size === 0) return [];

  const agentHeads = (await Promise.all((['agent', 'chat_agent'] as const).map((kind) => listHeads(workspaceId, kind)))).flat();
  const agentVersions = await mapLimited(agentHeads, (head) => queryVersions(workspaceId, head.kind, head.id));
  const attached = new Set<string>();
  const usages: AppUsage[] = [];
  agentHeads.forEach((head, i) => {
    const usage = agentUsage(head, agentVersions[i]!, using, engineHeads, attached);
    if (usage) usages.push(usage);
  });
  for (const head of engineHeads) {
    const latest = using.get(head.id)?.get(head.latest_version);
    if (attached.has(head.id) || latest === undefined) continue;
    usages.push(
      head.kind === 'llm'
        ? { type: 'llm', llm_id: head.id, configured_timestamp: latest }
        : { type: 'conversation_flow', conversation_flow_id: head.id, configured_timestamp: latest },
    );
  }
  return usages;
}

function agentUsage(
  head: HeadItem,
  versions: VersionRecord[],
  using: Map<string, Map<number, number>>,
  engineHeads: HeadItem[],
  attached: Set<string>,
): AppUsage | undefined {
  const matched: number[] = [];
  let configured = 0;
  for (const record of versions) {
    const engine = record.data.response_engine as ResponseEngine | undefined;
    const ref = engine ? engineOf(engine) : undefined;
    if (!ref) continue;
    attached.add(ref.id);
    // Versions always pin their engine version; an unpinned one runs the engine's latest.
    const version = (engine as { version?: unknown }).version;
    const pinned = typeof version === 'number' ? version : engineHeads.find((candidate) => candidate.id === ref.id)?.latest_version;
    const engineModified = pinned === undefined ? undefined : using.get(ref.id)?.get(pinned);
    if (engineModified === undefined) continue;
    matched.push(record.version);
    configured = Math.max(configured, engineModified, record.last_modification_timestamp);
  }
  if (!matched.length) return undefined;
  const name = head.latest.data.agent_name;
  return {
    type: 'agent',
    agent_id: head.id,
    ...(typeof name === 'string' && name ? { agent_name: name } : {}),
    agent_versions: matched.sort((a, b) => b - a),
    configured_timestamp: configured,
  };
}
