import { randomUUID } from 'node:crypto';
import { recordSimulationCharge } from '../../billing/index.ts';
import { logger } from '../../platform/logger.ts';
import { queueTestBatch, type TestBatchMessage } from './message.ts';
import { judge } from './judge.ts';
import { simulate, type Simulation } from './simulate.ts';
import { allTestRuns, claimTestRun, endTestRun, getBatchTest, takeTestRunSlot, type BatchTestItem, type TestRunItem } from './store.ts';

/*
 * The batch's background work, one message at a time on the call-steps queue: a message
 * takes up to RUNS_AT_ONCE of the batch's open runs, runs them side by side, records each
 * verdict, and queues the next message while runs remain. A batch therefore holds at most
 * RUNS_AT_ONCE conversations at once, whatever its size, and each message's work fits the
 * consumer's 120 s (runs stop starting turns after RUN_BUDGET_MS).
 *
 * Over all its batches a workspace runs at most WORKSPACE_RUNS_AT_ONCE: each run first takes
 * one of the workspace's test-run slots (a leased semaphore in the table, exact across
 * consumers). A run that finds them all held stays pending, and its batch looks again after
 * SLOT_RECHECK_MS, so one workspace's suites never fill the call-steps consumer that every
 * workspace's calls share.
 */

const RUNS_AT_ONCE = 3;
const WORKSPACE_RUNS_AT_ONCE = 6;
/** A run that found every slot held: its batch tries again this much later. */
const SLOT_RECHECK_MS = 5_000;
/** An attempt that has held a run this long died (the consumer's timeout is 120 s): another may take the run over. */
const STALE_MS = 150_000;
/** A batch whose open runs are all held by another attempt looks again after this. */
const RECHECK_MS = 30_000;

/** The longest text of one transcript line a run keeps: a run is one item of at most 400 KB, its definition included. */
const MAX_STORED_LINE = 4_000;

/** The transcript as the run stores it: each line's text and arguments cut to MAX_STORED_LINE characters. */
function storable(simulation: Simulation): Simulation {
  const cut = (text: string) => (text.length > MAX_STORED_LINE ? `${text.slice(0, MAX_STORED_LINE)}…` : text);
  return {
    ...simulation,
    messages: simulation.messages.map((entry) => ({
      ...entry,
      ...('content' in entry && typeof entry.content === 'string' ? { content: cut(entry.content) } : {}),
      ...('arguments' in entry && typeof entry.arguments === 'string' ? { arguments: cut(entry.arguments) } : {}),
    })),
  };
}

/** Runs one run in one of the workspace's slots; false when every slot was held (the run stays pending). */
async function executeInSlot(batch: BatchTestItem, run: TestRunItem, claim: string): Promise<boolean> {
  // The slot's lease outlasts a run's claim: a consumer that died frees both.
  const slot = await takeTestRunSlot(batch.workspace_id, WORKSPACE_RUNS_AT_ONCE, STALE_MS);
  if (!slot) return false;
  try {
    await execute(batch, run, claim);
  } finally {
    await slot.release();
  }
  return true;
}

async function execute(batch: BatchTestItem, run: TestRunItem, claim: string): Promise<void> {
  const nowMs = Date.now();
  const held = await claimTestRun(run, claim, nowMs, nowMs - STALE_MS);
  if (!held) return;
  const definition = held.test_case_definition_snapshot;
  const engine = batch.response_engine;
  let verdict: Parameters<typeof endTestRun>[2];
  let simulation: Awaited<ReturnType<typeof simulate>> | undefined;
  try {
    simulation = await simulate(
      batch.workspace_id,
      held,
      engine.type === 'retell-llm'
        ? { type: 'retell-llm', llm_id: engine.llm_id, version: engine.version! }
        : { type: 'conversation-flow', conversation_flow_id: engine.conversation_flow_id, version: engine.version! },
      definition,
    );
    const judged = await judge(definition, simulation);
    verdict = { ...judged, transcript: storable(simulation) };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    logger.warn('A test run could not finish', { test_case_job_id: held.test_case_job_id, error: reason });
    verdict = { status: 'error', explanation: `The run could not finish: ${reason}`, transcript: null };
  }
  // Charged before the run ends, once per run (its source key): a charge that fails fails the
  // message, whose redelivery runs the conversation again and charges it at most once.
  if (simulation) {
    const messageCount = simulation.messages.filter((entry) => entry.role === 'agent' || entry.role === 'user').length;
    await recordSimulationCharge({ workspaceId: batch.workspace_id, testRunId: held.test_case_job_id, messageCount });
  }
  await endTestRun(held, claim, verdict, Date.now());
}

export async function runTestBatchStep(message: TestBatchMessage): Promise<void> {
  const batch = await getBatchTest(message.workspace_id, message.batch_test_id);
  if (batch.status === 'complete') return;
  const nowMs = Date.now();
  const runs = await allTestRuns(message.workspace_id, message.batch_test_id);
  const open = runs.filter((run) => run.status === 'pending' || (run.status === 'in_progress' && run.user_modified_timestamp < nowMs - STALE_MS));
  const wave = open.slice(0, RUNS_AT_ONCE);
  const claim = randomUUID();
  const ran = await Promise.all(wave.map((run) => executeInSlot(batch, run, claim)));
  const held = runs.some((run) => run.status === 'in_progress' && !wave.includes(run));
  if (ran.includes(false)) await queueTestBatch(message.workspace_id, message.batch_test_id, Date.now() + SLOT_RECHECK_MS);
  else if (open.length > wave.length) await queueTestBatch(message.workspace_id, message.batch_test_id);
  else if (held) await queueTestBatch(message.workspace_id, message.batch_test_id, Date.now() + RECHECK_MS);
}
