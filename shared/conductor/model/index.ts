import { offlineTurn } from './offline.ts';
import type { RespondInput, Response } from './turn-types.ts';

/*
 * The assistant's model (docs/assistant.md, "The model"): the workspace's language model
 * with the tools when one is configured (LLM_BASE_URL: ./online.ts, loaded on first use),
 * otherwise the documented offline rules (./offline.ts).
 */

export async function respond(input: RespondInput): Promise<Response> {
  const { readLlmSettings } = await import('../../vendors/llm/index.ts');
  const { baseUrl } = await readLlmSettings();
  if (!baseUrl) return offlineTurn(input);
  const { onlineTurn } = await import('./online.ts');
  return onlineTurn(input);
}
