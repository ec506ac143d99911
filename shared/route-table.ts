import { routeKeys, type Domain, type RouteDefinition } from './platform/http/route.ts';
import { accountRoutes } from './account/routes.ts';
import { accountDataRoutes } from './account-data/routes.ts';
import { agentToolRoutes } from './agent-tools/routes.ts';
import { agentRoutes } from './agents/voice-agents/agent-routes.ts';
import { batchRoutes } from './batches/routes.ts';
import { billingRoutes } from './billing/routes.ts';
import { chargeRoutes } from './billing/charges/routes.ts';
import { invoiceRoutes } from './billing/invoices/routes.ts';
import { paymentRoutes } from './billing/payments/routes.ts';
import { spendRoutes } from './billing/spend/routes.ts';
import { callArtifactRoutes } from './calls/artifacts/routes.ts';
import { callRoutes } from './calls/routes.ts';
import { callMediaRoutes } from './calls/media-routes.ts';
import { chatRoutes } from './chats/routes.ts';
import { smsRoutes } from './chats/sms/routes.ts';
import { liveCallRoutes } from './calls/live/routes.ts';
import { contactRoutes } from './contacts/routes.ts';
import { knowledgeBaseRoutes } from './knowledge-bases/routes.ts';
import { chatAgentRoutes } from './agents/chat-agents/chat-agent-routes.ts';
import { flowRoutes } from './agents/flows/flow-routes.ts';
import { llmRoutes } from './agents/llms/llm-routes.ts';
import { integrationRoutes } from './integrations/routes.ts';
import { memberRoutes } from './members/routes.ts';
import { metaRoutes } from './meta/routes.ts';
import { connectionTestRoutes } from './numbers/connection-tests/routes.ts';
import { phoneNumberRoutes } from './numbers/phone-numbers/routes.ts';
import { publicRoutes } from './public/routes.ts';
import { testCaseRoutes } from './testing/definitions/routes.ts';
import { batchTestRoutes } from './testing/runs/routes.ts';
import { telephonyRoutes } from './numbers/telephony/routes.ts';
import { voiceRoutes } from './voices/routes.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { queryRoutes } from './analytics/query/routes.ts';
import { dashboardsRoutes } from './analytics/dashboards/routes.ts';
import { alertsRoutes } from './analytics/alerts/routes.ts';
import { cohortRoutes } from './qa/cohorts/routes.ts';
import { runRoutes } from './qa/runs/routes.ts';
import { resultRoutes } from './qa/results/routes.ts';
import { reviewRoutes } from './qa/review/routes.ts';
import { insightRoutes } from './qa/insights/routes.ts';
import { usageRoutes } from './qa/usage/routes.ts';
import { conductorRoutes } from './conductor/sessions/routes.ts';
import { creditRoutes } from './conductor/credits/routes.ts';

/**
 * The whole route table. CDK, the local server, `npm run routes`, the OpenAPI generator and
 * the tests read this; each Lambda imports only its own domain's module.
 */
export const routeTable = {
  ...accountRoutes,
  ...webhookRoutes,
  ...agentRoutes,
  ...llmRoutes,
  ...testCaseRoutes,
  ...batchTestRoutes,
  ...agentToolRoutes,
  ...flowRoutes,
  ...chatAgentRoutes,
  ...voiceRoutes,
  ...phoneNumberRoutes,
  ...telephonyRoutes,
  ...connectionTestRoutes,
  ...callRoutes,
  ...callMediaRoutes,
  ...chatRoutes,
  ...smsRoutes,
  ...callArtifactRoutes,
  ...liveCallRoutes,
  ...contactRoutes,
  ...batchRoutes,
  ...billingRoutes,
  ...spendRoutes,
  ...chargeRoutes,
  ...invoiceRoutes,
  ...paymentRoutes,
  ...accountDataRoutes,
  ...integrationRoutes,
  ...metaRoutes,
  ...memberRoutes,
  ...knowledgeBaseRoutes,
  ...publicRoutes,
  ...queryRoutes,
  ...dashboardsRoutes,
  ...alertsRoutes,
  ...cohortRoutes,
  ...runRoutes,
  ...resultRoutes,
  ...reviewRoutes,
  ...insightRoutes,
  ...usageRoutes,
  ...conductorRoutes,
  ...creditRoutes,
} satisfies Record<string, RouteDefinition>;

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
