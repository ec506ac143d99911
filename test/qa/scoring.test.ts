import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { runQaMessage } from '../../shared/qa/runs/runner.ts';
import { OfflineModel, useLanguageModel, type LanguageModel } from '../../shared/vendors/llm/index.ts';
import type { CompletionRequest } from '../../shared/vendors/llm/types.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { retellClient } from '../support/sdk.ts';

/** Reads until `done`, every half second (the API's per-key rate limit is 600 a minute). */
async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value).slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/*
 * QA scoring over sandbox calls (docs/qa.md): a cohort over scripted callers (a calm one
 * asking about parking, an angry one), a run (202) whose results match the offline rules'
 * exact scores; a call kept without transcript scored on what remains; a run's message
 * delivered three times scoring each call once; auto-scoring after the analysis; a model
 * that answers badly twice failing the result, and a later run scoring it.
 */
const app = await startTestApp();
const background = startBackgroundWork([jobNamed('call-steps')]);

/** The offline model, counting the judging requests (and, when told, answering them badly). */
const offline = new OfflineModel();
let judged = 0;
let malformed = false;
const counting: LanguageModel = {
  complete: (request: CompletionRequest) => {
    if (request.offlineHint === 'qa_score') {
      judged++;
      if (malformed) return Promise.resolve({ content: '{"criteria": "no"}', usage: { prompt_tokens: 1, completion_tokens: 1 }, model: request.model, provider: 'offline', finishReason: 'stop' });
    }
    return offline.complete(request);
  },
  stream: (request: CompletionRequest) => offline.stream(request),
} as LanguageModel;
useLanguageModel(counting);
afterAll(async () => {
  useLanguageModel(undefined);
  await background.stop();
});

const RULES = 'You answer calls for Parley Parking. Always say "thank you for calling". Never say "guaranteed".';
const GREETING = 'Thank you for calling Parley Parking. Parking costs 12 dollars an hour.';
const CALM = ['Hi, where can I park my car near the station?'];
const ANGRY = ['This is terrible, I have been waiting for 40 minutes!', 'Is my spot guaranteed?'];

const callee = (lastFour: string) => `+1415555${lastFour}`;

/** Places sandbox calls with scripted callers and waits for their analysis. */
async function placeCalls(apiKey: string, from: string, scripts: string[][], firstCallee: number) {
  const client = retellClient(app.url, apiKey);
  const placed: any[] = [];
  for (const [index, says] of scripts.entries()) {
    placed.push(await client.call.createPhoneCall({ from_number: from, to_number: callee(String(firstCallee + index)), metadata: { sandbox_call_ms: 500, sandbox_user_says: says } }));
  }
  return Promise.all(
    placed.map((call) => eventually(() => client.call.retrieve(call.call_id) as Promise<any>, (got) => got.call_analysis !== undefined, 60_000)),
  );
}

/** The latency rule (docs/qa.md): 100 at or under the bound, 0 at twice it, linear between. */
const latency = (p50: number | undefined) => (p50 === undefined ? null : p50 <= 2000 ? 100 : p50 >= 4000 ? 0 : Math.round((100 * (4000 - p50)) / 2000));
const WEIGHTS: Record<string, number> = { resolution: 30, hallucination: 25, tone: 20, instruction_following: 15, latency: 10 };
const overall = (scores: Record<string, number | null>) => {
  const assessed = Object.entries(scores).filter((entry): entry is [string, number] => entry[1] !== null);
  const weights = assessed.reduce((sum, [name]) => sum + WEIGHTS[name]!, 0);
  return Math.round((100 * assessed.reduce((sum, [name, score]) => sum + WEIGHTS[name]! * score, 0)) / weights) / 100;
};
const scoresOf = (result: any) => Object.fromEntries(result.machine.criteria.map((criterion: any) => [criterion.name, criterion.score]));

async function runToEnd(api: any, cohortId: string) {
  const started = await api.post(`/qa/cohorts/${cohortId}/run`);
  expect(started.status).toBe(202);
  expect(started.body).toMatchObject({ cohort_id: cohortId, status: 'running', run_id: expect.stringMatching(/^qa_run_[0-9a-f]{24}$/) });
  const cohort = await eventually(() => api.get(`/qa/cohorts/${cohortId}`), (res: any) => res.body.last_run?.status === 'complete', 60_000);
  return { started: started.body, run: (cohort as any).body.last_run };
}

describe('a cohort over sandbox calls', () => {
  it('runs, and each result holds the offline rules\' exact scores with reasons quoting the transcript', async () => {
    const ws = await app.newWorkspace();
    const a = await newAgentWithNumber(ws.api, { llm: { general_prompt: RULES, begin_message: GREETING } });
    const basic = await newAgentWithNumber(ws.api, { llm: { general_prompt: RULES, begin_message: GREETING }, agent: { data_storage_setting: 'basic_attributes_only' } });
    const [calm, angry] = await placeCalls(ws.api_key, a.number, [CALM, ANGRY], 7001);
    const [kept] = await placeCalls(ws.api_key, basic.number, [ANGRY], 7101);
    expect(calm.call_analysis).toMatchObject({ call_successful: true });
    expect(angry.call_analysis).toMatchObject({ call_successful: false, user_sentiment: 'Negative' });
    // The basic call's transcript goes once the setting is applied, after the analysis.
    await eventually(() => retellClient(app.url, ws.api_key).call.retrieve(kept.call_id) as Promise<any>, (got) => got.transcript_object === undefined);

    const cohort = (await ws.api.post('/qa/cohorts', { body: { name: 'Parking', selection: { agent_ids: [a.agent.agent_id, basic.agent.agent_id] } } })).body;
    judged = 0;
    const { run } = await runToEnd(ws.api, cohort.cohort_id);
    expect(run).toMatchObject({ rubric_version: 1, examined_count: 3, scored_count: 3, already_scored_count: 0, failed_count: 0, not_sampled_count: 0, over_daily_cap_count: 0 });
    expect(judged).toBe(3);

    const listed = await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results`);
    expect(listed.status).toBe(200);
    expect(listed.body.has_more).toBe(false);
    // Oldest call first.
    expect(listed.body.items.map((result: any) => result.call_id)).toEqual([calm.call_id, angry.call_id, kept.call_id]);
    const [calmResult, angryResult, keptResult] = listed.body.items;

    const calmScores = { resolution: 100, hallucination: 50, tone: 100, instruction_following: 100, latency: latency(calm.latency?.e2e?.p50) };
    expect(scoresOf(calmResult)).toEqual(calmScores);
    expect(calmResult).toMatchObject({
      result_id: expect.stringMatching(/^qa_result_[0-9a-f]{24}$/),
      cohort_id: cohort.cohort_id,
      agent_id: a.agent.agent_id,
      rubric_version: 1,
      status: 'scored',
      transcript_available: true,
      machine: { scorer: 'rules', overall_score: overall(calmScores), passed: overall(calmScores) >= 70, pass_threshold: 70 },
      call: { call_successful: true, user_sentiment: calm.call_analysis.user_sentiment, duration_ms: calm.duration_ms, data_storage_setting: 'everything' },
    });
    const reason = (result: any, name: string) => result.machine.criteria.find((criterion: any) => criterion.name === name).reason;
    expect(reason(calmResult, 'hallucination')).toBe(`The agent said "${GREETING}": 12 is in neither its prompt, its knowledge bases nor the caller's words`);
    expect(reason(calmResult, 'tone')).toBe(`The caller never sounded angry; they opened with "${CALM[0]}"`);
    expect(reason(calmResult, 'resolution')).toBe(`The call's analysis judged it successful; the caller's last words were "${CALM[0]}"`);

    const angryScores = { resolution: 0, hallucination: 50, tone: 50, instruction_following: 50, latency: latency(angry.latency?.e2e?.p50) };
    expect(scoresOf(angryResult)).toEqual(angryScores);
    expect(angryResult.machine).toMatchObject({ overall_score: overall(angryScores), passed: false });
    expect(reason(angryResult, 'tone')).toMatch(new RegExp(`^The caller said "${ANGRY[0]}" and the agent answered ".+" without acknowledging it$`));
    expect(reason(angryResult, 'instruction_following')).toMatch(/^1 of 2 rules broken: the prompt says "Never say "guaranteed"\." but the agent said ".*guaranteed.*"$/);

    // Kept without transcript: scored on the analysis and the latency, and says so.
    const keptScores = { resolution: 0, hallucination: null, tone: 50, instruction_following: null, latency: latency(kept.latency?.e2e?.p50) };
    expect(scoresOf(keptResult)).toEqual(keptScores);
    expect(keptResult).toMatchObject({
      transcript_available: false,
      note: expect.stringContaining('basic attributes only'),
      machine: { overall_score: overall(keptScores), passed: false },
      call: { data_storage_setting: 'basic_attributes_only', user_sentiment: 'Negative' },
    });
    expect(reason(keptResult, 'hallucination')).toBe('The call kept no transcript (its data storage setting is basic_attributes_only): not assessed');
    expect(JSON.stringify(keptResult)).not.toContain('40 minutes');

    // One by ID; filters; the score order.
    expect((await ws.api.get(`/qa/results/${angryResult.result_id}`)).body).toEqual(angryResult);
    const ids = async (query: string) => (await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results?${query}`)).body.items.map((result: any) => result.call_id);
    expect(await ids('passed=false')).toEqual([angry.call_id, kept.call_id].filter((id) => id !== calm.call_id || overall(calmScores) < 70));
    expect(await ids('criterion=tone&max_score=50')).toEqual([angry.call_id, kept.call_id]);
    expect(await ids('criterion=hallucination')).toEqual([calm.call_id, angry.call_id]);
    expect(await ids('order=score')).toEqual(
      [calmResult, angryResult, keptResult].sort((x, y) => x.machine.overall_score - y.machine.overall_score || (x.call_id < y.call_id ? -1 : 1)).map((result) => result.call_id),
    );
    const firstPage = await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results?limit=2`);
    expect(firstPage.body).toMatchObject({ has_more: true, pagination_key: angryResult.result_id });
    expect(await ids(`limit=2&pagination_key=${angryResult.result_id}`)).toEqual([kept.call_id]);

    // A second run finds every call scored under this rubric version.
    judged = 0;
    const again = await runToEnd(ws.api, cohort.cohort_id);
    expect(again.run).toMatchObject({ examined_count: 3, scored_count: 0, already_scored_count: 3 });
    expect(judged).toBe(0);

    // Another workspace cannot read the results.
    const other = await app.newWorkspace();
    expect((await other.api.get(`/qa/results/${calmResult.result_id}`)).body).toEqual({ status: 404, message: `QA result ${calmResult.result_id} not found` });
  }, 180_000);

  it('scores each call once when a run\'s message is delivered three times', async () => {
    const ws = await app.newWorkspace();
    const a = await newAgentWithNumber(ws.api, { llm: { general_prompt: RULES, begin_message: GREETING } });
    const calls = await placeCalls(ws.api_key, a.number, [CALM, ANGRY, CALM, ANGRY], 7201);
    const cohort = (await ws.api.post('/qa/cohorts', { body: { name: 'Twice', selection: { agent_ids: [a.agent.agent_id] } } })).body;
    judged = 0;
    const started = (await ws.api.post(`/qa/cohorts/${cohort.cohort_id}/run`)).body;
    // The queued message runs in the background; two more deliveries of it run here, at once.
    const message = { kind: 'qa-run' as const, workspace_id: ws.workspace_id, cohort_id: cohort.cohort_id, run_id: started.run_id };
    await Promise.all([runQaMessage(message), runQaMessage(message)]);
    const done = await eventually(() => ws.api.get(`/qa/cohorts/${cohort.cohort_id}`), (res: any) => res.body.last_run?.status === 'complete', 90_000);
    expect((done as any).body.last_run).toMatchObject({ run_id: started.run_id, examined_count: 4, scored_count: 4, already_scored_count: 0, failed_count: 0 });
    expect(judged).toBe(4);
    const results = (await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results`)).body.items;
    expect(results.map((result: any) => result.call_id)).toEqual(calls.map((call) => call.call_id));
    expect(new Set(results.map((result: any) => result.result_id)).size).toBe(4);
  }, 180_000);

  it('auto-scores new matching calls once their analysis lands, and fails a result the model answers badly twice', async () => {
    const ws = await app.newWorkspace();
    // The figure is in this agent's prompt: nothing it says is unsupported.
    const b = await newAgentWithNumber(ws.api, { llm: { general_prompt: `${RULES} Parking costs 12 dollars an hour.`, begin_message: GREETING } });
    const cohort = (await ws.api.post('/qa/cohorts', { body: { name: 'Auto', auto_score: true, selection: { agent_ids: [b.agent.agent_id] } } })).body;
    const [call] = await placeCalls(ws.api_key, b.number, [CALM], 7301);
    const listed = await eventually(() => ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results`), (res: any) => res.body.items.length === 1, 60_000);
    const result = (listed as any).body.items[0];
    expect(result).toMatchObject({ call_id: call.call_id, status: 'scored', transcript_available: true });
    expect(scoresOf(result)).toMatchObject({ resolution: 100, hallucination: 100, tone: 100, instruction_following: 100 });
    expect(result.machine.criteria.find((criterion: any) => criterion.name === 'hallucination').reason).toBe(`Every figure the agent stated is grounded, e.g. "${GREETING}"`);
    // A run afterwards finds it scored.
    const { run } = await runToEnd(ws.api, cohort.cohort_id);
    expect(run).toMatchObject({ examined_count: 1, scored_count: 0, already_scored_count: 1 });

    // A new rubric version; the model answers badly twice: the result fails, saying why, and nothing else is written.
    await ws.api.patch(`/qa/cohorts/${cohort.cohort_id}`, { body: { rubric: { criteria: [{ name: 'greets', description: 'The agent says "thank you for calling"', weight: 1 }], pass_threshold: 50 } } });
    malformed = true;
    judged = 0;
    try {
      const failedRun = await runToEnd(ws.api, cohort.cohort_id);
      expect(failedRun.run).toMatchObject({ rubric_version: 2, examined_count: 1, scored_count: 0, failed_count: 1 });
    } finally {
      malformed = false;
    }
    expect(judged).toBe(2);
    const failed = (await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results`)).body.items[0];
    expect(failed).toMatchObject({ call_id: call.call_id, rubric_version: 2, status: 'failed', failure_reason: expect.stringMatching(/^The judging model answered twice without the expected JSON \(criteria: /) });
    expect(failed.machine).toBeUndefined();
    // The version 1 result stays; a later run scores the failed one.
    expect((await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results?rubric_version=1`)).body.items[0].result_id).toBe(result.result_id);
    const retried = await runToEnd(ws.api, cohort.cohort_id);
    expect(retried.run).toMatchObject({ scored_count: 1, failed_count: 0 });
    const rescored = (await ws.api.get(`/qa/results/${failed.result_id}`)).body;
    expect(rescored).toMatchObject({ status: 'scored', machine: { criteria: [{ name: 'greets', score: 100, reason: `The agent said "${GREETING}"` }], overall_score: 100, passed: true } });
    expect(rescored.failure_reason).toBeUndefined();
  }, 180_000);
});
