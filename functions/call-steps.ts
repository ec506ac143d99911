import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda';
import { dueTimeBatch } from '../shared/platform/aws/due-time.ts';
import { logger } from '../shared/platform/logger.ts';
import { instrumented } from '../shared/platform/observability/telemetry.ts';
import { CallQueueMessageSchema, runCallQueueMessage, type CallQueueMessage } from '../shared/calls/index.ts';
import { onCallLifecycle } from '../shared/calls/index.ts';
import { registerBatchCallCounters } from '../shared/batches/counters.ts';
import { registerRollupRecording } from '../shared/analytics/recording/index.ts';
import { queueCrmCallPush } from '../shared/integrations/call-push.ts';
import { loadOnce } from '../shared/platform/lazy.ts';
// The message straight from its module (the testing index is the API's: functions/agents.ts);
// the runner, which loads the language-model adapter, only when a batch test's message comes.
import { TestBatchMessageSchema, type TestBatchMessage } from '../shared/testing/runs/message.ts';
// QA's messages likewise: the scorer only when a QA message comes (the qa index is the API's: functions/qa.ts).
import { QaMessageSchema, type QaMessage } from '../shared/qa/runs/message.ts';
import { registerQaAutoScoring } from '../shared/qa/runs/auto-score.ts';

const testRunner = loadOnce(() => import('../shared/testing/runs/runner.ts'));
const qaRunner = loadOnce(() => import('../shared/qa/runs/runner.ts'));

// Batch counters hear of the calls this consumer moves (shared/calls/call-listeners.ts).
registerBatchCallCounters();
// The analytics rollups count every call this function ends or analyses (docs/analytics.md, Recording).
registerRollupRecording();
// An analysed call (the analysis step runs here) queues its CRM push: only a message on
// integration-jobs, when the workspace's CRM config asks for it (docs/integrations.md). From
// call-push.ts itself: the integrations index holds the CRM and app clients and their OAuth.
onCallLifecycle(queueCrmCallPush);
// An analysed call is queued for scoring by each QA cohort with auto_score that holds it (docs/qa.md, Auto-scoring).
registerQaAutoScoring();

/** A call's step, a batch test's next runs (shared/testing/runs/runner.ts), or a QA step (shared/qa/runs/runner.ts): all use the conversation runtime or its model. */
const parseCallStep = (message: unknown): CallQueueMessage | TestBatchMessage | QaMessage | undefined => {
  const parsed = CallQueueMessageSchema.safeParse(message);
  if (parsed.success) return parsed.data;
  const test = TestBatchMessageSchema.safeParse(message);
  if (test.success) return test.data;
  const qa = QaMessageSchema.safeParse(message);
  return qa.success ? qa.data : undefined;
};

const isQaMessage = (message: CallQueueMessage | TestBatchMessage | QaMessage): message is QaMessage =>
  'kind' in message && typeof message.kind === 'string' && message.kind.startsWith('qa-');

/**
 * The call-steps queue's consumer (call steps, queued inbound SIP callers and batch tests' runs): a step not yet due is re-sent for its next hop, a due one
 * goes to the call engine (a batch test's message to its runner). Only a step whose re-send or run failed is reported, so SQS
 * redelivers just that one (shared/platform/aws/due-time.ts).
 */
async function handle(event: SQSEvent, context: Context): Promise<SQSBatchResponse> {
  logger.addContext(context);
  return dueTimeBatch('call-steps', event, {
    parse: parseCallStep,
    handle: (message) =>
      isQaMessage(message)
        ? qaRunner().then((runner) => runner.runQaMessage(message))
        : 'kind' in message && message.kind === 'test-batch'
          ? testRunner().then((runner) => runner.runTestBatchStep(message))
          : runCallQueueMessage(message as CallQueueMessage),
  });
}

/** Traced, and its business metrics flushed once per invocation (shared/platform/observability/telemetry.ts). */
export const handler = instrumented(handle);
