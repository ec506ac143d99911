import type { Attachment } from '../sessions/schemas.ts';
import type { MessageItem } from '../sessions/store.ts';
import type { Caller } from '../tools/dispatch.ts';
import type { ToolRunner } from '../tools/run.ts';
import { offlineTurn, type TurnResult } from './offline.ts';

/*
 * The assistant's model (docs/assistant.md, "The model"): the workspace's language model
 * with the tools when one is configured (LLM_BASE_URL: ./online.ts, loaded on first use),
 * otherwise the documented offline rules (./offline.ts).
 */

export interface RespondInput {
  caller: Caller;
  content: string;
  history: readonly MessageItem[];
  attachments: readonly Attachment[];
  runner: ToolRunner;
  nowMs: number;
  newActionId: () => string;
}

export type Response = TurnResult & { usage?: { input_tokens: number; output_tokens: number } };

export async function respond(input: RespondInput): Promise<Response> {
  const { readLlmSettings } = await import('../../vendors/llm/index.ts');
  const { baseUrl } = await readLlmSettings();
  if (!baseUrl) return offlineTurn(input);
  const { onlineTurn } = await import('./online.ts');
  return onlineTurn(input);
}
