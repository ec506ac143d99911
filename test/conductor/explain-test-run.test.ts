import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { gitApply } from '../support/git-apply.ts';
import { newLlm } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * "Why did it fail?" over an attached test run (docs/assistant.md, offline rule 7), end to
 * end: a one-case batch test whose run fails in the sandbox (the offline judge: a quoted
 * phrase the agent never says), attached to a session; the explanation quotes the run's
 * verdict and the judge's explanation as GET /get-test-run answers them, and the proposed
 * change is a unified diff that `git apply` applies to the batch's LLM prompt as stored,
 * giving the prompt the confirmation writes. Another workspace's run is refused.
 */
const app = await startTestApp();
const background = startBackgroundWork([jobNamed('call-steps')]);
afterAll(() => background.stop());

/** Two lines, the last without a newline, as prompts are usually stored. */
const PROMPT = "You take bookings for Luigi's.\nBe brief.";
const CRITERION = 'The agent says "we have a vegan lasagne"';

describe('why a test run failed', () => {
  it("quotes the attached run's verdict and failed criterion and proposes a diff against its LLM's prompt, applied once confirmed; another workspace's run is refused", async () => {
    const ws = await app.newWorkspace();
    const other = await app.newWorkspace();
    const client = retellClient(app.url, ws.api_key);
    const llm = await newLlm(ws.api, { general_prompt: PROMPT, begin_message: "Welcome to Luigi's, how can I help?" });
    const engine = { type: 'retell-llm' as const, llm_id: llm.llm_id };
    const definition = await client.tests.createTestCaseDefinition({
      name: 'Asks for vegan food',
      user_prompt: 'You are Kim. Ask "Do you have vegan dishes?"',
      metrics: [CRITERION],
      response_engine: engine,
    });
    const batch = await client.tests.createBatchTest({ response_engine: engine, test_case_definition_ids: [definition.test_case_definition_id] });
    await eventually(() => client.tests.getBatchTest(batch.test_case_batch_job_id), (got) => got.status === 'complete', 60_000);
    const [listed] = (await client.tests.listTestRuns(batch.test_case_batch_job_id)).items;
    const run = (await ws.api.get(`/get-test-run/${listed!.test_case_job_id}`)).body;
    const why = 'The agent never said "we have a vegan lasagne"';
    expect(run).toMatchObject({ status: 'fail', result_explanation: `Criterion 1 not met: "${CRITERION}": ${why}` });

    // Another workspace's run is refused and nothing is kept.
    const refused = await other.api.post('/conductor/sessions', { body: { attachments: [{ type: 'test_run', id: run.test_case_job_id }] } });
    expect(refused.status).toBe(404);
    expect(refused.body).toEqual({ status: 404, message: `attachments.0: test_run ${run.test_case_job_id} not found` });
    expect((await other.api.get('/conductor/sessions')).body.items).toEqual([]);
    const otherSession = (await other.api.post('/conductor/sessions', { body: {} })).body.session_id as string;
    const put = await other.api.put(`/conductor/sessions/${otherSession}/attachments`, { body: { attachments: [{ type: 'test_run', id: run.test_case_job_id }] } });
    expect(put.status).toBe(404);
    expect((await other.api.get(`/conductor/sessions/${otherSession}`)).body.attachments).toEqual([]);

    const session = await ws.api.post('/conductor/sessions', { body: { attachments: [{ type: 'test_run', id: run.test_case_job_id }] } });
    expect(session.status).toBe(201);
    const id = session.body.session_id as string;
    const asked = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'Why did this test fail?' } });
    expect(asked.status).toBe(200);
    const text = asked.body.reply.content as string;

    // The explanation quotes the run as the API answers it.
    const explanation = [`${run.test_case_job_id} (test case "Asks for vegan food") failed.`, `- ${CRITERION}: ${why}`].join('\n');
    expect(text.startsWith(`${explanation}\n\nProposed prompt change:\n\`\`\`diff\n`)).toBe(true);
    expect(asked.body.reply.tool_calls.map((entry: { tool: string; status: string }) => [entry.tool, entry.status])).toEqual([
      ['get_test_run', 'ok'],
      ['get_batch_test', 'ok'],
      ['get_llm', 'ok'],
    ]);

    // The diff applies to the prompt as stored and gives the prompt the pending action writes.
    const diff = /```diff\n([\s\S]*?)\n```/.exec(text)![1]!;
    const proposedPrompt = `${PROMPT}\n- Make sure of this: ${CRITERION}. Last time: ${why}.`;
    expect(gitApply(PROMPT, diff)).toBe(proposedPrompt);
    expect(diff.split('\n').slice(0, 3)).toEqual(['--- a/general_prompt', '+++ b/general_prompt', '@@ -1,2 +1,3 @@']);
    expect(asked.body.pending_action).toMatchObject({
      summary: `apply this change to the prompt of ${llm.llm_id}`,
      steps: [{ tool: 'update_llm', arguments: { llm_id: llm.llm_id, general_prompt: proposedPrompt } }],
    });
    // Nothing is changed before the confirmation.
    expect((await ws.api.get(`/get-retell-llm/${llm.llm_id}`)).body.general_prompt).toBe(PROMPT);

    const done = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'yes' } });
    expect(done.body.reply.tool_calls).toMatchObject([{ tool: 'update_llm', status: 'ok', http_status: 200 }]);
    expect((await ws.api.get(`/get-retell-llm/${llm.llm_id}`)).body.general_prompt).toBe(proposedPrompt);
  });
});
