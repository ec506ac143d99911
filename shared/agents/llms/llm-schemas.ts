import * as z from 'zod';
import { destinationUrl, epochMs, idOf, importedFrom, lazySchema, queryInt, versionQuery as referenceQuery } from '../../platform/http/schemas.ts';
import { llmModel, s2sModel } from './models.ts';
import { APP_TOOL_DESCRIPTION, refineAppTool } from '../tools/app-tools.ts';
import { refineTransferCall } from '../tools/transfer-destination.ts';
import { refineCustomTool } from '../tools/custom-tool.ts';

/*
 * Response engines: Retell LLMs (wire name `retell-llm`). Field set from the compatible
 * API (retell-sdk LlmCreateParams). Nested tool and state objects keep every field the
 * client sends (they are configuration the engine reads); the fields Parley acts on are
 * checked strictly. Schemas are built on first use (z.lazy).
 */
const toolObject = () =>
  z
    .looseObject({
      type: z.string().min(1).max(64),
      name: z.string().min(1).max(64).optional(),
      description: z.string().max(10_000).optional(),
    })
    .describe(APP_TOOL_DESCRIPTION)
    .superRefine(refineAppTool)
    .superRefine(refineTransferCall)
    .superRefine(refineCustomTool);

const stateObject = () =>
  z.looseObject({
    name: z.string().min(1).max(64),
    state_prompt: z.string().max(100_000).optional(),
    edges: z
      .array(
        z.looseObject({
          destination_state_name: z.string().min(1).max(64),
          description: z.string().max(10_000).optional(),
        }),
      )
      .max(64)
      .optional(),
    tools: z.array(toolObject()).max(128).optional(),
  });

const dynamicVariables = () => z.record(z.string().max(128), z.string().max(10_000));

const llmFields = () => ({
  model: llmModel().nullable().optional(),
  s2s_model: s2sModel().nullable().optional(),
  model_temperature: z.number().min(0).max(1).optional(),
  model_high_priority: z.boolean().nullable().optional(),
  tool_call_strict_mode: z.boolean().nullable().optional(),
  general_prompt: z.string().max(100_000).nullable().optional(),
  general_tools: z.array(toolObject()).max(128).nullable().optional(),
  states: z.array(stateObject()).max(64).nullable().optional(),
  starting_state: z.string().max(64).nullable().optional(),
  begin_message: z.string().max(10_000).nullable().optional(),
  begin_after_user_silence_ms: z.number().int().min(0).max(600_000).nullable().optional(),
  start_speaker: z.enum(['user', 'agent']).optional(),
  default_dynamic_variables: dynamicVariables().nullable().optional(),
  knowledge_base_ids: z.array(idOf('knowledgeBase', 'a knowledge base ID')).max(100).nullable().optional(),
  kb_config: z.looseObject({}).nullable().optional(),
  mcps: z.array(z.looseObject({ name: z.string().max(128).optional(), url: destinationUrl().optional() })).max(32).nullable().optional(),
  is_transfer_llm: z.boolean().nullable().optional(),
  imported_from: importedFrom().optional(),
});

export const LlmBody = lazySchema(() => z.object(llmFields()));
export type LlmInput = z.infer<typeof LlmBody>;

export const Llm = lazySchema(() =>
  z.looseObject({
    llm_id: z.string(),
    version: z.number().int(),
    is_published: z.boolean(),
    last_modification_timestamp: epochMs(),
    ...llmFields(),
  }),
);
export type Llm = z.infer<typeof Llm>;

export const listQuery = () =>
  z.object({
    limit: queryInt({ min: 1, max: 1000, default: 1000 }),
    pagination_key: idOf('llm', 'a Retell LLM ID').optional(),
    sort_order: z.enum(['ascending', 'descending']).default('descending'),
  });

export const llmIdParams = lazySchema(() => z.object({ llm_id: idOf('llm', 'a Retell LLM ID') }));
export const versionQuery = lazySchema(referenceQuery);
