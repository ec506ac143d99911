import type { Handlers } from '../../shared/platform/http/route.ts';
import type { queryRoutes } from '../../shared/analytics/query/routes.ts';

export const queryHandlers: Handlers<typeof queryRoutes> = {};
