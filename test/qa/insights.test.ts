import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { recordSmsCharge } from '../../shared/billing/index.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { config } from '../../shared/platform/config.ts';
import { runQaMessage } from '../../shared/qa/runs/runner.ts';
import { chargeScoredResult } from '../../shared/qa/usage/charge.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { call } from '../support/http.ts';
import { retellClient } from '../support/sdk.ts';

/*
 * QA insights and usage (docs/qa.md, "Overview", "Top questions", "Metrics", "Usage and
 * billing") over sandbox calls scored by the offline rules: the overview's figures equal
 * those computed here from the results; callers asking about parking in different words
 * make the top cluster; the workspace's metrics; the month's QA minutes, the free
 * allowance and the ledger line, charged once however often a result's charge is retried;
 * the spend check refusing a run (402) and failing scoring until a later run; another
 * workspace's IDs 404; members read.
 */
const app = await startTestApp();
const background = startBackgroundWork([jobNamed('call-steps')]);
config.QA_FREE_MINUTES_PER_MONTH = 2;
afterAll(() => background.stop());

async function eventually<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms; last value: ${JSON.stringify(value).slice(0, 2000)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

const PROMPT = 'You answer calls for Parley Parking. Always say "thank you for calling".';
const GREETING = 'Thank you for calling Parley Parking.';
const SCRIPTS = [
  ['Where can I park my car?'],
  ['Hi there. Is there parking for my car?', 'What time do you open?'],
  ['This is terrible, I have been waiting for 40 minutes!', 'Can I get a refund?'],
  ['Can I park the car nearby?'],
];

async function placeCalls(apiKey: string, from: string, scripts: string[][], firstCallee: number) {
  const client = retellClient(app.url, apiKey);
  const placed: any[] = [];
  for (const [index, says] of scripts.entries()) {
    placed.push(await client.call.createPhoneCall({ from_number: from, to_number: `+1415556${firstCallee + index}`, metadata: { sandbox_call_ms: 500, sandbox_user_says: says } }));
  }
  return Promise.all(placed.map((placedCall) => eventually(() => client.call.retrieve(placedCall.call_id) as Promise<any>, (got) => got.call_analysis !== undefined)));
}

async function runToEnd(api: any, cohortId: string) {
  const started = await api.post(`/qa/cohorts/${cohortId}/run`);
  expect(started.status).toBe(202);
  return (await eventually(() => api.get(`/qa/cohorts/${cohortId}`), (res: any) => res.body.last_run?.status === 'complete')).body.last_run;
}

const round2 = (value: number) => Math.round(value * 100) / 100;
const round4 = (value: number) => Math.round(value * 10_000) / 10_000;
const mean = (values: number[]) => (values.length ? values.reduce((sum, value) => sum + value, 0) / values.length : null);
const minutes = (result: any) => Math.ceil(result.call.duration_ms / 60_000);

describe('QA insights over sandbox calls', () => {
  it('answers the overview, top questions, metrics and usage exactly, and charges the minutes beyond the free allowance once', async () => {
    const ws = await app.newWorkspace();
    const a = await newAgentWithNumber(ws.api, { llm: { general_prompt: PROMPT, begin_message: GREETING } });
    const calls = await placeCalls(ws.api_key, a.number, SCRIPTS, 1001);
    const cohort = (await ws.api.post('/qa/cohorts', { body: { name: 'Parking', selection: { agent_ids: [a.agent.agent_id] } } })).body;
    const empty = (await ws.api.post('/qa/cohorts', { body: { name: 'Nobody', selection: { agent_ids: [a.agent.agent_id], start_timestamp: 0, end_timestamp: 1 } } })).body;
    expect(await runToEnd(ws.api, cohort.cohort_id)).toMatchObject({ scored_count: 4, failed_count: 0 });
    const results = (await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results?limit=200`)).body.items;
    expect(results.map((result: any) => result.call_id)).toEqual(calls.map((placed) => placed.call_id));

    // The overview: each figure computed here from the results.
    const overall = results.map((result: any) => result.machine.overall_score as number);
    const passRate = round4(results.filter((result: any) => result.machine.passed).length / results.length);
    const overview = await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/overview`);
    expect(overview.status).toBe(200);
    const buckets = Array.from({ length: 10 }, (_, index) => ({
      min_score: index * 10,
      max_score: index === 9 ? 100 : index * 10 + 10,
      count: overall.filter((score: number) => Math.min(9, Math.floor(score / 10)) === index).length,
    }));
    const criteria = ['resolution', 'hallucination', 'tone', 'instruction_following', 'latency'].map((name) => {
      const scores = results.map((result: any) => result.machine.criteria.find((criterion: any) => criterion.name === name).score).filter((score: any) => score !== null);
      return { name, average_score: scores.length ? round2(mean(scores)!) : null, assessed_count: scores.length };
    });
    const byDay = (offsetMs: number) => {
      const days = new Map<string, any[]>();
      for (const result of results) {
        const date = new Date(result.call.start_timestamp + offsetMs).toISOString().slice(0, 10);
        days.set(date, [...(days.get(date) ?? []), result]);
      }
      return [...days].sort().map(([date, items]) => ({
        date,
        count: items.length,
        average_score: round2(mean(items.map((item) => item.machine.overall_score))!),
        pass_rate: round4(items.filter((item) => item.machine.passed).length / items.length),
      }));
    };
    const worst = [...results]
      .sort((x: any, y: any) => x.machine.overall_score - y.machine.overall_score || (x.call_id < y.call_id ? -1 : 1))
      .map((result: any) => ({ result_id: result.result_id, call_id: result.call_id, overall_score: result.machine.overall_score, passed: result.machine.passed }));
    expect(overview.body).toEqual({
      cohort_id: cohort.cohort_id,
      rubric_version: 1,
      time_range: { start_timestamp: 0, end_timestamp: expect.any(Number), timezone: 'UTC' },
      results_count: 4,
      scored_count: 4,
      failed_count: 0,
      pass_rate: passRate,
      average_score: round2(mean(overall)!),
      truncated: false,
      score_distribution: buckets,
      criteria,
      trends: byDay(0),
      worst_calls: worst,
    });
    // The angry caller's call is among the worst; days in another time zone (UTC+14, no daylight saving).
    expect(overview.body.worst_calls[0].overall_score).toBe(Math.min(...overall));
    const kiritimati = await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/overview?timezone=Pacific/Kiritimati`);
    expect(kiritimati.body.trends).toEqual(byDay(14 * 3600_000));
    // A range the calls are not in; a bad time zone or range is a 400.
    const later = await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/overview?start_timestamp=${Date.now() + 60_000}`);
    expect(later.body).toMatchObject({ results_count: 0, pass_rate: null, average_score: null, trends: [], worst_calls: [] });
    expect(later.body.score_distribution.every((bucket: any) => bucket.count === 0)).toBe(true);
    expect((await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/overview?timezone=Mars/Olympus`)).status).toBe(400);
    expect((await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/overview?start_timestamp=10&end_timestamp=5`)).body).toEqual({
      status: 400,
      message: expect.stringContaining('end_timestamp'),
    });

    // Top questions: three ways of asking about parking make the top cluster.
    const top = await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/top-questions`);
    expect(top.status).toBe(200);
    expect(top.body).toMatchObject({ calls_read: 4, calls_without_transcript: 0, questions_count: 5, truncated: false, embedder: 'offline-hash-256' });
    const [parking, ...rest] = top.body.clusters;
    expect(parking.count).toBe(3);
    expect(parking.label.toLowerCase()).toContain('park');
    expect(parking.examples).toEqual([
      { quote: 'Where can I park my car?', call_id: calls[0].call_id },
      { quote: 'Is there parking for my car?', call_id: calls[1].call_id },
      { quote: 'Can I park the car nearby?', call_id: calls[3].call_id },
    ]);
    expect(rest.map((cluster: any) => [cluster.label, cluster.count])).toEqual([
      ['What time do you open?', 1],
      ['Can I get a refund?', 1],
    ]);

    // Metrics: the workspace's cohorts, this one's figures as its overview's.
    const metrics = await ws.api.get('/qa/metrics');
    expect(metrics.status).toBe(200);
    const figures = { results_count: 4, scored_count: 4, failed_count: 0, pass_rate: passRate, average_score: round2(mean(overall)!) };
    expect(metrics.body).toEqual({
      time_range: { start_timestamp: expect.any(Number), end_timestamp: expect.any(Number) },
      cohorts_count: 2,
      ...figures,
      truncated: false,
      cohorts: [
        { cohort_id: empty.cohort_id, name: 'Nobody', rubric_version: 1, results_count: 0, scored_count: 0, failed_count: 0, pass_rate: null, average_score: null, truncated: false },
        { cohort_id: cohort.cohort_id, name: 'Parking', rubric_version: 1, ...figures, truncated: false },
      ],
    });
    expect(metrics.body.time_range.end_timestamp - metrics.body.time_range.start_timestamp).toBe(30 * 24 * 3600_000);

    // Usage: each call's duration rounded up to the minute; 2 free minutes, the rest charged at $0.01.
    const scoredMinutes = results.reduce((sum: number, result: any) => sum + minutes(result), 0);
    const billable = Math.max(0, scoredMinutes - 2);
    const usage = { month: new Date().toISOString().slice(0, 7), minutes_scored: scoredMinutes, results_scored: 4, free_minutes: 2, free_minutes_left: Math.max(0, 2 - scoredMinutes), billable_minutes: billable, price_per_minute_usd: 0.01, charges_usd: round2(billable * 0.01) };
    expect((await ws.api.get('/qa/usage')).body).toEqual(usage);
    const qaEntries = async () => (await ws.api.get('/billing?limit=100')).body.entries.filter((entry: any) => entry.kind === 'qa_charge');
    const entries = await qaEntries();
    expect(entries.reduce((sum: number, entry: any) => sum + entry.lines.qa_scoring, 0)).toBeCloseTo(billable * 0.01, 6);
    for (const entry of entries) expect(entry.amount_usd).toBe(-entry.lines.qa_scoring);
    expect(new Set(entries.map((entry: any) => entry.reference)).size).toBe(entries.length);
    expect(entries.every((entry: any) => results.some((result: any) => result.result_id === entry.reference))).toBe(true);
    expect((await ws.api.get('/billing/usage')).body.totals.qa_scoring).toBe(round2(billable * 0.01));

    // A result's charge retried (a scorer that died after charging, a redelivered message) changes nothing.
    for (const result of results) await chargeScoredResult(ws.workspace_id, { result_id: result.result_id, call_id: result.call_id, duration_ms: result.call.duration_ms });
    await runQaMessage({ kind: 'qa-run', workspace_id: ws.workspace_id, cohort_id: cohort.cohort_id, run_id: (await ws.api.get(`/qa/cohorts/${cohort.cohort_id}`)).body.last_run.run_id });
    expect((await ws.api.get('/qa/usage')).body).toEqual(usage);
    expect(await qaEntries()).toEqual(entries);
    // Another month has nothing scored.
    expect((await ws.api.get('/qa/usage?month=2000-01')).body).toMatchObject({ month: '2000-01', minutes_scored: 0, results_scored: 0, billable_minutes: 0, charges_usd: 0 });
    expect((await ws.api.get('/qa/usage?month=2000-13')).status).toBe(400);

    // Another workspace: the cohort is not found; its own metrics and usage are empty.
    const other = await app.newWorkspace();
    for (const path of ['overview', 'top-questions']) {
      expect((await other.api.get(`/qa/cohorts/${cohort.cohort_id}/${path}`)).body).toEqual({ status: 404, message: expect.stringContaining(cohort.cohort_id) });
    }
    expect((await other.api.get('/qa/metrics')).body).toMatchObject({ cohorts_count: 0, results_count: 0, cohorts: [] });
    expect((await other.api.get('/qa/usage')).body).toMatchObject({ minutes_scored: 0, results_scored: 0 });

    // Members read; a key without the analytics scope does not.
    expect((await ws.api.post('/workspace/members', { body: { email: 'owner@example.com', role: 'admin' } })).status).toBe(201);
    expect((await ws.api.post('/workspace/members', { body: { email: 'member@example.com', role: 'member' } })).status).toBe(201);
    const session = await createSessionFor(ws.workspace_id, 'member@example.com');
    const member = { authorization: `Bearer ${session.session_token}` };
    for (const path of [`/qa/cohorts/${cohort.cohort_id}/overview`, `/qa/cohorts/${cohort.cohort_id}/top-questions`, '/qa/metrics', '/qa/usage']) {
      expect((await call(app.url, 'GET', path, { headers: member })).status).toBe(200);
    }
    const callsOnly = (await ws.api.post('/api-keys', { body: { name: 'calls only', scopes: ['calls'] } })).body.api_key;
    expect((await ws.api.withKey(callsOnly).get('/qa/usage')).status).toBe(403);
  }, 240_000);

  it('refuses a run with the spend check\'s 402, fails scoring while refused, and charges the call once when a later run scores it', async () => {
    const ws = await app.newWorkspace();
    const a = await newAgentWithNumber(ws.api, { llm: { general_prompt: PROMPT, begin_message: GREETING } });
    const [placed] = await placeCalls(ws.api_key, a.number, [SCRIPTS[0]!], 2001);
    // Made after the call's analysis: auto-scoring queued nothing for it.
    const cohort = (await ws.api.post('/qa/cohorts', { body: { name: 'Blocked', auto_score: true, selection: { agent_ids: [a.agent.agent_id] } } })).body;
    // The month's budget spent.
    await ws.api.patch('/billing/settings', { body: { monthly_budget_usd: 0.01 } });
    for (const n of [0, 1]) await recordSmsCharge({ workspaceId: ws.workspace_id, messageId: `message_qa_budget_spender_${n}` });
    const refused = await ws.api.post(`/qa/cohorts/${cohort.cohort_id}/run`);
    expect(refused.status).toBe(402);
    expect(refused.body).toMatchObject({ status: 402, error_code: 'budget_reached', message: expect.stringMatching(/^Monthly budget of \$0\.01 is spent/) });
    expect((await ws.api.get(`/qa/cohorts/${cohort.cohort_id}`)).body.last_run).toBeNull();

    // Scoring while refused (the auto-scoring message): the result fails, saying why; nothing is counted or charged.
    await runQaMessage({ kind: 'qa-score', workspace_id: ws.workspace_id, cohort_id: cohort.cohort_id, call_id: placed.call_id });
    const [failed] = (await ws.api.get(`/qa/cohorts/${cohort.cohort_id}/results`)).body.items;
    expect(failed).toMatchObject({ call_id: placed.call_id, status: 'failed', failure_reason: expect.stringMatching(/^Not scored: the spend check refused \(budget_reached: Monthly budget of \$0\.01 is spent/) });
    expect((await ws.api.get('/qa/usage')).body).toMatchObject({ minutes_scored: 0, results_scored: 0 });

    // The budget lifted: a run scores the call; with the free minutes used up it is charged once.
    await ws.api.patch('/billing/settings', { body: { monthly_budget_usd: null } });
    const saved = config.QA_FREE_MINUTES_PER_MONTH;
    config.QA_FREE_MINUTES_PER_MONTH = 0;
    try {
      expect(await runToEnd(ws.api, cohort.cohort_id)).toMatchObject({ scored_count: 1, failed_count: 0 });
      const scored = (await ws.api.get(`/qa/results/${failed.result_id}`)).body;
      expect(scored.status).toBe('scored');
      const callMinutes = minutes(scored);
      await chargeScoredResult(ws.workspace_id, { result_id: scored.result_id, call_id: scored.call_id, duration_ms: scored.call.duration_ms });
      expect((await ws.api.get('/qa/usage')).body).toMatchObject({ minutes_scored: callMinutes, results_scored: 1, free_minutes: 0, billable_minutes: callMinutes, charges_usd: round2(callMinutes * 0.01) });
      const entries = (await ws.api.get('/billing?limit=100')).body.entries.filter((entry: any) => entry.kind === 'qa_charge');
      expect(entries).toEqual([
        expect.objectContaining({ amount_usd: -round2(callMinutes * 0.01), lines: { qa_scoring: round2(callMinutes * 0.01) }, reference: scored.result_id, description: `QA scoring of call ${placed.call_id} (${callMinutes} min)` }),
      ]);
    } finally {
      config.QA_FREE_MINUTES_PER_MONTH = saved;
    }
  }, 180_000);
});
