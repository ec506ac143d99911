import { defineRoutes } from '../../platform/http/route.ts';
import * as z from 'zod';
import { lazySchema } from '../../platform/http/schemas.ts';
import { listQuery, Llm, LlmBody, llmIdParams, versionQuery } from './llm-schemas.ts';

export const llmRoutes = defineRoutes({ domain: 'agents', access: 'agents' }, {
  createRetellLlm: {
    method: 'POST', path: '/create-retell-llm', status: 201,
    summary: 'Create a Retell LLM response engine', body: LlmBody, response: Llm,
  },
  getRetellLlm: {
    method: 'GET', path: '/get-retell-llm/{llm_id}', status: 200,
    summary: 'Get a Retell LLM (latest version, or ?version=)', params: llmIdParams, query: versionQuery, response: Llm,
  },
  listRetellLlms: {
    method: 'GET', path: '/v2/list-retell-llms', status: 200,
    summary: 'List Retell LLMs (latest versions) a page at a time, newest first',
    query: lazySchema(listQuery),
    response: lazySchema(() => z.object({ has_more: z.boolean(), items: z.array(Llm), pagination_key: z.string().optional() })),
  },
  listRetellLlmsArray: {
    method: 'GET', path: '/list-retell-llms', status: 200,
    summary: 'List Retell LLMs (latest versions) as one array, newest first (the unversioned path)',
    query: lazySchema(listQuery),
    response: lazySchema(() => z.array(Llm)),
  },
  updateRetellLlm: {
    method: 'PATCH', path: '/update-retell-llm/{llm_id}', status: 200,
    summary: 'Update the latest draft of a Retell LLM (or the draft ?version=)',
    params: llmIdParams, query: versionQuery, body: LlmBody, response: Llm,
  },
  deleteRetellLlm: {
    method: 'DELETE', path: '/delete-retell-llm/{llm_id}', status: 204,
    summary: 'Delete a Retell LLM; refused while an agent uses it unless force_delete=true',
    params: llmIdParams,
    query: lazySchema(() => z.object({ force_delete: z.enum(['true', 'false']).optional() })),
  },
});
