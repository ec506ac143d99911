/**
 * `npm run cli -- test`: runs a batch test against any Parley (local or deployed: its base
 * URL and an API key with the `agents` scope), prints each run's verdict and explanation,
 * and exits non-zero when a run did not pass, so an agent's regressions block a merge in
 * any CI (docs/testing.md, "In CI"). It is a plain client of the public API: nothing here
 * touches a store.
 */

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

interface Run {
  test_case_job_id: string;
  status: string;
  result_explanation?: string | null;
  test_case_definition_snapshot: { name: string };
}

interface Page<T> {
  items: T[];
  has_more: boolean;
  pagination_key?: string;
}

interface Batch {
  test_case_batch_job_id: string;
  status: 'in_progress' | 'complete';
  response_engine: { version?: number | null };
  total_count: number;
  pass_count: number;
  fail_count: number;
  error_count: number;
}

class RequestFailed extends Error {}

async function request<T>(options: AgentTestOptions, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
  const response = await fetch(new URL(path, options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`), {
    method,
    headers: { authorization: `Bearer ${options.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  if (!response.ok) {
    let message = text.slice(0, 500);
    try {
      message = (JSON.parse(text) as { message?: string }).message ?? message;
    } catch {
      // not JSON: the text as it came
    }
    throw new RequestFailed(`${method} ${path}: ${response.status} ${message}`);
  }
  return JSON.parse(text) as T;
}

const engineQuery = (options: AgentTestOptions) =>
  options.engine.type === 'retell-llm' ? `type=retell-llm&llm_id=${encodeURIComponent(options.engine.llm_id)}` : `type=conversation-flow&conversation_flow_id=${encodeURIComponent(options.engine.conversation_flow_id)}`;

async function everyCase(options: AgentTestOptions): Promise<string[]> {
  const ids: string[] = [];
  let key: string | undefined;
  do {
    const page = await request<Page<{ test_case_definition_id: string }>>(options, 'GET', `v2/list-test-case-definitions?${engineQuery(options)}&limit=1000${key ? `&pagination_key=${key}` : ''}`);
    ids.push(...page.items.map((item) => item.test_case_definition_id));
    key = page.has_more ? page.pagination_key : undefined;
  } while (key);
  return ids;
}

/** Runs the batch and answers the exit code: 0 every run passed, 1 otherwise (or on a failure to run it). */
export async function runAgentTest(options: AgentTestOptions, out: Output = { log: console.log, error: console.error }): Promise<number> {
  try {
    const caseIds = options.caseIds.length ? options.caseIds : await everyCase(options);
    if (!caseIds.length) {
      out.error('No test case definitions for this engine: nothing to run');
      return 1;
    }
    const engine = { ...options.engine, ...(options.version !== undefined ? { version: options.version } : {}) };
    const created = await request<Batch>(options, 'POST', 'create-batch-test', { response_engine: engine, test_case_definition_ids: caseIds });
    const batchId = created.test_case_batch_job_id;
    out.log(`Batch test ${batchId}: ${caseIds.length} case${caseIds.length === 1 ? '' : 's'} against version ${created.response_engine.version}`);
    const deadline = Date.now() + options.timeoutMs;
    let batch = created;
    while (batch.status !== 'complete') {
      if (Date.now() > deadline) {
        out.error(`Batch test ${batchId} did not complete within ${Math.round(options.timeoutMs / 1000)} s`);
        return 1;
      }
      await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 2000));
      batch = await request<Batch>(options, 'GET', `get-batch-test/${batchId}`);
    }
    const runs: Run[] = [];
    let key: string | undefined;
    do {
      const page = await request<Page<Run>>(options, 'GET', `v2/list-test-runs/${batchId}?limit=1000${key ? `&pagination_key=${key}` : ''}`);
      runs.push(...page.items);
      key = page.has_more ? page.pagination_key : undefined;
    } while (key);
    for (const run of runs) {
      out.log(`${run.status.toUpperCase()} ${run.test_case_definition_snapshot.name} (${run.test_case_job_id})`);
      for (const line of (run.result_explanation ?? '').split('\n').filter(Boolean)) out.log(`  ${line}`);
    }
    out.log(`${batch.pass_count} passed, ${batch.fail_count} failed, ${batch.error_count} errors`);
    return batch.pass_count === batch.total_count ? 0 : 1;
  } catch (error) {
    out.error(error instanceof RequestFailed ? error.message : `The batch test could not run: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
}
