import { domainHandler } from '../shared/platform/http/handler.ts';
import { cohortRoutes } from '../shared/qa/cohorts/routes.ts';
import { resultRoutes } from '../shared/qa/results/routes.ts';
import { runRoutes } from '../shared/qa/runs/routes.ts';
import { reviewRoutes } from '../shared/qa/review/routes.ts';
import { insightRoutes } from '../shared/qa/insights/routes.ts';
import { usageRoutes } from '../shared/qa/usage/routes.ts';
import { cohortHandlers } from './qa/cohorts.ts';
import { resultHandlers } from './qa/results.ts';
import { runHandlers } from './qa/runs.ts';
import { reviewHandlers } from './qa/review.ts';
import { insightHandlers } from './qa/insights.ts';
import { usageHandlers } from './qa/usage.ts';

/** One Lambda for QA (scope `analytics`); its handler maps live beside it, one per route module. */
export const handler = domainHandler(
  { ...cohortRoutes, ...runRoutes, ...resultRoutes, ...reviewRoutes, ...insightRoutes, ...usageRoutes },
  { ...cohortHandlers, ...runHandlers, ...resultHandlers, ...reviewHandlers, ...insightHandlers, ...usageHandlers },
);
