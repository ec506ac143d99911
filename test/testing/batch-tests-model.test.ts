import { afterAll, describe, expect, it } from 'vitest';
import { startBackgroundWork } from '../../local/background.ts';
import { jobNamed } from '../../shared/jobs.ts';
import { startTestApp } from '../support/app.ts';
import { newLlm } from '../support/factories.ts';
import { completion, startFakeOpenAi, type RecordedRequest } from '../support/fake-openai.ts';
import { retellClient } from '../support/sdk.ts';
import { eventually } from '../support/webhook-receiver.ts';

/*
 * A batch test with a language model configured (a scripted OpenAI-compatible server): the
 * definition's model plays the caller and judges, through the same adapter as every other
 * model call; the engine's turns go to the same provider.
 */

const app = await startTestApp();
const background = startBackgroundWork([jobNamed('call-steps')]);
const fake = await startFakeOpenAi();
const { OpenAiCompatibleModel, useLanguageModel } = await import('../../shared/vendors/llm/index.ts');
useLanguageModel(new OpenAiCompatibleModel({ baseUrl: fake.url, retryBaseMs: 10 }));
afterAll(async () => {
  useLanguageModel(undefined);
  await background.stop();
});
const retell = retellClient(app.url, app.workspace.api_key);

const systemOf = (request: RecordedRequest): string => request.body.messages.find((message: { role: string }) => message.role === 'system')?.content ?? '';
const isCaller = (request: RecordedRequest) => systemOf(request).startsWith('You play a caller');
const isJudge = (request: RecordedRequest) => systemOf(request).startsWith('You judge a test');

describe('batch tests with a configured model', () => {
  it('has the definition\'s model play the caller and judge each criterion, and fails naming the criterion the model says was not met', async () => {
    fake.setDefault((request) => {
      if (isCaller(request)) {
        const said = request.body.messages.filter((message: { role: string }) => message.role === 'assistant').length;
        return { body: completion(JSON.stringify(said === 0 ? { line: 'When do you open tomorrow?', hang_up: false } : { line: '', hang_up: true })) };
      }
      if (isJudge(request)) {
        return {
          body: completion(
            JSON.stringify({
              criteria: [
                { passed: true, explanation: 'The agent greeted the caller.' },
                { passed: false, explanation: 'The agent never gave an opening time.' },
              ],
            }),
          ),
        };
      }
      return { body: completion('We are a restaurant.') };
    });
    const llm = await newLlm(app.api, { general_prompt: 'You answer for a restaurant.', begin_message: 'Hello, Luigi\'s here.' });
    const definition = await retell.tests.createTestCaseDefinition({
      name: 'Opening hours',
      user_prompt: 'You are Sam, you want to know when the restaurant opens tomorrow.',
      metrics: ['The agent greets the caller', 'The agent gives the opening time'],
      llm_model: 'gpt-5-mini',
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id },
    });
    const created = await retell.tests.createBatchTest({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [definition.test_case_definition_id] });
    const batch = await eventually(() => retell.tests.getBatchTest(created.test_case_batch_job_id), (found) => found.status === 'complete', 60_000);
    expect(batch).toMatchObject({ pass_count: 0, fail_count: 1, error_count: 0 });

    const [run] = (await retell.tests.listTestRuns(created.test_case_batch_job_id)).items;
    expect(run!.result_explanation).toBe('Criterion 2 not met: "The agent gives the opening time": The agent never gave an opening time.');
    expect((run!.transcript_snapshot as { messages: unknown[]; ended_by: string })).toMatchObject({
      ended_by: 'caller',
      messages: [
        { role: 'agent', content: 'Hello, Luigi\'s here.' },
        { role: 'user', content: 'When do you open tomorrow?' },
        { role: 'agent', content: 'We are a restaurant.' },
      ],
    });

    const callers = fake.requests.filter(isCaller);
    const judges = fake.requests.filter(isJudge);
    expect(callers).toHaveLength(2);
    expect(judges).toHaveLength(1);
    for (const request of [...callers, ...judges]) {
      expect(request.body.model).toBe('gpt-5-mini');
      expect(request.body.response_format).toEqual({ type: 'json_object' });
    }
    expect(systemOf(callers[0]!)).toContain('You are Sam, you want to know when the restaurant opens tomorrow.');
    const judged = JSON.parse(judges[0]!.body.messages.at(-1).content);
    expect(judged).toMatchObject({
      criteria: ['The agent greets the caller', 'The agent gives the opening time'],
      ended_by: 'caller',
      transcript: [
        { role: 'agent', content: 'Hello, Luigi\'s here.' },
        { role: 'user', content: 'When do you open tomorrow?' },
        { role: 'agent', content: 'We are a restaurant.' },
      ],
    });
  });

  it('records a run the model cannot judge as an error, and the batch still completes', async () => {
    fake.setDefault((request) => (isJudge(request) ? { body: completion('{"criteria": []}') } : isCaller(request) ? { body: completion('{"line": "", "hang_up": true}') } : { body: completion('Hi.') }));
    const llm = await newLlm(app.api, { general_prompt: 'You help.' });
    const definition = await retell.tests.createTestCaseDefinition({
      name: 'Anything',
      user_prompt: 'You are Lee.',
      metrics: ['The agent is polite'],
      response_engine: { type: 'retell-llm', llm_id: llm.llm_id },
    });
    const created = await retell.tests.createBatchTest({ response_engine: { type: 'retell-llm', llm_id: llm.llm_id }, test_case_definition_ids: [definition.test_case_definition_id] });
    const batch = await eventually(() => retell.tests.getBatchTest(created.test_case_batch_job_id), (found) => found.status === 'complete', 60_000);
    expect(batch).toMatchObject({ pass_count: 0, fail_count: 0, error_count: 1 });
    const [run] = (await retell.tests.listTestRuns(created.test_case_batch_job_id)).items;
    expect(run).toMatchObject({ status: 'error', result_explanation: 'The run could not finish: The judging model answered 0 verdicts for 1 criteria' });
  });
});
