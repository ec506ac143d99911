import * as z from 'zod';
import { epochMs, idOf, isTemplatedHttpUrl, lazySchema, refuseDestination, versionQuery } from '../platform/http/schemas.ts';
import { LANGUAGES, LlmBody, llmModel, UpdateAgentBody } from '../agents/index.ts';

/*
 * Agent extras (scope `agents`): share links, workflows, generation, copilot, estimates,
 * repair, MCP tools and the custom-LLM connection test. Every route that names an agent
 * needs it to exist in the caller's workspace (another workspace's agent is a 404).
 * Schemas are built on first use (z.lazy).
 */

export const agentIdParams = lazySchema(() => z.object({ agent_id: idOf('agent', 'an agent ID') }));
/** A share link's agent: a voice agent (Voice Orb, web calls) or a chat agent (public chats). */
export const shareAgentParams = lazySchema(() =>
  z.object({ agent_id: z.union([idOf('agent', 'an agent ID'), idOf('chatAgent', 'a chat agent ID')], { error: 'Must be an agent ID (agent_…) or a chat agent ID (chat_agent_…)' }) }),
);
export const versionQueryParams = lazySchema(versionQuery);

// ---------------------------------------------------------------------------------------
// Share links

export const ShareLink = lazySchema(() =>
  z.object({
    share_link_id: z.string(),
    agent_id: z.string(),
    token: z.string().describe('256 random bits, base64url; the public page is /orb/<token>'),
    enabled: z.boolean(),
    url_path: z.string(),
    created_timestamp: epochMs(),
    revoked_timestamp: epochMs().optional(),
  }),
);

// ---------------------------------------------------------------------------------------
// Workflows

export const WORKFLOW_STAGES = ['pre_call', 'post_call'] as const;
export type WorkflowStage = (typeof WORKFLOW_STAGES)[number];
const HTTP_STEP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

const MAX_WORKFLOW_STEPS = 10;
const MAX_WORKFLOW_OUTPUTS = 50;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/**
 * `{{name}}`, spaces inside the braces allowed: group 1 is the inside, to be trimmed
 * (`templateName`). The inside is one greedy class that cannot meet the closing braces,
 * so matching is linear; the former `\{\{\s*([^{}]*?)\s*\}\}` let three quantifiers trade
 * the same spaces and took seconds on `{{` followed by a few thousand spaces.
 */
export const TEMPLATE_REFERENCE = /\{\{([^{}]*)\}\}/g;
/** The variable a `{{ name }}` reference names: the inside of the braces, trimmed. */
export const templateName = (inside: string): string => inside.trim();
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** Headers fetch computes itself; a step may not set them. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'upgrade', 'keep-alive', 'te', 'trailer']);
/** An output path: `$status`, `$body`, or dot-separated keys and array indexes into the JSON response (the first two are such paths too). */
const OUTPUT_PATH = /^[^.\s]+(?:\.[^.\s]+)*$/;

function malformedTemplate(text: string): string | undefined {
  for (const match of text.matchAll(TEMPLATE_REFERENCE)) {
    if (!VARIABLE_NAME.test(templateName(match[1]!))) return match[0];
  }
  return undefined;
}

const template = (max: number) =>
  z
    .string()
    .max(max)
    .superRefine((text, ctx) => {
      const bad = malformedTemplate(text);
      if (bad) ctx.addIssue({ code: 'custom', message: `Malformed template ${bad.slice(0, 80)}: use {{variable_name}}` });
    });


const stepName = () =>
  z
    .string()
    .regex(/^[a-z][a-z0-9_]{0,63}$/, 'Must be 1 to 64 lower-case letters, digits or "_", starting with a letter');
const VARIABLE_NAME_RULE = 'Must be 1 to 64 letters, digits or "_", not starting with a digit';
const variableName = () => z.string().regex(VARIABLE_NAME, VARIABLE_NAME_RULE);
const variableNameIssue = (name: string) => (VARIABLE_NAME.test(name) ? undefined : VARIABLE_NAME_RULE);

/**
 * A string-keyed record whose keys are checked here rather than by a key schema, so a bad
 * key is reported as `<path>.<key>: <rule>` like any other field.
 */
const keyedRecord = <V extends z.ZodType>(value: V, keyIssue: (key: string) => string | undefined, max: number, noun: string) =>
  z.record(z.string(), value).superRefine((record, ctx) => {
    const names = Object.keys(record);
    if (names.length > max) ctx.addIssue({ code: 'custom', message: `Must have at most ${max} ${noun}` });
    for (const name of names) {
      const issue = keyIssue(name);
      if (issue) ctx.addIssue({ code: 'custom', path: [name], message: issue });
    }
  });

/** Each string inside a JSON step body is a template of at most this many characters. */
export const MAX_BODY_STRING = 10_000;
/** Characters of keys and strings in a JSON step body, in all (the string form has the same cap). */
export const MAX_BODY_TEXT = 100_000;

/**
 * A JSON step body: `z.json()` bounds neither its strings nor their templates, so every
 * string is checked like the other templates and the text in all is capped.
 */
const jsonBody = () =>
  z.union([z.record(z.string(), z.json()), z.array(z.json())]).superRefine((body, ctx) => {
    let total = 0;
    const pending: { value: unknown; path: (string | number)[] }[] = [{ value: body, path: [] }];
    while (pending.length > 0) {
      const { value, path } = pending.pop()!;
      if (typeof value === 'string') {
        total += value.length;
        if (value.length > MAX_BODY_STRING) {
          ctx.addIssue({ code: 'custom', path, message: `Must be at most ${MAX_BODY_STRING} characters` });
          return;
        }
        const bad = malformedTemplate(value);
        if (bad) {
          ctx.addIssue({ code: 'custom', path, message: `Malformed template ${bad.slice(0, 80)}: use {{variable_name}}` });
          return;
        }
      } else if (Array.isArray(value)) {
        value.forEach((item, i) => pending.push({ value: item, path: [...path, i] }));
      } else if (value !== null && typeof value === 'object') {
        for (const [key, item] of Object.entries(value)) {
          total += key.length;
          pending.push({ value: item, path: [...path, key] });
        }
      }
    }
    if (total > MAX_BODY_TEXT) ctx.addIssue({ code: 'custom', message: `Must hold at most ${MAX_BODY_TEXT} characters of text in all` });
  });

const httpStep = () =>
  z
    .object({
      type: z.literal('http'),
      name: stepName(),
      method: z.enum(HTTP_STEP_METHODS).default('GET'),
      // The scheme and host are literal, so the egress guard's rules judge the step when it is saved.
      url: template(2048).superRefine((url, ctx) => {
        if (isTemplatedHttpUrl(url)) refuseDestination('templated')(url, ctx);
        else ctx.addIssue({ code: 'custom', message: 'Must be an http:// or https:// URL with a literal host ({{variables}} may follow it)', input: url });
      }),
      headers: keyedRecord(
        template(4000).refine((value) => !/[\r\n]/.test(value), 'Must not contain line breaks'),
        (name) =>
          !HEADER_NAME.test(name)
            ? 'Must be a header name'
            : RESERVED_HEADERS.has(name.toLowerCase())
              ? 'This header is set by the request itself'
              : undefined,
        20,
        'headers',
      ).default({}),
      body: z
        .union([template(MAX_BODY_TEXT), jsonBody()])
        .nullable()
        .optional()
        .describe('A template string sent as it is, or JSON whose strings are templates (sent as application/json)'),
      timeout_ms: z.number().int().min(100).max(10_000).default(5000),
      outputs: keyedRecord(
        z.string().min(1).max(256).regex(OUTPUT_PATH, 'Must be $status, $body or a dot path into the JSON response'),
        variableNameIssue,
        20,
        'outputs',
      )
        .default({})
        .describe('Variable name → where its value is in the response'),
      continue_on_error: z.boolean().default(false),
    })
    .refine((step) => !(step.method === 'GET' && step.body !== undefined && step.body !== null), {
      message: 'A GET request has no body',
      path: ['body'],
    });

const llmStep = () =>
  z.object({
    type: z.literal('llm'),
    name: stepName(),
    model: llmModel().default('gpt-4.1-mini'),
    prompt: template(20_000).pipe(z.string().min(1)),
    outputs: z.array(variableName()).min(1).max(20).describe('Names of the values the model answers with'),
    temperature: z.number().min(0).max(1).default(0),
    timeout_ms: z.number().int().min(1000).max(20_000).default(10_000),
    continue_on_error: z.boolean().default(false),
  });

export const WorkflowStep = lazySchema(() =>
  z.discriminatedUnion('type', [httpStep(), llmStep()], {
    error: (issue) => (issue.code === 'invalid_union' ? 'Expected one of "http", "llm"' : undefined),
  }),
);
export type WorkflowStep = z.output<typeof WorkflowStep>;

/** Names a step produces. */
const outputsOf = (step: WorkflowStep): string[] =>
  step.type === 'http' ? Object.keys(step.outputs) : step.outputs;

/** Every templated text of a step with its path inside the step. */
function templatesOf(step: WorkflowStep): [path: (string | number)[], text: string][] {
  if (step.type === 'llm') return [[['prompt'], step.prompt]];
  const found: [(string | number)[], string][] = [[['url'], step.url]];
  for (const [name, value] of Object.entries(step.headers)) found.push([['headers', name], value]);
  const walk = (value: unknown, path: (string | number)[]) => {
    if (typeof value === 'string') found.push([path, value]);
    else if (Array.isArray(value)) value.forEach((item, i) => walk(item, [...path, i]));
    else if (value !== null && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) walk(item, [...path, key]);
    }
  };
  walk(step.body, ['body']);
  return found;
}

/**
 * Across steps: names are unique, each output has one producer, and a template never
 * uses an output that only a later step (or the step itself) produces.
 */
function checkSteps(steps: WorkflowStep[], ctx: z.RefinementCtx): void {
  const names = new Map<string, number>();
  const producers = new Map<string, number>();
  steps.forEach((step, i) => {
    if (names.has(step.name)) {
      ctx.addIssue({ code: 'custom', path: ['steps', i, 'name'], message: `Duplicate step name "${step.name}"` });
    }
    names.set(step.name, i);
    outputsOf(step).forEach((output, j) => {
      const earlier = producers.get(output);
      if (earlier !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['steps', i, 'outputs', step.type === 'http' ? output : j],
          message: `"${output}" is already an output of step "${steps[earlier]!.name}"`,
        });
      } else producers.set(output, i);
    });
  });
  if (producers.size > MAX_WORKFLOW_OUTPUTS) {
    ctx.addIssue({ code: 'custom', path: ['steps'], message: `Must produce at most ${MAX_WORKFLOW_OUTPUTS} outputs in all` });
  }
  steps.forEach((step, i) => {
    for (const [path, text] of templatesOf(step)) {
      for (const match of text.matchAll(TEMPLATE_REFERENCE)) {
        const name = templateName(match[1]!);
        const producer = producers.get(name);
        if (producer !== undefined && producer >= i) {
          ctx.addIssue({
            code: 'custom',
            path: ['steps', i, ...path],
            message: `{{${name}}} is an output of ${producer === i ? 'this step' : `a later step ("${steps[producer]!.name}")`}`,
          });
          return;
        }
      }
    }
  });
}


export const WorkflowBody = lazySchema(() =>
  z
    .object({
      enabled: z.boolean().default(true),
      steps: z.array(WorkflowStep).max(MAX_WORKFLOW_STEPS),
    })
    .superRefine((workflow, ctx) => checkSteps(workflow.steps, ctx)),
);
export type WorkflowInput = z.output<typeof WorkflowBody>;

export const Workflow = lazySchema(() =>
  z.object({
    agent_id: z.string(),
    stage: z.enum(WORKFLOW_STAGES),
    enabled: z.boolean(),
    steps: z.array(z.looseObject({ type: z.enum(['http', 'llm']), name: z.string() })),
    last_modification_timestamp: epochMs(),
  }),
);

export const variables = () => keyedRecord(z.string().max(10_000), variableNameIssue, 100, 'variables');

const StepLog = lazySchema(() =>
  z.object({
    name: z.string(),
    type: z.enum(['http', 'llm']),
    status: z.enum(['succeeded', 'failed', 'skipped']),
    duration_ms: z.number().int(),
    outputs: z.array(z.string()).describe('Names of the outputs this step set (their values are in the run’s outputs)'),
    missing_outputs: z.array(z.string()).optional().describe('Outputs the response or answer did not contain'),
    error: z.string().optional(),
    request: z.object({ method: z.string(), url: z.string().describe('Without the query string') }).optional(),
    response_status: z.number().int().optional(),
    response_excerpt: z.string().optional().describe('The first 1,000 characters of the response (test runs only)'),
    model: z.string().optional(),
  }),
);

export const WorkflowRun = lazySchema(() =>
  z.object({
    run_id: z.string(),
    agent_id: z.string(),
    stage: z.enum(WORKFLOW_STAGES),
    trigger: z.enum(['test', 'call']),
    call_id: z.string().optional(),
    status: z.enum(['succeeded', 'failed']),
    outputs: z.record(z.string(), z.string()),
    steps: z.array(StepLog),
    started_timestamp: epochMs(),
    duration_ms: z.number().int(),
  }),
);

export const stageParams = lazySchema(() =>
  z.object({ agent_id: idOf('agent', 'an agent ID'), stage: z.enum(WORKFLOW_STAGES) }),
);

// ---------------------------------------------------------------------------------------
// Generation and copilot

export const GenerateAgentBody = lazySchema(() =>
  z.object({
    description: z.string().trim().min(1).max(5000).describe('What the agent should do, in plain words'),
    agent_name: z.string().max(200).optional(),
    language: z.enum(LANGUAGES).optional(),
    voice_id: z.string().min(1).max(200).optional(),
    model: llmModel().optional().describe('The model the generated Retell LLM runs (not the one that writes it)'),
  }),
);
export type GenerateAgentInput = z.output<typeof GenerateAgentBody>;

export const CopilotBody = lazySchema(() =>
  z.object({
    message: z.string().trim().min(1).max(4000),
    history: z
      .array(z.object({ role: z.enum(['user', 'assistant']), content: z.string().max(8000) }))
      .max(20)
      .default([])
      .describe('Earlier turns of this conversation, oldest first (the copilot keeps no state)'),
  }),
);
export type CopilotInput = z.output<typeof CopilotBody>;

export const CopilotReply = lazySchema(() =>
  z.object({
    agent_id: z.string(),
    version: z.number().int(),
    reply: z.string(),
    suggested_changes: z
      .object({
        agent: UpdateAgentBody.optional().describe('Fields for PATCH /update-agent/{agent_id}'),
        llm: LlmBody.optional().describe('Fields for PATCH /update-retell-llm/{llm_id}'),
      })
      .nullable()
      .describe('Proposed, never applied: send them to the update routes to apply them'),
  }),
);

// ---------------------------------------------------------------------------------------
// Estimates

const costItem = () => z.object({ component: z.string(), description: z.string(), cost_per_minute: z.number() });
const latencyItem = () => z.object({ component: z.string(), description: z.string(), latency_ms: z.number().int() });

export const AgentEstimate = lazySchema(() =>
  z.object({
    agent_id: z.string(),
    version: z.number().int(),
    currency: z.literal('USD'),
    cost_per_minute: z.number().describe('USD per minute of conversation, telephony excluded'),
    cost_breakdown: z.array(costItem()),
    expected_latency_ms: z.number().int().describe('Expected time from the end of the caller’s turn to the agent’s first audio'),
    latency_breakdown: z.array(latencyItem()),
    price_table_version: z.string(),
  }),
);

// ---------------------------------------------------------------------------------------
// MCP tools and the custom-LLM connection test

export const McpToolDefinition = lazySchema(() =>
  z.object({ name: z.string(), description: z.string(), inputSchema: z.unknown() }),
);

export const CustomLlmConnectionResult = lazySchema(() =>
  z.object({
    success: z.boolean(),
    latency_ms: z.number().int().nullable().describe('Time to a completed WebSocket handshake'),
    error: z.string().nullable(),
  }),
);

export { isWebSocketUrl } from '../platform/http/schemas.ts';
