import { domainHandler } from '../shared/platform/http/handler.ts';
import { batchRoutes } from '../shared/batches/routes.ts';
import * as batches from '../shared/batches/index.ts';

export const handler = domainHandler(batchRoutes, {
  createBatchCall: ({ principal, body }) => batches.createBatchCall(principal, body),
  listBatchCalls: ({ principal }) => batches.listBatchCalls(principal.workspaceId),
  getBatchCall: ({ principal, params }) => batches.getBatchCall(principal.workspaceId, params.batch_call_id),
  startBatchCall: ({ principal, params }) => batches.startBatchCall(principal.workspaceId, params.batch_call_id),
  stopBatchCall: ({ principal, params }) => batches.stopBatchCall(principal.workspaceId, params.batch_call_id),
  deleteBatchCall: ({ principal, params }) => batches.deleteBatchCall(principal.workspaceId, params.batch_call_id),
});
