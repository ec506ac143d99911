import { defineRoutes } from '../../platform/http/route.ts';
import { QaUsage, UsageQuery } from './schemas.ts';

/** QA usage (scope `analytics`; members read), served by the qa function. */
export const usageRoutes = defineRoutes({ domain: 'qa', access: 'analytics' }, {
  getQaUsage: {
    method: 'GET', path: '/qa/usage', status: 200,
    summary: "A month's QA minutes scored (default this month), the free allowance and the charges beyond it",
    query: UsageQuery, response: QaUsage,
  },
});
