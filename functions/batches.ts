import { domainHandler } from '../shared/platform/http/handler.ts';
import { batchRoutes } from '../shared/batches/routes.ts';
// The API operations straight from their module: the domain's index.ts also exports the
// scheduler, which dials through the calls engine (LiveKit, `ws`, S3), about 60 KiB this
// function never runs (docs/performance.md).
import * as batches from '../shared/batches/batches.ts';

export const handler = domainHandler(batchRoutes, {
  createBatchCall: ({ principal, body }) => batches.createBatchCall(principal, body),
  listBatchCalls: ({ principal }) => batches.listBatchCalls(principal.workspaceId),
  getBatchCall: ({ principal, params }) => batches.getBatchCall(principal.workspaceId, params.batch_call_id),
  startBatchCall: ({ principal, params }) => batches.startBatchCall(principal.workspaceId, params.batch_call_id),
  stopBatchCall: ({ principal, params }) => batches.stopBatchCall(principal.workspaceId, params.batch_call_id),
  deleteBatchCall: ({ principal, params }) => batches.deleteBatchCall(principal.workspaceId, params.batch_call_id),
});
