import * as z from 'zod';
import { sendAt } from '../../platform/aws/due-time.ts';
import { lazySchema } from '../../platform/http/schemas.ts';

/*
 * The message that runs a batch test's next runs (runner.ts) on the call-steps queue: light
 * on purpose, since the call-steps consumer reads every message with it and loads the
 * runner (the conversation runtime, the language-model adapter) only for a test batch's.
 */

export const TestBatchMessageSchema = lazySchema(() =>
  z.object({ kind: z.literal('test-batch'), workspace_id: z.string().min(1), batch_test_id: z.string().min(1) }),
);
export type TestBatchMessage = z.infer<typeof TestBatchMessageSchema>;

export async function queueTestBatch(workspaceId: string, batchTestId: string, dueAtMs = Date.now()): Promise<void> {
  const message: TestBatchMessage = { kind: 'test-batch', workspace_id: workspaceId, batch_test_id: batchTestId };
  await sendAt('call-steps', message, dueAtMs);
}
