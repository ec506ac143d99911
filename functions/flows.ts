import { domainHandler } from '../shared/http/handler.ts';
import { flowRoutes } from '../shared/routes/flows.ts';

export const handler = domainHandler(flowRoutes, {});
