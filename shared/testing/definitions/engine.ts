import { badRequest, NotFound, VersionNotFound } from '../../platform/errors.ts';
import { getLlm } from '../../agents/llms/index.ts';
import { getFlow } from '../../agents/flows/index.ts';
import type { TestResponseEngine } from './schemas.ts';

/** The engine's ID, whichever kind it is. */
const engineId = (engine: TestResponseEngine): string => (engine.type === 'retell-llm' ? engine.llm_id : engine.conversation_flow_id);

/**
 * Checks that the engine (and its version, when one is named) is the workspace's: another
 * workspace's engine, or one that does not exist, is a 400 naming the field, since it is
 * the body that is wrong, not the path. Answers the version it names, or the latest.
 */
export async function assertWorkspaceEngine(workspaceId: string, engine: TestResponseEngine, field = 'response_engine'): Promise<number> {
  const idField = engine.type === 'retell-llm' ? 'llm_id' : 'conversation_flow_id';
  const version = engine.version ?? undefined;
  try {
    const found = engine.type === 'retell-llm' ? await getLlm(workspaceId, engine.llm_id, version) : await getFlow(workspaceId, engine.conversation_flow_id, version);
    return found.version as number;
  } catch (error) {
    if (error instanceof VersionNotFound) throw badRequest(`${field}.version: ${error.message}`);
    if (error instanceof NotFound) throw badRequest(`${field}.${idField}: ${engineId(engine)} is not a ${engine.type === 'retell-llm' ? 'Retell LLM' : 'conversation flow'} of this workspace`);
    throw error;
  }
}
