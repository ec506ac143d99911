import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { gitApply } from '../support/git-apply.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * "Why did it fail?" over an attached QA result (docs/assistant.md, offline rule 7), end to
 * end: one scripted sandbox call scored by a cohort run (the offline scoring rules, as the QA
 * tests score them), attached to a session; the explanation quotes the result's failing
 * criteria as the API answers them, and the proposed change is a unified diff that `git apply`
 * applies to the agent's prompt exactly as stored, giving the prompt the confirmation writes.
 */
const app = await startTestApp();
const background = startBackgroundWork([jobNamed('call-steps')]);
afterAll(() => background.stop());

/** Two lines, the last without a newline, as prompts are usually stored. */
const PROMPT = 'You answer calls for Parley Parking.\nAlways say "thank you for calling".';
const GREETING = 'Thank you for calling Parley Parking.';
/** An angry caller scores resolution 0 and tone 50 (overall 25): both below the threshold. */
const RUBRIC = {
  criteria: [
    { name: 'resolution', type: 'resolution', weight: 1, description: "The caller's problem was solved" },
    { name: 'tone', type: 'tone', weight: 1, description: 'The agent acknowledged an upset caller' },
  ],
  pass_threshold: 70,
};

describe('why a QA result failed', () => {
  it("quotes the attached result's failing criteria and proposes a diff against the agent's actual prompt, applied once confirmed", async () => {
    const ws = await app.newWorkspace();
    const { agent, llm, number } = await newAgentWithNumber(ws.api, { llm: { general_prompt: PROMPT, begin_message: GREETING } });
    const client = retellClient(app.url, ws.api_key);
    const placed = await client.call.createPhoneCall({
      from_number: number,
      to_number: '+14155559001',
      metadata: { sandbox_call_ms: 300, sandbox_user_says: ['This is terrible, I have been waiting for 40 minutes!'] },
    });
    await eventually(() => client.call.retrieve(placed.call_id) as Promise<any>, (got) => got.call_analysis !== undefined);
    const cohort = (await ws.api.post('/qa/cohorts', { body: { name: 'Parking', selection: { agent_ids: [agent.agent_id] }, rubric: RUBRIC } })).body;
    expect((await ws.api.post(`/qa/cohorts/${cohort.cohort_id}/run`)).status).toBe(202);
    await eventually(() => ws.api.get(`/qa/cohorts/${cohort.cohort_id}`), (res) => res.body.last_run?.status === 'complete');
    const [listed] = (await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results`)).body.items;
    const result = (await ws.api.get(`/qa/results/${listed.result_id}`)).body;
    expect(result).toMatchObject({ status: 'scored', agent_id: agent.agent_id, machine: { overall_score: 25, passed: false, pass_threshold: 70 } });
    const failing = (result.machine.criteria as { name: string; score: number; reason: string }[]).filter((criterion) => criterion.score < 70);
    expect(failing.map((criterion) => [criterion.name, criterion.score])).toEqual([
      ['resolution', 0],
      ['tone', 50],
    ]);

    const session = await ws.api.post('/conductor/sessions', { body: { attachments: [{ type: 'qa_result', id: result.result_id }] } });
    expect(session.status).toBe(201);
    const id = session.body.session_id as string;
    const asked = await ws.api.post(`/conductor/sessions/${id}/messages`, { body: { content: 'Why did this call fail?' } });
    expect(asked.status).toBe(200);
    const text = asked.body.reply.content as string;

    // The explanation quotes the result as the API answers it.
    const explanation = [
      `${result.result_id} scored 25 against a pass threshold of 70 (failed).`,
      ...failing.map((criterion) => `- ${criterion.name}: ${criterion.score}. ${criterion.reason}`),
    ].join('\n');
    expect(text.startsWith(`${explanation}\n\nProposed prompt change:\n\`\`\`diff\n`)).toBe(true);
    expect(asked.body.reply.tool_calls.map((entry: { tool: string; status: string }) => [entry.tool, entry.status])).toEqual([
      ['get_qa_result', 'ok'],
      ['get_agent', 'ok'],
      ['get_llm', 'ok'],
    ]);

    // The diff applies to the prompt as stored and gives the prompt the pending action writes.
    const diff = /```diff\n([\s\S]*?)\n```/.exec(text)![1]!;
    const stored = (await ws.api.get(`/get-retell-llm/${llm.llm_id}`)).body.general_prompt as string;
    expect(stored).toBe(PROMPT);
    const added = failing.map((criterion) => `- Make sure the conversation meets "${criterion.name}": last time, ${criterion.reason.replace(/\.$/, '')}.`);
    const proposedPrompt = [PROMPT, ...added].join('\n');
    expect(gitApply(stored, diff)).toBe(proposedPrompt);
    expect(diff.split('\n').slice(0, 3)).toEqual(['--- a/general_prompt', '+++ b/general_prompt', '@@ -1,2 +1,4 @@']);
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
