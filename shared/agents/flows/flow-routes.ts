import { defineRoutes } from '../../platform/http/route.ts';
import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { componentIdParams, componentListQuery, ConversationFlow, CreateComponentBody, CreateFlowBody, FlowComponent, flowIdParams, flowListQuery, page, UpdateComponentBody, UpdateFlowBody, versionQueryParams } from './flow-schemas.ts';

export const flowRoutes = defineRoutes({ domain: 'flows', access: 'agents' }, {
  createConversationFlow: {
    method: 'POST', path: '/create-conversation-flow', status: 201,
    summary: 'Create a conversation flow response engine (version 0, a draft)', body: CreateFlowBody, response: ConversationFlow,
  },
  getConversationFlow: {
    method: 'GET', path: '/get-conversation-flow/{conversation_flow_id}', status: 200,
    summary: 'Get a conversation flow (latest version, or ?version=)',
    params: flowIdParams, query: versionQueryParams, response: ConversationFlow,
  },
  listConversationFlows: {
    method: 'GET', path: '/v2/list-conversation-flows', status: 200,
    summary: 'List conversation flows (latest versions) a page at a time, newest first',
    query: flowListQuery, response: lazySchema(() => page(ConversationFlow)),
  },
  listConversationFlowsArray: {
    method: 'GET', path: '/list-conversation-flows', status: 200,
    summary: 'List conversation flows (latest versions) as one array, newest first (the unversioned path)',
    query: flowListQuery, response: lazySchema(() => z.array(ConversationFlow)),
  },
  updateConversationFlow: {
    method: 'PATCH', path: '/update-conversation-flow/{conversation_flow_id}', status: 200,
    summary: 'Update the latest draft of a conversation flow (a published latest version gets a new draft), or the draft ?version=',
    params: flowIdParams, query: versionQueryParams, body: UpdateFlowBody, response: ConversationFlow,
  },
  deleteConversationFlow: {
    method: 'DELETE', path: '/delete-conversation-flow/{conversation_flow_id}', status: 204,
    summary: 'Delete a conversation flow with its versions; refused while an agent uses it unless force_delete=true',
    params: flowIdParams,
    query: lazySchema(() => z.object({ force_delete: z.enum(['true', 'false']).optional() })),
  },

  createConversationFlowComponent: {
    method: 'POST', path: '/create-conversation-flow-component', status: 201,
    summary: 'Create a shared conversation flow component', body: CreateComponentBody, response: FlowComponent,
  },
  getConversationFlowComponent: {
    method: 'GET', path: '/get-conversation-flow-component/{component_id}', status: 200,
    summary: 'Get a shared conversation flow component', params: componentIdParams, response: FlowComponent,
  },
  listConversationFlowComponents: {
    method: 'GET', path: '/v2/list-conversation-flow-components', status: 200,
    summary: 'List shared conversation flow components a page at a time, newest first (the compatible client’s call)',
    query: componentListQuery, response: lazySchema(() => page(FlowComponent)),
  },
  listConversationFlowComponentsArray: {
    method: 'GET', path: '/list-conversation-flow-components', status: 200,
    summary: 'List shared conversation flow components as one array, newest first',
    query: componentListQuery, response: lazySchema(() => z.array(FlowComponent)),
  },
  updateConversationFlowComponent: {
    method: 'PATCH', path: '/update-conversation-flow-component/{component_id}', status: 200,
    summary: 'Update a shared conversation flow component',
    params: componentIdParams, body: UpdateComponentBody, response: FlowComponent,
  },
  deleteConversationFlowComponent: {
    method: 'DELETE', path: '/delete-conversation-flow-component/{component_id}', status: 204,
    summary: 'Delete a shared conversation flow component; refused while a flow or another component uses it',
    params: componentIdParams,
  },
});
