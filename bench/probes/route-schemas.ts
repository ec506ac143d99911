import { accountRoutes } from '../../shared/routes/account.ts';
import { webhookRoutes } from '../../shared/routes/webhooks.ts';

/**
 * Probe: loading zod plus building every schema of the account function's route tables
 * (bundled with the zod namespace-import change applied), for the import-time breakdown.
 */
export const handler = { ...accountRoutes, ...webhookRoutes };
