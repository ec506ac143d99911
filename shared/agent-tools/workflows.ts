import { PRE_CALL_BUDGET_MS } from './pre-call-budget.ts';
import { ApiError, invalidPaginationKey, notFound } from '../platform/errors.ts';
import { newTimeOrderedId } from '../platform/ids.ts';
import { defineOfflineShape, languageModel } from '../vendors/llm/index.ts';
import { logger } from '../platform/logger.ts';
import { EgressRefused, EgressResponseTooLarge, egressFetch } from '../platform/egress/egress.ts';
import { TEMPLATE_REFERENCE, templateName, WORKFLOW_STAGES, type WorkflowInput, type WorkflowStage, type WorkflowStep } from './schemas.ts';
import { queryAll } from '../platform/store/query.ts';
import { table, TransactionCancelled } from '../platform/store/table.ts';
import { getHead } from '../platform/store/versions.ts';
import {
  agentHeadKey,
  workflowKey,
  workflowRunKey,
  workflowRunsOf,
  workflowsOf,
  type StepLog,
  type Workflow,
  type WorkflowItem,
  type WorkflowRun,
  type WorkflowRunItem,
} from './store.ts';

/*
 * Agent workflows: per stage (pre_call, post_call) a list of steps run in order. An HTTP
 * step calls a URL and maps parts of the JSON response to outputs; an LLM step asks the
 * language model (shared/llm) for named outputs. Every step can use the input variables
 * and earlier steps' outputs as `{{name}}` templates. The outputs of a pre-call workflow
 * join the call's dynamic variables (spec: Inbound call webhook, step 7).
 *
 * A workflow belongs to the agent, not to an agent version (like environment tags), and
 * is deleted with the agent. Runs (tests and calls) are recorded for 30 days.
 */

/** How long runs are kept. */
export const RUN_RETENTION_DAYS = 30;
/** An output value is cut to this many characters. */
export const MAX_OUTPUT_CHARS = 4000;
/** At most this much of an HTTP response is read. */
const MAX_RESPONSE_BYTES = 1024 * 1024;
/** A test run (inside an API request, which API Gateway ends at 30 s) stops starting steps after this. */
export const TEST_RUN_BUDGET_MS = 25_000;
/** A pre-call workflow holds up the call's start: it gets this long in all (pre-call-budget.ts). */
export { PRE_CALL_BUDGET_MS };

const toWorkflow = ({ pk: _pk, sk: _sk, ...workflow }: WorkflowItem): Workflow => workflow;

export async function listWorkflows(workspaceId: string, agentId: string): Promise<Workflow[]> {
  await getHead(workspaceId, 'agent', agentId);
  const items = (await queryAll<WorkflowItem>(workflowsOf(workspaceId, agentId))).map(toWorkflow);
  return items.sort((a, b) => WORKFLOW_STAGES.indexOf(a.stage) - WORKFLOW_STAGES.indexOf(b.stage));
}

async function readWorkflow(workspaceId: string, agentId: string, stage: WorkflowStage): Promise<Workflow | undefined> {
  const item = await table.get<WorkflowItem>(workflowKey(workspaceId, agentId, stage));
  return item ? toWorkflow(item) : undefined;
}

/** Replaces the stage's workflow (an empty step list keeps an empty workflow: nothing runs). */
export async function putWorkflow(
  workspaceId: string,
  agentId: string,
  stage: WorkflowStage,
  input: WorkflowInput,
  nowMs = Date.now(),
): Promise<Workflow> {
  const workflow: Workflow = { agent_id: agentId, stage, enabled: input.enabled, steps: input.steps, last_modification_timestamp: nowMs };
  await table
    .transact([
      { Put: { Item: { ...workflowKey(workspaceId, agentId, stage), ...workflow } } },
      // The agent must still exist when its workflow is written.
      { ConditionCheck: { Key: agentHeadKey(workspaceId, agentId), ConditionExpression: 'attribute_exists(pk)' } },
    ])
    .catch((error: unknown) => {
      if (error instanceof TransactionCancelled) throw notFound(`Agent ${agentId} not found`);
      throw error;
    });
  return workflow;
}

// ---------------------------------------------------------------------------------------
// Running

/** `{{name}}` → the variable's value ('' when unset), through `encode` (URLs). */
export function render(text: string, variables: Record<string, string>, encode: (value: string) => string = (v) => v): string {
  return text.replace(TEMPLATE_REFERENCE, (_match, inside: string) => encode(variables[templateName(inside)] ?? ''));
}

function renderJson(value: unknown, variables: Record<string, string>): unknown {
  if (typeof value === 'string') return render(value, variables);
  if (Array.isArray(value)) return value.map((item) => renderJson(item, variables));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, renderJson(item, variables)]));
  }
  return value;
}

const asOutput = (value: unknown): string => {
  const text = typeof value === 'string' ? value : value === null ? '' : JSON.stringify(value);
  return text.length > MAX_OUTPUT_CHARS ? text.slice(0, MAX_OUTPUT_CHARS) : text;
};

function atPath(value: unknown, path: string): unknown {
  let current = value;
  for (const segment of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    if (Array.isArray(current)) {
      if (!/^[0-9]+$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else {
      if (!Object.hasOwn(current, segment)) return undefined;
      current = (current as Record<string, unknown>)[segment];
    }
  }
  return current;
}

/** The URL as logs keep it: no query string or fragment, no credentials. */
function loggedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.origin}${parsed.pathname}`;
  } catch {
    return url.split(/[?#]/)[0]!;
  }
}

/** The egress guard's refusal and response cap as step failures: their messages are the step's error. */
const stepFailure = (error: unknown): never => {
  throw error instanceof EgressRefused || error instanceof EgressResponseTooLarge ? new StepError(error.message) : error;
};

async function readLimited(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read().catch(stepFailure);
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new StepError(`Response exceeds ${MAX_RESPONSE_BYTES / 1024 / 1024} MB`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

class StepError extends Error {}

function transportError(error: unknown, timeoutMs: number, deadline: AbortSignal): string {
  if (error instanceof StepError) return error.message;
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) {
    return deadline.aborted ? 'Workflow time limit reached' : `Timed out after ${timeoutMs} ms`;
  }
  const cause = (error as { cause?: { code?: string } } | undefined)?.cause;
  if (cause?.code) return `Request failed: ${cause.code}`;
  return `Request failed: ${error instanceof Error ? error.message : 'unknown error'}`;
}

interface StepResult {
  log: StepLog;
  values: Record<string, string>;
}

async function runHttpStep(
  step: Extract<WorkflowStep, { type: 'http' }>,
  variables: Record<string, string>,
  deadline: AbortSignal,
  keepExcerpt: boolean,
): Promise<StepResult> {
  const url = render(step.url, variables, encodeURIComponent);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(step.headers)) headers[name] = render(value, variables).replace(/[\r\n]/g, '');
  let body: string | undefined;
  if (typeof step.body === 'string') body = render(step.body, variables);
  else if (step.body !== undefined && step.body !== null) {
    body = JSON.stringify(renderJson(step.body, variables));
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) headers['content-type'] = 'application/json';
  }
  const log: StepLog = {
    name: step.name,
    type: 'http',
    status: 'failed',
    duration_ms: 0,
    outputs: [],
    request: { method: step.method, url: loggedUrl(url) },
  };
  const values: Record<string, string> = {};
  try {
    // Through the egress guard: never an internal address, and a redirect is not followed
    // (the step's headers never go to another address).
    const response = await egressFetch(url, {
      method: step.method,
      headers,
      body,
      timeoutMs: step.timeout_ms,
      maxResponseBytes: MAX_RESPONSE_BYTES,
      signal: deadline,
    }).catch(stepFailure);
    log.response_status = response.status;
    const text = await readLimited(response);
    if (keepExcerpt) log.response_excerpt = text.slice(0, 1000);
    if (response.status < 200 || response.status > 299) throw new StepError(`Endpoint replied ${response.status}`);
    let json: unknown;
    let parsed = false;
    const missing: string[] = [];
    for (const [name, path] of Object.entries(step.outputs)) {
      let value: unknown;
      if (path === '$status') value = String(response.status);
      else if (path === '$body') value = text;
      else {
        if (!parsed) {
          parsed = true;
          try {
            json = JSON.parse(text);
          } catch {
            throw new StepError(`Response is not JSON, so output "${name}" (${path}) cannot be read`);
          }
        }
        value = atPath(json, path);
      }
      if (value === undefined) missing.push(name);
      else values[name] = asOutput(value);
    }
    log.status = 'succeeded';
    log.outputs = Object.keys(values).sort();
    if (missing.length) log.missing_outputs = missing.sort();
  } catch (error) {
    log.error = transportError(error, step.timeout_ms, deadline);
  }
  return { log, values };
}

const OUTPUT_FIELDS_LINE = 'Output fields: ';

async function runLlmStep(
  step: Extract<WorkflowStep, { type: 'llm' }>,
  variables: Record<string, string>,
  deadline: AbortSignal,
): Promise<StepResult> {
  const log: StepLog = { name: step.name, type: 'llm', status: 'failed', duration_ms: 0, outputs: [], model: step.model };
  const values: Record<string, string> = {};
  try {
    const completion = await languageModel().complete({
      model: step.model,
      messages: [
        {
          role: 'system',
          content: [
            'You compute values for a voice agent before or after a call. Follow the instructions and answer',
            'with one JSON object whose fields are exactly the output fields below, each a string.',
            `${OUTPUT_FIELDS_LINE}${step.outputs.join(', ')}`,
          ].join('\n'),
        },
        { role: 'user', content: render(step.prompt, variables) },
      ],
      temperature: step.temperature,
      responseFormat: 'json',
      offlineHint: 'workflow_outputs',
      timeoutMs: step.timeout_ms,
      signal: deadline,
    });
    const answer = JSON.parse(completion.content) as unknown;
    if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) throw new StepError('The model did not answer with a JSON object');
    const missing: string[] = [];
    for (const name of step.outputs) {
      const value = (answer as Record<string, unknown>)[name];
      if (value === undefined) missing.push(name);
      else values[name] = asOutput(value);
    }
    log.status = 'succeeded';
    log.outputs = Object.keys(values);
    if (missing.length) log.missing_outputs = missing;
  } catch (error) {
    log.error =
      error instanceof ApiError
        ? error.message
        : deadline.aborted
          ? 'Workflow time limit reached'
          : error instanceof StepError
            ? error.message
            : `Model call failed: ${error instanceof Error ? error.message : 'unknown error'}`;
  }
  return { log, values };
}

export interface RunOptions {
  trigger: WorkflowRun['trigger'];
  callId?: string;
  budgetMs: number;
  /** Keep the first 1,000 characters of HTTP responses in the log (tests only; never stored). */
  keepExcerpts?: boolean;
}

/**
 * Runs steps in order. A failed step stops the run unless it has `continue_on_error`;
 * later steps are then `skipped`. Outputs of the steps that ran are kept either way.
 */
export async function executeWorkflow(
  agentId: string,
  stage: WorkflowStage,
  steps: WorkflowStep[],
  input: Record<string, string>,
  options: RunOptions,
): Promise<WorkflowRun> {
  const startedAt = Date.now();
  const started = performance.now();
  const deadline = AbortSignal.timeout(options.budgetMs);
  const variables: Record<string, string> = { ...input };
  const outputs: Record<string, string> = {};
  const logs: StepLog[] = [];
  let stopped = false;
  let failed = false;
  for (const step of steps) {
    if (stopped || deadline.aborted) {
      logs.push({
        name: step.name,
        type: step.type,
        status: 'skipped',
        duration_ms: 0,
        outputs: [],
        ...(!stopped ? { error: 'Workflow time limit reached' } : {}),
      });
      if (!stopped) failed = true;
      continue;
    }
    const stepStarted = performance.now();
    const result =
      step.type === 'http'
        ? await runHttpStep(step, variables, deadline, options.keepExcerpts ?? false)
        : await runLlmStep(step, variables, deadline);
    result.log.duration_ms = Math.round(performance.now() - stepStarted);
    logs.push(result.log);
    Object.assign(outputs, result.values);
    Object.assign(variables, result.values);
    if (result.log.status === 'failed') {
      failed = true;
      if (!step.continue_on_error) stopped = true;
    }
  }
  return {
    run_id: newTimeOrderedId('workflowRun', startedAt),
    agent_id: agentId,
    stage,
    trigger: options.trigger,
    ...(options.callId ? { call_id: options.callId } : {}),
    status: failed ? 'failed' : 'succeeded',
    outputs,
    steps: logs,
    started_timestamp: startedAt,
    duration_ms: Math.round(performance.now() - started),
  };
}

async function recordRun(workspaceId: string, run: WorkflowRun): Promise<void> {
  const stored: WorkflowRunItem = {
    ...workflowRunKey(workspaceId, run.agent_id, run.run_id),
    ...run,
    steps: run.steps.map(({ response_excerpt: _excerpt, ...log }) => log),
    expires_at: Math.floor(run.started_timestamp / 1000) + RUN_RETENTION_DAYS * 86_400,
  };
  await table.put({ Item: stored });
}

/**
 * `POST /agents/{agent_id}/workflows/{stage}/test`: runs the saved workflow (or the
 * unsaved one given) with sample variables, records the run and answers it with the
 * first 1,000 characters of each HTTP response.
 */
export async function testWorkflow(
  workspaceId: string,
  agentId: string,
  stage: WorkflowStage,
  input: { variables: Record<string, string>; workflow?: WorkflowInput },
): Promise<WorkflowRun> {
  await getHead(workspaceId, 'agent', agentId);
  const steps = input.workflow?.steps ?? (await readWorkflow(workspaceId, agentId, stage))?.steps;
  if (!steps) throw notFound(`Agent ${agentId} has no ${stage} workflow; save one or send it as "workflow"`);
  const run = await executeWorkflow(agentId, stage, steps, input.variables, {
    trigger: 'test',
    budgetMs: TEST_RUN_BUDGET_MS,
    keepExcerpts: true,
  });
  await recordRun(workspaceId, run);
  return run;
}

/**
 * For the calls feature (spec: Inbound call webhook, step 7): runs the agent's enabled
 * pre-call workflow with the call's variables and answers its outputs as string dynamic
 * variables, to be merged over the others. No workflow (or a disabled or empty one) is
 * `{}`. A failing step never fails the call: the outputs gathered until then are
 * answered, and the run (with its failure) is recorded.
 */
export async function runPreCallWorkflow(
  workspaceId: string,
  agentId: string,
  input: { variables?: Record<string, string>; call_id?: string } = {},
): Promise<Record<string, string>> {
  const workflow = await readWorkflow(workspaceId, agentId, 'pre_call');
  if (!workflow?.enabled || workflow.steps.length === 0) return {};
  const run = await executeWorkflow(agentId, 'pre_call', workflow.steps, input.variables ?? {}, {
    trigger: 'call',
    callId: input.call_id,
    budgetMs: PRE_CALL_BUDGET_MS,
  });
  await recordRun(workspaceId, run).catch((error: unknown) =>
    logger.error('could not record a pre-call workflow run', { agent_id: agentId, run_id: run.run_id, error }),
  );
  return run.outputs;
}

/** Recorded runs, newest first: `limit`, an optional stage, and the last run ID of the previous page. */
export async function listWorkflowRuns(
  workspaceId: string,
  agentId: string,
  options: { limit: number; stage?: WorkflowStage; pagination_key?: string },
): Promise<WorkflowRun[]> {
  await getHead(workspaceId, 'agent', agentId);
  const partition = workflowRunsOf(workspaceId, agentId);
  let startKey: Record<string, unknown> | undefined;
  if (options.pagination_key !== undefined) {
    const key = workflowRunKey(workspaceId, agentId, options.pagination_key);
    if (!(await table.get(key, { consistent: false, projection: 'pk' }))) throw invalidPaginationKey();
    startKey = { ...key };
  }
  const runs: WorkflowRun[] = [];
  do {
    const page = await table.queryPage<WorkflowRunItem>({
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': partition.pk, ...(options.stage ? { ':stage': options.stage } : {}) },
      ...(options.stage ? { FilterExpression: 'stage = :stage' } : {}),
      ScanIndexForward: false,
      ConsistentRead: true,
      Limit: options.limit,
      ExclusiveStartKey: startKey,
    });
    for (const { pk: _pk, sk: _sk, expires_at: _expires, ...run } of page.items) runs.push(run);
    startKey = page.lastKey;
  } while (startKey && runs.length < options.limit);
  return runs.slice(0, options.limit);
}

/** Offline: each requested output gets a short deterministic value quoting the prompt. */
defineOfflineShape('workflow_outputs', ({ system, user }) => {
  const line = system.split('\n').find((text) => text.startsWith(OUTPUT_FIELDS_LINE)) ?? '';
  const names = line.slice(OUTPUT_FIELDS_LINE.length).split(',').map((name) => name.trim()).filter(Boolean);
  const quoted = user.length > 80 ? `${user.slice(0, 79)}…` : user;
  return Object.fromEntries(names.map((name) => [name, `${name} (offline) for: ${quoted}`]));
});
