import * as z from 'zod';
import { idOf } from '../../platform/http/schemas.ts';
import type { AppToolRef } from '../../integrations/app-refs/index.ts';

/*
 * Tools that use an integration app (a Parley extension: docs/integrations.md, "App tools"):
 * `{type: 'app', name, description?, app_id, tool, speak_during_execution?,
 * execution_message_description?, execution_message_type?}` in a Retell LLM's
 * `general_tools` and states' `tools`, and in a flow's (and its components') `tools`
 * (with `tool_id`, which function nodes name). `tool` is one of the app provider's tools
 * (GET /get-app-tool-schema); the runtime offers the model that tool's JSON-schema
 * parameters and runs it through the app (shared/conversation/engines/model-turn.ts).
 */

const APP_TOOL_TYPE = 'app';

const appTool = () =>
  z.looseObject({
    type: z.literal(APP_TOOL_TYPE),
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'Must be 1 to 64 letters, digits, underscores or dashes'),
    description: z.string().max(10_000).optional(),
    app_id: idOf('app', 'an app ID'),
    tool: z.string().min(1).max(100),
    speak_during_execution: z.boolean().optional(),
    speak_after_execution: z.boolean().optional(),
    execution_message_description: z.string().max(10_000).optional(),
    execution_message_type: z.enum(['prompt', 'static_text']).optional(),
  });

export const APP_TOOL_DESCRIPTION =
  'A tool (shapes as in the compatible API). Ours: type `app` runs one tool of an integration app: ' +
  '{type: "app", name, description?, app_id, tool (one of the app provider\'s tools, GET /get-app-tool-schema), ' +
  'speak_during_execution?, execution_message_description?, execution_message_type?}.';

/** Checks a tool object of type `app` against the app tool's shape (other types are kept as sent). */
export function refineAppTool(tool: { type: string }, ctx: z.RefinementCtx): void {
  if (tool.type !== APP_TOOL_TYPE) return;
  const result = appTool().safeParse(tool, { reportInput: true });
  if (!result.success) for (const issue of result.error.issues) ctx.addIssue(issue as Parameters<typeof ctx.addIssue>[0]);
}

type ToolLike = { type?: unknown; app_id?: unknown; tool?: unknown };
const asTools = (value: unknown): ToolLike[] => (Array.isArray(value) ? (value as ToolLike[]) : []);

function refsIn(tools: unknown, path: string): AppToolRef[] {
  return asTools(tools).flatMap((tool, i) =>
    tool?.type === APP_TOOL_TYPE && typeof tool.app_id === 'string' && typeof tool.tool === 'string'
      ? [{ path: `${path}.${i}`, app_id: tool.app_id, tool: tool.tool }]
      : [],
  );
}

/** The app tools of Retell LLM fields (`general_tools`, each state's `tools`), with their paths. */
export function llmAppToolRefs(data: Record<string, unknown>): AppToolRef[] {
  const states = Array.isArray(data.states) ? (data.states as { tools?: unknown }[]) : [];
  return [...refsIn(data.general_tools, 'general_tools'), ...states.flatMap((state, i) => refsIn(state?.tools, `states.${i}.tools`))];
}

/** The app tools of flow (or shared component) fields: `tools`, and each inline component's `tools`. */
export function flowAppToolRefs(data: Record<string, unknown>): AppToolRef[] {
  const components = Array.isArray(data.components) ? (data.components as { tools?: unknown }[]) : [];
  return [...refsIn(data.tools, 'tools'), ...components.flatMap((component, i) => refsIn(component?.tools, `components.${i}.tools`))];
}
