/**
 * Retell LLMs, one of the two response engines, and the model table every engine and
 * agent picks from (served by the agents function). Routes: llm-routes.ts; schemas:
 * llm-schemas.ts; logic: llms.ts; models: models.ts; their tools are checked in ../tools/.
 */
export { Llm, LlmBody } from './llm-schemas.ts';
export type { LlmInput } from './llm-schemas.ts';
export { createLlm, deleteLlm, getLlm, listLlms, updateLlm } from './llms.ts';
export { DEFAULT_LLM_MODEL, LLM_MODELS, llmModel } from './models.ts';
export type { LlmModel, S2S_MODELS } from './models.ts';
