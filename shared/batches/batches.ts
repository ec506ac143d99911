import { getAgent } from '../agents/lookups/index.ts';
import { MAX_OVERRIDE_AGENTS, referenceAgents, releaseAgentReferences } from './agent-references.ts';
import { assertCanSpend } from '../billing/index.ts';
import { batchCallIdFor, checkedAgentOverride, unlinkBatchCall } from '../calls/records/index.ts';
import { verificationStatus, workspaceNumber } from '../numbers/index.ts';
import type { Principal } from '../platform/auth/gate.ts';
import { parseDashboardCsv, type CsvSkippedRow } from '../platform/text/csv.ts';
import { badRequest, conflict, Invalid, notFound, NotFound } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { logger } from '../platform/logger.ts';
import { canonicalE164 } from '../platform/telephony/phone.ts';
import { MAX_BATCH_TASKS, type BatchStatus, type BatchTaskInput, type CreateBatchCallInput, type TaskView } from './schemas.ts';
import {
  allTasks,
  addToCounter,
  countersOf,
  countPending,
  deleteBatchPartition,
  deleteBatchRecordAsRead,
  listBatchItems,
  moveBatch,
  mustGetBatch,
  putBatch,
  writeTasks,
  COUNTER_FIELDS,
  type BatchItem,
  type Counters,
  type NewTask,
  type TaskItem,
} from './store.ts';

/*
 * Batch calls (docs/batch-calls.md): create, read, start, stop, delete, and the counters
 * kept from call events. The scheduler's pass is in scheduler.ts.
 */

/** The largest task accepted, as stored (DynamoDB's item limit is 400 KB). */
const MAX_TASK_BYTES = 100_000;
/** Problems named in one 400 at most. */
const MAX_PROBLEMS = 20;

const ZERO: Counters = Object.fromEntries(COUNTER_FIELDS.map((field) => [field, 0])) as Counters;

function toBatchView(item: BatchItem, counters: Counters = ZERO) {
  return {
    batch_call_id: item.batch_call_id,
    name: item.name,
    from_number: item.from_number,
    status: item.status,
    trigger_timestamp: item.trigger_timestamp,
    scheduled_timestamp: item.trigger_timestamp,
    reserved_concurrency: item.reserved_concurrency,
    ...(item.call_time_window ? { call_time_window: item.call_time_window } : {}),
    honor_internal_dnc: item.honor_internal_dnc,
    created_timestamp: item.created_timestamp,
    total_task_count: item.total_task_count,
    ...counters,
  };
}

function toTaskView(task: TaskItem, batchStatus: BatchStatus): TaskView {
  return {
    task_index: task.task_index,
    to_number: task.to_number,
    retell_llm_dynamic_variables: task.retell_llm_dynamic_variables,
    metadata: task.metadata ?? {},
    ...(task.override_agent_id ? { override_agent_id: task.override_agent_id } : {}),
    ...(task.override_agent_version ? { override_agent_version: task.override_agent_version } : {}),
    ...(task.agent_override ? { agent_override: task.agent_override } : {}),
    // A stopped batch's pending tasks were cancelled by the stop.
    status: task.status === 'pending' && batchStatus === 'stopped' ? 'cancelled' : task.status,
    call_id: task.call_id ?? null,
    error: task.error ?? null,
  };
}

// ── Create ─────────────────────────────────────────────────────────────────────────

function tasksOf(input: CreateBatchCallInput): { tasks: BatchTaskInput[]; skipped?: CsvSkippedRow[] } {
  if (input.tasks && input.tasks_csv) throw badRequest('tasks_csv: Give tasks or tasks_csv, not both');
  if (input.tasks_csv !== undefined) {
    const csv = parseDashboardCsv(input.tasks_csv, { maxRows: MAX_BATCH_TASKS, field: 'tasks_csv' });
    if (csv.rows.length === 0) throw badRequest(`tasks_csv: No row has a valid E.164 number (${csv.skipped.length} skipped)`);
    return {
      tasks: csv.rows.map((row) => ({ to_number: row.phone_number, retell_llm_dynamic_variables: row.variables })),
      skipped: csv.skipped,
    };
  }
  if (!input.tasks) throw badRequest('tasks: Required');
  return { tasks: input.tasks };
}

/**
 * Each task's agent_override, checked as create-phone-call checks one (schema, voice, the workspace's transfer assets and agents),
 * the same override once however many tasks carry it. Problems name the task.
 */
async function checkTaskOverrides(workspaceId: string, tasks: readonly BatchTaskInput[], problems: string[]): Promise<void> {
  const verdicts = new Map<string, Promise<string | undefined>>();
  const verdictOf = (override: unknown) => {
    const key = JSON.stringify(override);
    let verdict = verdicts.get(key);
    if (!verdict) {
      verdict = checkedAgentOverride(workspaceId, override).then(
        () => undefined,
        (error: unknown) => {
          if (error instanceof Invalid) return error.message;
          throw error;
        },
      );
      verdicts.set(key, verdict);
    }
    return verdict;
  };
  const found = await Promise.all(tasks.map((task) => (task.agent_override === undefined ? undefined : verdictOf(task.agent_override))));
  found.forEach((problem, i) => {
    if (problem) problems.push(`tasks.${i}.${problem}`);
  });
}

export async function createBatchCall(principal: Principal, input: CreateBatchCallInput) {
  const workspaceId = principal.workspaceId;
  const { tasks, skipped } = tasksOf(input);
  const number = await workspaceNumber(workspaceId, input.from_number);
  if (!number) throw notFound(`from_number ${input.from_number} is not a number in this workspace`);
  const numberHasAgents = (number.outbound_agents?.length ?? 0) > 0;

  const problems: string[] = [];
  const overrides = new Map<string, number>();
  const stored: NewTask[] = tasks.map((task, i) => {
    const toNumber = canonicalE164(task.to_number);
    if (!toNumber) problems.push(`tasks.${i}.to_number: ${task.to_number} is not a valid E.164 number`);
    if (!task.override_agent_id && !numberHasAgents) {
      problems.push(`tasks.${i}: No agent: ${number.phone_number} has no outbound agents and the task has no override_agent_id`);
    }
    if (task.override_agent_id && !overrides.has(task.override_agent_id)) overrides.set(task.override_agent_id, i);
    const item: NewTask = {
      task_index: i,
      to_number: toNumber ?? task.to_number,
      retell_llm_dynamic_variables: task.retell_llm_dynamic_variables ?? {},
      metadata: task.metadata ?? {},
      ...(task.override_agent_id ? { override_agent_id: task.override_agent_id } : {}),
      ...(task.override_agent_version !== undefined ? { override_agent_version: task.override_agent_version } : {}),
      ...(task.agent_override !== undefined ? { agent_override: task.agent_override as Record<string, unknown> } : {}),
      ...(task.custom_sip_headers ? { custom_sip_headers: task.custom_sip_headers } : {}),
    };
    const size = Buffer.byteLength(JSON.stringify(item));
    if (size > MAX_TASK_BYTES) problems.push(`tasks.${i}: Too large (${size} bytes; at most ${MAX_TASK_BYTES})`);
    return item;
  });
  if (overrides.size > MAX_OVERRIDE_AGENTS) {
    problems.push(`tasks: At most ${MAX_OVERRIDE_AGENTS} different override_agent_id values in one batch (${overrides.size} given)`);
  }
  if (problems.length === 0 && overrides.size > 0) {
    await Promise.all(
      [...overrides].map(async ([agentId, i]) => {
        try {
          await getAgent(workspaceId, agentId);
        } catch (error) {
          if (!(error instanceof NotFound)) throw error;
          problems.push(`tasks.${i}.override_agent_id: Agent ${agentId} not found`);
        }
      }),
    );
  }
  if (problems.length === 0) await checkTaskOverrides(workspaceId, tasks, problems);
  if (problems.length > 0) {
    const shown = problems.slice(0, MAX_PROBLEMS);
    throw badRequest(shown.join('; ') + (problems.length > shown.length ? `; and ${problems.length - shown.length} more` : ''));
  }
  await assertCanSpend(workspaceId, 'batch_call', { verificationStatus: () => verificationStatus(workspaceId) });

  const nowMs = Date.now();
  const batchCallId = newId('batchCall');
  const status: BatchStatus = input.draft ? 'draft' : 'planned';
  const trigger = input.trigger_timestamp ?? nowMs;
  // The tasks first, the record last: until the record exists nothing reads the tasks, so a
  // create that fails halfway leaves no batch (and removes what it wrote).
  try {
    await writeTasks(workspaceId, batchCallId, stored);
    const item = await putBatch(
      {
        type: 'batch_call',
        workspace_id: workspaceId,
        batch_call_id: batchCallId,
        name: input.name,
        from_number: number.phone_number,
        status,
        trigger_timestamp: trigger,
        reserved_concurrency: input.reserved_concurrency,
        ...(input.call_time_window ? { call_time_window: input.call_time_window } : {}),
        honor_internal_dnc: input.honor_internal_dnc,
        created_timestamp: nowMs,
        total_task_count: stored.length,
        ...(overrides.size > 0 ? { agent_references: [...overrides.keys()] } : {}),
      },
      status === 'planned' ? trigger : undefined,
      // The override agents are referenced until the batch is done: none can be deleted meanwhile.
      referenceAgents(workspaceId, batchCallId, [...overrides.keys()]),
    );
    return { ...toBatchView(item), ...(skipped ? { skipped_rows: skipped } : {}) };
  } catch (error) {
    await deleteBatchPartition(workspaceId, batchCallId).catch((cleanup: unknown) =>
      logger.error('removing a failed batch call\'s tasks failed', { batch_call_id: batchCallId, error: (cleanup as Error).message }),
    );
    throw error;
  }
}

// ── Read ───────────────────────────────────────────────────────────────────────────

export async function getBatchCall(workspaceId: string, batchCallId: string) {
  const item = await mustGetBatch(workspaceId, batchCallId);
  const [counters, tasks] = await Promise.all([countersOf([item]), allTasks(workspaceId, batchCallId)]);
  return { ...toBatchView(item, counters.get(batchCallId)), tasks: tasks.map((task) => toTaskView(task, item.status)) };
}

/** The workspace's batches, newest first, with their counters. */
export async function listBatchCalls(workspaceId: string) {
  const items = (await listBatchItems(workspaceId)).sort((a, b) => b.created_timestamp - a.created_timestamp || (a.batch_call_id < b.batch_call_id ? 1 : -1));
  const counters = await countersOf(items);
  return items.map((item) => toBatchView(item, counters.get(item.batch_call_id)));
}

// ── Start, stop, delete ────────────────────────────────────────────────────────────

export async function startBatchCall(workspaceId: string, batchCallId: string) {
  const item = await mustGetBatch(workspaceId, batchCallId);
  const refuse = (status: string) => badRequest(`Batch call ${batchCallId} is ${status}: only a draft can be started`);
  if (item.status !== 'draft') throw refuse(item.status);
  // A scheduled time in the past moves to now.
  const trigger = Math.max(item.trigger_timestamp, Date.now());
  const moved = await moveBatch(workspaceId, batchCallId, { from: ['draft'], to: 'planned', dueMs: trigger, set: { trigger_timestamp: trigger } });
  if (!moved) throw refuse((await mustGetBatch(workspaceId, batchCallId)).status);
  return { batch_call_id: batchCallId, status: moved.status };
}

const UNLINK_PARALLELISM = 16;

/** Stops a draft, planned or ongoing batch: pending tasks are cancelled, calls in progress finish. */
export async function stopBatchCall(workspaceId: string, batchCallId: string) {
  const item = await mustGetBatch(workspaceId, batchCallId);
  const refuse = (status: string) => badRequest(`Batch call ${batchCallId} is ${status}: only a draft, planned or ongoing batch can be stopped`);
  if (item.status === 'sent' || item.status === 'stopped') throw refuse(item.status);
  // The status first: from here on no pass can claim a task (the claim checks it).
  const moved = await moveBatch(workspaceId, batchCallId, { from: ['draft', 'planned', 'ongoing'], to: 'stopped', also: releaseAgentReferences(item) });
  if (!moved) throw refuse((await mustGetBatch(workspaceId, batchCallId)).status);
  // Every task still pending is cancelled by the stop itself: no pass can claim one now, and
  // a task's view reads `pending` under a stopped batch as `cancelled`. (No write per task,
  // so stopping 10,000 tasks is one count.)
  const cancelled = await countPending(workspaceId, batchCallId);
  if (cancelled > 0) await addToCounter(workspaceId, batchCallId, 'cancelled_count', cancelled);
  return { batch_call_id: batchCallId, status: 'stopped' as const, cancelled_tasks: cancelled };
}

/** Removes the batch: pending tasks are never called; placed calls stay in the history, unlinked. */
export async function deleteBatchCall(workspaceId: string, batchCallId: string): Promise<void> {
  // The record first: from here on no pass can claim a task of it. A batch still able to
  // dial releases its agent references with it; one sent or stopped already did.
  for (let attempt = 0; ; attempt++) {
    const item = await mustGetBatch(workspaceId, batchCallId);
    const finished = item.status === 'sent' || item.status === 'stopped';
    if (await deleteBatchRecordAsRead(workspaceId, item, finished ? [] : releaseAgentReferences(item))) break;
    // Its status moved meanwhile (a pass sent it, a stop): read it again.
    if (attempt >= 4) throw conflict(`Batch call ${batchCallId} is changing; try again`);
  }
  const tasks = await allTasks(workspaceId, batchCallId);
  const callIds = tasks.flatMap((task) => {
    if (task.call_id) return [task.call_id];
    // Claimed and being dialled right now: its call's ID is known from the claim.
    if (task.status === 'dialing' && task.claimed_at !== undefined) return [batchCallIdFor(batchCallId, task.task_index, task.claimed_at)];
    return [];
  });
  for (let i = 0; i < callIds.length; i += UNLINK_PARALLELISM) {
    await Promise.all(callIds.slice(i, i + UNLINK_PARALLELISM).map((callId) => unlinkBatchCall(callId, batchCallId)));
  }
  await deleteBatchPartition(workspaceId, batchCallId);
}
