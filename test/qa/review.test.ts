import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { createSessionFor } from '../../shared/members/sessions.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { normalisedWords, wordErrorRate } from '../../shared/qa/review/wer.ts';
import { OfflineModel, useLanguageModel, type LanguageModel } from '../../shared/vendors/llm/index.ts';
import type { CompletionRequest } from '../../shared/vendors/llm/types.ts';
import { startTestApp } from '../support/app.ts';
import { newAgentWithNumber } from '../support/factories.ts';
import { call } from '../support/http.ts';
import { retellClient } from '../support/sdk.ts';
import { tableMentions } from '../support/table-mentions.ts';

/*
 * Human review of QA results (docs/qa.md, "Review", "WER", "Calibration", "Privacy"): a
 * review kept beside the machine's scores, roles, isolation and 400s; a corrected
 * transcript's WER against a hand-computed value; calibration figures computed by hand on
 * four reviewed results; a call's results gone after its delete and after a privacy erase.
 */
const app = await startTestApp();
const background = startBackgroundWork([jobNamed('call-steps'), jobNamed('export-jobs')]);

/** The offline model, answering the judging requests badly when told (a failed result). */
const offline = new OfflineModel();
let malformed = false;
useLanguageModel({
  complete: (request: CompletionRequest) =>
    malformed && request.offlineHint === 'qa_score'
      ? Promise.resolve({ content: '{"criteria": "no"}', usage: { prompt_tokens: 1, completion_tokens: 1 }, model: request.model, provider: 'offline', finishReason: 'stop' })
      : offline.complete(request),
  stream: (request: CompletionRequest) => offline.stream(request),
} as LanguageModel);
afterAll(async () => {
  useLanguageModel(undefined);
  await background.stop();
});

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
const CALM = ['Hi, where can I park my car near the station?'];
const ANGRY = ['This is terrible, I have been waiting for 40 minutes!'];
/** Resolution and tone weigh alike: a calm call scores (100, 100), overall 100; an angry one (0, 50), overall 25. */
const RUBRIC = {
  criteria: [
    { name: 'resolution', type: 'resolution', weight: 1, description: "The caller's problem was solved" },
    { name: 'tone', type: 'tone', weight: 1, description: 'The agent acknowledged an upset caller' },
  ],
  pass_threshold: 70,
};

async function placeCalls(apiKey: string, from: string, scripts: { says: string[]; to: string }[]) {
  const client = retellClient(app.url, apiKey);
  const placed: any[] = [];
  for (const { says, to } of scripts) {
    placed.push(await client.call.createPhoneCall({ from_number: from, to_number: to, metadata: { sandbox_call_ms: 500, sandbox_user_says: says } }));
  }
  return Promise.all(placed.map((one) => eventually(() => client.call.retrieve(one.call_id) as Promise<any>, (got) => got.call_analysis !== undefined)));
}

async function runToEnd(api: any, cohortId: string) {
  expect((await api.post(`/qa/cohorts/${cohortId}/run`)).status).toBe(202);
  await eventually(() => api.get(`/qa/cohorts/${cohortId}`), (res: any) => res.body.last_run?.status === 'complete');
  return (await api.get(`/qa/cohorts/${cohortId}/results`)).body.items as any[];
}

describe('WER', () => {
  it('aligns words: reference 10 words, one substitution, one deletion, one insertion is 0.3', () => {
    const hypothesis = normalisedWords('Hi, where can I park my car near the station?');
    const reference = normalisedWords('Where could I park my red car near the station?');
    expect(reference).toHaveLength(10);
    expect(wordErrorRate(reference, hypothesis)).toEqual({ wer: 0.3, substitutions: 1, deletions: 1, insertions: 1, reference_words: 10, hypothesis_words: 10 });
    expect(wordErrorRate(['a', 'b'], [])).toMatchObject({ wer: 1, deletions: 2 });
    expect(wordErrorRate(['a'], ['a', 'b', 'c'])).toMatchObject({ wer: 2, insertions: 2 });
    expect(normalisedWords("Don't  stop—it's 12.50 €, OK?")).toEqual(['dont', 'stop', 'its', '12', '50', 'ok']);
  });
});

describe('reviewing QA results', () => {
  it('keeps a review beside the machine score, answers a WER, and calibrates', async () => {
    const ws = await app.newWorkspace();
    const a = await newAgentWithNumber(ws.api, { llm: { general_prompt: PROMPT, begin_message: GREETING } });
    const basic = await newAgentWithNumber(ws.api, { llm: { general_prompt: PROMPT, begin_message: GREETING }, agent: { data_storage_setting: 'basic_attributes_only' } });
    const [calm1, angry1, calm2, angry2] = await placeCalls(ws.api_key, a.number, [
      { says: CALM, to: '+14155558001' },
      { says: ANGRY, to: '+14155558002' },
      { says: CALM, to: '+14155558003' },
      { says: ANGRY, to: '+14155558004' },
    ]);
    const [kept] = await placeCalls(ws.api_key, basic.number, [{ says: CALM, to: '+14155558005' }]);
    await eventually(() => retellClient(app.url, ws.api_key).call.retrieve(kept.call_id) as Promise<any>, (got) => got.transcript_object === undefined);
    const cohort = (await ws.api.post('/qa/cohorts', { body: { name: 'Reviewed', rubric: RUBRIC, selection: { agent_ids: [a.agent.agent_id, basic.agent.agent_id] } } })).body;
    const results = await runToEnd(ws.api, cohort.cohort_id);
    expect(results.map((result) => result.call_id)).toEqual([calm1.call_id, angry1.call_id, calm2.call_id, angry2.call_id, kept.call_id]);
    const [r1, r2, r3, r4, r5] = results;
    expect(r1.machine).toMatchObject({ overall_score: 100, passed: true });
    expect(r2.machine).toMatchObject({ overall_score: 25, passed: false });

    // No review yet: calibration answers zero counts and says why.
    const empty = await ws.api.post(`/qa/cohorts/${cohort.cohort_id}/calibrate`, { body: {} });
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({
      rubric_version: 1,
      reviewed_count: 0,
      message: 'No reviewed results under rubric version 1: review results with PATCH /qa/results/{result_id} first',
      overall: { count: 0, mean_machine_score: null, pass_threshold: 70, pass_agreement_rate: null, suggested_pass_threshold: 70 },
      criteria: [{ name: 'resolution', count: 0, agreement_rate: null }, { name: 'tone', count: 0 }],
      suggestions: [],
    });

    // A review: kept beside the machine's scores, the overall score recomputed with the rubric's weights.
    const reviewed = await ws.api.patch(`/qa/results/${r1.result_id}`, { body: { scores: { resolution: 100, tone: 70 }, notes: 'Curt greeting' } });
    expect(reviewed.status).toBe(200);
    expect(reviewed.body.machine).toEqual(r1.machine);
    expect(reviewed.body.review).toEqual({
      reviewer: { type: 'api_key', id: expect.any(String) },
      criteria: [
        { name: 'resolution', weight: 1, score: 100, source: 'reviewer' },
        { name: 'tone', weight: 1, score: 70, source: 'reviewer' },
      ],
      overall_score: 85,
      passed: true,
      pass_threshold: 70,
      notes: 'Curt greeting',
      reviewed_timestamp: expect.any(Number),
    });
    expect((await ws.api.get(`/qa/results/${r1.result_id}`)).body).toEqual(reviewed.body);
    // A criterion left out keeps the machine's score; a new review replaces the last (its notes gone).
    const partial = await ws.api.patch(`/qa/results/${r2.result_id}`, { body: { scores: { resolution: 30 }, notes: 'Unsolved' } });
    expect(partial.body.review).toMatchObject({ criteria: [{ name: 'resolution', score: 30, source: 'reviewer' }, { name: 'tone', score: 50, source: 'machine' }], overall_score: 40, passed: false });
    const replaced = await ws.api.patch(`/qa/results/${r2.result_id}`, { body: { scores: { resolution: 30 } } });
    expect(replaced.body.review.notes).toBeUndefined();
    await ws.api.patch(`/qa/results/${r3.result_id}`, { body: { scores: { resolution: 40, tone: 40 } } });
    await ws.api.patch(`/qa/results/${r4.result_id}`, { body: { scores: { resolution: 0, tone: 30 } } });

    for (const [body, message] of [
      [{ scores: { empathy: 50 } }, "scores.empathy: Not a criterion of this result's rubric (resolution, tone)"],
      [{ scores: { tone: 101 } }, 'scores.tone: Must be at most 100'],
      [{ scores: { tone: -1 } }, 'scores.tone: Must be at least 0'],
      [{}, 'scores: Give scores, notes or both'],
    ] as const) {
      const res = await ws.api.patch(`/qa/results/${r1.result_id}`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.message, JSON.stringify(body)).toBe(message);
    }

    // Calibration, by hand (tolerance 10, threshold 70):
    // resolution (machine, reviewer): (100,100) (0,30) (100,40) (0,0): means 50 and 42.5, difference 7.5, absolute 22.5,
    //   within 10: 2 of 4, same side of 70: 3 of 4.
    // tone, where the reviewer scored it: (100,70) (100,40) (50,30): means 83.33 and 46.67, difference 36.67 (the machine higher),
    //   within 10: none, same side: 2 of 3.
    // overall (machine, reviewer, reviewer passed): (100,85,yes) (25,40,no) (100,40,no) (25,15,no): means 62.5 and 45,
    //   absolute 25; the machine's pass agrees 3 of 4 at 70, and no threshold does better.
    const calibrated = await ws.api.post(`/qa/cohorts/${cohort.cohort_id}/calibrate`, { body: {} });
    expect(calibrated.body).toEqual({
      cohort_id: cohort.cohort_id,
      rubric_version: 1,
      tolerance: 10,
      reviewed_count: 4,
      overall: { count: 4, mean_machine_score: 62.5, mean_human_score: 45, mean_absolute_difference: 25, pass_threshold: 70, pass_agreement_rate: 0.75, suggested_pass_threshold: 70 },
      criteria: [
        { name: 'resolution', weight: 1, count: 4, mean_machine_score: 50, mean_human_score: 42.5, mean_difference: 7.5, mean_absolute_difference: 22.5, agreement_rate: 0.5, pass_agreement_rate: 0.75 },
        { name: 'tone', weight: 1, count: 3, mean_machine_score: 83.33, mean_human_score: 46.67, mean_difference: 36.67, mean_absolute_difference: 36.67, agreement_rate: 0, pass_agreement_rate: 0.6667 },
      ],
      suggestions: [
        {
          kind: 'machine_scores_higher',
          criterion: 'tone',
          message: 'The machine scores tone 36.67 points above reviewers on average: clarify its description with what falls short of it, or lower its weight',
          suggested_weight: 0.5,
        },
      ],
    });
    // A wider tolerance: resolution's (0,30) agrees too.
    expect((await ws.api.post(`/qa/cohorts/${cohort.cohort_id}/calibrate`, { body: { tolerance: 30 } })).body.criteria[0].agreement_rate).toBe(0.75);

    // WER: the caller said the CALM line; the corrected line has one substitution, one deletion, one insertion over 10 words.
    const corrected = await ws.api.put(`/qa/results/${r1.result_id}/wer-corrections`, {
      body: { transcript_object: [{ role: 'agent', content: 'Ignored: only the caller was recognised' }, { role: 'user', content: 'Where could I park my red car near the station?' }] },
    });
    expect(corrected.status).toBe(200);
    expect(corrected.body).toEqual({ wer: 0.3, substitutions: 1, deletions: 1, insertions: 1, reference_words: 10, hypothesis_words: 10 });
    expect((await ws.api.get(`/qa/results/${r1.result_id}`)).body.wer_correction).toEqual({ ...corrected.body, corrected_timestamp: expect.any(Number) });
    const noTranscript = await ws.api.put(`/qa/results/${r5.result_id}/wer-corrections`, { body: { transcript_object: [{ role: 'user', content: 'Hello' }] } });
    expect(noTranscript.body).toEqual({ status: 409, message: `The call ${kept.call_id} kept no transcript (its data storage setting), so there is nothing recognised to compare with` });
    const noWords = await ws.api.put(`/qa/results/${r1.result_id}/wer-corrections`, { body: { transcript_object: [{ role: 'agent', content: 'Hello' }] } });
    expect(noWords.body).toEqual({ status: 400, message: 'transcript_object: The corrected transcript has no caller (user) words to compare with' });

    // Isolation: another workspace's IDs are not found.
    const other = await app.newWorkspace();
    expect((await other.api.patch(`/qa/results/${r1.result_id}`, { body: { notes: 'x' } })).body).toEqual({ status: 404, message: `QA result ${r1.result_id} not found` });
    expect((await other.api.put(`/qa/results/${r1.result_id}/wer-corrections`, { body: { transcript_object: [{ role: 'user', content: 'x' }] } })).status).toBe(404);
    expect((await other.api.post(`/qa/cohorts/${cohort.cohort_id}/calibrate`, { body: {} })).body).toEqual({ status: 404, message: `QA cohort ${cohort.cohort_id} not found` });

    // Roles: members read, developers review (recorded as the member).
    // Addresses of their own: a member's address is unique across workspaces.
    const tag = ws.workspace_id.slice(-8);
    const [memberEmail, developerEmail] = [`member-${tag}@example.com`, `dev-${tag}@example.com`];
    expect((await ws.api.post('/workspace/members', { body: { email: `owner-${tag}@example.com`, role: 'admin' } })).status).toBe(201);
    for (const [email, role] of [[memberEmail, 'member'], [developerEmail, 'developer']]) {
      expect((await ws.api.post('/workspace/members', { body: { email, role } })).status).toBe(201);
    }
    const as = (session: { session_token: string }) => ({ authorization: `Bearer ${session.session_token}` });
    const member = as(await createSessionFor(ws.workspace_id, memberEmail));
    const developer = as(await createSessionFor(ws.workspace_id, developerEmail));
    expect((await call(app.url, 'GET', `/qa/results/${r1.result_id}`, { headers: member })).status).toBe(200);
    for (const res of [
      await call(app.url, 'PATCH', `/qa/results/${r1.result_id}`, { headers: member, body: { notes: 'x' } }),
      await call(app.url, 'PUT', `/qa/results/${r1.result_id}/wer-corrections`, { headers: member, body: { transcript_object: [{ role: 'user', content: 'x' }] } }),
      await call(app.url, 'POST', `/qa/cohorts/${cohort.cohort_id}/calibrate`, { headers: member, body: {} }),
    ]) {
      expect(res.body).toEqual({ status: 403, message: 'The member role is read-only' });
    }
    const byDeveloper = await call(app.url, 'PATCH', `/qa/results/${r1.result_id}`, { headers: developer, body: { notes: 'Fine' } });
    expect(byDeveloper.status).toBe(200);
    expect((byDeveloper.body as any).review).toMatchObject({ reviewer: { type: 'member' }, overall_score: 100, notes: 'Fine' });

    // A failed result cannot be reviewed (409).
    const second = (await ws.api.post('/qa/cohorts', { body: { name: 'Failing', rubric: RUBRIC, selection: { agent_ids: [a.agent.agent_id] } } })).body;
    malformed = true;
    let failed: any[];
    try {
      failed = await runToEnd(ws.api, second.cohort_id);
    } finally {
      malformed = false;
    }
    expect(failed[0]).toMatchObject({ status: 'failed' });
    const refused = await ws.api.patch(`/qa/results/${failed[0].result_id}`, { body: { notes: 'x' } });
    expect(refused.body).toEqual({ status: 409, message: `QA result ${failed[0].result_id} is failed: only a scored result can be reviewed or corrected` });
  }, 240_000);
});

describe('privacy', () => {
  it("deletes a call's QA results in every cohort and version with the call, and with a privacy erase of its number", async () => {
    const ws = await app.newWorkspace();
    const a = await newAgentWithNumber(ws.api, { llm: { general_prompt: PROMPT, begin_message: GREETING } });
    const person = '+14155558101';
    const [deleted, erased, stays] = await placeCalls(ws.api_key, a.number, [
      { says: ['My plate is QX-7731, where can I park?'], to: '+14155558100' },
      { says: ['My plate is QY-8842, is this terrible?'], to: person },
      { says: CALM, to: '+14155558102' },
    ]);
    const first = (await ws.api.post('/qa/cohorts', { body: { name: 'One', selection: { agent_ids: [a.agent.agent_id] } } })).body;
    const second = (await ws.api.post('/qa/cohorts', { body: { name: 'Two', rubric: RUBRIC, selection: { agent_ids: [a.agent.agent_id] } } })).body;
    await runToEnd(ws.api, first.cohort_id);
    // Two rubric versions in the second cohort.
    const v1 = await runToEnd(ws.api, second.cohort_id);
    await ws.api.patch(`/qa/cohorts/${second.cohort_id}`, { body: { rubric: { ...RUBRIC, pass_threshold: 60 } } });
    await runToEnd(ws.api, second.cohort_id);
    const reviewedResult = v1.find((result) => result.call_id === deleted.call_id);
    expect((await ws.api.patch(`/qa/results/${reviewedResult.result_id}`, { body: { scores: { tone: 10 }, notes: 'Plate QX-7731 read back' } })).status).toBe(200);
    expect((await ws.api.put(`/qa/results/${reviewedResult.result_id}/wer-corrections`, { body: { transcript_object: [{ role: 'user', content: 'My plate is QX-7731, where can I park?' }] } })).status).toBe(200);
    const itemsMentioning = (text: string) => tableMentions(text, ws.workspace_id);
    const qaItems = async (callId: string) => (await itemsMentioning(callId)).filter((key) => key.split(' ')[0]!.includes('#QA'));
    // Per call: a result in each of three cohort versions, its pointer and its call entry, and a score copy.
    expect(await qaItems(deleted.call_id)).toHaveLength(12);
    expect((await itemsMentioning('QX-7731')).length).toBeGreaterThan(0);

    expect((await ws.api.delete(`/v2/delete-call/${deleted.call_id}`)).status).toBe(204);
    expect(await qaItems(deleted.call_id)).toEqual([]);
    expect(await itemsMentioning('QX-7731')).toEqual([]);
    expect((await ws.api.get(`/qa/results/${reviewedResult.result_id}`)).status).toBe(404);

    const started = await ws.api.post('/privacy/delete-phone-number', { body: { phone_number: person } });
    expect(started.status).toBe(202);
    await eventually(async () => (await ws.api.get(`/privacy/requests/${started.body.request_id}`)).body, (request: any) => request.status === 'complete');
    expect(await qaItems(erased.call_id)).toEqual([]);
    expect(await itemsMentioning('QY-8842')).toEqual([]);
    // The other call's results stay.
    expect(await qaItems(stays.call_id)).toHaveLength(12);
    expect((await ws.api.get(`/qa/cohorts/${first.cohort_id}/results`)).body.items.map((result: any) => result.call_id)).toEqual([stays.call_id]);
  }, 240_000);
});
