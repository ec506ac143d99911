import { lazySchema } from '../platform/http/schemas.ts';
import { defineRoutes } from '../platform/http/route.ts';
import {
  BackfillAccepted,
  BackfillCallAnalysisBody,
  Call,
  CallList,
  callIdParams,
  ConcurrencySettingsView,
  ConcurrencyView,
  CreatePhoneCallBody,
  CreateWebCallBody,
  ListCallsBody,
  RegisterPhoneCallBody,
  UpdateCallBody,
  UpdateConcurrencySettingsBody,
  WebCall,
} from './schemas.ts';

export const callRoutes = defineRoutes({ domain: 'calls', access: 'calls' }, {
  createPhoneCall: {
    method: 'POST', path: '/v2/create-phone-call', aliases: [{ method: 'POST', path: '/create-phone-call' }], status: 201,
    summary: 'Place an outbound phone call from a workspace number',
    // No route throttle of its own: the gate (per key), the concurrency counter and the
    // numbers' CPS buckets bound a workspace; the stage's default bounds the platform.
    spendChecked: true,
    body: CreatePhoneCallBody, response: Call,
  },
  createWebCall: {
    method: 'POST', path: '/v3/create-web-call', aliases: [{ method: 'POST', path: '/v2/create-web-call' }], status: 201,
    summary: 'Create a web call and its media access token',
    spendChecked: true, publicKey: 'start_web_call',
    body: CreateWebCallBody, response: WebCall,
  },
  registerPhoneCall: {
    method: 'POST', path: '/v2/register-phone-call', aliases: [{ method: 'POST', path: '/register-phone-call' }], status: 201,
    summary: 'Register a call your own SIP stack bridges to the agent',
    spendChecked: true,
    body: RegisterPhoneCallBody, response: Call,
  },
  getCall: {
    method: 'GET', path: '/v2/get-call/{call_id}', aliases: [{ method: 'GET', path: '/get-call/{call_id}' }], status: 200,
    summary: 'Get a call',
    params: callIdParams, response: Call,
  },
  listCalls: {
    method: 'POST', path: '/v3/list-calls', aliases: [{ method: 'POST', path: '/v2/list-calls' }], status: 200,
    summary: 'List calls, newest first (retell-sdk gets a page {items, has_more, pagination_key}; others the array)',
    body: ListCallsBody, response: CallList,
  },
  updateCall: {
    method: 'PATCH', path: '/v2/update-call/{call_id}', status: 200,
    summary: 'Update a call\'s metadata and data storage fields',
    params: callIdParams, body: UpdateCallBody, response: Call,
  },
  stopCall: {
    method: 'POST', path: '/v2/stop-call/{call_id}', status: 200,
    summary: 'End a registered or ongoing call (manual_stopped)',
    params: callIdParams, response: Call,
  },
  deleteCall: {
    method: 'DELETE', path: '/v2/delete-call/{call_id}', status: 204,
    summary: 'Delete a call and everything stored with it',
    params: callIdParams,
  },
  rerunCallAnalysis: {
    method: 'POST', path: '/rerun-call-analysis/{call_id}', aliases: [{ method: 'PUT', path: '/rerun-call-analysis/{call_id}' }], status: 200,
    summary: 'Run the post-call analysis of an ended call again',
    params: callIdParams, response: Call,
  },
  backfillCallAnalysis: {
    method: 'POST', path: '/backfill-call-analysis', status: 202,
    summary: 'Queue post-call analysis for ended calls',
    body: BackfillCallAnalysisBody, response: BackfillAccepted,
  },
  getConcurrency: {
    // The spec's scope table puts get-concurrency under analytics; a route takes one scope.
    method: 'GET', path: '/get-concurrency', status: 200, access: 'analytics',
    summary: 'Calls in progress and the workspace\'s concurrency limits',
    response: lazySchema(() => ConcurrencyView),
  },
  getConcurrencySettings: {
    method: 'GET', path: '/get-concurrency-settings', status: 200,
    summary: 'Reserved inbound slots and burst concurrency',
    response: lazySchema(() => ConcurrencySettingsView),
  },
  updateConcurrencySettings: {
    method: 'PATCH', path: '/update-concurrency-settings', status: 200,
    summary: 'Set reserved inbound slots (0 to the limit) and burst concurrency',
    body: lazySchema(() => UpdateConcurrencySettingsBody), response: lazySchema(() => ConcurrencySettingsView),
  },
});
