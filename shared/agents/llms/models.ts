import * as z from 'zod';

/**
 * The fixed model table (spec: Models): six ids of one family (with the default), five of
 * a second, three of a third, and two realtime ids for s2s_model — all ids the compatible
 * API accepts. `model`, `model_choice.model` and `post_call_analysis_model` are checked
 * against it; anything else is a 400 naming the field.
 */
const LLM_MODEL_FAMILIES = {
  openai: ['gpt-4.1', 'gpt-4.1-mini', 'gpt-4.1-nano', 'gpt-5', 'gpt-5-mini', 'gpt-5-nano'],
  google: ['gemini-3.0-flash', 'gemini-3.1-flash-lite', 'gemini-3.5-flash', 'gemini-3.5-flash-lite', 'gemini-3.6-flash'],
  anthropic: ['claude-4.5-sonnet', 'claude-4.6-sonnet', 'claude-4.5-haiku'],
} as const;

export const LLM_MODELS = [
  ...LLM_MODEL_FAMILIES.openai,
  ...LLM_MODEL_FAMILIES.google,
  ...LLM_MODEL_FAMILIES.anthropic,
] as const;
export type LlmModel = (typeof LLM_MODELS)[number];

export const DEFAULT_LLM_MODEL: LlmModel = 'gpt-4.1';

export const S2S_MODELS = ['gpt-realtime', 'gpt-realtime-mini'] as const;

const listed = (values: readonly string[]) => values.join(', ');

export const llmModel = () =>
  z.enum(LLM_MODELS, { error: (issue) => `Unknown model ${JSON.stringify(issue.input)}; use one of ${listed(LLM_MODELS)}` });

export const s2sModel = () =>
  z.enum(S2S_MODELS, { error: (issue) => `Unknown realtime model ${JSON.stringify(issue.input)}; use one of ${listed(S2S_MODELS)}` });
