import type { Attachment } from '../sessions/schemas.ts';
import type { MessageItem } from '../sessions/store.ts';
import type { Caller } from '../tools/dispatch.ts';
import type { ToolRunner } from '../tools/run.ts';
import type { TurnResult } from './offline.ts';

/** What a model turn is given and answers, offline or online (its own module: both paths and ./index.ts read it). */
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
