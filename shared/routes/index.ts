import { routeKeys, type Domain, type RouteDefinition } from '../http/route.ts';
import { accountRoutes } from './account.ts';
import { agentToolRoutes } from './agent-tools.ts';
import { agentRoutes } from './agents.ts';
import { chatAgentRoutes } from './chat-agents.ts';
import { flowRoutes } from './flows.ts';
import { llmRoutes } from './llms.ts';
import { metaRoutes } from './meta.ts';
import { connectionTestRoutes } from './connection-tests.ts';
import { phoneNumberRoutes } from './phone-numbers.ts';
import { telephonyRoutes } from './telephony.ts';
import { voiceRoutes } from './voices.ts';
import { webhookRoutes } from './webhooks.ts';

/**
 * The whole route table. CDK, the local server, `npm run routes`, the OpenAPI generator and
 * the tests read this; each Lambda imports only its own domain's module.
 */
export const routeTable = {
  ...accountRoutes,
  ...webhookRoutes,
  ...agentRoutes,
  ...llmRoutes,
  ...agentToolRoutes,
  ...flowRoutes,
  ...chatAgentRoutes,
  ...voiceRoutes,
  ...phoneNumberRoutes,
  ...telephonyRoutes,
  ...connectionTestRoutes,
  ...metaRoutes,
} satisfies Record<string, RouteDefinition>;

export type RouteId = keyof typeof routeTable;

export interface ServedRoute {
  id: string;
  key: string;
  method: string;
  path: string;
  domain: Domain;
  route: RouteDefinition;
}

/** One entry per method+path served, canonical and alias alike. */
export function servedRoutes(): ServedRoute[] {
  return Object.entries(routeTable as Record<string, RouteDefinition>).flatMap(([id, route]) =>
    routeKeys(route).map((key) => {
      const [method, path] = key.split(' ') as [string, string];
      return { id, key, method, path, domain: route.domain, route };
    }),
  );
}
