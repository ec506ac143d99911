import { badRequest, NotFound } from '../../platform/errors.ts';
import { RETELL_LLM_ENGINE, type ResponseEngine } from './agent-fields.ts';
import type { VersionedKind } from '../../platform/store/keys.ts';
import {
  branch,
  getHead,
  getVersion,
  KIND_LABEL,
  writeItems,
  type HeadItem,
  type TransactItem,
  type VersionRecord,
} from '../../platform/store/versions.ts';

/*
 * Response engines as agents (voice and chat) use them: an agent version runs one engine
 * version. Publishing the agent version publishes that engine version with it; a new
 * agent draft made from a published version gets a new engine draft, so a published
 * agent never changes underneath.
 */

export interface EngineRef {
  kind: VersionedKind;
  id: string;
  field: 'llm_id' | 'conversation_flow_id';
}

export function engineOf(engine: ResponseEngine): EngineRef | undefined {
  if (engine.type === RETELL_LLM_ENGINE) return { kind: 'llm', id: engine.llm_id, field: 'llm_id' };
  if (engine.type === 'conversation-flow') return { kind: 'conversation_flow', id: engine.conversation_flow_id, field: 'conversation_flow_id' };
  return undefined;
}

/** The engine as stored on the version: an existing engine of this workspace, its version pinned. */
export async function pinnedEngine(workspaceId: string, engine: ResponseEngine): Promise<ResponseEngine> {
  if (engine.type === 'custom-llm') return engine;
  const ref = engineOf(engine)!;
  const label = KIND_LABEL[ref.kind];
  let head: HeadItem;
  try {
    head = await getHead(workspaceId, ref.kind, ref.id);
  } catch (error) {
    if (error instanceof NotFound) {
      throw badRequest(`response_engine.${ref.field}: ${label} ${ref.id} not found`);
    }
    throw error;
  }
  const requested = engine.version;
  if (requested === undefined || requested === null) return { ...engine, version: head.latest_version };
  if (requested > head.latest_version) {
    throw badRequest(`response_engine.version: ${label} ${ref.id} has no version ${requested}`);
  }
  await getVersion(workspaceId, ref.kind, ref.id, requested).catch((error: unknown) => {
    throw error instanceof NotFound
      ? badRequest(`response_engine.version: ${label} ${ref.id} has no version ${requested}`)
      : error;
  });
  return { ...engine, version: requested };
}

/** Items that publish the engine version an agent version runs, when it is still a draft. */
export async function publishEngineItems(workspaceId: string, engine: ResponseEngine, nowMs: number): Promise<TransactItem[]> {
  if (engine.type === 'custom-llm' || typeof engine.version !== 'number') return [];
  const ref = engineOf(engine)!;
  const head = await getHead(workspaceId, ref.kind, ref.id);
  const record = await getVersion(workspaceId, ref.kind, ref.id, engine.version);
  if (record.is_published) return [];
  const published: VersionRecord = { ...record, is_published: true, published_timestamp: nowMs };
  return writeItems(workspaceId, ref.kind, ref.id, head, published, { isNew: false, nowMs });
}

/** For a new agent draft: a new engine draft when the engine version it copies is published. */
export async function branchEngine(
  workspaceId: string,
  engine: ResponseEngine,
  nowMs: number,
): Promise<{ engine: ResponseEngine; items: TransactItem[] }> {
  if (engine.type === 'custom-llm' || typeof engine.version !== 'number') return { engine, items: [] };
  const ref = engineOf(engine)!;
  const head = await getHead(workspaceId, ref.kind, ref.id);
  const record = await getVersion(workspaceId, ref.kind, ref.id, engine.version);
  if (!record.is_published) return { engine, items: [] };
  const draft = branch(head, record, nowMs);
  return {
    engine: { ...engine, version: draft.version },
    items: writeItems(workspaceId, ref.kind, ref.id, head, draft, { isNew: true, nowMs }),
  };
}

