import * as z from 'zod';
import { dynamicVariables, epochMs, lazySchema, llmFallback, versionRef } from '../platform/http/schemas.ts';

/*
 * The chats API contract (spec: Chats and SMS; shapes from retell-sdk resources/chat.d.ts and
 * playground.d.ts, which the spec does not show). Schemas are built on first use (z.lazy).
 */

const CHAT_STATUSES = ['ongoing', 'ended', 'error'] as const;
export type ChatStatus = (typeof CHAT_STATUSES)[number];
const CHAT_TYPES = ['api_chat', 'sms_chat'] as const;
export type ChatType = (typeof CHAT_TYPES)[number];
/** From least to most restrictive: a chat's setting may only move right (retell-sdk ChatUpdateParams). */
export const DATA_STORAGE_SETTINGS = ['everything', 'everything_except_pii', 'basic_attributes_only'] as const;
const SENTIMENTS = ['Negative', 'Positive', 'Neutral', 'Unknown'] as const;

/** A chat ID in a path: a loose pattern, so an unknown or malformed one is the 404 it is (as calls). */
export const chatIdParams = lazySchema(() => z.object({ chat_id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'Must be a chat ID') }));
/** The playground takes a voice or a chat agent. */
export const playgroundAgentParams = lazySchema(() =>
  z.object({ agent_id: z.string().regex(/^(agent|chat_agent)_[0-9a-f]{24}$/, 'Must be an agent ID (agent_… or chat_agent_…)') }),
);

export const CreateChatBody = lazySchema(() =>
  z.object({
    agent_id: z.string().min(1).max(128),
    agent_version: versionRef().optional(),
    metadata: z.unknown().optional(),
    retell_llm_dynamic_variables: dynamicVariables().optional(),
  }),
);
export type CreateChatInput = z.infer<typeof CreateChatBody>;

export const CreateChatCompletionBody = lazySchema(() =>
  z.object({
    chat_id: z.string().regex(/^[A-Za-z0-9_-]{1,128}$/, 'Must be a chat ID'),
    content: z.string().min(1).max(100_000),
  }),
);

export const UpdateChatBody = lazySchema(() =>
  z.object({
    metadata: z.unknown().optional(),
    data_storage_setting: z.enum(DATA_STORAGE_SETTINGS).optional(),
    custom_attributes: z.record(z.string().min(1).max(256), z.union([z.string().max(10_000), z.number(), z.boolean()])).optional(),
    override_dynamic_variables: dynamicVariables().nullable().optional(),
  }),
);
export type UpdateChatInput = z.infer<typeof UpdateChatBody>;

const numberFilter = () =>
  z.union([
    z.object({ op: z.enum(['eq', 'ne', 'gt', 'ge', 'lt', 'le']), type: z.literal('number').optional(), value: z.number() }),
    z.object({ op: z.literal('bt'), type: z.literal('range').optional(), value: z.tuple([z.number(), z.number()]) }),
  ]);

/** retell-sdk's ChatListParams.FilterCriteria, the fields the listing index answers (docs/chats.md). */
export const ChatFilter = () =>
  z.object({
    agent: z.array(z.object({ agent_id: z.string().min(1).max(128), version: z.array(z.number().int().min(0)).max(100).optional() })).max(100).optional(),
    chat_id: z
      .union([
        z.object({ op: z.literal('in'), type: z.literal('enum').optional(), value: z.array(z.string().max(128)).min(1).max(100) }),
        z.object({ op: z.enum(['eq', 'ne', 'sw', 'co']), type: z.literal('string').optional(), value: z.string().max(128) }),
      ])
      .optional(),
    chat_status: z.object({ op: z.literal('in'), type: z.literal('enum').optional(), value: z.array(z.enum(CHAT_STATUSES)).min(1) }).optional(),
    chat_successful: z.object({ op: z.literal('eq'), type: z.literal('boolean').optional(), value: z.boolean() }).optional(),
    user_sentiment: z.object({ op: z.literal('in'), type: z.literal('enum').optional(), value: z.array(z.enum(SENTIMENTS)).min(1) }).optional(),
    start_timestamp: numberFilter().optional(),
    end_timestamp: numberFilter().optional(),
    duration_ms: numberFilter().optional(),
    combined_cost: numberFilter().optional(),
  });
export type ChatFilter = z.infer<ReturnType<typeof ChatFilter>>;

export const ListChatsBody = lazySchema(() =>
  z
    .object({
      filter_criteria: ChatFilter().optional(),
      limit: z.number().int().min(1).max(1000).default(50),
      sort_order: z.enum(['ascending', 'descending']).default('descending'),
      pagination_key: z.string().min(1).max(128).optional(),
      skip: z.number().int().min(0).max(10_000).optional(),
      include_total: z.boolean().optional(),
    })
    .default({ limit: 50, sort_order: 'descending' }),
);
export type ListChatsInput = z.infer<typeof ListChatsBody>;

const strictInt = (min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]{1,7}$/, 'Must be a whole number')
    .transform(Number)
    .refine((n) => n >= min && n <= max, `Must be from ${min} to ${max}`);

/** GET /list-chats: the same listing from the query string (no filters). */
export const ListChatsQuery = lazySchema(() =>
  z.object({
    limit: strictInt(1, 1000).optional(),
    sort_order: z.enum(['ascending', 'descending']).optional(),
    pagination_key: z.string().min(1).max(128).optional(),
  }),
);

const messageFields = () => ({
  message_id: z.string().optional(),
  created_timestamp: epochMs().optional(),
});

/** Twilio's statuses of a sent message, in the order they move (a later report never moves one back: docs/chats.md). */
export const SMS_STATUSES = ['accepted', 'scheduled', 'queued', 'sending', 'sent', 'delivered', 'undelivered', 'failed', 'canceled', 'read'] as const;

/** An SMS chat's agent messages, once sent: the carrier, its message ID, its latest delivery status. */
const smsFields = () => ({
  provider: z.enum(['twilio', 'mock']).optional(),
  provider_message_id: z.string().optional(),
  sms_status: z.enum(SMS_STATUSES).optional(),
  sms_error_code: z.string().optional(),
});

/** A message of a chat (retell-sdk's MessageBase, ToolCall…MessageBase, NodeTransitionMessageBase). */
export const ChatMessage = lazySchema(() =>
  z.union([
    z.object({ role: z.enum(['agent', 'user']), content: z.string(), ...messageFields(), ...smsFields() }),
    z.object({ role: z.literal('tool_call_invocation'), tool_call_id: z.string(), name: z.string(), arguments: z.string(), ...messageFields() }),
    z.object({ role: z.literal('tool_call_result'), tool_call_id: z.string(), content: z.string(), successful: z.boolean().optional(), ...messageFields() }),
    z.looseObject({ role: z.literal('node_transition'), ...messageFields() }),
    z.looseObject({ role: z.literal('state_transition'), ...messageFields() }),
  ]),
);
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ChatAnalysis = lazySchema(() =>
  z.object({
    chat_summary: z.string().optional(),
    user_sentiment: z.enum(SENTIMENTS).optional(),
    chat_successful: z.boolean().optional(),
    custom_analysis_data: z.record(z.string(), z.unknown()).optional(),
  }),
);
export type ChatAnalysis = z.infer<typeof ChatAnalysis>;

/** The chat object (retell-sdk ChatResponse). Lists leave out the transcript fields, as the client's v3 list does. */
export const Chat = lazySchema(() =>
  z.looseObject({
    chat_id: z.string(),
    agent_id: z.string(),
    version: z.number().int(),
    agent_version: z.number().int(),
    chat_status: z.enum(CHAT_STATUSES),
    chat_type: z.enum(CHAT_TYPES),
    metadata: z.unknown().optional(),
    retell_llm_dynamic_variables: z.record(z.string(), z.string()),
    override_dynamic_variables: z.record(z.string(), z.string()).optional(),
    collected_dynamic_variables: z.record(z.string(), z.string()),
    custom_attributes: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
    data_storage_setting: z.enum(DATA_STORAGE_SETTINGS).optional(),
    start_timestamp: epochMs(),
    end_timestamp: epochMs().nullable().optional(),
    duration_ms: z.number().int().optional(),
    message_count: z.number().int(),
    transcript: z.string().optional(),
    message_with_tool_calls: z.array(ChatMessage).optional(),
    chat_analysis: ChatAnalysis.optional(),
    chat_cost: z
      .object({
        combined_cost: z.number().describe('Cents'),
        product_costs: z.array(z.object({ product: z.string(), unit_price: z.number().describe('Cents per message'), cost: z.number() })),
      })
      .optional()
      .describe('Set when the chat ends (SMS chats: and again as each later SMS is sent)'),
    llm_fallback: llmFallback().optional(),
  }),
);
export type ChatView = z.infer<typeof Chat>;

export const ChatPage = lazySchema(() =>
  z.object({ items: z.array(Chat), has_more: z.boolean(), pagination_key: z.string().optional(), total: z.number().int().optional() }),
);
export const ChatList = lazySchema(() => z.array(Chat));

export const ChatCompletion = lazySchema(() => z.object({ messages: z.array(ChatMessage) }));

// ---------------------------------------------------------------------------------------
// The agent playground

/** A message the playground is given (its role decides the shape; other fields are ignored). */
const playgroundMessage = () =>
  z.looseObject({
    role: z.enum(['agent', 'user', 'tool_call_invocation', 'tool_call_result', 'node_transition', 'state_transition', 'injected', 'sms']),
    content: z.string().max(100_000).optional(),
    tool_call_id: z.string().max(256).optional(),
    name: z.string().max(256).optional(),
    arguments: z.string().max(100_000).optional(),
    successful: z.boolean().optional(),
  });

export const PlaygroundCompletionBody = lazySchema(() =>
  z.object({
    messages: z.array(playgroundMessage()).max(1000),
    current_node_id: z.string().min(1).max(256).optional(),
    current_state: z.string().min(1).max(256).optional(),
    component_id: z.string().min(1).max(256).optional(),
    dynamic_variables: dynamicVariables().optional(),
    tool_mocks: z
      .array(
        z.object({
          tool_name: z.string().min(1).max(256),
          input_match_rule: z
            .discriminatedUnion('type', [z.object({ type: z.literal('any') }), z.object({ type: z.literal('partial_match'), args: z.record(z.string(), z.unknown()) })])
            .optional(),
          output: z.string().max(100_000),
          result: z.boolean().nullable().optional(),
        }),
      )
      .max(100)
      .optional()
      .describe('Tool calls answered with `output` instead of running the tool (custom functions and transfer_call); the first mock whose tool_name and input_match_rule match (absent rule: any call)'),
  }),
);
export type PlaygroundCompletionInput = z.infer<typeof PlaygroundCompletionBody>;

export const PlaygroundQuery = lazySchema(() => z.object({ version: z.string().min(1).max(64).optional() }));

export const PlaygroundCompletion = lazySchema(() =>
  z.object({
    messages: z.array(ChatMessage),
    call_ended: z.boolean(),
    current_node_id: z.string().optional(),
    current_state: z.string().optional(),
    dynamic_variables: z.record(z.string(), z.string()),
    llm_fallback: llmFallback().optional(),
  }),
);

const MAX_SIMULATION_TURNS = 20;

export const PlaygroundSimulationBody = lazySchema(() =>
  z.object({
    user_prompt: z.string().trim().min(1).max(20_000),
    max_turns: z.number().int().min(1).max(MAX_SIMULATION_TURNS).default(5),
    version: versionRef().optional(),
    dynamic_variables: dynamicVariables().optional(),
  }),
);
export type PlaygroundSimulationInput = z.infer<typeof PlaygroundSimulationBody>;

export const PlaygroundSimulation = lazySchema(() =>
  z.object({
    agent_id: z.string(),
    version: z.number().int(),
    turns: z.number().int(),
    ended_by: z.enum(['agent', 'max_turns', 'time_budget']),
    messages: z.array(ChatMessage),
    transcript: z.string(),
    llm_fallback: llmFallback().optional(),
  }),
);
