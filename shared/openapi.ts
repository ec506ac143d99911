import * as z from 'zod';
import type { RouteDefinition } from './platform/http/route.ts';
import { servedRoutes } from './route-table.ts';
import type { Domain } from './platform/http/route.ts';
import { jsonSchemaOf } from './platform/http/schemas.ts';

/**
 * Generates the OpenAPI 3.1 document from the route table and its zod schemas. The
 * checked-in openapi.json must equal this output (a test holds it to that), so the
 * published contract cannot drift from the code.
 */
export function buildOpenApiDocument(): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  // Routes that answer errors in their own protocol's format (SCIM): each format's schema once.
  const errorFormats: Record<string, Record<string, unknown>> = {};
  for (const served of servedRoutes()) {
    const { route } = served;
    if (route.errorFormat) errorFormats[route.errorFormat.name] ??= schema(route.errorFormat.schema, 'output');
    const alias = served.key !== `${route.method} ${route.path}`;
    (paths[served.path] ??= {})[served.method.toLowerCase()] = { tags: [served.domain], ...operation(served.id, route, alias) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Parley API',
      version: '1',
      description:
        'Voice and chat agent platform. Paths and JSON shapes follow the Retell API; authenticate with `Authorization: Bearer <API key>`.',
    },
    servers: [{ url: '/' }],
    // One tag per domain function, so /docs groups the operations as the code does.
    tags: (Object.keys(TAG_DESCRIPTIONS) as Domain[]).map((name) => ({ name, description: TAG_DESCRIPTIONS[name] })),
    components: {
      securitySchemes: { apiKey: { type: 'http', scheme: 'bearer' } },
      schemas: {
        Error: schema(
          z.object({ status: z.number().int(), message: z.string(), error_code: z.string().optional() }),
          'output',
        ),
        ...sortKeys(errorFormats),
      },
    },
    paths: sortKeys(paths),
  };
}

/** Each domain's tag on /docs, in the order the page shows them. */
const TAG_DESCRIPTIONS: Record<Domain, string> = {
  account: 'API keys, the workspace and its settings, the audit log, webhook deliveries',
  agents: 'Voice agents, Retell LLM response engines, versions and tags',
  'chat-agents': 'Chat agents',
  flows: 'Conversation flows and flow components',
  'agent-tools': 'Agent generation, copilot, estimates, workflows, share links, MCP tools',
  voices: 'The voice catalogue, cloning, community voices, previews',
  numbers: 'Phone numbers, SIP trunks, inbound admission, caller IDs, KYC',
  calls: 'Phone and web calls, live controls and transcripts, call artifacts, concurrency',
  'calls-media': 'What the media server and the voice worker send about calls in progress: LiveKit webhooks, worker reports and retrievals',
  chats: 'API chats, SMS chats, the playground',
  batches: 'Batch calls',
  contacts: 'Contacts, memory and imports',
  'knowledge-bases': 'Knowledge bases, sources, syncs and retrievals',
  billing: 'The ledger, budgets, invoices and payments',
  integrations: 'OAuth connections, apps and CRM sync',
  members: 'Members, sessions, SSO, SAML and SCIM',
  'account-data': 'Exports, assets, privacy requests, reliability settings',
  public: 'Routes for browsers: public chats, share links, web call logs',
  meta: 'About the API: its index, this reference, the Voice Orb page',
  analytics: 'Analytics summaries and queries over rollups, dashboards, alert rules and their events',
  qa: 'QA: cohorts of real calls scored against a rubric, their runs and results',
  conductor: 'The assistant: sessions that build and fix agents through the API as the caller, its tools, the walkthrough and its credits',
};

function operation(id: string, route: RouteDefinition, alias: boolean) {
  const parameters = [
    ...objectParameters(route.params, 'path'),
    ...objectParameters(route.query, 'query'),
  ];
  const errorResponse = {
    description: 'Error',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
  };
  return {
    operationId: alias ? `${id}Alias` : id,
    summary: route.summary,
    ...(alias ? { description: `Alias of ${route.method} ${route.path}.` } : {}),
    'x-parley-scope': route.access,
    ...(route.access === 'public' ? { security: [] } : { security: [{ apiKey: [] }] }),
    ...(parameters.length ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: {
            required: true,
            content: Object.fromEntries(
              (route.bodyType === 'multipart'
                ? ['multipart/form-data']
                : route.bodyType === 'json-or-multipart'
                  ? ['application/json', 'multipart/form-data']
                  : ['application/json']
              ).map((mediaType) => [mediaType, { schema: schema(route.body!, 'input') }]),
            ),
          },
        }
      : {}),
    responses: {
      [String(route.status)]:
        route.status === 204 || (!route.response && !route.produces)
          ? { description: 'Success' }
          : !route.response
            ? { description: 'Success', content: { [route.produces!]: { schema: { type: 'string', format: 'binary' } } } }
          : {
              description: 'Success',
              content: { [route.produces ?? 'application/json']: { schema: schema(route.response, 'output') } },
            },
      default: route.errorFormat
        ? { description: 'Error', content: { [route.errorFormat.mediaType]: { schema: { $ref: `#/components/schemas/${route.errorFormat.name}` } } } }
        : errorResponse,
    },
  };
}

function objectParameters(shape: z.ZodType | undefined, where: 'path' | 'query') {
  if (!shape) return [];
  const json = schema(shape, 'input') as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, property]) => ({
    name,
    in: where,
    required: where === 'path' || (json.required ?? []).includes(name),
    schema: property,
  }));
}

function schema(type: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  const json = jsonSchemaOf(type, { io, unrepresentable: 'any', target: 'draft-2020-12' });
  delete json.$schema;
  return json;
}

function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => a.localeCompare(b)));
}
