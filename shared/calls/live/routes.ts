import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { defineRoutes } from '../../platform/http/route.ts';
import {
  LeaveBody,
  LiveAccessView,
  LiveSuccess,
  MonitorInfo,
  StreamQuery,
  SupervisorSayBody,
  TakeOverBody,
  TakeOverView,
  UpdateLiveCallBody,
  ViewerView,
} from './schemas.ts';
import { callIdParams } from '../schemas.ts';

/** Live calls (docs/calls.md, Live calls): control of ongoing calls, and the monitors. */
export const liveCallRoutes = defineRoutes({ domain: 'calls', access: 'calls' }, {
  updateLiveCall: {
    method: 'PATCH', path: '/update-live-call/{call_id}', aliases: [{ method: 'PATCH', path: '/v2/update-live-call/{call_id}' }], status: 200,
    summary: 'Change an ongoing call\'s dynamic variables, metadata, data storage or agent_override for the rest of the call',
    params: callIdParams, body: UpdateLiveCallBody, response: LiveSuccess,
  },
  listenLiveCall: {
    method: 'POST', path: '/v2/calls/{call_id}/listen', aliases: [{ method: 'POST', path: '/v2/listen-live-call/{call_id}' }], status: 200,
    summary: 'A subscribe-only token to listen to an ongoing call\'s room (the listener becomes a viewer)',
    params: callIdParams, response: LiveAccessView,
  },
  takeOverLiveCall: {
    method: 'POST', path: '/v2/calls/{call_id}/take-over', aliases: [{ method: 'POST', path: '/v2/take-over-live-call/{call_id}' }], status: 200,
    summary: 'Stop the agent and take the ongoing call over with a publishing token (ends call_take_over)',
    params: callIdParams, body: TakeOverBody, response: TakeOverView,
  },
  supervisorSay: {
    method: 'POST', path: '/v2/calls/{call_id}/supervisor-say', status: 200,
    summary: 'Make the agent of an ongoing call say a text next',
    params: callIdParams, body: SupervisorSayBody, response: LiveSuccess,
  },
  listCallViewers: {
    method: 'GET', path: '/v2/calls/{call_id}/viewers', status: 200,
    summary: 'Who listens to an ongoing call (listeners and a supervisor who took over)',
    params: callIdParams, response: ViewerView,
  },
  leaveLiveCall: {
    method: 'POST', path: '/v2/calls/{call_id}/leave', status: 200,
    summary: 'Remove a viewer from an ongoing call',
    params: callIdParams, body: LeaveBody, response: LiveSuccess,
  },
  streamCall: {
    method: 'GET', path: '/v2/calls/{call_id}/stream', status: 200, produces: 'text/event-stream',
    summary: 'Server-sent events of the call\'s status and transcript (resumable with Last-Event-ID; long-poll chunks behind API Gateway)',
    params: callIdParams, query: StreamQuery, response: lazySchema(() => z.string()),
  },
  callMonitor: {
    method: 'GET', path: '/v2/calls/{call_id}/ws', status: 200,
    summary: 'WebSocket monitor of the call (an Upgrade request locally; otherwise where to connect)',
    params: callIdParams, response: MonitorInfo,
  },
});
