/**
 * `npm run cli -- test`: runs a batch test against any Parley (local or deployed: its base
 * URL and an API key with the `agents` scope), prints each run's verdict and explanation,
 * and exits non-zero when a run did not pass, so an agent's regressions block a merge in
 * any CI (docs/testing.md, "In CI"). It is a plain client of the public API, retell-sdk,
 * the client Parley serves unchanged: nothing here touches a store.
 */
import Retell from 'retell-sdk';

export interface AgentTestOptions {
  baseUrl: string;
  apiKey: string;
  engine: { type: 'retell-llm'; llm_id: string } | { type: 'conversation-flow'; conversation_flow_id: string };
  version?: number;
  /** The definitions to run; none: every definition of the engine. */
  caseIds: string[];
  timeoutMs: number;
  pollMs?: number;
}

interface Output {
  log(line: string): void;
  error(line: string): void;
}

/** Every item of a list the API pages with `{items, has_more, pagination_key}`. */
async function everyItem<T>(page: (paginationKey?: string) => Promise<{ items: T[]; has_more: boolean; pagination_key?: string | null }>): Promise<T[]> {
  const items: T[] = [];
  let key: string | undefined;
  do {
    const answer = await page(key);
    items.push(...answer.items);
    key = answer.has_more ? (answer.pagination_key ?? undefined) : undefined;
  } while (key);
  return items;
}

/** The API's refusal as the user reads it: the operation, the status and the API's own message. */
function refusal(operation: string, error: InstanceType<typeof Retell.APIError>): string {
  const message = (error.error as { message?: string } | undefined)?.message ?? error.message;
  return `${operation}: ${error.status ?? 'no answer'} ${message}`;
}

/** Runs the batch and answers the exit code: 0 every run passed, 1 otherwise (or on a failure to run it). */
export async function runAgentTest(options: AgentTestOptions, out: Output = { log: console.log, error: console.error }): Promise<number> {
  const retell = new Retell({ apiKey: options.apiKey, baseURL: options.baseUrl.replace(/\/$/, '') });
  let operation = 'listTestCaseDefinitions';
  try {
    const caseIds = options.caseIds.length
      ? options.caseIds
      : (await everyItem((key) => retell.tests.listTestCaseDefinitions({ ...options.engine, limit: 1000, ...(key ? { pagination_key: key } : {}) }))).map((item) => item.test_case_definition_id);
    if (!caseIds.length) {
      out.error('No test case definitions for this engine: nothing to run');
      return 1;
    }
    operation = 'createBatchTest';
    const created = await retell.tests.createBatchTest({
      response_engine: { ...options.engine, ...(options.version !== undefined ? { version: options.version } : {}) },
      test_case_definition_ids: caseIds,
    });
    const batchId = created.test_case_batch_job_id;
    const engine = created.response_engine;
    out.log(`Batch test ${batchId}: ${caseIds.length} case${caseIds.length === 1 ? '' : 's'} against version ${'version' in engine ? engine.version : 'latest'}`);
    const deadline = Date.now() + options.timeoutMs;
    operation = 'getBatchTest';
    let batch = created;
    while (batch.status !== 'complete') {
      if (Date.now() > deadline) {
        out.error(`Batch test ${batchId} did not complete within ${Math.round(options.timeoutMs / 1000)} s`);
        return 1;
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 2000));
      batch = await retell.tests.getBatchTest(batchId);
    }
    operation = 'listTestRuns';
    const runs = await everyItem((key) => retell.tests.listTestRuns(batchId, { limit: 1000, ...(key ? { pagination_key: key } : {}) }));
    for (const run of runs) {
      out.log(`${run.status.toUpperCase()} ${run.test_case_definition_snapshot.name} (${run.test_case_job_id})`);
      for (const line of (run.result_explanation ?? '').split('\n').filter(Boolean)) out.log(`  ${line}`);
    }
    out.log(`${batch.pass_count} passed, ${batch.fail_count} failed, ${batch.error_count} errors`);
    return batch.pass_count === batch.total_count ? 0 : 1;
  } catch (error) {
    out.error(error instanceof Retell.APIError ? refusal(operation, error) : `The batch test could not run: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}
