import { defineRoutes } from '../../platform/http/route.ts';
import * as z from 'zod';
import { publishVersionBody } from '../versions/agent-fields.ts';
import { lazySchema, requiredQueryInt } from '../../platform/http/schemas.ts';
import { Agent, agentIdParams, AgentTag, agentTagParams, agentVersionParams, AgentVersionSummary, anyAgentIdParams, CreateAgentBody, CreateAgentTagBody, listQuery, mixedListQuery, UpdateAgentBody, UpdateAgentTagBody, versionListQuery, versionQueryParams } from './agent-schemas.ts';

export const agentRoutes = defineRoutes({ domain: 'agents', access: 'agents' }, {
  createAgent: {
    method: 'POST', path: '/create-agent', status: 201,
    summary: 'Create a voice agent (version 0, a draft)', body: CreateAgentBody, response: Agent,
  },
  getAgent: {
    method: 'GET', path: '/get-agent/{agent_id}', status: 200,
    summary: 'Get an agent: the latest version, or ?version=', params: agentIdParams, query: versionQueryParams, response: Agent,
  },
  listAgents: {
    method: 'GET', path: '/v2/list-agents', aliases: [{ method: 'GET', path: '/list-agents' }],
    status: 200,
    summary: 'List agents (latest versions), newest first',
    query: lazySchema(listQuery), response: lazySchema(() => z.array(Agent)),
  },
  listAgentsPaged: {
    method: 'POST', path: '/v2/list-agents', status: 200,
    summary: 'List voice and chat agents a page at a time with filters (the compatible client’s call)',
    query: lazySchema(mixedListQuery),
    body: lazySchema(() =>
      z.object({
        filter_criteria: z
          .object({
            query: z.string().max(200).optional(),
            channel: z
              .object({ op: z.enum(['eq', 'ne', 'sw', 'ew', 'co']), type: z.literal('string'), value: z.enum(['voice', 'chat']) })
              .optional(),
          })
          .optional(),
      }),
    ),
  },
  updateAgent: {
    method: 'PATCH', path: '/update-agent/{agent_id}', status: 200,
    summary: 'Update the latest draft (a published latest version gets a new draft), or the draft ?version=',
    params: agentIdParams, query: versionQueryParams, body: UpdateAgentBody, response: Agent,
  },
  deleteAgent: {
    method: 'DELETE', path: '/delete-agent/{agent_id}', status: 204,
    summary: 'Delete an agent with all its versions and tags', params: agentIdParams,
  },
  publishAgentVersion: {
    method: 'POST', path: '/publish-agent-version/{agent_id}', status: 200,
    summary: 'Publish a draft version (default: the latest) of a voice or chat agent in place, with its response engine version',
    params: anyAgentIdParams,
    body: lazySchema(publishVersionBody),
    response: lazySchema(() => z.looseObject({ agent_id: z.string(), version: z.number().int(), is_published: z.boolean() })),
  },
  createAgentVersion: {
    method: 'POST', path: '/create-agent-version/{agent_id}', status: 201,
    summary: 'Create a new draft version of a voice or chat agent from a base version (default: the latest)',
    params: anyAgentIdParams,
    body: lazySchema(() => z.object({ base_version: z.number().int().min(0).optional() })),
    response: lazySchema(() => z.looseObject({ agent_id: z.string(), version: z.number().int(), is_published: z.boolean() })),
  },
  listAgentVersions: {
    method: 'GET', path: '/list-agent-versions/{agent_id}', status: 200,
    summary: 'List an agent’s versions a page at a time',
    params: agentIdParams, query: versionListQuery,
    response: lazySchema(() =>
      z.object({ has_more: z.boolean(), items: z.array(AgentVersionSummary), pagination_key: z.string().optional() }),
    ),
  },
  getAgentVersions: {
    method: 'GET', path: '/agent-versions/{agent_id}', aliases: [{ method: 'GET', path: '/get-agent-versions/{agent_id}' }],
    status: 200,
    summary: 'Every version of an agent, in full, oldest first',
    params: agentIdParams, response: lazySchema(() => z.array(Agent)),
  },
  describeAgentVersion: {
    method: 'PATCH', path: '/agent-versions/{agent_id}/{version}', status: 200,
    summary: 'Set a version’s title or description (any version)',
    params: agentVersionParams,
    body: lazySchema(() =>
      z.object({ version_title: z.string().max(200).nullable().optional(), version_description: z.string().max(2000).nullable().optional() }),
    ),
    response: Agent,
  },
  deleteAgentVersion: {
    method: 'DELETE', path: '/agent-versions/{agent_id}/{version}', status: 204,
    summary: 'Delete a draft version that is neither the latest nor named by a tag', params: agentVersionParams,
  },
  deleteAgentVersionByQuery: {
    method: 'DELETE', path: '/delete-agent-version/{agent_id}', status: 204,
    summary: 'Delete a draft version given as ?version= (the compatible client’s call)',
    params: anyAgentIdParams,
    query: lazySchema(() => z.object({ version: requiredQueryInt({ min: 0, max: 999_999_999 }) })),
  },
  compareAgentVersions: {
    method: 'GET', path: '/compare-agent-versions/{agent_id}', status: 200,
    summary: 'Field-level differences between two versions (?version_a=&version_b=)',
    params: agentIdParams,
    query: lazySchema(() =>
      z.object({
        version_a: requiredQueryInt({ min: 0, max: 999_999_999 }),
        version_b: requiredQueryInt({ min: 0, max: 999_999_999 }),
      }),
    ),
    response: lazySchema(() =>
      z.object({
        agent_id: z.string(),
        version_a: z.number().int(),
        version_b: z.number().int(),
        differences: z.array(z.object({ field: z.string(), version_a: z.unknown(), version_b: z.unknown() })),
      }),
    ),
  },
  resolveAgentVersion: {
    method: 'GET', path: '/resolve-agent-version/{agent_id}', status: 200,
    summary: 'Resolve a version reference (a number, latest, latest_published or a tag name) to one version',
    params: agentIdParams,
    query: lazySchema(() => z.object({ version: z.string().min(1).max(64).default('latest') })),
    response: lazySchema(() =>
      z.object({
        agent_id: z.string(),
        version: z.number().int(),
        is_published: z.boolean(),
        resolved_from: z.enum(['version', 'latest', 'latest_published', 'tag']),
        tag: z.string().optional(),
        variables: z.record(z.string(), z.string()).optional(),
      }),
    ),
  },
  listAgentTags: {
    method: 'GET', path: '/agents/{agent_id}/tags', status: 200,
    summary: 'Environment tags of an agent', params: agentIdParams, response: lazySchema(() => z.array(AgentTag)),
  },
  createAgentTag: {
    method: 'POST', path: '/agents/{agent_id}/tags', status: 201,
    summary: 'Name a version with an environment tag carrying variables',
    params: agentIdParams, body: CreateAgentTagBody, response: AgentTag,
  },
  updateAgentTag: {
    method: 'PATCH', path: '/agents/{agent_id}/tags/{name}', status: 200,
    summary: 'Point a tag at another version or change its variables',
    params: agentTagParams, body: UpdateAgentTagBody, response: AgentTag,
  },
  deleteAgentTag: {
    method: 'DELETE', path: '/agents/{agent_id}/tags/{name}', status: 204,
    summary: 'Delete an environment tag', params: agentTagParams,
  },
});
