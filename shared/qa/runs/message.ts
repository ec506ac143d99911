import * as z from 'zod';
import { sendAt } from '../../platform/aws/due-time.ts';
import { lazySchema } from '../../platform/http/schemas.ts';

/*
 * The QA domain's background messages, on the call-steps queue (the consumer that holds
 * the language-model credentials and runs post-call analysis, whose end auto-scoring
 * follows): a run's next page (`qa-run`), one call auto-scored (`qa-score`), a deleted
 * cohort's partition emptied (`qa-cleanup`). Light on purpose: the call-steps consumer
 * parses every message with these and loads the scorer only for a QA message.
 */

export const QaMessageSchema = lazySchema(() =>
  z.discriminatedUnion('kind', [
    z.object({ kind: z.literal('qa-run'), workspace_id: z.string().min(1), cohort_id: z.string().min(1), run_id: z.string().min(1) }),
    z.object({ kind: z.literal('qa-score'), workspace_id: z.string().min(1), cohort_id: z.string().min(1), call_id: z.string().min(1) }),
    z.object({ kind: z.literal('qa-cleanup'), workspace_id: z.string().min(1), cohort_id: z.string().min(1) }),
  ]),
);
export type QaMessage = z.infer<typeof QaMessageSchema>;

export async function queueQaMessage(message: QaMessage, dueAtMs = Date.now()): Promise<void> {
  await sendAt('call-steps', message, dueAtMs);
}
