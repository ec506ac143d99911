import * as z from 'zod';
import { epochMs, idOf, importedFrom, lazySchema, queryInt } from '../../platform/http/schemas.ts';
import { llmModel } from '../../agents/llms/index.ts';

/*
 * Test case definitions (retell-sdk's `tests` resource, TestCaseDefinitionResponse): a
 * simulated caller, the success criteria and the tool mocks, against one response engine.
 * Schemas are built on first use (z.lazy).
 */

/** Where a case or a batch runs: a Retell LLM or a conversation flow (custom LLMs are not simulated), a version or the latest. */
export const testResponseEngine = () =>
  z.discriminatedUnion(
    'type',
    [
      z.object({
        type: z.literal('retell-llm'),
        llm_id: idOf('llm', 'a Retell LLM ID'),
        version: z.number().int().min(0).nullable().optional(),
      }),
      z.object({
        type: z.literal('conversation-flow'),
        conversation_flow_id: idOf('conversationFlow', 'a conversation flow ID'),
        version: z.number().int().min(0).nullable().optional(),
      }),
    ],
    { error: 'Must be a Retell LLM (`retell-llm`) or a conversation flow (`conversation-flow`); custom LLMs are not simulated' },
  );
export type TestResponseEngine = z.infer<ReturnType<typeof testResponseEngine>>;

/** The most tool mocks and criteria one case holds: a case is one conversation, not a suite. */
const MAX_TOOL_MOCKS = 32;
const MAX_METRICS = 20;
const MAX_DYNAMIC_VARIABLES = 100;
/**
 * The most a definition may hold, as JSON: each run stores it again beside its transcript,
 * and a DynamoDB item holds 400 KB.
 */
export const MAX_DEFINITION_BYTES = 100_000;

const toolMock = () =>
  z.object({
    tool_name: z.string().min(1).max(64),
    input_match_rule: z.discriminatedUnion(
      'type',
      [z.object({ type: z.literal('any') }), z.object({ type: z.literal('partial_match'), args: z.record(z.string(), z.unknown()) })],
      { error: 'Must be `{type: "any"}` or `{type: "partial_match", args: {...}}`' },
    ),
    output: z.string().max(20_000),
    result: z.boolean().nullable().optional(),
  });

const definitionFields = () => ({
  name: z.string().trim().min(1).max(200),
  user_prompt: z.string().trim().min(1).max(20_000),
  metrics: z.array(z.string().trim().min(1).max(2_000)).max(MAX_METRICS),
  response_engine: testResponseEngine(),
  dynamic_variables: z
    .record(z.string().max(128), z.string().max(10_000))
    .refine((variables) => Object.keys(variables).length <= MAX_DYNAMIC_VARIABLES, `At most ${MAX_DYNAMIC_VARIABLES} variables`),
  llm_model: llmModel(),
  tool_mocks: z.array(toolMock()).max(MAX_TOOL_MOCKS),
  imported_from: importedFrom().optional(),
});

export const CreateTestCaseBody = lazySchema(() => {
  const fields = definitionFields();
  return z.object({
    ...fields,
    dynamic_variables: fields.dynamic_variables.optional(),
    llm_model: fields.llm_model.optional(),
    tool_mocks: fields.tool_mocks.optional(),
  });
});
export type CreateTestCaseInput = z.infer<typeof CreateTestCaseBody>;

export const UpdateTestCaseBody = lazySchema(() => z.object(definitionFields()).partial());
export type UpdateTestCaseInput = z.infer<typeof UpdateTestCaseBody>;

export const TestCaseDefinition = lazySchema(() =>
  z.object({
    test_case_definition_id: z.string(),
    type: z.literal('simulation'),
    ...definitionFields(),
    creation_timestamp: epochMs(),
    user_modified_timestamp: epochMs(),
  }),
);
export type TestCaseDefinition = z.infer<typeof TestCaseDefinition>;

export const testCaseIdParams = lazySchema(() => z.object({ test_case_definition_id: idOf('testCase', 'a test case definition ID') }));

/** The list's filter: one response engine (retell-sdk requires `type` and the engine's ID). */
export const engineListQuery = () => ({
  type: z.enum(['retell-llm', 'conversation-flow']),
  llm_id: idOf('llm', 'a Retell LLM ID').optional(),
  conversation_flow_id: idOf('conversationFlow', 'a conversation flow ID').optional(),
  limit: queryInt({ min: 1, max: 1000, default: 50 }),
});

export const engineNamed = (query: { type: string; llm_id?: string; conversation_flow_id?: string }, context: z.RefinementCtx) => {
  const field = query.type === 'retell-llm' ? 'llm_id' : 'conversation_flow_id';
  if (!query[field]) context.addIssue({ code: 'custom', path: [field], message: `Required when type is ${query.type}` });
};

export const TestCaseListQuery = lazySchema(() =>
  z.object({ ...engineListQuery(), pagination_key: idOf('testCase', 'a test case definition ID').optional() }).superRefine(engineNamed),
);

export const TestCasePage = lazySchema(() =>
  z.object({ has_more: z.boolean(), items: z.array(TestCaseDefinition), pagination_key: z.string().optional() }),
);
