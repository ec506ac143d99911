import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import type { Domain } from '../shared/platform/http/route.ts';

export type HttpHandler = (
  event: APIGatewayProxyEventV2,
  context: Context,
  options: { signal: AbortSignal },
) => Promise<APIGatewayProxyStructuredResultV2>;

/**
 * The same handler modules CDK deploys (functions/<domain>.ts), loaded lazily so the
 * local runtime can set its settings before any of them reads config.
 */
export const domainFunctions: Record<Domain, () => Promise<{ handler: HttpHandler }>> = {
  account: () => import('../functions/account.ts'),
  agents: () => import('../functions/agents.ts'),
  'agent-tools': () => import('../functions/agent-tools.ts'),
  flows: () => import('../functions/flows.ts'),
  'chat-agents': () => import('../functions/chat-agents.ts'),
  voices: () => import('../functions/voices.ts'),
  numbers: () => import('../functions/numbers.ts'),
  calls: () => import('../functions/calls.ts'),
  'calls-media': () => import('../functions/calls-media.ts'),
  chats: () => import('../functions/chats.ts'),
  contacts: () => import('../functions/contacts.ts'),
  batches: () => import('../functions/batches.ts'),
  billing: () => import('../functions/billing.ts'),
  integrations: () => import('../functions/integrations.ts'),
  meta: () => import('../functions/meta.ts'),
  'account-data': () => import('../functions/account-data.ts'),
  members: () => import('../functions/members.ts'),
  'knowledge-bases': () => import('../functions/knowledge-bases.ts'),
  public: () => import('../functions/public.ts'),
  analytics: () => import('../functions/analytics.ts'),
  qa: () => import('../functions/qa.ts'),
  conductor: () => import('../functions/conductor.ts'),
};
