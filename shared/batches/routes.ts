import { defineRoutes } from '../platform/http/route.ts';
import {
  BatchCallList,
  BatchCallWithTasks,
  batchCallIdParams,
  CreateBatchCallBody,
  CreatedBatchCall,
  StartedBatchCall,
  StoppedBatchCall,
} from './schemas.ts';

export const batchRoutes = defineRoutes({ domain: 'batches', access: 'calls' }, {
  createBatchCall: {
    method: 'POST', path: '/create-batch-call', status: 201,
    summary: 'Create a batch call: tasks (or tasks_csv) dialled from a workspace number as capacity and the time window allow',
    spendChecked: true,
    body: CreateBatchCallBody, response: CreatedBatchCall,
  },
  listBatchCalls: {
    method: 'GET', path: '/list-batch-calls', status: 200,
    summary: 'List batch calls, newest first, with their counters',
    response: BatchCallList,
  },
  getBatchCall: {
    method: 'GET', path: '/get-batch-call/{batch_call_id}', status: 200,
    summary: 'Get a batch call with its counters and every task\'s status, call_id and error',
    params: batchCallIdParams, response: BatchCallWithTasks,
  },
  startBatchCall: {
    method: 'POST', path: '/start-batch-call/{batch_call_id}', status: 200,
    summary: 'Start a draft batch call (a scheduled time in the past moves to now)',
    params: batchCallIdParams, response: StartedBatchCall,
  },
  stopBatchCall: {
    method: 'POST', path: '/stop-batch-call/{batch_call_id}', status: 200,
    summary: 'Stop a batch call: pending tasks are cancelled, calls in progress finish',
    params: batchCallIdParams, response: StoppedBatchCall,
  },
  deleteBatchCall: {
    method: 'DELETE', path: '/delete-batch-call/{batch_call_id}', status: 204,
    summary: 'Delete a batch call: pending tasks are never called, placed calls stay in the call history unlinked',
    params: batchCallIdParams,
  },
});
