import type * as z from 'zod';
import { accountRoutes } from '../../shared/account/routes.ts';
import { webhookRoutes } from '../../shared/webhooks/routes.ts';

/**
 * Probe: loading zod plus building every schema of the account function's route tables.
 * The schemas are lazy (built on first use), so the probe forces each one with a parse:
 * this is what building all of them at load would cost, and what z.lazy spares a cold start.
 */
const routes = { ...accountRoutes, ...webhookRoutes } as Record<string, Record<string, unknown>>;
for (const route of Object.values(routes)) {
  for (const part of ['params', 'query', 'body', 'response'] as const) {
    (route[part] as z.ZodType | undefined)?.safeParse(undefined);
  }
}
export const handler = routes;
