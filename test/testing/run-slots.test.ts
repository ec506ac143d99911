import { describe, expect, it } from 'vitest';
import { localQueue } from '../../local/queues.ts';
import { runTestBatchStep } from '../../shared/testing/runs/runner.ts';
import { takeTestRunSlot } from '../../shared/testing/runs/store.ts';
import { startTestApp } from '../support/app.ts';
import { newLlm } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';

/*
 * A workspace runs at most 6 simulated conversations at once over all its batch tests. No
 * consumer runs here: the test runs each step of the batch itself, with the workspace's slots
 * held as other batches' runs would hold them.
 */

const app = await startTestApp();
const retell = retellClient(app.url, app.workspace.api_key);
/** The test-batch messages on the call-steps queue, each with when it is due (a due-time envelope). */
const testBatchMessages = () =>
  localQueue('call-steps')
    .list()
    .map((message) => JSON.parse(message.body) as { due_at_ms: number; message: { kind: string } })
    .filter((envelope) => envelope.message.kind === 'test-batch');

describe("a workspace's test-run slots", () => {
  it('start only as many runs as slots are free; the rest stay pending and their batch looks again later', async () => {
    const llm = await newLlm(app.api, { general_prompt: 'You answer questions.', begin_message: 'Hello!' });
    const cases = await Promise.all(
      [1, 2, 3].map((n) =>
        retell.tests.createTestCaseDefinition({ name: `Case ${n}`, user_prompt: 'You are Sam. Say "hi".', metrics: [], response_engine: { type: 'retell-llm', llm_id: llm.llm_id } }),
      ),
    );
    const batch = await retell.tests.createBatchTest({
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id },
      test_case_definition_ids: cases.map((entry) => entry.test_case_definition_id),
    });
    const step = { kind: 'test-batch' as const, workspace_id: app.workspace.workspace_id, batch_test_id: batch.test_case_batch_job_id };
    const statuses = async () => (await retell.tests.listTestRuns(batch.test_case_batch_job_id)).items.map((run) => run.status).sort();
    const queuedBefore = testBatchMessages().length;

    // Five of the six held by other runs: of the batch's wave of three, one runs.
    const held = await Promise.all([1, 2, 3, 4, 5].map(() => takeTestRunSlot(app.workspace.workspace_id, 6, 150_000)));
    expect(held.every(Boolean)).toBe(true);
    const steppedAt = Date.now();
    await runTestBatchStep(step);
    expect((await statuses()).filter((status) => status === 'pending')).toHaveLength(2);
    // The batch comes back for the two, seconds later rather than at once.
    const queued = testBatchMessages();
    expect(queued).toHaveLength(queuedBefore + 1);
    expect(queued.at(-1)!.due_at_ms).toBeGreaterThanOrEqual(steppedAt + 5_000);

    // The sixth held too: nothing starts.
    const sixth = await takeTestRunSlot(app.workspace.workspace_id, 6, 150_000);
    expect(sixth).toBeDefined();
    await runTestBatchStep(step);
    expect((await statuses()).filter((status) => status === 'pending')).toHaveLength(2);

    // Slots free: the rest run, and the batch completes.
    await Promise.all([...held, sixth].map((slot) => slot!.release()));
    await runTestBatchStep(step);
    expect((await statuses()).filter((status) => status === 'pending' || status === 'in_progress')).toHaveLength(0);
    expect((await retell.tests.getBatchTest(batch.test_case_batch_job_id)).status).toBe('complete');
  }, 60_000);
});
