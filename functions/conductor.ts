import { creditRoutes } from '../shared/conductor/credits/routes.ts';
import { domainHandler } from '../shared/platform/http/handler.ts';
import { creditHandlers } from './conductor/credits.ts';

/** One Lambda for the assistant (a key needs `admin`); its handler maps live beside it, one per route module. */
export const handler = domainHandler({ ...creditRoutes }, { ...creditHandlers });
