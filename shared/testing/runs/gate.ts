import { getAgent, getChatAgent } from '../../agents/index.ts';
import { conflict } from '../../platform/errors.ts';
import { allTestRuns, pageBatchTestsByEngine, readTestingSettings, writeTestingSettings, type TestingSettings } from './store.ts';

/*
 * The publish gate (a workspace setting, off by default): publishing an agent version needs
 * a complete batch test on the exact engine version the agent version runs, with every run
 * passed. The newest complete batch on that version decides; the agents function asks
 * before it publishes (functions/agents.ts), so the agents domain knows nothing of tests.
 */

export async function getTestingSettings(workspaceId: string): Promise<TestingSettings> {
  const item = await readTestingSettings(workspaceId);
  return { require_passing_batch_test_to_publish: item?.require_passing_batch_test_to_publish === true };
}

export async function updateTestingSettings(workspaceId: string, input: Partial<TestingSettings>): Promise<TestingSettings> {
  const next = { ...(await getTestingSettings(workspaceId)), ...Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined)) };
  await writeTestingSettings(workspaceId, next);
  return next;
}

/** How many of the engine version's newest batches are looked at for a complete one. */
const BATCHES_LOOKED_AT = 20;

/**
 * Refuses (409) publishing `version` (default: the latest) of the agent when the workspace
 * requires a passing batch test and the newest complete batch test on its engine version
 * is missing or has runs that did not pass, naming them.
 */
export async function assertPublishable(workspaceId: string, agentId: string, version: number | undefined): Promise<void> {
  if (!(await getTestingSettings(workspaceId)).require_passing_batch_test_to_publish) return;
  const agent = agentId.startsWith('chat_agent_') ? await getChatAgent(workspaceId, agentId, version) : await getAgent(workspaceId, agentId, version);
  const engine = agent.response_engine as { type: string; llm_id?: string; conversation_flow_id?: string; version?: number | null };
  if ((engine.type !== 'retell-llm' && engine.type !== 'conversation-flow') || typeof engine.version !== 'number') {
    throw conflict(`Publishing requires a passing batch test, and batch tests run only Retell LLMs and conversation flows (this agent runs ${engine.type})`);
  }
  const id = (engine.type === 'retell-llm' ? engine.llm_id : engine.conversation_flow_id)!;
  const label = `${engine.type === 'retell-llm' ? 'Retell LLM' : 'conversation flow'} ${id} version ${engine.version}`;
  const page = await pageBatchTestsByEngine(workspaceId, { type: engine.type, id, version: engine.version }, { limit: BATCHES_LOOKED_AT });
  const batch = page.items.find((item) => item.status === 'complete');
  if (!batch) throw conflict(`Publishing requires a passing batch test on ${label}; none has completed`);
  if (batch.pass_count === batch.total_count) return;
  const failing = (await allTestRuns(workspaceId, batch.test_case_batch_job_id)).filter((run) => run.status !== 'pass');
  throw conflict(
    `Publishing requires a passing batch test on ${label}; batch test ${batch.test_case_batch_job_id} has runs that did not pass: ` +
      failing.map((run) => `${run.test_case_job_id} (${run.status}: ${run.test_case_definition_snapshot.name})`).join(', '),
  );
}
