import * as z from 'zod';
import { dynamicVariables, versionRef } from '../calls/records/index.ts';
import { customSipHeaders, epochMs, lazySchema } from '../platform/http/schemas.ts';
import { idPattern } from '../platform/ids.ts';

/*
 * The batch calls API contract (spec: Batch call, BatchTask, call_time_window, Batch calls:
 * detailed shapes; retell-sdk resources/batch-call.d.ts where the spec shows no shape).
 */

export const MAX_BATCH_TASKS = 10_000;
const BATCH_STATUSES = ['draft', 'planned', 'ongoing', 'sent', 'stopped'] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];
const TASK_STATUSES = ['pending', 'dialing', 'called', 'failed', 'skipped', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'] as const;
export type Day = (typeof DAYS)[number];
const DEFAULT_TIMEZONE = 'Australia/Sydney';

function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

const minuteOfDay = () => z.number().int().min(0).max(1440);

const CallTimeWindow = lazySchema(() =>
  z.object({
    windows: z
      .array(
        z
          .object({ start: minuteOfDay(), end: minuteOfDay() })
          .refine((window) => window.start !== window.end, 'start and end must differ (start after end wraps past midnight)'),
      )
      .min(1)
      .max(48),
    timezone: z.string().min(1).max(64).refine(isTimeZone, 'Must be an IANA time zone name, e.g. Australia/Sydney').default(DEFAULT_TIMEZONE),
    day: z.array(z.enum(DAYS)).max(7).optional(),
  }),
);
export type CallTimeWindowInput = z.infer<typeof CallTimeWindow>;

const BatchTaskBody = lazySchema(() =>
  z.object({
    to_number: z.string().min(1).max(32),
    retell_llm_dynamic_variables: dynamicVariables().optional(),
    metadata: z.unknown().optional(),
    override_agent_id: z.string().regex(idPattern('agent'), 'Must be an agent ID (agent_ followed by 24 hex characters)').optional(),
    override_agent_version: versionRef().optional(),
    /** This task's call's configuration over its agent's (as create-phone-call's agent_override). */
    agent_override: z.unknown().optional(),
    custom_sip_headers: customSipHeaders().optional(),
  }),
);
export type BatchTaskInput = z.infer<typeof BatchTaskBody>;

export const CreateBatchCallBody = lazySchema(() =>
  z.object({
    name: z.string().max(200).default('Batch call'),
    from_number: z.string().min(1).max(32),
    tasks: z.array(BatchTaskBody).min(1).max(MAX_BATCH_TASKS).optional(),
    /** The dashboard's CSV (its rules: docs/batch-calls.md), instead of `tasks`. */
    tasks_csv: z.string().min(1).optional(),
    trigger_timestamp: epochMs().optional(),
    reserved_concurrency: z.number().int().min(0).max(1000).default(0),
    call_time_window: CallTimeWindow.optional(),
    draft: z.boolean().default(false),
    honor_internal_dnc: z.boolean().default(false),
  }),
);
export type CreateBatchCallInput = z.infer<typeof CreateBatchCallBody>;

export const batchCallIdParams = lazySchema(() =>
  z.object({ batch_call_id: z.string().regex(idPattern('batchCall'), 'Must be a batch call ID (batch_call_ followed by 24 hex characters)') }),
);

export const TaskView = lazySchema(() =>
  z.object({
    task_index: z.number().int(),
    to_number: z.string(),
    retell_llm_dynamic_variables: z.record(z.string(), z.string()),
    metadata: z.unknown(),
    override_agent_id: z.string().optional(),
    override_agent_version: z.string().optional(),
    agent_override: z.record(z.string(), z.unknown()).optional(),
    status: z.enum(TASK_STATUSES),
    call_id: z.string().nullable(),
    error: z.string().nullable(),
  }),
);
export type TaskView = z.infer<typeof TaskView>;

const BatchSummaryShape = () => ({
  batch_call_id: z.string(),
  name: z.string(),
  from_number: z.string(),
  status: z.enum(BATCH_STATUSES),
  trigger_timestamp: z.number(),
  /** retell-sdk's name for the trigger time. */
  scheduled_timestamp: z.number(),
  reserved_concurrency: z.number().int(),
  call_time_window: z
    .object({ windows: z.array(z.object({ start: z.number(), end: z.number() })), timezone: z.string(), day: z.array(z.enum(DAYS)).optional() })
    .optional(),
  honor_internal_dnc: z.boolean(),
  created_timestamp: z.number(),
  /** Recipients (retell-sdk's `total_task_count`). */
  total_task_count: z.number().int(),
  /** Dial attempts: tasks that got a dialled call. */
  sent_count: z.number().int(),
  /** Calls that connected. */
  picked_up_count: z.number().int(),
  /** Calls whose analysis set call_successful to true. */
  successful_count: z.number().int(),
  failed_count: z.number().int(),
  skipped_count: z.number().int(),
  cancelled_count: z.number().int(),
});

export const BatchCallWithTasks = lazySchema(() => z.object({ ...BatchSummaryShape(), tasks: z.array(TaskView) }));

export const CreatedBatchCall = lazySchema(() =>
  z.object({
    ...BatchSummaryShape(),
    /** Rows of `tasks_csv` left out by the CSV rules (not E.164), with their line in the file. */
    skipped_rows: z.array(z.object({ row: z.number().int(), value: z.string(), reason: z.string() })).optional(),
  }),
);

export const BatchCallList = lazySchema(() => z.array(z.object(BatchSummaryShape())));

export const StartedBatchCall = lazySchema(() => z.object({ batch_call_id: z.string(), status: z.enum(BATCH_STATUSES) }));
export const StoppedBatchCall = lazySchema(() =>
  z.object({ batch_call_id: z.string(), status: z.enum(BATCH_STATUSES), cancelled_tasks: z.number().int() }),
);
